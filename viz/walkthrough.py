"""The whole attention computation in one figure: Q, K, V, then scores, weights and weights·V."""
from __future__ import annotations

import numpy as np

from viz.common import DIVERGING_SCALE, WEIGHTS_SCALE, Figure, array, make, unique_labels

# Six panels, two rows of three: what goes in (top), what comes out of each step (bottom).
_COLUMNS = [(0.0, 0.29), (0.355, 0.645), (0.71, 1.0)]
_ROWS = [(0.57, 1.0), (0.0, 0.43)]


def steps_grid(q, k, v, scores, weights, output, tokens: list[str], *, titles: list[str], cell: tuple[int, int],
               hover: tuple[str, str, str], title: str | None = None, height: int = 760) -> Figure:
    """Q, K, V (N, d_k) on top; scores (N, S), weights (N, S) and output (N, d_v) below, each
    on its own axes. One cell (r, c) is framed: row r of Q, row c of K, the cell in scores and
    weights, and row r of the output that the weights mix. Traces 0-5 are the six panels in
    that order; ``titles`` names them. Masked scores (-inf) are drawn blank."""
    labels = unique_labels(tokens)
    r, c = cell
    panels = [q, k, v, scores, weights, output]
    data, layout, shapes, notes = [], {}, [], []
    for i, values in enumerate(panels):
        z = array(values)
        z = np.where(np.isfinite(z), z, np.nan).astype(np.float32)
        square = i in (3, 4)
        x = labels if square else array(np.arange(z.shape[1]))
        n = "" if i == 0 else str(i + 1)
        scale = ({"zmin": 0.0, "zmax": 1.0, "colorscale": WEIGHTS_SCALE} if i == 4
                 else {"colorscale": DIVERGING_SCALE, "zmid": 0.0})
        data.append({"type": "heatmap", "z": z, "x": x, "y": labels, "xaxis": f"x{n}", "yaxis": f"y{n}",
                     "showscale": False, "xgap": 1 if square else 0, "ygap": 1,
                     "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}"
                                      "<extra></extra>", **scale})
        col, row = _COLUMNS[i % 3], _ROWS[i // 3]
        layout[f"xaxis{n}"] = {"domain": list(col), "anchor": f"y{n}", "type": "category" if square else "linear",
                               "showticklabels": square, "tickangle": 0, "side": "top", "showgrid": False,
                               "dtick": 1 if square and len(labels) <= 24 else None}
        layout[f"yaxis{n}"] = {"domain": list(row), "anchor": f"x{n}", "type": "category", "autorange": "reversed",
                               "showticklabels": i % 3 == 0, "dtick": 1 if len(labels) <= 24 else None}
        notes.append({"text": titles[i], "x": (col[0] + col[1]) / 2, "y": row[1], "xref": "paper", "yref": "paper",
                      "yanchor": "bottom", "yshift": 30 if square else 6, "showarrow": False, "font": {"size": 15}})
        # Frame what the chosen cell is made of.
        frame = {"type": "rect", "xref": f"x{n}", "yref": f"y{n}", "line": {"color": "#d62728", "width": 3},
                 "fillcolor": "rgba(0,0,0,0)"}
        width = z.shape[1]
        if i in (0, 5):          # row r of Q, and the output row the weights of row r mix
            shapes.append({**frame, "x0": -0.5, "x1": width - 0.5, "y0": r - 0.5, "y1": r + 0.5})
        elif i in (1, 2):        # row c of K (and of V, which weight (r, c) scales)
            shapes.append({**frame, "x0": -0.5, "x1": width - 0.5, "y0": c - 0.5, "y1": c + 0.5})
        else:                    # the cell itself, in scores and in weights
            shapes.append({**frame, "x0": c - 0.5, "x1": c + 0.5, "y0": r - 0.5, "y1": r + 0.5})
    layout.update({"shapes": shapes, "annotations": notes, "margin": {"t": 100 if title else 50}})
    return make(data, layout, title, height)


def batch_grid(weights, token_lists: list[list[str]], *, titles: list[str], hover: tuple[str, str, str],
               title: str | None = None, height: int = 380) -> Figure:
    """The (B, N, N) weights of one batched call, one panel per sequence, each with its own
    tokens. Trace b is sequence b."""
    b = len(token_lists)
    gap = 0.06
    width = (1 - gap * (b - 1)) / b
    data, layout, notes = [], {}, []
    for i, tokens in enumerate(token_lists):
        labels = unique_labels(tokens)
        n = "" if i == 0 else str(i + 1)
        x0 = i * (width + gap)
        data.append({"type": "heatmap", "z": array(weights[i]), "x": labels, "y": labels, "xaxis": f"x{n}",
                     "yaxis": f"y{n}", "zmin": 0.0, "zmax": 1.0, "colorscale": WEIGHTS_SCALE, "showscale": False,
                     "xgap": 1, "ygap": 1,
                     "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}<extra></extra>"})
        layout[f"xaxis{n}"] = {"domain": [x0, x0 + width], "anchor": f"y{n}", "type": "category", "side": "top",
                               "tickangle": 0, "dtick": 1}
        layout[f"yaxis{n}"] = {"anchor": f"x{n}", "type": "category", "autorange": "reversed", "dtick": 1}
        notes.append({"text": titles[i], "x": x0 + width / 2, "y": 1.0, "xref": "paper", "yref": "paper",
                      "yanchor": "bottom", "yshift": 24, "showarrow": False, "font": {"size": 15}})
    layout.update({"annotations": notes, "margin": {"t": 110 if title else 60}})
    return make(data, layout, title, height)


def head_split(w_q, q_flat, q_heads, tokens: list[str], *, head_names: list[str], titles: list[str],
               hover: tuple[str, str, str], height: int = 520) -> Figure:
    """How one wide matrix becomes H heads. Left: W_q (D, D) cut into H column blocks, one per
    head. Middle: Q = X·W_q (N, D), the same blocks. Right: the reshape to (H, N, d_head), the
    blocks stacked as a batch axis. Traces 0-2 are the three panels; a black line marks every cut."""
    h, n, d_head = q_heads.shape
    d = w_q.shape[0]
    labels = unique_labels(tokens)
    stacked = array(q_heads).reshape(h * n, d_head)                       # (H·N, d_head)
    panels = [(array(w_q), array(np.arange(d)), array(np.arange(d))), (array(q_flat), array(np.arange(d)), labels),
              (stacked, array(np.arange(d_head)), array(np.arange(h * n)))]
    domains = [(0.0, 0.28), (0.38, 0.64), (0.8, 1.0)]
    data, layout, shapes, notes = [], {}, [], []
    for i, (z, x, y) in enumerate(panels):
        n_ax = "" if i == 0 else str(i + 1)
        data.append({"type": "heatmap", "z": z, "x": x, "y": y, "xaxis": f"x{n_ax}", "yaxis": f"y{n_ax}",
                     "colorscale": DIVERGING_SCALE, "zmid": 0.0, "showscale": False,
                     "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}<extra></extra>"})
        layout[f"xaxis{n_ax}"] = {"domain": list(domains[i]), "anchor": f"y{n_ax}", "showgrid": False, "side": "top",
                                  "tickangle": 0}
        layout[f"yaxis{n_ax}"] = {"anchor": f"x{n_ax}", "autorange": "reversed", "showgrid": False,
                                  "type": "category" if i == 1 else "linear", "showticklabels": i != 0,
                                  "dtick": 1 if i == 1 and n <= 24 else None}
        if i == 2:                                  # one label per head, at the middle of its block
            layout[f"yaxis{n_ax}"].update({"tickvals": [j * n + (n - 1) / 2 for j in range(h)],
                                           "ticktext": head_names, "tickmode": "array"})
        notes.append({"text": titles[i], "x": sum(domains[i]) / 2, "y": 1.0, "xref": "paper", "yref": "paper",
                      "yanchor": "bottom", "yshift": 26, "showarrow": False, "font": {"size": 15}})
        line = {"type": "line", "xref": f"x{n_ax}", "yref": f"y{n_ax}", "line": {"color": "black", "width": 2}}
        if i < 2:                                   # column cuts every d_head
            top, bottom = (-0.5, d - 0.5) if i == 0 else (-0.5, n - 0.5)
            shapes += [{**line, "x0": j * d_head - 0.5, "x1": j * d_head - 0.5, "y0": top, "y1": bottom}
                       for j in range(1, h)]
        else:                                       # head boundaries in the stacked batch axis
            shapes += [{**line, "x0": -0.5, "x1": d_head - 0.5, "y0": j * n - 0.5, "y1": j * n - 0.5}
                       for j in range(1, h)]
    layout.update({"shapes": shapes, "annotations": notes, "margin": {"t": 80, "l": 120}})
    return make(data, layout, None, height)


def head_param_bars(matrices: list[str], per_head: int, whole: int, n_heads: int, *, head_names: list[str],
                    group_names: tuple[str, str], title: str | None, x_title: str, height: int = 420) -> Figure:
    """For each matrix, two rows: H heads (one stacked segment of D·d_head per head, each head
    its own slice of the matrix) and one head (a single D·D block). Same total, split differently.
    Traces 0..H-1 are the heads, trace H the single head."""
    rows = [f"{m} · {g}" for m in matrices for g in group_names]
    data = []
    for j in range(n_heads):
        values = [per_head if i % 2 == 0 else 0 for i in range(len(rows))]
        data.append({"type": "bar", "orientation": "h", "y": rows, "x": array(values), "name": head_names[j],
                     "hovertemplate": f"%{{y}}: {head_names[j]} %{{x:,d}}<extra></extra>",
                     "marker": {"line": {"color": "white", "width": 1.5}}})
    data.append({"type": "bar", "orientation": "h", "y": rows, "x": array([0 if i % 2 == 0 else whole
                                                                          for i in range(len(rows))]),
                 "name": group_names[1], "marker": {"color": "#7f7f7f"},
                 "hovertemplate": "%{y}: %{x:,d}<extra></extra>"})
    layout = {"barmode": "stack", "xaxis": {"title": {"text": x_title}, "rangemode": "tozero"},
              "yaxis": {"type": "category", "autorange": "reversed"},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
              "margin": {"b": 90}}
    return make(data, layout, title, height)
