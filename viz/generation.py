"""Next-token probability bars."""
from __future__ import annotations

import math

from viz.common import Figure, array, make, unique_labels

CHOSEN, OTHER, CUT = "#d62728", "#4c78a8", "#c7c7c7"


def probability_bars(tokens: list[str], model_probs: list[float], sample_probs: list[float],
                     chosen: int | None, *, title: str | None, names: tuple[str, str],
                     hover_names: tuple[str, str, str], log: bool = False, height: int = 420) -> Figure:
    """One bar per candidate token, likeliest first: the model's probability, and over it a
    thin bar for the probability the draw actually used (after temperature/top-k/top-p).
    The chosen token's bar is red; tokens the sampler cut (probability 0) are grey. ``log``: a
    log axis down to the least likely token shown, where a model that is nearly sure still shows its other choices."""
    labels = unique_labels(tokens)  # likeliest first, left to right
    colours = [CHOSEN if i == chosen else (OTHER if s > 0 else CUT) for i, s in enumerate(sample_probs)]
    tok_name, model_name, sample_name = hover_names
    data = [
        {"type": "bar", "x": labels, "y": array(model_probs), "name": names[0], "marker": {"color": colours},
         "hovertemplate": f"{tok_name}: %{{x}}<br>{model_name}: %{{y:.3f}}<extra></extra>"},
        {"type": "bar", "x": labels, "y": array(sample_probs), "name": names[1], "width": 0.3,
         "marker": {"color": "rgba(0,0,0,0.55)"},
         "hovertemplate": f"{tok_name}: %{{x}}<br>{sample_name}: %{{y:.3f}}<extra></extra>"},
    ]
    # On a log axis the lowest decade holds the least likely shown token (down to 10^-8).
    tiny = min([p for p in model_probs if p > 0] or [1e-4])
    low = max(math.floor(math.log10(tiny)), -8)
    yaxis = ({"type": "log", "range": [low, 0.05], "dtick": 1, "exponentformat": "power"} if log
             else {"range": [0, 1]})
    layout = {"barmode": "overlay", "yaxis": {**yaxis, "title": {"text": model_name}},
              "xaxis": {"tickangle": 0, "tickfont": {"size": 18}}}
    return make(data, layout, title, height)
