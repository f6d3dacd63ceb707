"""The roofline of a GPU with steps placed on it, and its memory hierarchy."""
from __future__ import annotations

import math

import numpy as np

from viz.common import Figure, array, make

ROOF_COLOUR = "#333333"
# Apart for colour-blind eyes and >= 3:1 on white (tests/test_colour_vision.py); were tab10's.
POINT_COLOURS = ["#1f77b4", "#d62728", "#48a35c", "#aa76f2", "#eb6f00", "#89554e", "#d176a3"]


def human(n: float, unit: str, base: int = 1000) -> str:
    """A size or a rate with a prefix.

    Sizes in memory take ``base=1024`` (KiB, MiB, GiB: what the lessons compute); rates stay
    decimal, as the datasheets give them.

    Example: human(2.039e12, "B/s") -> "2.04 TB/s"; human(60.25 * 2**20, "B", 1024) -> "60.2 MiB"
    """
    prefixes = ["", "K", "M", "G", "T", "P"]
    i = 0
    while abs(n) >= base and i < len(prefixes) - 1:
        n /= base
        i += 1
    mid = "i" if base == 1024 and i else ""
    return f"{n:.3g} {prefixes[i]}{mid}{unit}"


def duration(seconds: float) -> str:
    """A time in the unit a reader expects: ms below a second, s above.

    Example: duration(0.00647) -> "6.47 ms"; duration(2.5) -> "2.50 s"
    """
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def roofline_chart(peak_tflops: float, bandwidth_gbps: float, points: list[dict], *,
                   title: str | None, x_title: str, y_title: str, roof_name: str, ridge_text: str,
                   arrows: list[tuple[int, int]] = (), height: int = 520, span: list[float] = ()) -> Figure:
    """Log-log roofline min(peak, I × bandwidth) and one marker per point.

    ``points``: dicts with name, intensity (FLOPs/byte) and tflops (attained); ``arrows``
    join point i to point j (what a change moves). Traces: 0 the roof, then one per point.
    ``span``: more intensities the x axis must hold (a live slider's frames: every frame's points,
    so that the axis stays put while the points move).
    """
    ridge = peak_tflops * 1e3 / bandwidth_gbps
    xs = [p["intensity"] for p in points] + [ridge] + list(span)
    x_lo = 10 ** math.floor(math.log10(min(min(xs) / 2, 0.5)))
    x_hi = 10 ** math.ceil(math.log10(max(max(xs) * 2, ridge * 10)))
    roof_x = array([x_lo, ridge, x_hi])
    roof_y = array([x_lo * bandwidth_gbps / 1e3, peak_tflops, peak_tflops])
    data = [{"type": "scatter", "x": roof_x, "y": roof_y, "mode": "lines", "name": roof_name,
             "line": {"color": ROOF_COLOUR, "width": 3}, "hoverinfo": "skip"}]
    for i, p in enumerate(points):
        data.append({"type": "scatter", "x": array([p["intensity"]]), "y": array([p["tflops"]]), "mode": "markers",
                     "name": p["name"], "marker": {"size": 15, "color": POINT_COLOURS[i % len(POINT_COLOURS)],
                                                   "symbol": p.get("symbol", "circle"),
                                                   "line": {"color": "white", "width": 1}},
                     "hovertemplate": f"{p['name']}<br>%{{x:.3g}} FLOP/B<br>%{{y:.3g}} TFLOP/s<extra></extra>"})
    notes = [{"x": math.log10(ridge), "y": math.log10(peak_tflops), "text": ridge_text, "showarrow": True,
              "arrowhead": 0, "ax": 0, "ay": -30, "font": {"size": 13}}]
    for a, b in arrows:
        pa, pb = points[a], points[b]
        notes.append({"x": math.log10(pb["intensity"]), "y": math.log10(pb["tflops"]),
                      "ax": math.log10(pa["intensity"]), "ay": math.log10(pa["tflops"]),
                      "axref": "x", "ayref": "y", "xref": "x", "yref": "y", "text": "", "showarrow": True,
                      "arrowhead": 2, "arrowsize": 1.2, "arrowwidth": 1.5, "arrowcolor": "#555",
                      "standoff": 8, "startstandoff": 8})
    y_lo = roof_y[0] / 2
    layout = {"xaxis": {"type": "log", "title": {"text": x_title}, "range": [math.log10(x_lo), math.log10(x_hi)],
                        "dtick": 1},
              "yaxis": {"type": "log", "title": {"text": y_title}, "dtick": 1,
                        "range": [math.log10(y_lo), math.log10(peak_tflops * 3)]},
              # The legend sits at the very bottom of the figure, under the axis title (up to two rows).
              "annotations": notes, "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
              "margin": {"b": 120}}
    return make(data, layout, title, height)


