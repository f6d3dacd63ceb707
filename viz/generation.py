"""Next-token probability bars, and the same step at several temperatures."""
from __future__ import annotations

import math

from viz.common import Figure, array, make, unique_labels

CHOSEN, OTHER, CUT, DRAW = "#d62728", "#4c78a8", "#c7c7c7", "rgba(0,0,0,0.55)"
# The chosen bar is told by more than its colour (issue 43 §4): a dark outline, in the legend too.
CHOSEN_EDGE, CHOSEN_EDGE_PX = "#1f1f1f", 3
POWER_STANDOFF = 16   # px between a horizontal chart's power ticks and its axis title


def _log_axis(probs: list[float]) -> dict:
    """A log axis whose lowest decade holds the least likely shown token (down to 10^-8)."""
    tiny = min([p for p in probs if p > 0] or [1e-4])
    low = max(math.floor(math.log10(tiny)), -8)
    return {"type": "log", "range": [low, 0.05], "dtick": 1, "exponentformat": "power"}


def probability_bars(tokens: list[str], model_probs: list[float], sample_probs: list[float],
                     chosen: int | None, *, title: str | None, names: tuple[str, str],
                     hover_names: tuple[str, str, str], legend: tuple[str, str, str, str],
                     log: bool = False, height: int = 420, horizontal: bool = False,
                     ids: list[int] | None = None) -> Figure:
    """One bar per candidate token, likeliest first: the model's probability, and over it a
    thin bar for the probability the draw actually used (after temperature/top-k/top-p).
    The chosen token's bar is red and outlined (``chosen_marker``); tokens the sampler cut
    (probability 0) are grey. ``log``: a log axis down to the least likely token shown, where a
    model that is nearly sure still shows its other choices.

    Traces: 0 the model's probabilities, 1 the draw's; then four legend entries with no data,
    whose colours never change: ``legend`` = (chosen, kept, cut, the draw). Every candidate is
    named on the axis (``dtick`` 1): plotly drops every other label when it thinks them crowded.
    ``horizontal``: one row a token, likeliest on top (SmolLM2's tokens are words: twenty of them
    side by side did not fit a 1024 px page); its traces hold the tokens in ``y``, the numbers in ``x``.
    ``ids``: each bar's token id as its ``customdata``, what a click on it sends (D1's branch).
    """
    labels = unique_labels(tokens)  # likeliest first, left to right
    colours = [CHOSEN if i == chosen else (OTHER if s > 0 else CUT) for i, s in enumerate(sample_probs)]
    tok_name, model_name, sample_name = hover_names
    # .3g, not .3f: after a nearly sure first choice every other bar read "0.000" on hover.
    if horizontal:
        return _bars_across(labels, model_probs, sample_probs, colours, chosen, names=names, hover_names=hover_names,
                            legend=legend, title=title, log=log, height=height, ids=ids)
    data = [
        {"type": "bar", "x": labels, "y": array(model_probs), "name": names[0], "marker": chosen_marker(colours, chosen),
         "showlegend": False, "hovertemplate": f"{tok_name}: %{{x}}<br>{model_name}: %{{y:.3g}}<extra></extra>"},
        {"type": "bar", "x": labels, "y": array(sample_probs), "name": names[1], "width": 0.3,
         "marker": {"color": DRAW}, "showlegend": False,
         "hovertemplate": f"{tok_name}: %{{x}}<br>{sample_name}: %{{y:.3g}}<extra></extra>"},
    ]
    if ids is not None:
        for trace in data:
            trace["customdata"] = list(ids)
    data += _legend_entries(legend, {"x": [labels[0]], "y": [None]})
    yaxis = _log_axis(model_probs) if log else {"range": [0, 1]}
    layout = {"barmode": "overlay", "yaxis": {**yaxis, "title": {"text": model_name}},
              "xaxis": {"tickangle": 0, "tickfont": {"size": 18}, "type": "category", "dtick": 1},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
              "margin": {"b": 70}}
    return make(data, layout, title, height)


def chosen_marker(colours: list[str], chosen: int | None) -> dict:
    """The bars' marker: their colours, and a dark outline on the ``chosen`` one alone.

    Example: chosen_marker(["#d62728", "#4c78a8"], 0)["line"]["width"] -> [3, 0]
    """
    return {"color": colours, "line": {"color": CHOSEN_EDGE,
                                       "width": [CHOSEN_EDGE_PX if i == chosen else 0 for i in range(len(colours))]}}


def _legend_entries(legend: tuple[str, str, str, str], empty: dict) -> list[dict]:
    """Four legend entries with no data, whose colours never change: chosen, kept, cut, the draw."""
    return [{"type": "bar", **empty, "name": name, "hoverinfo": "skip",
             "marker": {"color": colour, **({"line": {"color": CHOSEN_EDGE, "width": CHOSEN_EDGE_PX}}
                                            if colour == CHOSEN else {})},
             **({"orientation": "h"} if empty["x"] == [None] else {}), **({"width": width} if width else {})}
            for name, colour, width in zip(legend, (CHOSEN, OTHER, CUT, DRAW), (None, None, None, 0.3), strict=True)]


