"""Every categorical palette of our charts keeps its categories apart for colour-blind eyes (issue 43 §4).

Each chart's categories are simulated as a dichromat sees them (Machado, Oliveira & Fernandes 2009,
severity 1.0: deuteranopia, protanopia, tritanopia) and every two of them must stay at least
MIN_DELTA_E00 apart in CIEDE2000, as they must for normal vision.

Why 10: CIEDE2000 was fitted so that about 1 unit is a just-noticeable difference between two large
patches side by side. Chart marks are small and apart (a line, a dot, a bar across the plot from its
legend entry), and Szafir (2017, "Modeling Color Difference for Visualization Design", IEEE TVCG
24(1)) measured that the difference needed to tell such marks apart reliably grows several times
as marks get small. 10 is the margin colour-blind-safe palettes for data keep: the Okabe-Ito palette,
the usual reference, keeps all eight of its colours >= 10.9 apart under all three simulations
(asserted below), so 10 is reachable for every chart here.
"""
from __future__ import annotations

import itertools

import pytest

from tests.colour import DEFICIENCIES, ciede2000, contrast, lab, parse, seen_difference, simulate
from viz import block, common, embeddings, encdec, generation, gqa, kv, learning, masks, moe, positions, roofline, rope
from viz import patching as f4
from viz import tokens as viz_tokens

MIN_DELTA_E00 = 10.0
MIN_MARK_CONTRAST = 3.0   # WCAG 2.1 SC 1.4.11: graphical objects that carry meaning, against white

# chart -> its categories' colours, drawn together in one figure. The charts whose categories are told
# apart by colour; a colour scale over a number (heatmaps) is not categorical and is not here.
# COLORWAY: every chart that leaves trace colours to plotly; E2's spectra draw seven at once.
PALETTES: dict[str, list[str]] = {
    "common.COLORWAY (E2 spectra: 7 projections)": common.COLORWAY[:7],
    "tokens.counts (A1: one bar per tokenizer)": viz_tokens.COUNT_COLOURS,
    "tokens.per_character (A1: grouped bars)": viz_tokens.SCHEME_COLOURS,
    "tokens.merge_curve (curve, chosen step)": ["#4c78a8", "#e45756"],
    "gqa.head_map (D4: one colour per KV group)": gqa.GROUP_COLOURS,
    "gqa.cache_bars (chosen, others)": ["#d62728", "#9ecae1"],
    "roofline.roofline (D3: points)": roofline.POINT_COLOURS,
    "rope.SERIES (C3: one colour per base)": rope.SERIES,
    "rope (hand, key)": [rope.HAND, rope.KEY],
    "learning.loss_curve (F3: logged, checkpoints, references)":
        ["#1f77b4", learning.CHECKPOINT_COLOUR, *learning.REFERENCE_COLOURS],
    "block.gate_bars (C2: value, gate, passed)": ["#c7c7c7", block.GATE_COLOUR, block.PASSED_COLOUR],
    "block.stream_sizes (C2: added, stream)": ["#ffbb78", "#1f77b4"],
    "positions.waves (A3: one colour per dimension)": positions.WAVE_COLOURS,
    "embeddings.pca_map (A2: prompt, chosen, neighbours)":
        [embeddings.PROMPT_COLOUR, embeddings.CHOSEN_COLOUR, embeddings.NEAR_COLOUR],
    "encdec (target, source, other)": ["#7f7f7f", "#d62728", "#1f77b4"],
    "encdec (selected, other)": [encdec.SELECTED, "#1f77b4"],
    "masks.cells (allowed, blocked)": [masks.ALLOWED_COLOUR, masks.BLOCKED_COLOUR],
    "masks (before, after)": ["#d62728", "#9bb7d4"],
    "generation (chosen, other, cut)": [generation.CHOSEN, generation.OTHER, generation.CUT],
    "kv (new, cached, full)": [kv.NEW_EDGE, kv.CACHED_COLOUR, kv.FULL_COLOUR],
    "moe (sent, turned away, skipped)": [moe.SENT, moe.TURNED_AWAY, moe.SKIPPED],
    "moe (done, left)": ["#0068c9", "#ff4b4b"],
    "moe (lost all, lost one)": [moe.LOST_ALL_COLOURS[0], moe.LOST_ONE_COLOURS[0]],
    "f1_heads (F1: three lines)": ["#31333F", "#d62728", "#1f77b4"],
    "patching.head_patch_map (F4: F1's four head scores, hollow markers)": list(f4.MARK_COLOURS),
}

