"""Attention pictures: weight heatmaps with tokens on both axes, head grids, histograms."""
from __future__ import annotations

import numpy as np

from viz.common import DIVERGING_SCALE, WEIGHTS_SCALE, Figure, array, line_mode, make, pool, unique_labels


def hover(query: str, key: str, value: str, fmt: str = ".3f") -> str:
    return f"{query}: %{{y}}<br>{key}: %{{x}}<br>{value}: %{{z:{fmt}}}<extra></extra>"


# --- Every token named, masked cells that look masked (issue 11) -------------------------------
MAX_NAMED = 48               # up to this many tokens every one is named on the axis
MASKED_COLOUR = "#5f5f5f"    # a cell the mask closed: -inf before the softmax, exactly 0 after it


def token_font(n: int) -> int:
    """Tick font size that lets n token labels sit side by side in a ~480 px wide plot.

    Example: token_font(11) -> 14; token_font(48) -> 9
    """
    return 14 if n <= 16 else 12 if n <= 24 else 10 if n <= 36 else 9


def token_axis(n: int) -> dict:
    """Axis settings that name every one of ``n`` tokens (plotly skips labels that would crowd
    on a category axis), up to MAX_NAMED; beyond that plotly picks which to show."""
    return {"dtick": 1, "tickfont": {"size": token_font(n)}} if n <= MAX_NAMED else {}


def masked_layer(blocked, x, y, text: str | None = None, **axes) -> dict:
    """A heatmap trace that paints the cells the mask closed (``blocked`` True) in MASKED_COLOUR,
    over a trace whose scale would draw them like any value (white for 0 or for −∞ left blank)."""
    b = np.asarray(blocked, dtype=bool)
    trace = {"type": "heatmap", "z": array(np.where(b, 1.0, np.nan)), "x": x, "y": y, "zmin": 0, "zmax": 1,
             "colorscale": [[0, MASKED_COLOUR], [1, MASKED_COLOUR]], "showscale": False, "xgap": 1, "ygap": 1,
             "hoverinfo": "skip", **axes}
    if text:
        trace.update({"text": np.where(b, text, "").tolist(), "texttemplate": "%{text}",
                      "textfont": {"color": "white", "size": 11}})
    return trace


def heatmap(
    values,
    row_tokens: list[str],
    col_tokens: list[str],
    *,
    title: str | None = None,
    hover_names: tuple[str, str, str] = ("query", "key", "weight"),
    weights: bool = True,
    height: int = 460,
    masked=None,
) -> Figure:
    """A (rows, cols) matrix with a token on every row and column.

    ``masked`` (rows, cols) bool, True where a mask closed the cell: drawn in MASKED_COLOUR,
    not in the colour of a weight of 0.

    ``weights=True`` fixes the colour scale to 0..1, so two heatmaps of weights can be
    compared by eye; otherwise a diverging scale centred on 0 (scores; -inf drawn blank).
    Above ``viz.common.MAX_CELLS`` the matrix is pooled and the token axes become positions.
    """
    z = array(values)
    z = np.where(np.isfinite(z), z, np.nan).astype(np.float32)
    z, factor = pool(z)
    if factor == 1:
        x, y, kind = unique_labels(col_tokens), unique_labels(row_tokens), "category"
    else:
        x, y, kind = array(np.arange(z.shape[1]) * factor), array(np.arange(z.shape[0]) * factor), "linear"
    scale = {"zmin": 0.0, "zmax": 1.0, "colorscale": WEIGHTS_SCALE} if weights else {
        "colorscale": DIVERGING_SCALE, "zmid": 0.0}
    trace = {"type": "heatmap", "z": z, "x": x, "y": y, "hovertemplate": hover(*hover_names),
             "xgap": 1, "ygap": 1, **scale}
    layout = {"yaxis": {"autorange": "reversed", "type": kind},
              "xaxis": {"side": "top", "type": kind, "tickangle": 0}}
    data = [trace]
    if kind == "category":
        # Every token named, even in a narrow panel with a colour bar (plotly would skip every other);
        # the chart grows so that each row keeps room for its label.
        n = max(z.shape)
        layout["xaxis"].update(token_axis(n))
        layout["yaxis"].update(token_axis(n))
        height = max(height, (90 if title else 40) + 40 + (token_font(n) + 4) * z.shape[0])
        if masked is not None:
            data.append(masked_layer(masked, x, y))
    if title:
        layout["margin"] = {"t": 90}
    return make(data, layout, title, height)