def hierarchy_chart(levels: list[str], sizes: list[float], rates: list[float], *, titles: tuple[str, str],
                    axis_title: str = "", height: int = 300) -> Figure:
    """Two panels on log axes: capacity (bytes, labelled in KiB/MiB/GiB) and bandwidth (bytes/s,
    labelled as the datasheets give it) of each memory level, one dot per level.

    Dots, not bars: on a log axis a bar's length depends on where the axis happens to start, a
    dot's place does not. Traces: 0 capacity, 1 bandwidth; ``levels`` top to bottom, fastest first.
    """
    size_text = [human(s, "B", 1024) for s in sizes]
    rate_text = [human(r, "B/s") for r in rates]
    common = {"type": "scatter", "mode": "markers+text", "y": levels, "textposition": "middle right",
              "cliponaxis": False, "showlegend": False, "textfont": {"size": 14}}
    data = [
        {**common, "x": array(sizes), "text": size_text, "marker": {"color": "#4c78a8", "size": 16},
         "xaxis": "x", "yaxis": "y", "hovertemplate": "%{y}: %{text}<extra></extra>"},
        {**common, "x": array(rates), "text": rate_text, "marker": {"color": "#f58518", "size": 16},
         "xaxis": "x2", "yaxis": "y2", "hovertemplate": "%{y}: %{text}<extra></extra>"},
    ]
    lo_s, hi_s = np.log10(min(sizes)) - 1.0, np.log10(max(sizes)) + 1.5
    lo_r, hi_r = np.log10(min(rates)) - 1.0, np.log10(max(rates)) + 1.5
    grid = {"showgrid": True, "gridcolor": "#e5e5e5"}
    layout = {
        # Log axes with a tick every 100× (10M, 1G, 100G), in bytes: the titles say the scale is logarithmic.
        "xaxis": {"domain": [0.0, 0.46], "type": "log", "range": [lo_s, hi_s], "dtick": 2, "tickformat": "~s",
                  "title": {"text": axis_title}},
        "yaxis": {"anchor": "x", "autorange": "reversed", **grid},
        "xaxis2": {"domain": [0.54, 1.0], "type": "log", "range": [lo_r, hi_r], "dtick": 2, "tickformat": "~s",
                   "title": {"text": axis_title}},
        "yaxis2": {"anchor": "x2", "autorange": "reversed", "showticklabels": False, **grid},
        "annotations": [
            {"text": titles[0], "x": 0.23, "y": 1.0, "xref": "paper", "yref": "paper", "yanchor": "bottom",
             "showarrow": False, "font": {"size": 15}},
            {"text": titles[1], "x": 0.77, "y": 1.0, "xref": "paper", "yref": "paper", "yanchor": "bottom",
             "showarrow": False, "font": {"size": 15}},
        ],
        "margin": {"t": 40},
    }
    return make(data, layout, None, height)


def format_bars(labels: list[str], values: list[float], *, title: str | None, x_title: str, text: list[str],
                highlight: list[int] = (), height: int | None = None) -> Figure:
    """One horizontal bar per weight format (D3's real model): bytes a token reads, or tokens/s.

    Linear axis from 0, so the lengths compare (fp16 is 3.2 × Q4_1). ``highlight`` rows are drawn
    red (a measured value among bounds). Trace 0: the bars, ``labels`` top to bottom.
    """
    colours = ["#d62728" if i in highlight else "#4c78a8" for i in range(len(labels))]
    data = [{"type": "bar", "orientation": "h", "y": labels, "x": array(values), "text": text,
             "textposition": "outside", "cliponaxis": False, "marker": {"color": colours},
             "hovertemplate": "%{y}: %{text}<extra></extra>", "showlegend": False}]
    top = max(values) if len(values) and max(values) > 0 else 1.0
    layout = {"xaxis": {"title": {"text": x_title}, "range": [0, top * 1.3], "rangemode": "tozero"},
              "yaxis": {"autorange": "reversed", "type": "category"},
              "bargap": 0.35}
    return make(data, layout, title, height or 110 + 46 * len(labels))
