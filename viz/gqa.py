"""Which query head reads which key/value head: MHA, GQA and MQA as one diagram."""
from __future__ import annotations

import re

import numpy as np

from viz.attention import MAX_NAMED, hover, token_font, weights_bar
from viz.common import WEIGHTS_SCALE, Figure, array, make, pool, unique_labels

SIDE_BY_SIDE = 12          # up to this many tokens the maps of one group stand in a row
CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")

# tab10's order, each moved to the nearest colour that keeps the groups apart for colour-blind eyes
# and >= 3:1 on white (tests/test_colour_vision.py). Was tab10: "#ff7f0e", "#2ca02c", … "#17becf".
GROUP_COLOURS = ["#1f77b4", "#e57614", "#4ea362", "#d62728", "#aa76f2", "#89554e", "#cb7ca3", "#6f897c"]


def head_map(groups: list[int], *, row_names: tuple[str, str], hover_names: tuple[str, str],
             title: str | None = None, height: int = 300) -> Figure:
    """Query heads on top, KV heads below, a line from each query head to the KV head it reads.

    ``groups[h]`` is the KV head of query head h (core.calc.kv_cache.kv_groups). Both rows span the
    same width, so a KV head sits under the middle of its group; a group shares one colour.
    Traces: 0 every line (segments separated by NaN, one trace: each trace costs ~0.4 ms),
    1 the query heads, 2 the KV heads.
    """
    h, h_kv = len(groups), max(groups) + 1
    qx = (np.arange(h) + 0.5) / h                                   # query heads across [0, 1]
    kx = (np.arange(h_kv) + 0.5) / h_kv                             # KV heads across [0, 1]
    colours = [GROUP_COLOURS[g % len(GROUP_COLOURS)] for g in range(h_kv)]
    xs, ys = np.full(3 * h, np.nan), np.full(3 * h, np.nan)
    xs[0::3], xs[1::3] = qx, kx[groups]
    ys[0::3], ys[1::3] = 1.0, 0.0
    data = [{"type": "scatter", "x": array(xs), "y": array(ys), "mode": "lines", "hoverinfo": "skip",
             "line": {"color": "#9a9a9a", "width": 1.2 if h > 16 else 2}, "showlegend": False}]
    size = 14 if h <= 16 else (9 if h <= 40 else 6)
    q_name, kv_name = hover_names
    data.append({"type": "scatter", "x": array(qx), "y": array(np.ones(h)), "mode": "markers",
                 "marker": {"size": size, "color": [colours[g] for g in groups], "symbol": "circle"},
                 "customdata": array(np.stack([np.arange(h), np.asarray(groups)], 1)),
                 "hovertemplate": f"{q_name} %{{customdata[0]}} → {kv_name} %{{customdata[1]}}<extra></extra>",
                 "showlegend": False})
    data.append({"type": "scatter", "x": array(kx), "y": array(np.zeros(h_kv)), "mode": "markers",
                 "marker": {"size": size + 8, "color": colours, "symbol": "square"},
                 "customdata": array(np.arange(h_kv)),
                 "hovertemplate": f"{kv_name} %{{customdata}}<extra></extra>", "showlegend": False})
    layout = {"xaxis": {"visible": False, "range": [-0.02, 1.02]},
              "yaxis": {"range": [-0.35, 1.35], "tickvals": [1, 0], "ticktext": list(row_names),
                        "showgrid": False, "zeroline": False, "tickfont": {"size": 15}},
              "margin": {"l": 10}}
    return make(data, layout, title, height)


def cache_bars(labels: list[str], gib: list[float], chosen: int, *, title: str | None, y_title: str,
               text: list[str], height: int = 360) -> Figure:
    """One bar per choice of KV heads; the chosen one in colour, the rest grey."""
    colours = ["#d62728" if i == chosen else "#9ecae1" for i in range(len(labels))]
    data = [{"type": "bar", "x": labels, "y": array(gib), "text": text, "textposition": "outside",
             "cliponaxis": False, "marker": {"color": colours}, "hovertemplate": "%{x}: %{text}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "tickangle": 0},
              "yaxis": {"title": {"text": y_title}, "range": [0, max(gib) * 1.18 if max(gib) > 0 else 1]}}
    return make(data, layout, title, height)


def group_maps(weights, tokens: list[str], *, titles: list[str], hover_names: tuple[str, str, str],
               height: int | None = None) -> Figure:
    """The attention maps of the query heads that share one KV head on one pair of axes (one
    trace per head, each shifted by its place), ``weights`` (G, N, N).

    Up to SIDE_BY_SIDE tokens the maps stand side by side; longer, one above the other at the
    figure's whole width, so that every key keeps a column wide enough for its name. Words are
    wider than a cell: key labels stand upright (turned 90°), unless one holds a Chinese
    character (never turned). Over MAX_NAMED tokens the maps are pooled and the axes count
    positions. Traces: one heatmap per head, the first with the colour bar.
    """
    w = array(weights)
    g = w.shape[0]
    shown = [pool(w[i], 64 * 64) for i in range(g)]
    n, factor = shown[0][0].shape[0], shown[0][1]
    cols = g if n <= SIDE_BY_SIDE else 1
    rows = -(-g // cols)
    gap = max(2.5, 0.12 * n)
    step = n + gap
    labels = unique_labels(tokens) if factor == 1 else [str(j * factor) for j in range(n)]
    named = len(tokens) <= MAX_NAMED
    upright = named and factor == 1 and not any(CJK.search(t) for t in labels)
    query, key, value = hover_names
    cells = [[f"{labels[r]} → {labels[c]}" for c in range(n)] for r in range(n)] if named else None
    data, notes = [], []
    for i, (z, _) in enumerate(shown):
        r, c = divmod(i, cols)
        data.append({"type": "heatmap", "z": z, "x0": c * step, "dx": 1, "y0": r * step, "dy": 1, "zmin": 0,
                     "zmax": 1, "colorscale": WEIGHTS_SCALE, "showscale": i == 0,
                     **({"colorbar": weights_bar(1.0)} if i == 0 else {}), "customdata": cells,
                     "hovertemplate": (f"{titles[i]}<br>{query} → {key}: %{{customdata}}<br>{value}: %{{z:.3f}}"
                                       "<extra></extra>") if named else f"{titles[i]}<br>" + hover(*hover_names)})
        notes.append({"text": titles[i], "x": c * step + (n - 1) / 2, "y": r * step - 0.8, "xref": "x", "yref": "y",
                      "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 14}})
    size = min(11, token_font(n))
    row_px = (15 if rows > 1 else 18) if named else 8               # one token row, in pixels
    layout = {
        "xaxis": {"tickvals": [c * step + j for c in range(cols) for j in range(n)] if named else [],
                  "ticktext": labels * cols if named else [], "tickangle": -90 if upright else 0,
                  "tickfont": {"size": size}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, cols * step - gap - 0.5]},
        "yaxis": {"tickvals": [r * step + j for r in range(rows) for j in range(n)] if named else [],
                  "ticktext": labels * rows if named else [], "tickfont": {"size": size},
                  "showgrid": False, "zeroline": False, "range": [rows * step - gap - 0.5, -2.2]},
        "annotations": notes,
        "margin": {"t": 20},
    }
    return make(data, layout, None, height or 140 + row_px * round(rows * step))
