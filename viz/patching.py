"""F4's pictures: the recovered fraction of every patched run, as a layers × positions map (the
causal-tracing figure), the attention and feed-forward maps side by side, and the heads at the
last position. Pure functions: arrays and translated labels in, a ``viz.common.Figure`` out."""
from __future__ import annotations

import numpy as np

from viz.attention import token_axis, token_font, word_label_px
from viz.common import DIVERGING_SCALE, Figure, array, make, unique_labels

ROW_PX = 15          # px a layer's row takes: SmolLM2's 30 rows in 450 px
MAP_PX = 560         # px of plot a full-width map has at least (1024 px window, sidebar open)
# The clicked cell's outline: a white line inside a black one, so that one of the two stands out on
# every colour of the red-blue scale, for colour-blind eyes too (green, before, was ΔE00 2.5 from one
# of its colours under deuteranopia: tests/test_colour_vision.py).
SELECTED, SELECTED_PX = ("#000000", "#ffffff"), (5, 2)     # (outer, inner)
# The head map's marks, one colour for each of F1's scores (and a symbol each): dark grey, purple,
# bluish green, brown, apart for colour-blind eyes and >= 3:1 on white (tests/test_colour_vision.py;
# tab10's green and orange were ΔE00 1.3 apart under protanopia, its orange 2.5:1 on white).
MARK_COLOURS = ("#31333F", "#9467bd", "#009e73", "#8c510a")


def pair_labels(clean: list[str], corrupted: list[str]) -> list[str]:
    """The positions' axis labels: the clean prompt's tokens, and "clean/corrupted" where the two
    prompts differ (the position a patch copies something new into), each unique for plotly.

    Example: pair_labels([" John", " gave"], [" Mary", " gave"]) -> [" John/ Mary", " gave"]
    """
    return unique_labels([a if a == b else f"{a}/{b}" for a, b in zip(clean, corrupted, strict=True)])


# Noising's scale: RdBu_r turned around, so that red sits at 0 and white at 1 (see recovered_scale).
NOISING_SCALE = [[round(1.0 - at, 6), colour] for at, colour in reversed(DIVERGING_SCALE)]


def recovered_scale(noising: bool = False) -> dict:
    """Where a map's colours sit: white at the base run's own value, 0 when denoising and 1 when
    noising, so a cell is white where its patch changed nothing and red where it moved the answer
    most (denoising: back up to 1, the clean answer; noising: down to 0, the clean answer lost).
    Red reads "this activation matters" in both directions; blue is a move the other way. The
    scale is centred on white: −1..1 denoising, 0..2 noising.

    Example: recovered_scale(True) -> {"zmin": 0.0, "zmax": 2.0, "colorscale": [[0.0, "rgb(103,0,31)"], ...]}
    """
    if noising:
        return {"zmin": 0.0, "zmax": 2.0, "colorscale": NOISING_SCALE}
    return {"zmin": -1.0, "zmax": 1.0, "colorscale": DIVERGING_SCALE}


def recovered_bar(title: str | None, noising: bool = False, ends: tuple[str, str] | None = None) -> dict:
    """The recovered fraction's colour bar (``recovered_scale``), its ticks at the two plain runs
    named by ``ends``, the words for 0 and 1 ("as corrupted", "as clean"), when given.

    Example: recovered_bar(None, True, ("as corrupted", "as clean"))["ticktext"]
             -> ["0 · as corrupted", "0.5", "1 · as clean", "2"]
    """
    low, high = ("0", "1") if ends is None else (f"0 · {ends[0]}", f"1 · {ends[1]}")
    if noising:
        ticks = {"tickvals": [0.0, 0.5, 1.0, 2.0], "ticktext": [low, "0.5", high, "2"]}
    else:
        ticks = {"tickvals": [-1.0, 0.0, 0.5, 1.0], "ticktext": ["−1", low, "0.5", high]}
    bar = {**ticks, "thickness": 12, "tickfont": {"size": 12}}
    if title:
        bar["title"] = {"text": title, "side": "top", "font": {"size": 12}}
    return bar