# Categorical marks (lines, points, bars) whose colour names a category: >= 3:1 against the white plot.
# Left out: fills and grounds that carry text or say "the rest" (pale blues and greys: gqa.cache_bars'
# others, block's value and added bars, masks' cells, generation's cut, masks' "after" bars).
# And encdec's selected box (a fill drawn inside a dark outline) and moe's lost-token grounds (their
# text's contrast is tests/test_contrast.py's).
MARKS = [c for name, colours in PALETTES.items()
         if not name.startswith(("masks", "generation", "gqa.cache", "moe (lost", "encdec (selected"))
         for c in colours if c not in ("#c7c7c7", "#ffbb78", "#9ecae1", "#9bb7d4")]
OKABE_ITO = ["#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"]

# Sharma, Wu & Dalal (2005), Table 1: their 34 pairs (L*, a*, b*) and ΔE00, chosen to catch the usual
# mistakes (the hue wrap at 0/360°, the mean hue of a neutral colour, the blue rotation term).
SHARMA_2005 = [
    ((50.0000, 2.6772, -79.7751), (50.0000, 0.0000, -82.7485), 2.0425),
    ((50.0000, 3.1571, -77.2803), (50.0000, 0.0000, -82.7485), 2.8615),
    ((50.0000, 2.8361, -74.0200), (50.0000, 0.0000, -82.7485), 3.4412),
    ((50.0000, -1.3802, -84.2814), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, -1.1848, -84.8006), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, -0.9009, -85.5211), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, 0.0000, 0.0000), (50.0000, -1.0000, 2.0000), 2.3669),
    ((50.0000, -1.0000, 2.0000), (50.0000, 0.0000, 0.0000), 2.3669),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0009), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0010), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0011), 7.2195),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0012), 7.2195),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0009, -2.4900), 4.8045),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0010, -2.4900), 4.8045),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0011, -2.4900), 4.7461),
    ((50.0000, 2.5000, 0.0000), (50.0000, 0.0000, -2.5000), 4.3065),
    ((50.0000, 2.5000, 0.0000), (73.0000, 25.0000, -18.0000), 27.1492),
    ((50.0000, 2.5000, 0.0000), (61.0000, -5.0000, 29.0000), 22.8977),
    ((50.0000, 2.5000, 0.0000), (56.0000, -27.0000, -3.0000), 31.9030),
    ((50.0000, 2.5000, 0.0000), (58.0000, 24.0000, 15.0000), 19.4535),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.1736, 0.5854), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.2972, 0.0000), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 1.8634, 0.5757), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.2592, 0.3350), 1.0000),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((63.0109, -31.0961, -5.8663), (62.8187, -29.7946, -4.0864), 1.2630),
    ((61.2901, 3.7196, -5.3901), (61.4292, 2.2480, -4.9620), 1.8731),
    ((35.0831, -44.1164, 3.7933), (35.0232, -40.0716, 1.5901), 1.8645),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
    ((36.4612, 47.8580, 18.3852), (36.2715, 50.5065, 21.2231), 1.4146),
    ((90.8027, -2.0831, 1.4410), (91.1528, -1.6435, 0.0447), 1.4441),
    ((90.9257, -0.5406, -0.9208), (88.6381, -0.8985, -0.7239), 1.5381),
    ((6.7747, -0.2908, -2.4247), (5.8714, -0.0985, -2.2286), 0.6377),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize("lab1,lab2,expected", SHARMA_2005)
def test_ciede2000_matches_sharma_wu_dalal(lab1, lab2, expected):
    assert ciede2000(lab1, lab2) == pytest.approx(expected, abs=5e-5)
    assert ciede2000(lab2, lab1) == pytest.approx(expected, abs=5e-5)   # symmetric


