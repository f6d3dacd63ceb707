"""F3's pictures of a model learning: the loss curve with its checkpoints, and what each
checkpoint's guesses resemble. (The next-character grid and the head at every checkpoint are
viz.attention.heatmap and viz.attention.head_grid.)"""
from __future__ import annotations

import numpy as np

from viz.attention import token_axis
from viz.common import WEIGHTS_SCALE, Figure, array, make, unique_labels

CHECKPOINT_COLOUR = "#d62728"
LOSS_TICKS = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10]
REFERENCE_COLOURS = ("#7f7f7f", "#aa76f2")   # violet apart from the blue loss for protanopia (was "#9467bd")


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
                 "mode": "markers+text", "name": names[2], "text": mark_labels,
                 "textposition": ["top right"] * (len(marks) - 1) + ["top left"],
                 "textfont": {"size": 13, "color": CHECKPOINT_COLOUR}, "cliponaxis": False,   # step 0's label, at the top
                 "marker": {"size": 10, "color": CHECKPOINT_COLOUR, "line": {"width": 1, "color": "white"}},
                 "hovertemplate": "%{text}: %{y:.3f}<extra></extra>"})
    layout = {"xaxis": {"title": {"text": x_title}, "range": [-30, last + 150]},
              "yaxis": {"title": {"text": y_title}, "type": "log", "range": [np.log10(0.04), np.log10(20)],
                        "tickvals": LOSS_TICKS, "ticktext": [f"{t:g}" for t in LOSS_TICKS]},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 100}}
    return make(data, layout, title, height)


def by_checkpoint(labels: list[str], series: dict[str, list[float]], *, title: str, x_title: str,
                  y_title: str, height: int = 400) -> Figure:
    """A few measures, one point per checkpoint (evenly spaced: the steps are not), 0..1."""
    data = [{"type": "scatter", "x": labels, "y": array(values), "name": name, "mode": "lines+markers",
             "marker": {"size": 9}, "hovertemplate": f"{name}<br>%{{x}}: %{{y:.3f}}<extra></extra>"}
            for name, values in series.items()]
    layout = {"xaxis": {"title": {"text": x_title}, "type": "category", "tickangle": 0},
              "yaxis": {"title": {"text": y_title}, "range": [0, 1.02]},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 62 + 24 * len(series)}}
    return make(data, layout, title, height)


LOG_FLOOR = 4          # the grid's colours run over 10^-4 .. 1 (uniform over 2,582 is 3.9e-4)


def next_char_grid(probs, rows: list[str], cols: list[str], *, title: str, split: int,
                   hover_names: tuple[str, str, str], colorbar_title: str) -> Figure:
    """Rows of next-character probabilities (each sums to 1), coloured on a log scale: a guess
    of 0.04 (the frequencies after 50 steps) is as visible as one of 0.96 (the end); on 0..1 it
    was white. The probabilities themselves are the trace's ``customdata`` (hover, CSV) and are
    written in the cells from 0.1 up. A line separates the first ``split`` rows (checkpoints)
    from the counting models under them."""
    p = array(probs)                                                          # (R, K+1)
    z = np.log10(np.clip(p, 10.0 ** -LOG_FLOOR, 1.0)).astype(np.float32)
    x, y = unique_labels(cols), unique_labels(rows)
    text = [[f"{v:.2f}" if v >= 0.1 else "" for v in row] for row in p.tolist()]
    ticks = list(range(-LOG_FLOOR, 1))
    trace = {"type": "heatmap", "z": z, "x": x, "y": y, "customdata": p, "zmin": -LOG_FLOOR, "zmax": 0,
             "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1, "text": text, "texttemplate": "%{text}",
             "textfont": {"size": 11},
             "colorbar": {"tickvals": ticks, "ticktext": [f"{10.0 ** t:g}" for t in ticks], "thickness": 12,
                          "tickfont": {"size": 12}, "title": {"text": colorbar_title, "side": "top",
                                                              "font": {"size": 12}}},
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>"
                              f"{hover_names[2]}: %{{customdata:.4f}}<extra></extra>"}
    line = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": split - 0.5, "y1": split - 0.5,
            "line": {"color": "#31333F", "width": 2}}
    layout = {"yaxis": {"autorange": "reversed", "type": "category", **token_axis(len(y))},
              "xaxis": {"side": "top", "type": "category", "tickangle": 0, **token_axis(len(x))},
              "shapes": [line], "margin": {"t": 90}}
    return make([trace], layout, title, 110 + 34 * len(rows))