def _map_trace(z, x, hover: str, customdata, noising: bool, **place) -> dict:
    return {"type": "heatmap", "z": z, "x": x, "y0": 0, "dy": 1, **recovered_scale(noising),
            "xgap": 1, "ygap": 1, "customdata": customdata, "hovertemplate": hover, **place}


def recovery_map(values, clean: list[str], corrupted: list[str], *, title: str | None,
                 axis_titles: tuple[str, str], hover_names: tuple[str, str, str], colorbar_title: str,
                 selected: tuple[int, int] | None = None, noising: bool = False,
                 ends: tuple[str, str] | None = None) -> Figure:
    """One site's recovered fraction, ``values`` (L, T): a column per position (its token at the
    bottom), a row per block (block 0 at the bottom), on a fixed scale centred on the base run
    (``recovered_scale``: white = nothing changed, red = the patch moved the answer; ``ends``
    name 0 and 1 on the colour bar, see ``recovered_bar``). Each cell's customdata is
    "layer,position" (a click picks it, ``ui.chart(on_select=...)``); the ``selected`` (layer,
    position) is outlined (SELECTED: black, white inside).

    Example: recovery_map(np.zeros((30, 14)), ...)["data"][0]["z"].shape == (30, 14)
    """
    z = array(values)                                                        # (L, T)
    n_layers, n = z.shape
    font = min(12, token_font(n))
    x = pair_labels(clean, corrupted)
    layer_name, pos_name, value_name = hover_names
    cells = [[f"{i},{j}" for j in range(n)] for i in range(n_layers)]
    trace = _map_trace(np.where(np.isfinite(z), z, np.nan), x,
                       f"{layer_name} %{{y}} · {pos_name} %{{x}}<br>{value_name}: %{{z:.3f}}<extra></extra>",
                       cells, noising, colorbar=recovered_bar(colorbar_title, noising, ends))
    words_px = word_label_px(x, font)
    if words_px and n * (words_px + 8) <= MAP_PX:
        words_px = 0.0                                                       # they fit upright
    shapes = []
    if selected is not None:
        layer, pos = selected
        shapes += [{"type": "rect", "xref": "x", "yref": "y", "x0": pos - 0.5, "x1": pos + 0.5,
                    "y0": layer - 0.5, "y1": layer + 0.5, "line": {"color": colour, "width": px}}
                   for colour, px in zip(SELECTED, SELECTED_PX, strict=True)]
    layout = {"xaxis": {"type": "category", "title": {"text": axis_titles[1]}, **token_axis(n),
                        "tickfont": {"size": font}, "tickangle": -90 if words_px else 0},
              "yaxis": {"title": {"text": axis_titles[0]}, "range": [-0.5, n_layers - 0.5], "dtick": 5 if n_layers > 12 else 1,
                        "showgrid": False, "zeroline": False},
              "shapes": shapes}
    height = (90 if title else 30) + 60 + ROW_PX * n_layers + round(words_px)
    return make([trace], layout, title, max(height, 300))