def test_lab_of_srgb_primaries():
    # CIE 15:2004 with the sRGB primaries and D65: the values every colour calculator gives.
    assert lab(parse("#ff0000")[0]) == pytest.approx((53.2408, 80.0925, 67.2032), abs=1e-3)
    assert lab(parse("#0000ff")[0]) == pytest.approx((32.2970, 79.1875, -107.8602), abs=1e-3)
    assert lab(parse("#ffffff")[0]) == pytest.approx((100.0, 0.0, 0.0), abs=1e-3)


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
def test_machado_keeps_greys_and_loses_the_right_axis(deficiency):
    # Each matrix's rows sum to 1: a grey stays itself (Machado et al. normalise so).
    for grey in ("#000000", "#777777", "#ffffff"):
        assert simulate(parse(grey)[0], deficiency) == pytest.approx(parse(grey)[0], abs=2e-3)
    # tab10's orange and green: the pair protanopes (and, less, deuteranopes) confuse, tritanopes not;
    # its blue and green: the pair tritanopia brings closest, red-green blindness hardly.
    orange_green = seen_difference("#ff7f0e", "#2ca02c", deficiency)
    blue_green = seen_difference("#1f77b4", "#2ca02c", deficiency)
    assert seen_difference("#ff7f0e", "#2ca02c") == pytest.approx(55.2, abs=0.1)
    assert seen_difference("#1f77b4", "#2ca02c") == pytest.approx(52.6, abs=0.1)
    expected = {"protanopia": (1.3, 51.4), "deuteranopia": (14.5, 50.5), "tritanopia": (63.3, 12.0)}
    assert (orange_green, blue_green) == pytest.approx(expected[deficiency], abs=0.1)


def test_the_threshold_is_reachable_okabe_ito():
    for deficiency in (None, *DEFICIENCIES):
        worst = min(seen_difference(a, b, deficiency) for a, b in itertools.combinations(OKABE_ITO, 2))
        assert worst > MIN_DELTA_E00, deficiency


@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES], ids=["normal", *DEFICIENCIES])
@pytest.mark.parametrize("chart", list(PALETTES))
def test_categories_stay_apart(chart, deficiency):
    colours = PALETTES[chart]
    close = [(a, b, round(seen_difference(a, b, deficiency), 1)) for a, b in itertools.combinations(colours, 2)
             if seen_difference(a, b, deficiency) < MIN_DELTA_E00]
    assert not close, f"{chart}: pairs under ΔE00 {MIN_DELTA_E00} for {deficiency or 'normal vision'}: {close}"


@pytest.mark.parametrize("colour", sorted(set(MARKS)))
def test_category_marks_stand_out_from_white(colour):
    assert contrast(colour) >= MIN_MARK_CONTRAST


def _scale_colours(scale: list, steps: int = 100) -> list[str]:
    """A plotly colour scale ([[stop, "rgb(r,g,b)"], ...]) sampled at steps + 1 even places, as a
    heatmap blends its colours between the stops (linearly, in sRGB)."""
    stops = [(at, parse(colour)[0]) for at, colour in scale]
    out = []
    for i in range(steps + 1):
        x = i / steps
        (a, c), (b, d) = next((lo, hi) for lo, hi in zip(stops, stops[1:], strict=False) if lo[0] <= x <= hi[0])
        t = (x - a) / (b - a) if b > a else 0.0
        out.append("#" + "".join(f"{round(255 * (c[k] + (d[k] - c[k]) * t)):02x}" for k in range(3)))
    return out


@pytest.mark.parametrize("deficiency", [None, *DEFICIENCIES], ids=["normal", *DEFICIENCIES])
def test_f4_selected_cell_outline_stands_out_on_its_whole_scale(deficiency):
    """F4's clicked cell is outlined on a red-blue map (viz.patching.SELECTED: black, white inside):
    on every colour of the scale, one of the outline's two colours is at least MIN_DELTA_E00 from it
    (the green outline it replaced came within 2.5 of one under deuteranopia)."""
    outer, inner = f4.SELECTED
    scale = _scale_colours(f4.recovered_scale()["colorscale"])
    worst = min(max(seen_difference(outer, c, deficiency), seen_difference(inner, c, deficiency)) for c in scale)
    assert worst >= MIN_DELTA_E00
    assert min(seen_difference("#2ca02c", c, "deuteranopia") for c in scale) < MIN_DELTA_E00   # why not green
