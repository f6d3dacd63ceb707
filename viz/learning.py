"""F3's pictures of a model learning: the loss curve with its checkpoints, and what each
checkpoint's guesses resemble. (The next-character grid and the head at every checkpoint are
viz.attention.heatmap and viz.attention.head_grid.)"""
from __future__ import annotations

import numpy as np

from viz.common import Figure, array, make

CHECKPOINT_COLOUR = "#d62728"
REFERENCE_COLOURS = ("#7f7f7f", "#9467bd")


def loss_curve(step_loss: list[float], logged: list[tuple[int, float]], marks: list[tuple[int, float]],
               references: dict[str, float], *, names: tuple[str, str, str], title: str,
               x_title: str, y_title: str, mark_labels: list[str], height: int = 440) -> Figure:
    """Every step's batch loss (thin), the logged 25-step means (bold), the checkpoints as
    labelled points and the counting models' losses as dashed levels; log y, because the
    interesting half of training happens below a loss of 1. ``names``: (every step, logged,
    checkpoints). Trace order: every step, logged, each reference, checkpoints."""
    steps = np.arange(len(step_loss), dtype=np.float32)        # step s: the loss before update s + 1
    data = [
        {"type": "scatter", "x": array(steps), "y": array(step_loss), "mode": "lines", "name": names[0],
         "line": {"width": 1, "color": "#9ecae1"}, "hovertemplate": "%{x}: %{y:.3f}<extra></extra>"},
        {"type": "scatter", "x": array([s for s, _ in logged]), "y": array([v for _, v in logged]), "mode": "lines",
         "name": names[1], "line": {"width": 3, "color": "#1f77b4"}, "hovertemplate": "%{x}: %{y:.3f}<extra></extra>"},
    ]
    last = float(len(step_loss))
    for (name, level), colour in zip(references.items(), REFERENCE_COLOURS, strict=False):
        data.append({"type": "scatter", "x": array([0.0, last]), "y": array([level, level]), "mode": "lines",
                     "name": name, "line": {"dash": "dash", "width": 2, "color": colour},
                     "hovertemplate": f"{name}: {level:.2f}<extra></extra>"})
    data.append({"type": "scatter", "x": array([s for s, _ in marks]), "y": array([v for _, v in marks]),
                 "mode": "markers+text", "name": names[2], "text": mark_labels, "textposition": "top right",
                 "textfont": {"size": 13, "color": CHECKPOINT_COLOUR},
                 "marker": {"size": 10, "color": CHECKPOINT_COLOUR, "line": {"width": 1, "color": "white"}},
                 "hovertemplate": "%{text}: %{y:.3f}<extra></extra>"})
    layout = {"xaxis": {"title": {"text": x_title}, "range": [-20, last + 60]},
              "yaxis": {"title": {"text": y_title}, "type": "log"},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 110}}
    return make(data, layout, title, height)


def by_checkpoint(labels: list[str], series: dict[str, list[float]], *, title: str, x_title: str,
                  y_title: str, height: int = 400) -> Figure:
    """A few measures, one point per checkpoint (evenly spaced: the steps are not), 0..1."""
    data = [{"type": "scatter", "x": labels, "y": array(values), "name": name, "mode": "lines+markers",
             "marker": {"size": 9}, "hovertemplate": f"{name}<br>%{{x}}: %{{y:.3f}}<extra></extra>"}
            for name, values in series.items()]
    layout = {"xaxis": {"title": {"text": x_title}, "type": "category"},
              "yaxis": {"title": {"text": y_title}, "range": [0, 1.02]},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 62 + 24 * len(series)}}
    return make(data, layout, title, height)
