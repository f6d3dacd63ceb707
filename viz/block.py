"""The LLaMA block as a clickable-looking diagram, and small charts of what flows through it."""
from __future__ import annotations

import numpy as np

from viz.attention import hover, token_axis, token_font
from viz.common import DIVERGING_SCALE, Figure, array, make, pool, unique_labels

# (x centre, y centre, width, height) of each part on a 0..16 x 0..4 canvas; data flows left to right.
LAYOUT: dict[str, tuple[float, float, float, float]] = {
    "resid_pre": (0.7, 2.0, 1.1, 0.8),
    "attn_norm": (2.2, 2.0, 1.2, 0.8),
    "attn.q": (3.6, 3.0, 0.9, 0.6), "attn.k": (3.6, 2.0, 0.9, 0.6), "attn.v": (3.6, 1.0, 0.9, 0.6),
    "attn.weights": (5.0, 2.5, 1.3, 0.9),
    "attn.out": (6.4, 2.0, 1.1, 0.8),
    "resid_mid": (7.8, 2.0, 1.1, 0.8),
    "ffn_norm": (9.3, 2.0, 1.2, 0.8),
    "ffn.gate": (10.8, 2.6, 1.1, 0.6), "ffn.up": (10.8, 1.4, 1.1, 0.6),
    "ffn_out": (12.4, 2.0, 1.1, 0.8),
    "resid_post": (13.9, 2.0, 1.1, 0.8),
}
EDGES = [("resid_pre", "attn_norm"), ("attn_norm", "attn.q"), ("attn_norm", "attn.k"), ("attn_norm", "attn.v"),
         ("attn.q", "attn.weights"), ("attn.k", "attn.weights"), ("attn.weights", "attn.out"),
         ("attn.v", "attn.out"), ("attn.out", "resid_mid"), ("resid_mid", "ffn_norm"),
         ("ffn_norm", "ffn.gate"), ("ffn_norm", "ffn.up"), ("ffn.gate", "ffn_out"), ("ffn.up", "ffn_out"),
         ("ffn_out", "resid_post")]
# Presenter mode: the same places and widths, each box as tall as its row allows (q, k and v are
# 1.0 apart, the gate and up 1.2), for two lines at 18 px.
ROOMY: dict[str, tuple[float, float, float, float]] = {
    part: (x, y, w, 0.9 if h < 0.7 else 1.3) for part, (x, y, w, h) in LAYOUT.items()
}
SKIPS = [("resid_pre", "resid_mid"), ("resid_mid", "resid_post")]   # the residual connections
COLORS = {"norm": "#e8f1fa", "attn": "#fdf0e1", "ffn": "#e9f6ea", "resid": "#f2f2f2"}
SELECTED = "#ff7f0e"
# The chosen part's name on SELECTED: white there was 2.5:1, this 7.5:1 (WCAG AA asks 4.5:1)
SELECTED_TEXT = "#111111"
# gate_bars: the gate's line beside what passes (red); a green apart from it for deuteranopia
# (tests/test_colour_vision.py; was "#2ca02c").
GATE_COLOUR, PASSED_COLOUR = "#48a35c", "#d62728"


def _group(part: str) -> str:
    if part.endswith("norm"):
        return "norm"
    if part.startswith("attn"):
        return "attn"
    if part.startswith("ffn"):
        return "ffn"
    return "resid"


