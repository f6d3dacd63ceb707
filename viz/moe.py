"""Mixture-of-experts pictures: the router's table, expert load against capacity, traffic
between devices, memory against compute. Every label arrives translated."""
from __future__ import annotations

import math

import numpy as np

from viz.attention import token_axis, token_font
from viz.common import WEIGHTS_SCALE, Figure, array, make, unique_labels

SENT, TURNED_AWAY, SKIPPED = "#d62728", "#111111", "#7f7f7f"


# The two marks differ in lightness, not only in hue (a projector washes pale tints out, and
# two near-white ones looked the same: review E1 #3), and in a second cue besides colour: a token
# no expert took is white on dark red and struck through; one that lost one of its experts is dark
# on yellow with a dotted underline. Text contrast 6.5:1 and 11.6:1 (WCAG asks 4.5:1; the test
# checks both, and the two grounds' distance). HTML spans for st.markdown(..., unsafe_allow_html=True).
LOST_ALL_COLOURS = ("#b3261e", "#ffffff")     # (ground, text)
LOST_ONE_COLOURS = ("#ffd43b", "#1f1f1f")
_MARK = '<span style="background:{};color:{};text-decoration:{};padding:0 1px;border-radius:2px">{{}}</span>'
LOST_ALL = _MARK.format(*LOST_ALL_COLOURS, "line-through")
LOST_ONE = _MARK.format(*LOST_ONE_COLOURS, "underline dotted")


def router_map(probs, tokens: list[str], experts, fits, dispatched, *, expert_names: list[str],
               names: tuple[str, str, str], marks: tuple[str, str, str], title: str,
               height: int = 460, across: bool = False) -> Figure:
    """Router probabilities (N, E) as a heatmap, a token per row; each chosen expert is
    marked: a ring where the expert ran, a cross where it was full (overflow), an open
    square where GShard's random routing skipped the second expert.

    ``across``: a token per column, the experts in rows (presenter mode: a wide slide names
    every one of 20 tokens side by side, where rows of 7 px named 4 of them)."""
    z = array(probs)
    rows = unique_labels(tokens)
    ex, ok, sent = np.asarray(experts), np.asarray(fits), np.asarray(dispatched)
    token_name, expert_name = ("%{x}", "%{y}") if across else ("%{y}", "%{x}")
    data = [{"type": "heatmap", "z": array(z.T) if across else z, "x": rows if across else expert_names,
             "y": expert_names if across else rows, "zmin": 0.0, "zmax": 1.0,
             "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1,
             "hovertemplate": f"{names[0]}: {token_name}<br>{names[1]}: {expert_name}<br>{names[2]}: %{{z:.3f}}"
                              "<extra></extra>"}]
    kinds = ((ok, "circle-open", SENT, marks[0]), (sent & ~ok, "x-thin-open", TURNED_AWAY, marks[1]),
             (~sent, "square-open", SKIPPED, marks[2]))
    for mask, symbol, colour, name in kinds:
        r, c = np.nonzero(mask)
        on_token, on_expert = [rows[i] for i in r], [expert_names[e] for e in ex[r, c]]
        data.append({"type": "scatter", "mode": "markers", "name": name,
                     "x": on_token if across else on_expert, "y": on_expert if across else on_token,
                     "marker": {"symbol": symbol, "size": 15, "color": colour, "line": {"width": 3, "color": colour}},
                     "hoverinfo": "skip", "showlegend": True})
    legend = {"legend": {"orientation": "h", "y": -0.02, "yanchor": "top"}, "margin": {"t": 100, "b": 60}}
    # The cells fill the axes: left to plotly, the markers' size widened them by most of a cell.
    n, e = len(rows), len(expert_names)
    if across:
        layout = {"yaxis": {"range": [e - 0.5, -0.5], "type": "category", "dtick": 1},
                  "xaxis": {"side": "top", "type": "category", "tickangle": 0, "range": [-0.5, n - 0.5],
                            **token_axis(n)}, **legend}
        return make(data, layout, title, max(height, 180 + 40 * e))
    # Every token named (up to 48), each row taller than its label.
    height = max(height, 180 + (token_font(n) + 10) * n)
    layout = {"yaxis": {"range": [n - 0.5, -0.5], "type": "category", **token_axis(n)},
              "xaxis": {"side": "top", "type": "category", "tickangle": 0, "range": [-0.5, e - 0.5]}, **legend}
    return make(data, layout, title, height)


