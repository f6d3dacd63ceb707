"""KV cache pictures: one decoding step from inside, cost curves, the memory calculator."""
from __future__ import annotations

import numpy as np

from viz.common import DIVERGING_SCALE, WEIGHTS_SCALE, Figure, array, label, line_mode, make

# Work the cache saves: drawn in greys, so the eye goes to what a cached step computes.
GHOST_SCALE = [[0.0, "#f4f4f4"], [1.0, "#8c8c8c"]]
NEW_EDGE = "#d62728"
# The orange >= 3:1 on white, a chart mark that carries meaning (WCAG 1.4.11; was "#ff7f0e", 2.5:1)
CACHED_COLOUR, FULL_COLOUR = "#1f77b4", "#e57614"


def _split_rows(z: np.ndarray, n_new: int) -> tuple[np.ndarray, np.ndarray]:
    """(the rows before the last ``n_new``, the last ``n_new``). Each is its own trace, with only
    its own rows: plotly colours every cell of a trace's z, and blank rows cost as much as drawn
    ones (D2's live slider redraws all six panels on every step)."""
    cut = z.shape[0] - n_new
    return z[:cut], z[cut:]


def cache_step(q, k, v, weights, n_new: int, tokens: list[str], *, titles: tuple[str, str, str, str],
               value_names: tuple[str, str, str], hover_names: tuple[str, str, str],
               rows: int | None = None, limit: float | None = None, height: int | None = None) -> Figure:
    """Q, K, V (S, d_head) and the attention weights (S, S) of one head after one step.

    The last ``n_new`` rows are what this step computed (framed in red); earlier rows of Q
    and of the weights are drawn grey: recomputing the prefix would produce them again,
    the cache never does. K and V keep their colours: their old rows are read back.
    Traces, in order: 0 Q past, 1 Q new, 2 K, 3 V, 4 weights past, 5 weights new (past and new
    traces hold only their own rows, at their positions on y).

    ``rows``: the panels' height in positions (the cache after the last step shown): the rows past
    this step's S are empty and unlabelled, so every step of a run is drawn in the same frame and
    the cache fills it row by row (the live slider then redraws data, not the page's layout).
    ``limit``: the colour range ±limit of Q, K and V (default: this step's largest |value|); one
    limit for all steps keeps a cached row's colours as they were when it was written.
    """
    q, k, v, w = array(q), array(k), array(v), array(weights)
    s, d = k.shape
    n = max(rows or s, s)
    w = np.where(np.tril(np.ones((s, s), dtype=bool)), w, np.nan).astype(np.float32)  # blank above the diagonal
    if limit is None:
        limit = float(max(np.abs(q).max(), np.abs(k).max(), np.abs(v).max(), 1e-6))
    # Positions are numbers on axes fixed at all n of them; the data holds the S rows computed so far.
    # (A category axis with more categories than a heatmap has rows fails in plotly.js.) The tick
    # labels name each position's token, and a row still to come has its number alone (on the keys'
    # axis, a blank): every step has the same ticks, and the live slider changes only their texts
    # (ui/chart.js paints D2's frames; plotly leaves out a tick whose text is empty).
    rows = array(np.arange(s))
    positions = {"type": "linear", "tickmode": "array", "tickvals": list(range(n))}
    to_come = [str(i) for i in range(s, n)]
    dims = array(np.arange(d))
    pos_name, dim_name, value_name = value_names
    values_hover = f"{pos_name}: %{{y}}<br>{dim_name}: %{{x}}<br>{value_name}: %{{z:.3f}}<extra></extra>"
    q_name, k_name, w_name = hover_names
    weights_hover = f"{q_name}: %{{y}}<br>{k_name}: %{{x}}<br>{w_name}: %{{z:.3f}}<extra></extra>"
    cells = {"hoverongaps": False}   # no hover on the blank above the diagonal
    signed = {"colorscale": DIVERGING_SCALE, "zmin": -limit, "zmax": limit, "showscale": False, **cells}
    q_past, q_new = _split_rows(q, n_new)
    w_past, w_new = _split_rows(w, n_new)
    past, new = _split_rows(rows, n_new)
    data = [
        {"type": "heatmap", "z": q_past, "x": dims, "y": past, "colorscale": GHOST_SCALE, "showscale": False,
         "hovertemplate": values_hover, "xaxis": "x", "yaxis": "y", **cells},
        {"type": "heatmap", "z": q_new, "x": dims, "y": new, **signed, "hovertemplate": values_hover,
         "xaxis": "x", "yaxis": "y"},
        {"type": "heatmap", "z": k, "x": dims, "y": rows, **signed, "hovertemplate": values_hover,
         "xaxis": "x2", "yaxis": "y"},
        {"type": "heatmap", "z": v, "x": dims, "y": rows, **signed, "hovertemplate": values_hover,
         "xaxis": "x3", "yaxis": "y"},
        {"type": "heatmap", "z": w_past, "x": rows, "y": past, "colorscale": GHOST_SCALE, "zmin": 0, "zmax": 1,
         "showscale": False, "hovertemplate": weights_hover, "xaxis": "x4", "yaxis": "y", **cells},
        {"type": "heatmap", "z": w_new, "x": rows, "y": new, "colorscale": WEIGHTS_SCALE, "zmin": 0, "zmax": 1,
         "hovertemplate": weights_hover, "xaxis": "x4", "yaxis": "y", **cells,
         "colorbar": {"thickness": 12, "len": 0.6}},
    ]
    domains = [(0.0, 0.16), (0.205, 0.365), (0.41, 0.57), (0.63, 1.0)]
    layout: dict = {"yaxis": {**positions, "range": [n - 0.5, -0.5],
                              "ticktext": [f"{i} {label(t)}" for i, t in enumerate(tokens)] + to_come,
                              "showgrid": False,
                              "zeroline": False, "tickfont": {"size": 13}, "anchor": "x"}}
    notes, frames = [], []
    for i, ((x0, x1), title) in enumerate(zip(domains, titles, strict=True)):
        axis = "xaxis" if i == 0 else f"xaxis{i + 1}"
        ref = "x" if i == 0 else f"x{i + 1}"
        # value panels: dimensions need no labels; the weights panel names its keys below
        layout[axis] = {"domain": [x0, x1], "anchor": "y", "showgrid": False, "zeroline": False,
                        **({**positions, "range": [-0.5, n - 0.5], "tickangle": 0, "tickfont": {"size": 12},
                            "showticklabels": n <= 12,
                            # over 12 keys: no labels, so no marks either (24 bare marks read as noise);
                            # key j is the row named j on the left
                            **({} if n <= 12 else {"ticks": ""}),
                            "ticktext": [label(t) for t in tokens] + [" "] * len(to_come)}
                           if i == 3 else {"visible": False})}
        # the weights' title ends at the right edge: centred on its wide panel it met the V cache's
        notes.append({"text": title, "x": x1 if i == 3 else (x0 + x1) / 2, "y": 1.0, "xref": "paper",
                      "yref": "paper", "xanchor": "right" if i == 3 else "center",
                      "yanchor": "bottom", "yshift": 6, "showarrow": False, "font": {"size": 13}})
        width = s if i == 3 else d
        frames.append({"type": "rect", "xref": ref, "yref": "y", "x0": -0.5, "x1": width - 0.5,
                       "y0": s - n_new - 0.5, "y1": s - 0.5, "line": {"color": NEW_EDGE, "width": 2.5}})
    # the room the K and V caches fill in the steps to come, dotted (at every step, the last too: the
    # live slider's frames then have the same shapes, and only the red frames move)
    frames += [{"type": "rect", "xref": ref, "yref": "y", "x0": -0.5, "x1": d - 0.5, "y0": -0.5,
                "y1": n - 0.5, "line": {"color": "#b0b0b0", "width": 1, "dash": "dot"}} for ref in ("x2", "x3")]
    layout.update({"annotations": notes, "shapes": frames, "margin": {"t": 60, "l": 10, "r": 10, "b": 10}})
    return make(data, layout, None, height or max(420, 110 + 24 * n))