def block_diagram(selected: str, labels: dict[str, str], *, regions: dict[str, str], title: str | None = None,
                  height: int = 300, roomy: bool = False) -> Figure:
    """One block, left to right; ``labels`` is the (already translated) text of every part,
    ``regions`` names the two sub-layers ("attn", "ffn"). Trace 0 holds one labelled point per
    part with the part id as customdata; the selected part's box is orange.

    ``roomy`` (presenter mode): boxes as tall as their row allows, so
    that a two-line label at the presenter's 18 px stays inside its box (ui/chart.js sets a label
    that spills back to the figure's own 13 px).

    Few annotations on purpose: every annotation is validated by plotly on each rerun, so
    labels are one text trace and all arrows one line trace with arrow markers.
    """
    boxes_at = ROOMY if roomy else LAYOUT
    parts = list(boxes_at)
    shapes = []
    for part, (x, y, w, h) in boxes_at.items():
        chosen = part == selected
        shapes.append({"type": "rect", "x0": x - w / 2, "x1": x + w / 2, "y0": y - h / 2, "y1": y + h / 2,
                       "fillcolor": SELECTED if chosen else COLORS[_group(part)], "layer": "below",
                       "line": {"color": "#333" if chosen else "#888", "width": 3 if chosen else 1}})
    top = 3.75
    for a, b in SKIPS:                                                # residual path drawn above the block
        (xa, ya, _, ha), (xb, _, _, hb) = boxes_at[a], boxes_at[b]
        shapes.append({"type": "path", "path": f"M {xa},{ya + ha / 2} L {xa},{top} L {xb},{top} L {xb},{ya + hb / 2}",
                       "line": {"color": "#1f77b4", "width": 2, "dash": "dot"}})
    boxes = (("attn", 2.9, 7.0), ("ffn", 10.1, 13.0))
    for _, x0, x1 in boxes:
        shapes.append({"type": "rect", "x0": x0, "x1": x1, "y0": 0.45, "y1": 3.45, "layer": "below",
                       "line": {"color": "#bbb", "dash": "dash", "width": 1}, "fillcolor": "rgba(0,0,0,0)"})
    # Arrows: segments (start, end, gap); only the end point carries an arrow marker.
    xs, ys, sizes = [], [], []
    for a, b in EDGES:
        (xa, ya, wa, _), (xb, yb, wb, _) = boxes_at[a], boxes_at[b]
        xs += [xa + wa / 2, xb - wb / 2 - 0.05, None]
        ys += [ya, yb, None]
        sizes += [0, 9, 0]
    texts = [{"type": "scatter", "mode": "text", "x": [(xa + xb) / 2 for xa, xb in
                                                        ((boxes_at[a][0], boxes_at[b][0]) for a, b in SKIPS)]
              + [(x0 + x1) / 2 for _, x0, x1 in boxes],
              "y": [top + 0.2] * len(SKIPS) + [0.3] * len(boxes), "text": ["+"] * len(SKIPS)
              + [regions[name] for name, _, _ in boxes], "textfont": {"size": 13, "color": "#555"},
              "hoverinfo": "skip", "showlegend": False}]
    data = [
        {"type": "scatter", "mode": "markers+text", "x": [boxes_at[p][0] for p in parts],
         "y": [boxes_at[p][1] for p in parts], "customdata": parts, "text": [labels[p] for p in parts],
         "textfont": {"size": 13, "color": [SELECTED_TEXT if p == selected else "#222" for p in parts]},
         "hovertemplate": "%{customdata}<extra></extra>", "marker": {"size": 30, "opacity": 0},
         "showlegend": False},
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "hoverinfo": "skip", "showlegend": False,
         "line": {"color": "#666", "width": 1.2},
         "marker": {"symbol": "arrow", "angleref": "previous", "size": sizes, "color": "#666"}},
        *texts,
    ]
    layout = {"shapes": shapes, "dragmode": False,
              "xaxis": {"range": [0, 14.6], "visible": False, "fixedrange": True},
              "yaxis": {"range": [0.1, 4.1], "visible": False, "fixedrange": True},
              "plot_bgcolor": "white"}
    return make(data, layout, title, height)


def tensor_heatmap(values, row_tokens: list[str], *, title: str, hover_names: tuple[str, str, str],
                   height: int = 420) -> Figure:
    """A (tokens, width) activation matrix: tokens down the rows, numbered columns (a wide
    matrix has too many columns to name). Diverging colours centred on 0."""
    z, factor = pool(array(values))
    rows = unique_labels(row_tokens) if factor == 1 else array(np.arange(z.shape[0]) * factor)
    trace = {"type": "heatmap", "z": z, "x": array(np.arange(z.shape[1]) * factor), "y": rows,
             "colorscale": DIVERGING_SCALE, "zmid": 0.0, "hovertemplate": hover(*hover_names)}
    layout = {"yaxis": {"autorange": "reversed", "type": "category" if factor == 1 else "linear"},
              "xaxis": {"side": "top", "type": "linear"}, "margin": {"t": 90}}
    if factor == 1:   # every token named, a row of room for each
        n = z.shape[0]
        layout["yaxis"].update(token_axis(n))
        height = max(height, 140 + (token_font(n) + 4) * n)
    return make([trace], layout, title, height)


