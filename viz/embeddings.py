"""Embedding pictures: the (N, D) matrix of a prompt, nearest neighbours, a 2-D map."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.common import DIVERGING_SCALE, array, label, make, unique_labels


def matrix(values, row_tokens: list[str], *, title: str | None = None,
           hover_names: tuple[str, str, str] = ("token", "dimension", "value"), height: int = 420) -> go.Figure:
    """Rows are tokens, columns are the D dimensions; blue negative, red positive."""
    z = array(values)
    lim = float(np.abs(z).max()) if z.size else 1.0
    trace = {"type": "heatmap", "z": z, "y": unique_labels(row_tokens), "x": array(np.arange(z.shape[1])),
             "colorscale": DIVERGING_SCALE, "zmin": -lim, "zmax": lim,
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>"
                              f"{hover_names[2]}: %{{z:.3f}}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 18}},
              "xaxis": {"title": {"text": hover_names[1]}}}
    return make([trace], layout, title, height=max(300, 150 + 26 * len(row_tokens)))


def neighbours(tokens: list[str], sims, *, title: str | None = None, x_title: str = "") -> go.Figure:
    """Horizontal bars, most similar on top."""
    labels = unique_labels(tokens)
    trace = {"type": "bar", "orientation": "h", "y": labels, "x": array(sims),
             "text": [f"{s:.2f}" for s in array(sims)], "textposition": "outside", "cliponaxis": False,
             "marker": {"color": "#4c78a8"}, "hovertemplate": "%{y}: %{x:.3f}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 20}},
              "xaxis": {"title": {"text": x_title}, "range": [min(0.0, float(array(sims).min(initial=0)) * 1.2),
                                                              max(0.05, float(array(sims).max(initial=0)) * 1.25)]}}
    return make([trace], layout, title, height=max(260, 60 + 34 * len(tokens)))


def pca_map(coords, tokens: list[str], prompt_coords, prompt_tokens: list[str], chosen_coords,
            chosen_token: str, *, title: str | None = None,
            names: tuple[str, str, str] = ("table", "prompt", "chosen"),
            axes: tuple[str, str] = ("PC 1", "PC 2")) -> go.Figure:
    """Every searched row as a grey dot; the prompt's tokens labelled in blue, the chosen one a red star."""
    xy, pxy, cxy = array(coords), array(prompt_coords).reshape(-1, 2), array(chosen_coords).reshape(-1, 2)
    data = [{"type": "scattergl", "x": xy[:, 0], "y": xy[:, 1], "mode": "markers", "name": names[0],
             "text": [label(t) for t in tokens], "hovertemplate": "%{text}<extra></extra>",
             "marker": {"size": 5, "color": "rgba(120,120,120,0.35)"}},
            {"type": "scatter", "x": pxy[:, 0], "y": pxy[:, 1], "mode": "markers+text", "name": names[1],
             "text": [label(t) for t in prompt_tokens], "textposition": "top center",
             "textfont": {"size": 20, "color": "#1f4e99"}, "hovertemplate": "%{text}<extra></extra>",
             "marker": {"size": 11, "color": "#4c78a8"}},
            {"type": "scatter", "x": cxy[:, 0], "y": cxy[:, 1], "mode": "markers+text", "name": names[2],
             "text": [label(chosen_token)], "textposition": "bottom center",
             "textfont": {"size": 22, "color": "#c0392b"}, "hovertemplate": "%{text}<extra></extra>",
             "marker": {"size": 16, "color": "#e45756", "symbol": "star"}}]
    layout = {"xaxis": {"title": {"text": axes[0]}, "zeroline": False},
              "yaxis": {"title": {"text": axes[1]}, "zeroline": False}}
    return make(data, layout, title, height=560)
