"""Lesson F1's pictures: several layer × head score grids in one chart, and losses along a probe."""
from __future__ import annotations

import numpy as np

from viz.attention import weights_bar
from viz.common import WEIGHTS_SCALE, Figure, array, make


def score_panels(
    grids: list,
    *,
    titles: list[str],
    selected: tuple[int, int] | None,
    cols: int = 2,
    axis_titles: tuple[str, str] = ("layer", "head"),
    value_name: str = "score",
    colorbar_title: str | None = None,
    cell_px: int = 16,
) -> Figure:
    """One (L, H) grid of scores in [0, 1] per panel, ``grids`` a list of them, drawn as H × L
    heatmaps (layers left to right, heads top to bottom, as ``viz.attention.layer_head_map``) on
    one pair of axes, ``cols`` panels a row, all on one 0..1 colour scale. The ``selected``
    (layer, head), if any, is outlined in every panel. Each cell's customdata is "layer,head" (a click can
    pick that head). NaN (no query to average over) is blank.

    Example: score_panels([np.zeros((30, 9))] * 4, titles=list("abcd"), selected=(18, 6))
             -> four heatmaps, each of z shape (9, 30)
    """
    shown = [array(g) for g in grids]
    n_layers, n_heads = shown[0].shape
    gap_x, gap_y = 2.0, 3.2                                    # blank cells between panels (room for a title)
    step_x, step_y = n_layers + gap_x, n_heads + gap_y
    rows = -(-len(shown) // cols)
    layer_name, head_name = axis_titles
    cells = [[f"{i},{j}" for i in range(n_layers)] for j in range(n_heads)]
    data, notes, shapes = [], [], []
    for k, grid in enumerate(shown):
        r, c = divmod(k, cols)
        x0, y0 = c * step_x, r * step_y
        z = np.where(np.isfinite(grid), grid, np.nan).T.astype(np.float32)          # (H, L)
        data.append({"type": "heatmap", "z": z, "x0": x0, "dx": 1, "y0": y0, "dy": 1, "zmin": 0.0, "zmax": 1.0,
                     "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1, "showscale": k == 0,
                     **({"colorbar": weights_bar(1.0, colorbar_title)} if k == 0 else {}),
                     "name": titles[k], "customdata": cells,
                     "hovertemplate": f"{titles[k]}<br>{layer_name}, {head_name}: %{{customdata}}<br>"
                                      f"{value_name}: %{{z:.3f}}<extra></extra>"})
        notes.append({"text": titles[k], "x": x0 + (n_layers - 1) / 2, "y": y0 - 0.7, "xref": "x", "yref": "y",
                      "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 14}})
        if selected is not None:
            layer, head = selected
            shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": x0 + layer - 0.5, "x1": x0 + layer + 0.5,
                           "y0": y0 + head - 0.5, "y1": y0 + head + 0.5, "line": {"color": "#d62728", "width": 2.5}})
    every = 1 if n_layers <= 12 else 5
    layer_ticks = list(range(0, n_layers, every))
    # Every other head named beyond 4: presenter mode draws ticks at 18 px, taller than a row.
    head_ticks = list(range(0, n_heads, 1 if n_heads <= 4 else 2))
    layout = {
        "xaxis": {"tickvals": [c * step_x + i for c in range(cols) for i in layer_ticks],
                  "ticktext": [str(i) for _ in range(cols) for i in layer_ticks], "tickfont": {"size": 11},
                  "title": {"text": layer_name}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, cols * step_x - gap_x - 0.5]},
        "yaxis": {"tickvals": [r * step_y + j for r in range(rows) for j in head_ticks],
                  "ticktext": [str(j) for _ in range(rows) for j in head_ticks], "tickfont": {"size": 11},
                  "title": {"text": head_name}, "showgrid": False, "zeroline": False,
                  "range": [rows * step_y - gap_y - 0.5, -2.6]},
        "annotations": notes,
        "shapes": shapes,
        "margin": {"t": 10, "b": 60},
    }
    return make(data, layout, None, 90 + round(cell_px * rows * step_y))


def probe_losses(series: dict[str, np.ndarray], length: int, *, title: str | None, names: tuple[str, str],
                 x_title: str, y_title: str, colours: list[str] | None = None, height: int = 380) -> Figure:
    """Next-token loss at each target position of a probe (<bos>, one copy of ``length`` tokens,
    the same again), one line per named series (``colours`` in their order), the first copy
    shaded and both copies named above the plot (``names``).

    Example: probe_losses({"model": np.ones(40)}, 20, ...) -> one line over positions 1 .. 40
    """
    first = {"type": "rect", "xref": "x", "yref": "paper", "x0": 0.5, "x1": length + 0.5, "y0": 0, "y1": 1,
             "fillcolor": "#f2f2f2", "line": {"width": 0}, "layer": "below"}
    labels = [{"text": text, "x": x, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,
               "font": {"size": 13}} for text, x in ((names[0], (length + 1) / 2), (names[1], length + (length + 1) / 2))]
    x = np.arange(1, 2 * length + 1)                           # the position of each target token
    mode = "lines+markers" if length <= 24 else "lines"
    data = [{"type": "scatter", "x": array(x), "y": array(y), "name": name, "mode": mode, "marker": {"size": 5},
             **({"line": {"color": colours[i]}, "marker": {"size": 5, "color": colours[i]}} if colours else {})}
            for i, (name, y) in enumerate(series.items())]
    layout = {"xaxis": {"title": {"text": x_title}, "range": [0.5, 2 * length + 0.5]},
              "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
              "shapes": [first], "annotations": labels,
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"t": 90 if title else 34, "b": 62}}       # make() adds the legend's rows below
    return make(data, layout, title, height)