def gate_bars(gate, up, passed, *, names: tuple[str, str, str], title: str, x_title: str,
              height: int = 360) -> Figure:
    """Per hidden unit, in the order given (the caller sorts them by gate): the value x w3
    (trace 0), the gate SiLU(x w1) (trace 1, a line) and what passes, their product (trace 2).

    The values are drawn as filled steps, one bar-wide step per unit, rather than as bars: one
    outline per series instead of one shape per unit (2 x 344 shapes cost ~35 ms a redraw)."""
    units = array(np.arange(len(up)))
    step = {"type": "scatter", "x": units, "mode": "lines", "fill": "tozeroy", "line": {"shape": "hvh", "width": 0}}
    data = [
        {**step, "y": array(up), "name": names[0], "fillcolor": "#c7c7c7", "line": {**step["line"], "color": "#c7c7c7"}},
        {"type": "scatter", "x": units, "y": array(gate), "name": names[1], "mode": "lines",
         "line": {"color": GATE_COLOUR, "width": 2}},
        {**step, "y": array(passed), "name": names[2], "fillcolor": "rgba(214, 39, 40, 0.85)",
         "line": {**step["line"], "color": PASSED_COLOUR}},
    ]
    # The legend sits under the x-axis title, not in the band above the plot: three entries in a
    # half-page column stack there and ran into the title (review C2 #1).
    layout = {"xaxis": {"title": {"text": x_title}},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 130}}
    return make(data, layout, title, height + 60)


def stream_sizes(stages: list[str], stream, added, *, names: tuple[str, str], title: str, y_title: str,
                 x_title: str = "", height: int = 360) -> Figure:
    """RMS of the residual stream at every stage (trace 0, a line over all 2L + 1 stages) and of
    what each sub-layer adds to it (trace 1, bars on the 2L stages after an add). Past 12 blocks
    (SmolLM2: 61 stages) every stage is drawn but only the input and every second block's output
    are named, upright, by the block's number ("5·ffn" -> "5"; ``x_title`` says what it is):
    61 tilted labels met each other in half a laptop screen."""
    if len(stages) <= 25:
        ticks = {"tickangle": -45}
    else:
        shown = stages[::4]
        ticks = {"tickmode": "array", "tickvals": shown, "ticktext": [s.split("·")[0] for s in shown],
                 "tickangle": 0, "title": {"text": x_title}}
    data = [
        {"type": "bar", "x": stages[1:], "y": array(added), "name": names[1], "marker": {"color": "#ffbb78"}},
        {"type": "scatter", "x": stages, "y": array(stream), "name": names[0], "mode": "lines+markers",
         "line": {"color": "#1f77b4", "width": 3}},
    ]
    layout = {"xaxis": {"type": "category", **ticks}, "yaxis": {"title": {"text": y_title}}}
    return make(data[::-1], layout, title, height)


def norm_scatter(series: dict[str, tuple], *, title: str, x_title: str, y_title: str, height: int = 380) -> Figure:
    """Each token vector as a point (mean of its entries, RMS of its entries), one colour per
    series (input, LayerNorm, RMSNorm)."""
    symbols = ["circle", "diamond", "x"]
    data = [{"type": "scatter", "mode": "markers", "x": array(mean), "y": array(size), "name": name,
             "marker": {"size": 10, "symbol": symbols[i % 3], "opacity": 0.8}}
            for i, (name, (mean, size)) in enumerate(series.items())]
    # RMS from just below 0: with 0 at the very corner its tick label met the x axis's first one
    # (SmolLM2's block-0 means span only ±0.08, so the x ticks crowd the corner).
    top = max([float(np.nanmax(np.asarray(size))) for _, size in series.values()] + [1e-6])
    layout = {"xaxis": {"title": {"text": x_title}, "zeroline": True},
              "yaxis": {"title": {"text": y_title}, "range": [-0.08 * top, 1.08 * top]}}
    return make(data, layout, title, height)
