"""Position pictures: the PE table, single dimensions as waves, PE(p) . PE(p + k), x = E + PE."""
from __future__ import annotations

import numpy as np

from viz.common import DIVERGING_SCALE, Figure, array, make, unique_labels

# One colour per chosen dimension (waves): apart for colour-blind eyes and >= 3:1 on white
# (tests/test_colour_vision.py; the green and violet were "#54a24b", "#b279a2").
WAVE_COLOURS = ["#4c78a8", "#e45756", "#489d6f", "#be83a3"]


def pe_table(pe, *, title: str | None = None, names: tuple[str, str, str] = ("position", "dimension", "value"),
             height: int = 460) -> Figure:
    """The (P, D) table: position down, dimension across; fast waves on the left."""
    z = array(pe)
    trace = {"type": "heatmap", "z": z, "x": array(np.arange(z.shape[1])), "y": array(np.arange(z.shape[0])),
             "colorscale": DIVERGING_SCALE, "zmin": -1.0, "zmax": 1.0,
             "hovertemplate": f"{names[0]}: %{{y}}<br>{names[1]}: %{{x}}<br>{names[2]}: %{{z:.3f}}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "title": {"text": names[0]}},
              "xaxis": {"title": {"text": names[1]}}}
    return make([trace], layout, title, height)


def waves(smooth_x, smooth: dict[str, np.ndarray], sample_x, samples: dict[str, np.ndarray], *,
          title: str | None = None, x_title: str = "", y_title: str = "") -> Figure:
    """Each chosen dimension as a smooth curve, with dots where the integer positions sample it."""
    colours = WAVE_COLOURS
    data = []
    for i, (name, y) in enumerate(smooth.items()):
        c = colours[i % len(colours)]
        data.append({"type": "scatter", "x": array(smooth_x), "y": array(y), "mode": "lines", "name": name,
                     "line": {"color": c, "width": 2}, "legendgroup": name})
        data.append({"type": "scatter", "x": array(sample_x), "y": array(samples[name]), "mode": "markers",
                     "name": name, "showlegend": False, "legendgroup": name, "marker": {"color": c, "size": 7}})
    layout = {"xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": y_title}, "range": [-1.15, 1.15]}}
    return make(data, layout, title, height=380)


def offsets(series: dict[str, np.ndarray] | list[tuple[str, np.ndarray]], *, title: str | None = None,
            x_title: str = "", y_title: str = "") -> Figure:
    """PE(p) . PE(p + k) against k, one line per starting position p (pairs: two lines may share a
    name, as p = 0 twice in A3's live frames, where every frame draws the same two traces)."""
    data = []
    for i, (name, y) in enumerate(series.items() if isinstance(series, dict) else series):
        y = array(y)
        data.append({"type": "scatter", "x": array(np.arange(len(y))), "y": y, "name": name,
                     "mode": "lines", "line": {"width": 5 if i == 0 else 2, "dash": "solid" if i == 0 else "dash"}})
    layout = {"xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": y_title}}}
    return make(data, layout, title, height=380)


def side_by_side(panels: list[tuple[str, object, list[str]]], *, title: str | None = None,
                 names: tuple[str, str, str] = ("token", "dimension", "value"), height: int = 360,
                 shared: bool = True) -> Figure:
    """Several (N, D) matrices next to each other; each panel is (name, matrix, row tokens), so a
    panel may list the same tokens in another order. ``shared``: one colour scale for all (a
    panel of zeros must look empty); otherwise each panel its own, its range "±x" in its name
    (PE's ±1 is washed out on the ±4 scale of a random embedding)."""
    arrays = [(name, array(z), rows) for name, z, rows in panels]
    lim = max((float(np.abs(z).max()) for _, z, _ in arrays if z.size), default=1.0) or 1.0
    n = len(arrays)
    gap = 0.09
    width = (1 - gap * (n - 1)) / n
    data, layout, notes = [], {}, []
    for i, (name, z, rows) in enumerate(arrays):
        suffix = "" if i == 0 else str(i + 1)
        x0 = i * (width + gap)
        own = lim if shared else (float(np.abs(z).max()) if z.size else 1.0) or 1.0
        if not shared:
            name = f"{name} · ±{own:.2g}"
        data.append({"type": "heatmap", "z": z, "y": unique_labels(rows), "x": array(np.arange(z.shape[1])),
                     "colorscale": DIVERGING_SCALE, "zmin": -own, "zmax": own, "showscale": shared and i == n - 1,
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "hovertemplate": f"{names[0]}: %{{y}}<br>{names[1]}: %{{x}}<br>"
                                      f"{names[2]}: %{{z:.3g}}<extra></extra>"})
        layout[f"xaxis{suffix}"] = {"domain": [x0, min(1.0, x0 + width)], "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "autorange": "reversed", "type": "category",
                                    "tickfont": {"size": 16}}
        notes.append({"text": name, "x": x0 + width / 2, "y": 1.0, "xref": "paper", "yref": "paper",
                      "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 15}})
    layout["annotations"] = notes
    layout["margin"] = {"t": 100 if title else 40}
    return make(data, layout, title, height)


def pair_rows(rows, difference, *, row_names: tuple[str, str, str], title: str | None = None,
              names: tuple[str, str, str] = ("row", "dimension", "value"), height: int = 300) -> Figure:
    """Two rows of x0 (the copies of one character) and their difference, one heatmap of three
    rows on one diverging scale: trace 0, z of shape (3, D), rows in the order of ``row_names``."""
    z = np.concatenate([array(rows).reshape(2, -1), array(difference).reshape(1, -1)]).astype(np.float32)
    lim = float(np.abs(z).max()) or 1.0
    trace = {"type": "heatmap", "z": z, "y": list(row_names), "x": array(np.arange(z.shape[1])),
             "colorscale": DIVERGING_SCALE, "zmin": -lim, "zmax": lim, "ygap": 3,
             "hovertemplate": f"{names[0]}: %{{y}}<br>{names[1]}: %{{x}}<br>{names[2]}: %{{z:.3f}}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 15}},
              "xaxis": {"title": {"text": names[1]}}}
    return make([trace], layout, title, height)
