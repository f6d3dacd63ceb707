"""RoPE pictures: one pair turning in its plane, the speed of every pair."""
from __future__ import annotations

import numpy as np

from viz.common import Figure, array, make

HAND = "#d62728"
# Explicit colours: plotly.js reads a named scale like "Blues" differently from plotly.py.
EARLY_LATE = [[0.0, "#c6dbef"], [1.0, "#08306b"]]   # position 0 light, position m dark
SERIES = ["#1f77b4", "#ff7f0e", "#2ca02c"]           # one colour per base, the same in both figures


def pair_plane(path, *, title: str, trail_name: str, hand_name: str, x_title: str, y_title: str,
               height: int = 440) -> Figure:
    """The points (x_2i, x_2i+1) of one pair at positions 0 .. m: trace 0 is the trail of all
    positions, trace 1 the hand from the origin to position m, trace 2 the circle it stays on."""
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
    layout = {"xaxis": {"range": [-lim, lim], "zeroline": True, "title": {"text": x_title}},
              "yaxis": {"range": [-lim, lim], "zeroline": True, "scaleanchor": "x", "scaleratio": 1,
                        "title": {"text": y_title}}}
    return make(data, layout, title, height)


def per_pair(series: dict[str, np.ndarray], *, title: str, x_title: str, y_title: str, log_y: bool = True,
             height: int = 380) -> Figure:
    """One value per pair index i (frequencies, wavelengths), several named series."""
    data = [{"type": "scatter", "x": array(np.arange(len(y))), "y": array(y), "name": name,
             "mode": "lines+markers", "marker": {"size": 5}, "line": {"color": SERIES[i % 3]}}
            for i, (name, y) in enumerate(series.items())]
    layout = {"xaxis": {"title": {"text": x_title}},
              "yaxis": {"title": {"text": y_title}, "type": "log" if log_y else "linear",
                        "exponentformat": "power"}}
    return make(data, layout, title, height)


def by_distance(distances, series: dict[str, np.ndarray], *, title: str, x_title: str, y_title: str,
                height: int = 380) -> Figure:
    """Curves over the relative distance m - n on a log axis, one per named series (base)."""
    data = [{"type": "scatter", "x": array(distances), "y": array(y), "name": name, "mode": "lines",
             "line": {"color": SERIES[i % 3], "width": 2}} for i, (name, y) in enumerate(series.items())]
    layout = {"xaxis": {"title": {"text": x_title}, "type": "log"}, "yaxis": {"title": {"text": y_title}}}
    return make(data, layout, title, height)
