"""Token pictures: coloured chips with ids, token counts, the BPE merge curve."""
from __future__ import annotations

import numpy as np

from viz.common import Figure, _text_width, array, label, make, unique_labels

# Light fills so dark text stays readable on a projector; the last one is for specials.
CHIP_COLOURS = ["#fde2a7", "#c9e4ff", "#d4f2c8", "#f9cfe0", "#e2d6ff", "#c8efea",
                "#ffd8c2", "#e9ecb8", "#d9d9d9"]
# One colour per tokenizer (counts) and per scheme (per_character): apart for colour-blind eyes and
# >= 3:1 on white (tests/test_colour_vision.py). Were "#f58518", "#54a24b", "#b279a2".
COUNT_COLOURS = ["#4c78a8", "#e57600", "#5ca362", "#be83a3"]
SCHEME_COLOURS = ["#4c78a8", "#be83a3", "#e57600"]
SPECIAL = len(CHIP_COLOURS) - 1


def _stepped_scale(colours: list[str]) -> list[list]:
    """A colourscale in which each integer 0..len-1 gets one flat colour."""
    n = len(colours)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def chips(tokens: list[str], ids: list[int], special: list[bool], *, title: str | None = None,
          per_row: int = 12, hover_names: tuple[str, str, str] = ("token", "id", "position")) -> Figure:
    """The text as a wrapped row of chips: the token on top, its id below.

    Neighbouring tokens alternate colours so their borders show; specials (BOS, EOS, UNK)
    are grey. Every token passes through ``viz.common.label``: typed markup is drawn as text.
    """
    n = len(tokens)
    # A chip must hold its widest label: at 17 px a half-em unit is ~9 px, and the chart can be
    # as narrow as ~480 px (half the page at 1440 px). Long BPE pieces get fewer chips a row.
    widest = max([_text_width(t) for t in tokens] + [_text_width(str(i)) for i in ids] + [1])
    per_row = max(3, min(per_row, 470 // (9 * widest + 14)))
    rows = max(1, -(-n // per_row))
    z = np.full((rows, per_row), np.nan, dtype=np.float32)
    text = [["" for _ in range(per_row)] for _ in range(rows)]
    hover = [["" for _ in range(per_row)] for _ in range(rows)]
    for pos, (tok, tid, spec) in enumerate(zip(tokens, ids, special, strict=True)):
        r, c = divmod(pos, per_row)
        z[r, c] = SPECIAL if spec else pos % SPECIAL
        text[r][c] = f"{label(tok)}<br>{tid}"
        hover[r][c] = f"{hover_names[0]}: {label(tok)}<br>{hover_names[1]}: {tid}<br>{hover_names[2]}: {pos}"
    trace = {"type": "heatmap", "z": z, "text": text, "customdata": hover, "texttemplate": "%{text}",
             "textfont": {"size": 17, "color": "#111"}, "hovertemplate": "%{customdata}<extra></extra>",
             "colorscale": _stepped_scale(CHIP_COLOURS), "zmin": 0, "zmax": len(CHIP_COLOURS),
             "showscale": False, "xgap": 6, "ygap": 6}
    hidden = {"visible": False, "fixedrange": True}
    layout = {"xaxis": hidden, "yaxis": {**hidden, "autorange": "reversed"},
              "plot_bgcolor": "rgba(0,0,0,0)"}
    return make([trace], layout, title, height=70 * rows + (80 if title else 20))


def counts(names: list[str], values: list[int], *, title: str | None = None, y_title: str = "") -> Figure:
    """One bar per tokenizer: how many tokens the same text needs."""
    trace = {"type": "bar", "x": names, "y": array(values), "text": [str(v) for v in values],
             "textposition": "outside", "marker": {"color": COUNT_COLOURS[: len(names)]},
             "cliponaxis": False}
    layout = {"yaxis": {"title": {"text": y_title}, "rangemode": "tozero"}, "margin": {"t": 80}}
    return make([trace], layout, title, height=360)


def merge_curve(lengths: list[int], step: int, *, title: str | None = None, x_title: str = "",
                y_title: str = "", here: str = "k") -> Figure:
    """Tokens of the training text after each merge, with the chosen step marked."""
    steps = np.arange(len(lengths))
    step = min(step, len(lengths) - 1)
    data = [
        {"type": "scatter", "x": array(steps), "y": array(lengths), "mode": "lines", "showlegend": False,
         "line": {"color": "#4c78a8", "width": 3}},
        {"type": "scatter", "x": [step], "y": [lengths[step]], "mode": "markers+text", "showlegend": False,
         "text": [f"{here} = {step}: {lengths[step]}"], "textposition": "top right",
         "marker": {"size": 14, "color": "#e45756"}},
    ]
    layout = {"xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"}}
    return make(data, layout, title, height=340)


def per_character(chars: list[str], series: list[tuple[str, list[int]]], *, title: str | None = None,
                  y_title: str = "", hover: str = "") -> Figure:
    """Grouped bars, one group per character: how many tokens (or bytes) each scheme spends on it.
    ``series`` is (name, one value per character) per bar of a group; ``hover`` names the value."""
    x = unique_labels(chars)
    colours = SCHEME_COLOURS
    data = [{"type": "bar", "x": x, "y": array(values), "name": name,
             "marker": {"color": colours[i % len(colours)]},
             "hovertemplate": f"%{{x}} · {name}: %{{y}} {hover}<extra></extra>"}
            for i, (name, values) in enumerate(series)]
    top = max([max(v, default=0) for _, v in series] + [1])
    layout = {"barmode": "group", "bargap": 0.25,
              "xaxis": {"type": "category", "tickfont": {"size": 18}},
              "yaxis": {"title": {"text": y_title}, "range": [0, top + 0.6], "dtick": 1}}
    return make(data, layout, title, height=360)
