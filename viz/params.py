"""Parameter counts as bars, one bar per part of the model."""
from __future__ import annotations

from viz.common import Figure, array, make


def breakdown_bars(parts: list[str], series: dict[str, list[int]], *, unit: float, title: str, x_title: str,
                   height: int = 380) -> Figure:
    """Horizontal bars: one row per part (labels already translated), one colour per series
    (e.g. "all parameters" and "active per token"), lengths in ``unit``s (1e9: billions);
    the exact count sits in customdata and in the hover text."""
    data = [{"type": "bar", "orientation": "h", "y": parts, "x": array([v / unit for v in values]),
             "name": name, "customdata": [f"{v:,}" for v in values],
             "hovertemplate": "%{y}: %{customdata}<extra>" + name + "</extra>"}
            for name, values in series.items()]
    layout = {"barmode": "group", "xaxis": {"title": {"text": x_title}}, "yaxis": {"autorange": "reversed"},
              "margin": {"l": 10}}
    return make(data, layout, title, height)
