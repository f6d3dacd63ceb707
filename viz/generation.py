"""Next-token probability bars, and the same step at several temperatures."""
from __future__ import annotations

import math

from viz.common import Figure, array, make, unique_labels

CHOSEN, OTHER, CUT, DRAW = "#d62728", "#4c78a8", "#c7c7c7", "rgba(0,0,0,0.55)"


def _log_axis(probs: list[float]) -> dict:
    """A log axis whose lowest decade holds the least likely shown token (down to 10^-8)."""
    tiny = min([p for p in probs if p > 0] or [1e-4])
    low = max(math.floor(math.log10(tiny)), -8)
    return {"type": "log", "range": [low, 0.05], "dtick": 1, "exponentformat": "power"}


def probability_bars(tokens: list[str], model_probs: list[float], sample_probs: list[float],
                     chosen: int | None, *, title: str | None, names: tuple[str, str],
                     hover_names: tuple[str, str, str], legend: tuple[str, str, str, str],
                     log: bool = False, height: int = 420) -> Figure:
    """One bar per candidate token, likeliest first: the model's probability, and over it a
    thin bar for the probability the draw actually used (after temperature/top-k/top-p).
    The chosen token's bar is red; tokens the sampler cut (probability 0) are grey. ``log``: a
    log axis down to the least likely token shown, where a model that is nearly sure still shows
    its other choices.

    Traces: 0 the model's probabilities, 1 the draw's; then four legend entries with no data,
    whose colours never change: ``legend`` = (chosen, kept, cut, the draw). Every candidate is
    named on the axis (``dtick`` 1): plotly drops every other label when it thinks them crowded.
    """
    labels = unique_labels(tokens)  # likeliest first, left to right
    colours = [CHOSEN if i == chosen else (OTHER if s > 0 else CUT) for i, s in enumerate(sample_probs)]
    tok_name, model_name, sample_name = hover_names
    # .3g, not .3f: after a nearly sure first choice every other bar read "0.000" on hover.
    data = [
        {"type": "bar", "x": labels, "y": array(model_probs), "name": names[0], "marker": {"color": colours},
         "showlegend": False, "hovertemplate": f"{tok_name}: %{{x}}<br>{model_name}: %{{y:.3g}}<extra></extra>"},
        {"type": "bar", "x": labels, "y": array(sample_probs), "name": names[1], "width": 0.3,
         "marker": {"color": DRAW}, "showlegend": False,
         "hovertemplate": f"{tok_name}: %{{x}}<br>{sample_name}: %{{y:.3g}}<extra></extra>"},
    ]
    for name, colour, width in zip(legend, (CHOSEN, OTHER, CUT, DRAW), (None, None, None, 0.3), strict=True):
        data.append({"type": "bar", "x": [labels[0]], "y": [None], "name": name, "marker": {"color": colour},
                     "hoverinfo": "skip", **({"width": width} if width else {})})
    yaxis = _log_axis(model_probs) if log else {"range": [0, 1]}
    layout = {"barmode": "overlay", "yaxis": {**yaxis, "title": {"text": model_name}},
              "xaxis": {"tickangle": 0, "tickfont": {"size": 18}, "type": "category", "dtick": 1},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
              "margin": {"b": 70}}
    return make(data, layout, title, height)


def temperature_strip(tokens: list[str], by_temperature: dict[str, list[float]], *, title: str | None,
                      y_title: str, hover_names: tuple[str, str], log: bool = False,
                      height: int = 360) -> Figure:
    """The same step's draw distribution at several temperatures, one panel each, side by side.

    ``by_temperature``: panel title -> probabilities of ``tokens`` (likeliest first, as the model
    ranks them). Traces: one bar trace per panel, in order.
    """
    labels = unique_labels(tokens)
    n = len(by_temperature)
    gap = 0.04
    width = (1 - gap * (n - 1)) / n
    tok_name, p_name = hover_names
    data, layout = [], {}
    every = [p for probs in by_temperature.values() for p in probs]
    # A tick every other decade: a short panel has no room for nine labels one decade apart.
    yaxis = {**_log_axis(every), "dtick": 2} if log else {"range": [0, 1]}
    for i, (name, probs) in enumerate(by_temperature.items()):
        x0 = i * (width + gap)
        suffix = "" if i == 0 else str(i + 1)
        data.append({"type": "bar", "x": labels, "y": array(probs), "name": name, "marker": {"color": OTHER},
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "showlegend": False,
                     "hovertemplate": f"{name}<br>{tok_name}: %{{x}}<br>{p_name}: %{{y:.3g}}<extra></extra>"})
        # Each panel is named under its axis: above it, the names met the figure's two-line title.
        layout[f"xaxis{suffix}"] = {"domain": [x0, x0 + width], "anchor": f"y{suffix}", "type": "category",
                                    "dtick": 1, "tickangle": 0, "tickfont": {"size": 14},
                                    "title": {"text": name, "font": {"size": 15}}}
        layout[f"yaxis{suffix}"] = {**yaxis, "anchor": f"x{suffix}", "showticklabels": i == 0,
                                    **({"title": {"text": y_title}} if i == 0 else {})}
    return make(data, layout, title, height)