def si(value: float) -> str:
    """A count as plotly writes it on an axis (exponent format "B"), three digits.

    Example: si(268_435_456) -> "268M"; si(66_571_000_000) -> "66.6B"
    """
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def cost_lines(x, series: dict[str, np.ndarray], *, title: str | None, x_title: str, y_title: str,
               log_y: bool = False, height: int = 360) -> Figure:
    """Cost per step against context length, one line per way of decoding (cached first).

    On a log axis the range starts at the decade below the smallest value, so every line has a
    labelled tick under it, and each line's last value is written at its end (the cached line of
    a small model lies far under the first decade plotly would label: review D2 #1)."""
    colours = [CACHED_COLOUR, FULL_COLOUR]
    x = array(x)
    data = [{"type": "scatter", "x": x, "y": array(y), "name": name, "mode": line_mode(len(x)),
             "line": {"color": colours[i % 2]}} for i, (name, y) in enumerate(series.items())]
    y_axis = {"title": {"text": y_title}}
    annotations = []
    if log_y:
        values = np.concatenate([np.asarray(y, dtype=float) for y in series.values()])
        values = values[values > 0]
        lo, hi = np.floor(np.log10(values.min())), np.log10(values.max())
        y_axis |= {"type": "log", "dtick": 1, "range": [float(lo), float(hi + 0.15 * (hi - lo) + 0.1)]}
        annotations = [{"x": float(x[-1]), "y": float(np.log10(y[-1])), "text": si(float(y[-1])),
                        "showarrow": False, "xanchor": "right", "yanchor": "bottom",
                        "font": {"color": colours[i % 2]}}
                       for i, y in enumerate(series.values()) if y[-1] > 0]
    layout = {"xaxis": {"title": {"text": x_title}}, "yaxis": y_axis, "annotations": annotations}
    return make(data, layout, title, height)