def _bars_across(labels: list[str], model_probs: list[float], sample_probs: list[float], colours: list[str],
                 chosen: int | None, *,
                 names: tuple[str, str], hover_names: tuple[str, str, str], legend: tuple[str, str, str, str],
                 title: str | None, log: bool, height: int, ids: list[int] | None = None) -> Figure:
    """probability_bars with one row a token, likeliest on top."""
    tok_name, model_name, sample_name = hover_names
    data = [
        {"type": "bar", "orientation": "h", "y": labels, "x": array(model_probs), "name": names[0],
         "marker": chosen_marker(colours, chosen), "showlegend": False,
         "hovertemplate": f"{tok_name}: %{{y}}<br>{model_name}: %{{x:.3g}}<extra></extra>"},
        {"type": "bar", "orientation": "h", "y": labels, "x": array(sample_probs), "name": names[1], "width": 0.3,
         "marker": {"color": DRAW}, "showlegend": False,
         "hovertemplate": f"{tok_name}: %{{y}}<br>{sample_name}: %{{x:.3g}}<extra></extra>"},
    ]
    if ids is not None:
        for trace in data:
            trace["customdata"] = list(ids)
    data += _legend_entries(legend, {"y": [labels[0]], "x": [None]})
    xaxis = _log_axis(model_probs) if log else {"range": [0, 1]}
    # The title stands further from power ticks (10⁻¹) than make's standoff: their exponents
    # reached it at 1024 px.
    layout = {"barmode": "overlay", "xaxis": {**xaxis, "title": {"text": model_name, "standoff": POWER_STANDOFF}},
              "yaxis": {"type": "category", "dtick": 1, "autorange": "reversed", "tickfont": {"size": 14}},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
              "margin": {"b": 76}}    # ticks and the axis title; make() adds the legend's rows
    return make(data, layout, title, max(height, 130 + 24 * len(labels)))


# What a token's characters look like on an axis: a word-piece tokenizer's leading space shows.
_SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"} | {chr(c): chr(0x2400 + c) for c in range(0x20)
                                                          if chr(c) not in "\n\t\r"} | {"\x7f": "␡"}


def visible_token(token: str) -> str:
    """A token with its white space and control characters drawn: SmolLM2's " the" and "the"
    are two tokens, and an axis would show both as "the".

    Example: visible_token(" the") -> "␣the"; visible_token("\\n\\n") -> "↵↵"; visible_token("") -> "∅"
    """
    return "".join(_SHOWN.get(ch, ch) for ch in token) or "∅"


def temperature_strip(tokens: list[str], by_temperature: dict[str, list[float]], *, title: str | None,
                      y_title: str, hover_names: tuple[str, str], log: bool = False,
                      height: int = 360, horizontal: bool = False) -> Figure:
    """The same step's draw distribution at several temperatures, one panel each, side by side.

    ``by_temperature``: panel title -> probabilities of ``tokens`` (likeliest first, as the model
    ranks them). Traces: one bar trace per panel, in order. ``horizontal``: one row a token,
    named on the first panel only (the numbers in ``x``, the tokens in ``y``).
    """
    if horizontal:
        return _strip_across(tokens, by_temperature, title=title, x_title=y_title, hover_names=hover_names,
                             log=log, height=height)
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


def _strip_across(tokens: list[str], by_temperature: dict[str, list[float]], *, title: str | None,
                  x_title: str, hover_names: tuple[str, str], log: bool, height: int) -> Figure:
    """temperature_strip with one row a token, likeliest on top, the panels side by side
    (``x_title``, what the numbers are, is named in the hover: each panel's axis names its T)."""
    labels = unique_labels(tokens)
    n = len(by_temperature)
    gap = 0.05
    width = (1 - gap * (n - 1)) / n
    tok_name, p_name = hover_names[0], hover_names[1] or x_title
    every = [p for probs in by_temperature.values() for p in probs]
    xaxis = {**_log_axis(every), "dtick": 2} if log else {"range": [0, 1], "dtick": 0.5}
    data, layout = [], {}
    for i, (name, probs) in enumerate(by_temperature.items()):
        x0 = i * (width + gap)
        suffix = "" if i == 0 else str(i + 1)
        data.append({"type": "bar", "orientation": "h", "y": labels, "x": array(probs), "name": name,
                     "marker": {"color": OTHER}, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "showlegend": False,
                     "hovertemplate": f"{name}<br>{tok_name}: %{{y}}<br>{p_name}: %{{x:.3g}}<extra></extra>"})
        layout[f"xaxis{suffix}"] = {**xaxis, "domain": [x0, x0 + width], "anchor": f"y{suffix}",
                                    "title": {"text": name, "font": {"size": 15}, "standoff": POWER_STANDOFF}}
        layout[f"yaxis{suffix}"] = {"type": "category", "dtick": 1, "autorange": "reversed", "anchor": f"x{suffix}",
                                    "tickfont": {"size": 14}, "showticklabels": i == 0}
    layout["margin"] = {"b": 72}                       # power ticks, then each panel's T
    return make(data, layout, title, max(height, 130 + 24 * len(labels)))
