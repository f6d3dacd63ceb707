"""Sparse-attention pictures: a gallery of masks, their densities, a receptive field over
layers, and measured costs on log-log axes."""
from __future__ import annotations

import numpy as np

from viz.common import WEIGHTS_SCALE, Figure, array, line_mode, make, pool

KEPT_SCALE = [[0.0, "#ffffff"], [1.0, "#0068c9"]]


def mask_gallery(masks: list, titles: list[str], *, cols: int = 4, hover: str = "",
                 height_per_row: int = 200) -> Figure:
    """One small (N, N) mask per panel, all on one pair of axes (as ``viz.attention.head_grid``):
    kept pairs dark, skipped pairs white. Above 64 × 64 a panel is pooled, and a pooled cell
    shows the fraction of its pairs that are kept."""
    shown = [pool(array(m), 64 * 64) for m in masks]
    # Unpooled, a mask is 0/1: sent as bytes, a quarter of float32 (the gallery is the page's
    # largest chart: 8 × 64 × 64 cells). Pooled cells are fractions and stay float32.
    shown = [(z.astype(np.uint8), f) if f == 1 else (z, f) for z, f in shown]
    n = shown[0][0].shape[0]
    rows = -(-len(masks) // cols)
    gap = max(2.0, 0.42 * n)      # room for a two-line title above each panel
    step = n + gap
    data, notes = [], []
    for i, (z, _) in enumerate(shown):
        r, c = divmod(i, cols)
        data.append({"type": "heatmap", "z": z, "x0": c * step, "dx": 1, "y0": r * step, "dy": 1,
                     "zmin": 0, "zmax": 1, "colorscale": KEPT_SCALE, "showscale": False,
                     "hovertemplate": f"{titles[i]}<br>{hover}: %{{z:.2f}}<extra></extra>"})
        notes.append({"text": titles[i], "x": c * step + (n - 1) / 2, "y": r * step - 0.8, "xref": "x",
                      "yref": "y", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                      "font": {"size": 13}})
    # A frame round each N x N square (one line trace for all: shapes are laid out again on
    # every redraw): without it a band floats on white and the square's edge is invisible.
    fx, fy = [], []
    for i in range(len(shown)):
        r, c = divmod(i, cols)
        x0, y0 = c * step - 0.5, r * step - 0.5
        fx += [x0, x0 + n, x0 + n, x0, x0, None]
        fy += [y0, y0, y0 + n, y0 + n, y0, None]
    data.append({"type": "scatter", "mode": "lines", "x": fx, "y": fy, "hoverinfo": "skip",
                 "showlegend": False, "line": {"color": "#555", "width": 1}})
    layout = {
        "xaxis": {"visible": False, "range": [-1, cols * step - gap]},
        "yaxis": {"visible": False, "range": [rows * step - gap, -0.42 * n - 2]},
        "annotations": notes,
        "margin": {"t": 4, "l": 4, "b": 4, "r": 4},
    }
    return make(data, layout, None, height_per_row * rows + 20)


def density_bars(names: list[str], densities: list[float], *, title: str | None = None,
                 x_title: str = "", height: int = 340) -> Figure:
    """Horizontal bars: the share of the N² pairs each pattern computes, printed as a percentage."""
    d = array(densities)
    trace = {"type": "bar", "orientation": "h", "x": d * 100, "y": names,
             "text": [f"{100 * v:.1f} %" for v in densities], "textposition": "outside",
             "cliponaxis": False, "marker": {"color": "#0068c9"},
             "hovertemplate": "%{y}: %{x:.2f} %<extra></extra>"}
    top = float(d.max()) * 100 if len(d) else 100.0
    layout = {"xaxis": {"title": {"text": x_title}, "range": [0, max(top * 1.25, 1.0)]},
              "yaxis": {"autorange": "reversed", "type": "category"}, "bargap": 0.25}
    return make([trace], layout, title, height)


def receptive_map(reach, query: int, *, title: str | None = None, x_title: str = "",
                  y_title: str = "", hover: tuple[str, str] = ("position", "layer"),
                  height: int = 380) -> Figure:
    """(L, N) reach as a heatmap, layer 1 at the bottom and layer L at the top, as layers are
    stacked: a position is coloured from the first layer after which its token can reach the
    query; the query's column is outlined. The layer axis's title is written level above the
    axis, never turned sideways (a rotated CJK title reads sideways)."""
    z = array(reach)
    layers, n = z.shape
    trace = {"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": 1, "dy": 1, "zmin": 0, "zmax": 1,
             "colorscale": WEIGHTS_SCALE, "showscale": False, "xgap": 0.5 if n <= 64 else 0,
             "ygap": 1 if layers <= 24 else 0,
             "hovertemplate": f"{hover[0]}: %{{x}}<br>{hover[1]}: %{{y}}<extra></extra>"}
    mark = {"type": "rect", "x0": query - 0.5, "x1": query + 0.5, "y0": 0.5, "y1": layers + 0.5,
            "xref": "x", "yref": "y", "line": {"color": "#ff4b4b", "width": 2}}
    layout = {"xaxis": {"title": {"text": x_title}, "range": [-0.5, n - 0.5], "showgrid": False},
              "yaxis": {"range": [0.5, layers + 0.5], "showgrid": False,
                        "dtick": 1 if layers <= 16 else None},
              "annotations": [{"text": y_title, "x": 0, "y": 1, "xref": "paper", "yref": "paper",
                               "xanchor": "right", "yanchor": "bottom", "yshift": 8, "showarrow": False}],
              "shapes": [mark]}
    return make([trace], layout, title, height)


def loglog(ns: list[int], series: dict[str, list[float | None]], *, title: str | None = None,
           y_title: str = "", x_title: str = "N", height: int = 460) -> Figure:
    """Measured costs against N on log-log axes: a cost that grows as N^p is a straight line of
    slope p. A size that was skipped (None) leaves a gap."""
    x = array(ns)
    data = []
    for name, ys in series.items():
        y = np.array([np.nan if v is None else v for v in ys], dtype=np.float32)
        data.append({"type": "scatter", "x": x, "y": y, "name": name, "mode": line_mode(len(ns)),
                     "connectgaps": False})
    layout = {"xaxis": {"title": {"text": x_title}, "type": "log", "tickvals": x,
                        "ticktext": [f"{n:,}" for n in ns]},
              # Labels on the powers of ten only: plotly's minor labels (2, 5, 2, 5 ...) crowd it.
              "yaxis": {"title": {"text": y_title}, "type": "log", "dtick": 1, "minor": {"showgrid": True}},
              # Below the axis: four or five names above the plot would cover the title.
              "legend": {"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top"},
              "margin": {"b": 140}}
    return make(data, layout, title, height)


def band_weights(weights, *, title: str | None = None, x_title: str = "", y_title: str = "",
                 hover: tuple[str, str, str] = ("query", "slot", "weight"), height: int = 380) -> Figure:
    """The banded kernel's weights as it stores them: one row per query, one column per key slot
    of its chunk (L = 3b), 0..1. A tall thin matrix where dense attention has an (N, N) square.
    Slots whose weight is exactly 0 (outside the window, past the ends) are drawn grey, apart
    from small weights (white): trace 0 holds the weights, trace 1 marks the exact zeros."""
    z, factor = pool(array(weights))
    rows, cols = z.shape
    zero = np.where(z == 0, 1.0, np.nan).astype(np.float32)                      # (rows, cols)
    trace = {"type": "heatmap", "z": z, "x0": 0, "dx": factor, "y0": 0, "dy": factor, "zmin": 0, "zmax": 1,
             "colorscale": WEIGHTS_SCALE,
             "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}<extra></extra>"}
    zeros = {"type": "heatmap", "z": zero, "x0": 0, "dx": factor, "y0": 0, "dy": factor, "zmin": 0, "zmax": 1,
             "colorscale": [[0, "#c8c8c8"], [1, "#c8c8c8"]], "showscale": False,
             "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: 0<extra></extra>"}
    layout = {"xaxis": {"title": {"text": x_title}, "showgrid": False, "range": [-0.5, cols * factor - 0.5]},
              "yaxis": {"autorange": "reversed", "showgrid": False},
              "annotations": [{"text": y_title, "x": 0, "y": 1, "xref": "paper", "yref": "paper",
                               "xanchor": "right", "yanchor": "bottom", "yshift": 8, "showarrow": False}]}
    return make([trace, zeros], layout, title, height)
