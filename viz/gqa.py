"""Which query head reads which key/value head: MHA, GQA and MQA as one diagram."""
from __future__ import annotations

import numpy as np

from viz.common import Figure, array, make

GROUP_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def head_map(groups: list[int], *, row_names: tuple[str, str], hover_names: tuple[str, str],
             title: str | None = None, height: int = 300) -> Figure:
    """Query heads on top, KV heads below, a line from each query head to the KV head it reads.

    ``groups[h]`` is the KV head of query head h (core.parts.kv_cache.kv_groups). Both rows span the
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