def head_grid(
    weights,
    tokens: list[str],
    *,
    titles: list[str],
    cols: int = 4,
    hover_names: tuple[str, str, str] = ("query", "key", "weight"),
    height_per_row: int = 260,
) -> Figure:
    """One small 0..1 heatmap per head, ``weights`` is (H, N, N): one trace per head, all on
    one pair of axes, each panel shifted by its place in the grid.

    One axis pair instead of H subplots: the browser lays out and redraws a grid of many
    heads several times faster (a slider that changes H rebuilds every panel).
    """
    w = array(weights)
    h = w.shape[0]
    # More than 16 tokens: one head a row, full width, so every token keeps a readable label.
    cols = min(cols, h) if len(tokens) <= 16 else 1
    if len(tokens) > 16:
        height_per_row = max(height_per_row, 50 + (token_font(len(tokens)) + 4) * len(tokens))
    rows = -(-h // cols)
    shown = [pool(w[i], 64 * 64) for i in range(h)]
    n, factor = shown[0][0].shape[0], shown[0][1]
    gap = max(1.5, 0.15 * n)                                    # blank space between panels, in cells
    step = n + gap
    query, key, value = hover_names
    labels = unique_labels(tokens) if factor == 1 else [str(j * factor) for j in range(n)]
    cells = [[f"{labels[r]} → {labels[c]}" for c in range(n)] for r in range(n)]
    data, notes = [], []
    for i, (z, _) in enumerate(shown):
        r, c = divmod(i, cols)
        data.append({"type": "heatmap", "z": z, "x0": c * step, "dx": 1, "y0": r * step, "dy": 1,
                     "zmin": 0, "zmax": 1, "colorscale": WEIGHTS_SCALE, "showscale": i == 0,
                     "customdata": cells if n <= 32 else None,
                     "hovertemplate": (f"{titles[i]}<br>{query} → {key}: %{{customdata}}<br>{value}: %{{z:.3f}}"
                                       "<extra></extra>") if n <= 32 else hover(*hover_names)})
        notes.append({"text": titles[i], "x": c * step + (n - 1) / 2, "y": r * step - 0.6, "xref": "x", "yref": "y",
                      "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 14}})
    show = len(tokens) <= MAX_NAMED
    ticks_x = [c * step + j for c in range(cols) for j in range(n)] if show else []
    ticks_y = [r * step + j for r in range(rows) for j in range(n)] if show else []
    layout = {
        "xaxis": {"tickvals": ticks_x, "ticktext": labels * cols if show else [], "tickangle": 0,
                  "tickfont": {"size": min(11, token_font(n))}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, cols * step - gap - 0.5]},
        "yaxis": {"tickvals": ticks_y, "ticktext": labels * rows if show else [],
                  "tickfont": {"size": min(11, token_font(n))},
                  "showgrid": False, "zeroline": False, "range": [rows * step - gap - 0.5, -1.8]},
        "annotations": notes,
        "margin": {"t": 20},
    }
    return make(data, layout, None, height_per_row * rows + 60)


def histogram(series: dict[str, np.ndarray], *, title: str | None = None, x_title: str = "",
              y_title: str = "", nbins: int = 60, height: int = 360) -> Figure:
    """Overlaid density histograms, one per named series, each binned on its own range so a
    narrow series keeps its shape next to a wide one. The browser receives ``nbins``
    densities per series instead of every raw value."""
    data = []
    for name, values in series.items():
        density, edges = np.histogram(array(values).ravel(), bins=nbins, density=True)
        data.append({"type": "bar", "x": array((edges[:-1] + edges[1:]) / 2), "y": array(density),
                     "name": name, "width": float(edges[1] - edges[0]), "opacity": 0.6})
    layout = {"barmode": "overlay", "bargap": 0, "xaxis": {"title": {"text": x_title}},
              "yaxis": {"title": {"text": y_title}}}
    return make(data, layout, title, height)


def lines(x, series: dict[str, np.ndarray], *, title: str | None = None, x_title: str = "",
          y_title: str = "", log_x: bool = False, height: int = 360, markers: bool | None = None) -> Figure:
    """Several named lines over the same x; markers by default only on short lines (line_mode)."""
    x = array(x)
    mode = line_mode(len(x)) if markers is None else ("lines+markers" if markers else "lines")
    data = [{"type": "scatter", "x": x, "y": array(y), "name": name, "mode": mode} for name, y in series.items()]
    layout = {"xaxis": {"title": {"text": x_title}, "type": "log" if log_x else "linear"},
              "yaxis": {"title": {"text": y_title}}}
    return make(data, layout, title, height)


def rect_grid(
    weights,
    row_tokens: list[str],
    col_tokens: list[str],
    *,
    titles: list[str],
    cols: int = 2,
    hover_names: tuple[str, str, str] = ("query", "key", "weight"),
    height_per_row: int = 340,
) -> Figure:
    """One 0..1 heatmap per head of a rectangular (H, N, S) weight tensor: rows are the
    query tokens, columns the key tokens (cross-attention: target down, source across).

    As in ``head_grid``, every panel is a trace on one pair of axes, shifted to its place in
    the grid: moving H redraws one plot area, not H subplots with an axis pair each. The
    source tokens are named under the bottom row, the target tokens left of the first column.
    """
    w = array(weights)
    h, n, s = w.shape
    cols = min(cols, h)
    rows = -(-h // cols)
    gap_x, gap_y = max(1.0, 0.12 * s), max(1.5, 0.15 * n)          # blank space between panels, in cells
    step_x, step_y = s + gap_x, n + gap_y
    x_labels, y_labels = unique_labels(col_tokens), unique_labels(row_tokens)
    query, key, value = hover_names
    cells = [[f"{y_labels[r]} → {x_labels[c]}" for c in range(s)] for r in range(n)]
    data, notes = [], []
    for i in range(h):
        r, c = divmod(i, cols)
        data.append({"type": "heatmap", "z": w[i], "x": array(c * step_x + np.arange(s)),
                     "y": array(r * step_y + np.arange(n)), "zmin": 0, "zmax": 1, "colorscale": WEIGHTS_SCALE,
                     "showscale": i == 0, "xgap": 1, "ygap": 1, "customdata": cells,
                     "hovertemplate": f"{titles[i]}<br>{query} → {key}: %{{customdata}}<br>{value}: %{{z:.3f}}"
                                      "<extra></extra>"})
        notes.append({"text": titles[i], "x": c * step_x + (s - 1) / 2, "y": r * step_y - 0.6, "xref": "x",
                      "yref": "y", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                      "font": {"size": 15}})
    layout = {
        "xaxis": {"tickvals": [c * step_x + j for c in range(cols) for j in range(s)], "ticktext": x_labels * cols,
                  "tickangle": 0, "tickfont": {"size": 12}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, cols * step_x - gap_x - 0.5]},
        "yaxis": {"tickvals": [r * step_y + j for r in range(rows) for j in range(n)], "ticktext": y_labels * rows,
                  "tickfont": {"size": 12}, "showgrid": False, "zeroline": False,
                  "range": [rows * step_y - gap_y - 0.5, -1.6]},
        "annotations": notes,
        "margin": {"t": 20},
    }
    return make(data, layout, None, height_per_row * rows + 60)


def head_bands(
    values,
    tokens: list[str],
    n_heads: int,
    *,
    head_names: list[str],
    title: str | None = None,
    hover_names: tuple[str, str, str] = ("token", "column", "value"),
    height: int = 380,
) -> Figure:
    """An (N, H*d_head) matrix such as the concatenated head outputs, with a line between
    the heads and each band named: the picture of "concat" before W_o."""
    z = array(values)
    n, width = z.shape
    d_head = width // n_heads
    limit = float(np.abs(z).max()) or 1.0
    trace = {"type": "heatmap", "z": z, "x": array(np.arange(width)), "y": unique_labels(tokens),
             "colorscale": DIVERGING_SCALE, "zmin": -limit, "zmax": limit,
             "hovertemplate": hover(*hover_names, fmt=".2f")}
    lines_ = [{"type": "line", "x0": h * d_head - 0.5, "x1": h * d_head - 0.5, "y0": 0, "y1": 1,
               "xref": "x", "yref": "paper", "line": {"color": "black", "width": 3}} for h in range(1, n_heads)]
    notes = [{"text": head_names[h], "x": h * d_head + (d_head - 1) / 2, "y": 1.0, "xref": "x", "yref": "paper",
              "yanchor": "bottom", "showarrow": False, "font": {"size": 14}} for h in range(n_heads)]
    layout = {"yaxis": {"autorange": "reversed", "type": "category"},
              "xaxis": {"title": {"text": hover_names[1]}, "range": [-0.5, width - 0.5]},
              "shapes": lines_, "annotations": notes, "margin": {"t": 90 if title else 40}}
    return make([trace], layout, title, height)


def bars(categories: list[str], series: dict[str, list[float]], *, title: str | None = None,
         y_title: str = "", fmt: str = ",d", height: int = 360) -> Figure:
    """Grouped horizontal bars, one group per category (top to bottom) and one bar per named
    series, each labelled with its value, so that equal bars can be checked by reading.
    The values are the x data of each trace."""
    data = [{"type": "bar", "orientation": "h", "y": categories, "x": array(values), "name": name,
             "texttemplate": f"%{{x:{fmt}}}", "textposition": "outside", "cliponaxis": False,
             "hovertemplate": f"%{{y}}: %{{x:{fmt}}}<extra>{name}</extra>"}
            for name, values in series.items()]
    layout = {"barmode": "group", "xaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
              "yaxis": {"type": "category", "autorange": "reversed"}, "margin": {"r": 70}}
    return make(data, layout, title, height)


def score_map(
    lift,
    scores,
    row_labels: list[str],
    col_labels: list[str],
    *,
    title: str | None = None,
    hover_names: tuple[str, str, str] = ("pattern", "head", "mean weight"),
    height: int = 330,
) -> Figure:
    """A (rows, cols) table of ratios to chance, e.g. heads × patterns, coloured on a log
    scale: white is chance (1×), red is 2× and more, blue is below chance. Each cell is
    written as "2.6×"; hover shows ``scores``, the mean weight itself."""
    ratio = array(lift)
    safe = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
    z = np.clip(np.log2(safe), -2, 2).astype(np.float32)
    text = [["" if not np.isfinite(v) else f"{v:.1f}×" for v in row] for row in safe]
    trace = {"type": "heatmap", "z": z, "x": col_labels, "y": row_labels, "customdata": array(scores),
             "colorscale": DIVERGING_SCALE, "zmin": -2, "zmax": 2, "xgap": 1, "ygap": 1,
             "text": text, "texttemplate": "%{text}", "textfont": {"size": 13},
             "colorbar": {"tickvals": [-2, -1, 0, 1, 2], "ticktext": ["¼×", "½×", "1×", "2×", "4×"]},
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>"
                              f"{hover_names[2]}: %{{customdata:.3f}} (%{{text}})<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category"},
              "xaxis": {"side": "top", "type": "category", "tickangle": -30}, "margin": {"t": 130 if title else 80}}
    return make([trace], layout, title, height)