def load_bars(wanted, load, capacity: int | None, *, expert_names: list[str], names: tuple[str, str, str],
              title: str, y_title: str, height: int = 360) -> Figure:
    """Per expert: assignments processed (solid) and turned away (stacked on top), with the
    capacity as a dashed line."""
    w, done = array(wanted), array(load)
    data = [{"type": "bar", "x": expert_names, "y": done, "name": names[0], "marker": {"color": "#0068c9"},
             "hovertemplate": f"%{{x}}: %{{y:d}}<extra>{names[0]}</extra>"},
            {"type": "bar", "x": expert_names, "y": w - done, "name": names[1], "marker": {"color": "#ff4b4b"},
             "hovertemplate": f"%{{x}}: %{{y:d}}<extra>{names[1]}</extra>"}]
    # The legend under the axis: above the plot it ran into a one-line title at 1440 px (E1 #3).
    layout = {"barmode": "stack", "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
              "xaxis": {"type": "category", "tickangle": 0},
              "legend": {"orientation": "h", "y": -0.12, "yanchor": "top"}, "margin": {"b": 90}}
    # On the same category axis: a second, overlaid axis costs a redraw. With no limit the line is
    # there but hidden (legend too): every capacity's figure has the same traces (E1's live frames).
    data.append({"type": "scatter", "mode": "lines", "x": expert_names,
                 "y": array([math.nan if capacity is None else capacity] * len(expert_names)), "name": names[2],
                 "line": {"dash": "dash", "color": "#31333F", "width": 2, "shape": "hvh"},
                 "hoverinfo": "skip", "visible": capacity is not None})
    return make(data, layout, title, height)


def count_grid(counts, rows: list[str], cols: list[str], *, names: tuple[str, str, str], title: str,
               fmt: str = "d", axis_titles: bool = True, height: int = 380) -> Figure:
    """A small table of numbers as a heatmap with every number written in its cell
    (device -> device traffic; layer x expert load)."""
    z = array(counts)
    text = [[format(v, ",.0f" if fmt == "d" else fmt) for v in row] for row in z.tolist()]
    trace = {"type": "heatmap", "z": z, "x": cols, "y": rows, "text": text, "texttemplate": "%{text}",
             "textfont": {"size": 13}, "colorscale": WEIGHTS_SCALE, "zmin": 0.0, "xgap": 1, "ygap": 1,
             "hovertemplate": f"{names[0]}: %{{y}}<br>{names[1]}: %{{x}}<br>{names[2]}: %{{text}}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category"},
              "xaxis": {"side": "top", "type": "category", "tickangle": 0},
              "margin": {"t": 110 if title else 60}}
    if axis_titles:
        layout["yaxis"]["title"] = {"text": names[0]}
        layout["xaxis"]["title"] = {"text": names[1]}
    return make([trace], layout, title, height)


def memory_compute(points: list[dict], *, names: tuple[str, str], series: tuple[str, str, str], title: str,
                   height: int = 560) -> Figure:
    """Each model as a point: GiB to hold all its weights (x) against GFLOP per token (y),
    both on log axes. The dashed line is where every weight held is used once per token
    (a dense model: 2 bytes and 2 FLOPs per weight, so GFLOP = 2^30 / 10^9 x GiB); a mixture
    of experts sits below it, by the factor total / active. A point's "label" (default its
    title) is written beside it, at its "position" (default middle right); "" leaves it to the
    hover. ``series``: dense, mixture of experts, the line's name."""
    data = []
    gib = [p["bytes"] / 2**30 for p in points]
    ends = np.array([min(gib) / 2, max(gib) * 2])
    data.append({"type": "scatter", "mode": "lines", "name": series[2], "x": array(ends),
                 "y": array(ends * 2**30 / 1e9), "line": {"dash": "dash", "color": "#7f7f7f", "width": 1.5},
                 "hoverinfo": "skip"})
    for moe, name, symbol in ((False, series[0], "circle"), (True, series[1], "diamond")):
        pts = [p for p in points if p["moe"] == moe]
        data.append({"type": "scatter", "mode": "markers+text", "name": name,
                     "x": array([p["bytes"] / 2**30 for p in pts]),
                     "y": array([p["flops_per_token"] / 1e9 for p in pts]),
                     "text": [p.get("label", p["title"]) for p in pts], "customdata": [p["title"] for p in pts],
                     "textposition": [p.get("position", "middle right") for p in pts], "cliponaxis": False,
                     "marker": {"symbol": symbol, "size": 13},
                     "hovertemplate": "%{customdata}<br>" + f"{names[0]}: %{{x:.3g}}<br>"
                                      f"{names[1]}: %{{y:.3g}}<extra></extra>"})
    # Both ranges start a third of a decade before the first tick: a tick label on each axis
    # at the corner they share would meet the other axis' first label.
    xs = np.log10(np.concatenate([ends, gib]))
    ys = np.log10(np.concatenate([ends * 2**30 / 1e9, [p["flops_per_token"] / 1e9 for p in points]]))
    layout = {"xaxis": {"type": "log", "dtick": 1, "title": {"text": names[0]},
                        "range": [float(np.floor(xs.min())) - 0.35, float(xs.max()) + 0.1]},
              "yaxis": {"type": "log", "dtick": 1, "title": {"text": names[1]},
                        "range": [float(np.floor(ys.min())) - 0.35, float(ys.max()) + 0.1]},
              "margin": {"r": 110, "b": 150}, "legend": {"orientation": "h", "y": -0.22, "yanchor": "top"}}
    return make(data, layout, title, height)
