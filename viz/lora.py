"""E2's figures: trainable against frozen parameters, and the spectra of learned updates."""
from __future__ import annotations

import numpy as np

from viz.common import COLORWAY, Figure, array, make

SPECTRUM_FLOOR = 1e-9   # a log axis cannot show 0; singular values below this are drawn here


def trainable_frozen(models: list[str], trainable: list[int], frozen: list[int], *, names: tuple[str, str],
                     title: str, x_title: str, height: int = 470) -> Figure:
    """Two bars per model on a log axis: the adapters' parameters and the frozen base model's
    (the exact counts and the adapters' share of the model in the hover text)."""
    share = [f"{t / f:.3%}" if f else "" for t, f in zip(trainable, frozen, strict=True)]
    data = [
        {"type": "bar", "orientation": "h", "y": models, "x": array(trainable), "name": names[0],
         "customdata": [f"{v:,} ({s})" for v, s in zip(trainable, share, strict=True)],
         "hovertemplate": "%{y}: %{customdata}<extra>" + names[0] + "</extra>"},
        {"type": "bar", "orientation": "h", "y": models, "x": array(frozen), "name": names[1],
         "customdata": [f"{v:,}" for v in frozen],
         "hovertemplate": "%{y}: %{customdata}<extra>" + names[1] + "</extra>"},
    ]
    # Legend under the axis: above the plot, in a narrow column, it ran into the title.
    layout = {"barmode": "group", "xaxis": {"title": {"text": x_title}, "type": "log", "range": [2.5, 12.2]},
              "yaxis": {"type": "category", "autorange": "reversed"},
              "legend": {"orientation": "h", "y": -0.22, "yanchor": "top"}, "margin": {"b": 110}}
    return make(data, layout, title, height)


def spectra(spectra: dict[str, np.ndarray], groups: dict[str, str], *, show: int, title: str,
            x_title: str, y_title: str, height: int = 460) -> Figure:
    """The first ``show`` singular values of every adapted matrix, largest first, on a log axis:
    one line per matrix, one colour (one trace, lines split by gaps) per projection
    (``groups``: matrix name -> projection), so 28 matrices cost the browser 7 traces."""
    by_group: dict[str, list[str]] = {}
    for name in spectra:
        by_group.setdefault(groups[name], []).append(name)
    data = []
    for i, (group, names) in enumerate(by_group.items()):
        xs, ys, labels = [], [], []
        for name in names:
            y = np.maximum(array(spectra[name])[:show], SPECTRUM_FLOOR)
            xs += [*range(1, len(y) + 1), None]
            ys += [*y.tolist(), None]
            labels += [name] * len(y) + [""]
        data.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": array(
            [np.nan if v is None else v for v in ys]), "name": group, "text": labels,
            "line": {"color": COLORWAY[i % len(COLORWAY)], "width": 1.5}, "marker": {"size": 5},
            "hovertemplate": "%{text}<br>σ%{x} = %{y:.3g}<extra></extra>"})
    # Legend under the plot: above it, seven entries wrap into the title in a half-width column.
    layout = {"xaxis": {"title": {"text": x_title}, "dtick": 1 if show <= 20 else None},
              "yaxis": {"title": {"text": y_title}, "type": "log", "exponentformat": "power"},
              "legend": {"orientation": "h", "y": -0.28, "yanchor": "top"}, "margin": {"b": 130}}
    return make(data, layout, title, height)


def grouped_bars(categories: list[str], series: dict[str, list[float]], *, title: str, x_title: str,
                 fmt: str, height: int = 420) -> Figure:
    """Horizontal bars, one group per category (top to bottom), one bar per named series, each
    labelled with its value (``fmt``: ".2f", ".3s"); the x data are the values. The legend sits
    under the axis: in a half-width column a legend above the plot runs into the title."""
    data = [{"type": "bar", "orientation": "h", "y": categories, "x": array(values), "name": name,
             "texttemplate": f"%{{x:{fmt}}}", "textposition": "outside", "cliponaxis": False,
             "hovertemplate": f"%{{y}}: %{{x:{fmt}}}<extra>{name}</extra>"}
            for name, values in series.items()]
    layout = {"barmode": "group", "xaxis": {"title": {"text": x_title}, "rangemode": "tozero"},
              "yaxis": {"type": "category", "autorange": "reversed"},
              "legend": {"orientation": "h", "y": -0.3, "yanchor": "top"}, "margin": {"r": 60, "b": 120}}
    return make(data, layout, title, height)
