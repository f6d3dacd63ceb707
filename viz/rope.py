"""RoPE pictures: one pair turning in its plane, the speed of every pair."""
from __future__ import annotations

import numpy as np

from viz.common import Figure, array, make

HAND = "#d62728"
# Explicit colours: plotly.js reads a named scale like "Blues" differently from plotly.py.
EARLY_LATE = [[0.0, "#c6dbef"], [1.0, "#08306b"]]   # position 0 light, position m dark
SERIES = ["#1f77b4", "#e57614", "#4ea362"]           # one colour per base, the same in both figures
# (orange and green apart for protanopia, tests/test_colour_vision.py: were "#ff7f0e", "#2ca02c")


KEY = "#2a9d8f"


def pair_plane(path, *, title: str, trail_name: str, hand_name: str, x_title: str, y_title: str,
               key_point=None, key_name: str = "", angle_text: str = "", height: int = 440) -> Figure:
    """The points (x_2i, x_2i+1) of one pair at positions 0 .. m: trace 0 is the trail of all
    positions, trace 1 the hand from the origin to position m, trace 2 the circle it stays on.
    With ``key_point`` (the same pair of k at position n): trace 3 is k's hand, trace 4 the arc
    from k's hand to q's, trace 5 its label ``angle_text``."""
    p = array(path)                                               # (m+1, 2)
    radius = float(np.hypot(*p[0])) or 1.0
    t = np.linspace(0, 2 * np.pi, 97)
    lim = 1.15 * radius
    data = [
        {"type": "scatter", "x": p[:, 0], "y": p[:, 1], "mode": "markers", "name": trail_name,
         "marker": {"size": 7, "color": array(np.arange(len(p))), "colorscale": EARLY_LATE,
                    "line": {"width": 0.5, "color": "#567"}},
         "customdata": array(np.arange(len(p))), "hovertemplate": "m = %{customdata:.0f}<extra></extra>"},
        {"type": "scatter", "x": array([0.0, p[-1, 0]]), "y": array([0.0, p[-1, 1]]),
         "mode": "lines+markers", "name": hand_name, "line": {"color": HAND, "width": 4},
         "marker": {"size": [0, 14], "color": HAND, "symbol": "circle"}, "hoverinfo": "skip"},
        {"type": "scatter", "x": array(radius * np.cos(t)), "y": array(radius * np.sin(t)), "mode": "lines",
         "line": {"color": "#ccc", "dash": "dot", "width": 1}, "hoverinfo": "skip", "showlegend": False},
    ]
    if key_point is not None:
        k = array(key_point).reshape(2)
        k_radius = float(np.hypot(*k)) or 1.0
        lim = 1.15 * max(radius, k_radius)
        start, end = np.arctan2(k[1], k[0]), np.arctan2(p[-1, 1], p[-1, 0])
        sweep = (end - start + np.pi) % (2 * np.pi) - np.pi          # the shorter way round, signed
        arc_r = 0.45 * max(radius, k_radius)     # visible even when one hand is short
        a = start + np.linspace(0.0, sweep, 33)
        middle = start + sweep / 2
        data += [
            {"type": "scatter", "x": array([0.0, k[0]]), "y": array([0.0, k[1]]), "mode": "lines+markers",
             "name": key_name, "line": {"color": KEY, "width": 4},
             "marker": {"size": [0, 14], "color": KEY, "symbol": "diamond"}, "hoverinfo": "skip"},
            {"type": "scatter", "x": array(arc_r * np.cos(a)), "y": array(arc_r * np.sin(a)), "mode": "lines",
             "line": {"color": "#333", "width": 2}, "hoverinfo": "skip", "showlegend": False},
            {"type": "scatter", "x": array([1.45 * arc_r * np.cos(middle)]), "y": array([1.45 * arc_r * np.sin(middle)]),
             "mode": "text", "text": [angle_text], "textfont": {"size": 14, "color": "#333"},
             "hoverinfo": "skip", "showlegend": False},
        ]
    layout = {"xaxis": {"range": [-lim, lim], "zeroline": True, "title": {"text": x_title}},
              "yaxis": {"range": [-lim, lim], "zeroline": True, "scaleanchor": "x", "scaleratio": 1,
                        "title": {"text": y_title}}}
    return make(data, layout, title, height)


def _line(i: int, name: str, chosen: str | None) -> dict:
    """The chosen series (the Base slider's) is thicker and dashed, so it reads as 'yours'."""
    if name == chosen:
        return {"color": SERIES[i % 3], "width": 4, "dash": "dash"}
    return {"color": SERIES[i % 3], "width": 2}