def sublayer_maps(attn, ffn, clean: list[str], corrupted: list[str], *, title: str | None,
                  panel_titles: tuple[str, str], axis_titles: tuple[str, str],
                  hover_names: tuple[str, str, str], colorbar_title: str, noising: bool = False,
                  ends: tuple[str, str] | None = None) -> Figure:
    """What each sub-layer's output carries: the attention map and the feed-forward map, each
    (L, T), side by side on one scale (one colour bar, as ``recovery_map``'s), positions across and
    blocks up.

    Example: sublayer_maps(np.zeros((30, 14)), np.zeros((30, 14)), ...) -> two heatmaps, x and x2
    """
    a, f = array(attn), array(ffn)
    n_layers, n = a.shape
    font = max(11, min(12, token_font(2 * n)))                              # 11 px at least (readable)
    x = pair_labels(clean, corrupted)
    layer_name, pos_name, value_name = hover_names
    data = []
    for k, (z, name) in enumerate(zip((a, f), panel_titles, strict=True)):
        axes = {"xaxis": "x" if k == 0 else "x2", "yaxis": "y"}
        trace = _map_trace(np.where(np.isfinite(z), z, np.nan), x,
                           f"{name}<br>{layer_name} %{{y}} · {pos_name} %{{x}}<br>{value_name}: %{{z:.3f}}"
                           "<extra></extra>", None, noising, name=name, showscale=k == 0, **axes)
        if k == 0:
            trace["colorbar"] = recovered_bar(colorbar_title, noising, ends)
        data.append(trace)
    words_px = word_label_px(x, font)
    if words_px and n * (words_px + 6) <= MAP_PX / 2:
        words_px = 0.0
    # Each panel named by its x axis' title, under it (annotations above the panels met at 1024 px).
    axis = {"type": "category", **token_axis(n), "tickfont": {"size": font}, "tickangle": -90 if words_px else 0}
    layout = {"xaxis": {**axis, "domain": [0.0, 0.46], "title": {"text": f"{panel_titles[0]} · {axis_titles[1]}"}},
              "xaxis2": {**axis, "domain": [0.52, 0.98], "title": {"text": f"{panel_titles[1]} · {axis_titles[1]}"}},
              "yaxis": {"title": {"text": axis_titles[0]}, "range": [-0.5, n_layers - 0.5],
                        "dtick": 5 if n_layers > 12 else 1, "showgrid": False, "zeroline": False}}
    height = (110 if title else 50) + 60 + ROW_PX * n_layers + round(words_px)
    return make(data, layout, title, max(height, 300))


def head_patch_map(values, marks: dict[str, list[tuple[int, int]]], *, title: str | None,
                   axis_titles: tuple[str, str], hover_names: tuple[str, str, str],
                   colorbar_title: str, noising: bool = False, ends: tuple[str, str] | None = None) -> Figure:
    """The recovered fraction of each head's patch at the last position, ``values`` (L, H), as an
    H × L map (layers across, heads down, as ``viz.attention.layer_head_map``), and the heads
    another measure picked, ``marks`` (legend name -> [(layer, head), ...]), as hollow markers:
    a marker on a red cell is a head both measures point at. The colours as ``recovery_map``'s.

    Example: head_patch_map(np.zeros((30, 9)), {"induction": [(18, 6)]}, ...) -> z (9, 30), 1 marker trace
    """
    v = array(values)                                                        # (L, H)
    n_layers, n_heads = v.shape
    z = np.where(np.isfinite(v), v, np.nan).T.astype(np.float32)             # (H, L)
    layer_name, head_name, value_name = hover_names
    data = [{"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": 0, "dy": 1, **recovered_scale(noising),
             "xgap": 1, "ygap": 1, "colorbar": recovered_bar(colorbar_title, noising, ends),
             "hovertemplate": f"{layer_name} %{{x}} · {head_name} %{{y}}<br>{value_name}: %{{z:.3f}}<extra></extra>",
             "showlegend": False}]
    symbols = ("circle-open", "square-open", "diamond-open", "x-thin-open")
    for k, (name, heads) in enumerate(marks.items()):
        data.append({"type": "scatter", "mode": "markers", "name": name,
                     "x": [h[0] for h in heads], "y": [h[1] for h in heads],
                     "marker": {"symbol": symbols[k % 4], "size": 11, "color": MARK_COLOURS[k % 4],
                                "line": {"width": 2, "color": MARK_COLOURS[k % 4]}},
                     "hovertemplate": f"{name}<br>{layer_name} %{{x}} · {head_name} %{{y}}<extra></extra>"})
    layout = {"xaxis": {"title": {"text": axis_titles[0]}, "dtick": 1 if n_layers <= 12 else 2,
                        "range": [-0.5, n_layers - 0.5], "showgrid": False, "zeroline": False},
              "yaxis": {"title": {"text": axis_titles[1]}, "dtick": 1, "autorange": "reversed",
                        "range": [n_heads - 0.5, -0.5], "showgrid": False, "zeroline": False}}
    # The legend where viz.common places it (above the plot); 9 rows need ~26 px each for their labels.
    return make(data, layout, title, 480)