LABEL_PX = 15                     # a label's height at 12 px
LABEL_SLOTS = (0.0, 0.36, 1.0)    # where labels may sit across the plot (paper x): two starts, one end
PLOT_PX = 440                     # the plot's width at its narrowest (half the page at 1440)
CHAR_PX = 6.5                     # a Latin character at 12 px, about


def label_places(limits: list[tuple[str, float]], y_max: float, height: int) -> list[tuple[str, float, float]]:
    """(name, y, x) for each line's label that fits: biggest first, each in the leftmost slot where
    its box (CHAR_PX a character, LABEL_PX tall) stays inside the plot and meets no label placed before. With a large
    batch the lines bunch near the bottom of the axis, and labels at one x lay on top of each
    other (review D2 #4); a label that fits nowhere is left out (its line is still drawn).

    Example: 131 and 74.5 GiB on an axis to 1,100 GiB, 420 px tall, are ~15 px apart, so
             74.5 GiB's label starts at the second slot, x = 0.36
    """
    px_per_gib = max(height - 130, 100) / y_max          # the plot area is the figure less its margins
    boxes: list[tuple[float, float, float, float]] = []   # x0, x1, y0, y1 in px
    placed = []
    for name, gib in sorted(limits, key=lambda item: -item[1]):
        if gib > y_max:
            continue
        y0 = gib * px_per_gib
        for slot in LABEL_SLOTS:
            width = CHAR_PX * len(name)
            x0 = PLOT_PX - width if slot == 1.0 else slot * PLOT_PX      # the last slot ends at the right edge
            box = (x0, x0 + width, y0, y0 + LABEL_PX)
            if box[1] <= PLOT_PX and all(box[1] <= b[0] or b[1] <= box[0] or box[3] <= b[2] or b[3] <= box[2] for b in boxes):
                boxes.append(box)
                placed.append((name, gib, slot))
                break
    return placed


def memory_lines(tokens, series: dict[str, np.ndarray], limits: list[tuple[str, float]], *,
                 title: str | None, x_title: str, y_title: str, height: int = 420) -> Figure:
    """Memory (GiB) against context length, with a dashed horizontal line per GPU memory size.

    Traces: one per ``series`` entry, then one holding every ``limits`` line (name, GiB) as
    segments separated by NaN (a trace costs ~0.4 ms to build; the names are annotations).
    """
    x = array(tokens)
    # Where the cache dwarfs the weights the lines lie on each other: the first is drawn wide and
    # pale, the next thin and dotted on top of it, so both stay visible.
    looks = [{"width": 7, "opacity": 0.45}, {"width": 2.5, "dash": "dot", "opacity": 1.0}]
    data = [{"type": "scatter", "x": x, "y": array(y), "name": name, "mode": "lines",
             "line": {k: v for k, v in looks[min(i, 1)].items() if k != "opacity"}, "opacity": looks[min(i, 1)]["opacity"],
             "hovertemplate": f"{name}<br>%{{x:,.0f}}: %{{y:.2f}} GiB<extra></extra>"}
            for i, (name, y) in enumerate(series.items())]
    top = max(float(np.max(array(y))) for y in series.values())
    y_max = max(top, min(gib for _, gib in limits)) * 1.1 if limits else top * 1.1
    if limits:
        gx = np.tile([x[0], x[-1], np.nan], len(limits))
        gy = np.repeat([gib for _, gib in limits], 3).astype(np.float64)
        gy[2::3] = np.nan
        names = [name for name, _ in limits for _ in range(3)]   # a label left out still shows on hover
        data.append({"type": "scatter", "x": array(gx), "y": array(gy), "mode": "lines", "showlegend": False,
                     "line": {"dash": "dash", "width": 1.5, "color": "#7f7f7f"}, "text": names,
                     "hovertemplate": "%{text}<extra></extra>"})
    notes = [{"text": name, "x": x, "xref": "paper", "y": gib, "yref": "y", "xanchor": "right" if x == 1.0 else "left",
              "yanchor": "bottom", "showarrow": False, "font": {"size": 12, "color": "#555"}}
             for name, gib, x in label_places(limits, y_max, height)]
    layout = {"xaxis": {"title": {"text": x_title}, "separatethousands": True},
              "yaxis": {"title": {"text": y_title}, "range": [0, y_max]}, "annotations": notes}
    return make(data, layout, title, height)