def per_pair(series: dict[str, np.ndarray], *, title: str, x_title: str, y_title: str, log_y: bool = True,
             chosen: str | None = None, level: tuple[float, str] | None = None, height: int = 380) -> Figure:
    """One value per pair index i (frequencies, wavelengths), several named series; the one
    named ``chosen`` drawn thick and dashed. ``level`` (value, name): a grey horizontal line
    across all pairs, the last trace (a context length against the wavelengths)."""
    data = [{"type": "scatter", "x": array(np.arange(len(y))), "y": array(y), "name": name,
             "mode": "lines+markers", "marker": {"size": 5}, "line": _line(i, name, chosen)}
            for i, (name, y) in enumerate(series.items())]
    if level is not None:
        last = max(len(y) for y in series.values()) - 1
        data.append({"type": "scatter", "x": array([0.0, last]), "y": array([level[0], level[0]]), "name": level[1],
                     "mode": "lines", "line": {"color": "#7f7f7f", "width": 2, "dash": "dot"}, "hoverinfo": "skip"})
    layout = {"xaxis": {"title": {"text": x_title}},
              "yaxis": {"title": {"text": y_title}, "type": "log" if log_y else "linear",
                        "exponentformat": "power"}}
    return make(data, layout, title, height)


def by_distance(distances, series: dict[str, np.ndarray], *, title: str, x_title: str, y_title: str,
                chosen: str | None = None, height: int = 380) -> Figure:
    """Curves over the relative distance m - n on a log axis, one per named series (base)."""
    data = [{"type": "scatter", "x": array(distances), "y": array(y), "name": name, "mode": "lines",
             "line": _line(i, name, chosen)} for i, (name, y) in enumerate(series.items())]
    layout = {"xaxis": {"title": {"text": x_title}, "type": "log"}, "yaxis": {"title": {"text": y_title}}}
    return make(data, layout, title, height)


def score_curves(distances, series: dict[str, np.ndarray], *, title: str, x_title: str, y_title: str,
                 mark: tuple[float, float, str] | None = None, chosen: str | None = None,
                 height: int = 420) -> Figure:
    """Scores over the distance m - n on a log axis, one line per named series (base), the one
    named ``chosen`` thick and dashed; ``mark`` (x, y, name): one large point, the last trace (the
    score the model itself computed at the tokens' true distance). A zero line for reference."""
    data = [{"type": "scatter", "x": array(distances), "y": array(y), "name": name, "mode": "lines",
             "line": {**_line(i, name, chosen), "width": 3 if name == chosen else 1.5}}
            for i, (name, y) in enumerate(series.items())]
    if mark is not None:
        data.append({"type": "scatter", "x": array([mark[0]]), "y": array([mark[1]]), "name": mark[2],
                     "mode": "markers", "marker": {"size": 13, "color": HAND, "symbol": "circle-open",
                                                   "line": {"width": 3, "color": HAND}}})
    layout = {"xaxis": {"title": {"text": x_title}, "type": "log"},
              "yaxis": {"title": {"text": y_title}, "zeroline": True, "zerolinecolor": "#999"},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 110}}
    return make(data, layout, title, height)


def score_by_offset(offsets, series: dict[str, np.ndarray], at: int, *, title: str, x_title: str,
                    y_title: str, height: int = 400) -> Figure:
    """Scores over the signed distance m - n on a linear axis, one line per named series (the
    whole q.k, one pair's share), and on each a large point at index ``at`` (the key slider's n):
    traces 0 .. S-1 the lines, S .. 2S-1 the points, in the same order and colours."""
    x = array(offsets)
    data = [{"type": "scatter", "x": x, "y": array(y), "name": name, "mode": "lines",
             "line": {"color": SERIES[i % 3], "width": 2.5 if i == 0 else 1.5}}
            for i, (name, y) in enumerate(series.items())]
    data += [{"type": "scatter", "x": array([x[at]]), "y": array([np.asarray(y)[at]]), "mode": "markers",
              "marker": {"size": 13, "color": SERIES[i % 3], "line": {"width": 2, "color": "#333"}},
              "showlegend": False, "hovertemplate": "m − n = %{x:.0f}<br>%{y:.3f}<extra></extra>"}
             for i, (name, y) in enumerate(series.items())]
    # Ranges over every point of the lines, not plotly's autorange: that pads for the large marker
    # where it stands, so each key position n had its own x range and the live frames (drawn on
    # the first one's axes) jumped on release. The same axes for every ``at``.
    lines = np.concatenate([np.asarray(y, dtype=float).ravel() for y in series.values()])
    layout = {"xaxis": {"title": {"text": x_title}, "range": padded(x)},
              "yaxis": {"title": {"text": y_title}, "zeroline": True, "zerolinecolor": "#999", "range": padded(lines)},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 110}}
    return make(data, layout, title, height)


def padded(values, share: float = 0.05) -> list[float]:
    """The finite values' extent and ``share`` of it on each side (room for a marker at an end).

    Example: padded([0, 10]) -> [-0.5, 10.5]; padded([3, 3]) -> [2.5, 3.5]"""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
    pad = share * (hi - lo) if hi > lo else 0.5
    return [lo - pad, hi + pad]
