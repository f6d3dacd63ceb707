"""The whole model as one strip of boxes: token ids -> embedding -> blocks -> final norm -> output."""
from __future__ import annotations

from viz.common import Figure, make

_FILL = {"ids": "#f0f2f6", "embed": "#dbe9f6", "block": "#e8e3f3", "final_norm": "#fde2c8", "output": "#dbe9f6",
         "softmax": "#f0f2f6"}


def compact(n: int) -> str:
    """A parameter count short enough for a narrow box.

    Example: compact(330_496) -> "330K"; compact(1_387_136) -> "1.4M"; compact(128) -> "128"
    """
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def model_strip(kinds: list[str], names: list[str], shapes: list[str], params: list[str], *, selected: int | None,
                title: str | None = None, height: int = 230) -> Figure:
    """One box per stage, left to right, with its name, the shape it hands on and its parameters;
    the box at index ``selected`` (the block the page shows below) is framed in red. Arrows join
    the boxes. ``kinds`` are core.calc.params.model_stages names (they pick the colour); ``names``
    etc. come already translated and formatted."""
    n = len(names)
    shapes_, notes = [], []
    for i, (kind, name, shape, count) in enumerate(zip(kinds, names, shapes, params, strict=True)):
        x0, x1 = i + 0.06, i + 0.94
        shapes_.append({"type": "rect", "x0": x0, "x1": x1, "y0": 0.15, "y1": 0.85, "xref": "x", "yref": "y",
                        "fillcolor": _FILL.get(kind, "#eef3f8"),
                        "line": {"color": "#d62728" if i == selected else "#8c8c8c", "width": 3 if i == selected else 1}})
        # The name above the box's middle line, the shape and count under it, each anchored on the
        # line: they never meet, whatever the type's size (presenter mode draws it larger).
        notes.append({"x": i + 0.5, "y": 0.5, "yanchor": "bottom", "yshift": 3, "text": f"<b>{name}</b>",
                      "showarrow": False, "font": {"size": 13}})
        notes.append({"x": i + 0.5, "y": 0.5, "yanchor": "top", "yshift": -3, "text": f"{shape}<br>{count}",
                      "showarrow": False, "font": {"size": 12, "color": "#555"}})
        if i < n - 1:
            notes.append({"x": i + 1.06, "y": 0.5, "ax": i + 0.94, "ay": 0.5, "xref": "x", "yref": "y", "axref": "x",
                          "ayref": "y", "text": "", "showarrow": True, "arrowhead": 2, "arrowsize": 1, "arrowwidth": 1.5,
                          "arrowcolor": "#8c8c8c"})
    layout = {"xaxis": {"range": [0, n], "visible": False, "fixedrange": True},
              "yaxis": {"range": [0, 1], "visible": False, "fixedrange": True},
              "shapes": shapes_, "annotations": notes, "margin": {"l": 4, "r": 4, "b": 4}}
    return make([], layout, title, height)
