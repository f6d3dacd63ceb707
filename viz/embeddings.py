"""Embedding pictures: the (N, D) matrix of a prompt, nearest neighbours, a 2-D map."""
from __future__ import annotations

import numpy as np

from viz.common import DIVERGING_SCALE, Figure, _text_px, array, label, make, unique_labels

# The prompt's tokens (blue), the chosen token (a star) and its neighbours (diamonds): apart for
# tritanopia and >= 3:1 on white (tests/test_colour_vision.py; were "#e45756", "#f58518").
PROMPT_COLOUR, CHOSEN_COLOUR, NEAR_COLOUR = "#4c78a8", "#d84141", "#e57600"


def matrix(values, row_tokens: list[str], *, title: str | None = None,
           hover_names: tuple[str, str, str] = ("token", "dimension", "value"), height: int = 420) -> Figure:
    """Rows are tokens, columns are the D dimensions; blue negative, red positive."""
    z = array(values)
    lim = float(np.abs(z).max()) if z.size else 1.0
    trace = {"type": "heatmap", "z": z, "y": unique_labels(row_tokens), "x": array(np.arange(z.shape[1])),
             "colorscale": DIVERGING_SCALE, "zmin": -lim, "zmax": lim,
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>"
                              f"{hover_names[2]}: %{{z:.3f}}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 18}},
              "xaxis": {"title": {"text": hover_names[1]}}}
    return make([trace], layout, title, height=max(300, 150 + 26 * len(row_tokens)))


def neighbours(tokens: list[str], sims, *, title: str | None = None, x_title: str = "") -> Figure:
    """Horizontal bars, most similar on top."""
    labels = unique_labels(tokens)
    trace = {"type": "bar", "orientation": "h", "y": labels, "x": array(sims),
             "text": [f"{s:.2f}" for s in array(sims)], "textposition": "outside", "cliponaxis": False,
             "marker": {"color": "#4c78a8"}, "hovertemplate": "%{y}: %{x:.3f}<extra></extra>"}
    layout = {"yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 20}},
              "xaxis": {"title": {"text": x_title}, "range": [min(0.0, float(array(sims).min(initial=0)) * 1.2),
                                                              max(0.05, float(array(sims).max(initial=0)) * 1.25)]}}
    # A two-line title takes ~50 px of the plot: keep ~34 px a bar for the 20 px labels.
    return make([trace], layout, title, height=max(300, 130 + 34 * len(tokens)))


# Where a label can sit around its point (plotly's textposition), with its direction (x, y up).
_AROUND = {"top center": (0, 1), "bottom center": (0, -1), "middle right": (1, 0), "middle left": (-1, 0),
           "top right": (1, 1), "top left": (-1, 1), "bottom right": (1, -1), "bottom left": (-1, -1)}


def _box(x: float, y: float, d: tuple[int, int], w: float, h: float) -> tuple[float, float, float, float]:
    """The (left, bottom, right, top) of a w x h label put in direction d of the point (x, y)."""
    cx, cy = x + d[0] * (w / 2 + 7), y + d[1] * (h / 2 + 7)
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Area two (left, bottom, right, top) boxes share. Example: _overlap((0, 0, 2, 2), (1, 1, 3, 3)) -> 1.0"""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def label_positions(points: np.ndarray, extent: np.ndarray, box: tuple[float, float] = (22, 24),
                    plot: tuple[float, float] = (420, 380)) -> list[str]:
    """A textposition for each labelled point so that labels cover each other (and the points)
    as little as possible: a greedy choice among eight places around the point. Distances are
    in pixels of a plot about ``plot`` wide and high (the narrowest the map gets: half the page
    at 1440 px) whose axes span ``extent`` (all points drawn), a label ``box`` pixels.

    Example: label_positions(np.array([[0, 0], [0, 0.01]]), np.array([[-1, -1], [1, 1]]))
             -> ["bottom center", "top center"]   (one below, one above: no overlap)
    """
    lo, hi = extent.min(axis=0), extent.max(axis=0)
    scale = np.array(plot) / np.maximum((hi - lo) * 1.1, 1e-9)            # px per unit, (2,)
    px = (points - lo) * scale                                          # (P, 2), y up
    w, h = box
    placed: list[tuple[float, float, float, float]] = []
    dots = [(x - 6, y - 6, x + 6, y + 6) for x, y in px]
    out = []
    for x, y in px:
        boxes = {name: _box(x, y, d, w, h) for name, d in _AROUND.items()}
        name = min(_AROUND, key=lambda k: sum(_overlap(boxes[k], o) for o in placed + dots))
        placed.append(boxes[name])
        out.append(name)
    return out


def pca_map(coords, tokens: list[str], prompt_coords, prompt_tokens: list[str], chosen_coords,
            chosen_token: str, *, title: str | None = None,
            names: tuple[str, str, str] = ("table", "prompt", "chosen"),
            axes: tuple[str, str] = ("PC 1", "PC 2"), neighbour_coords=None,
            neighbour_tokens: list[str] | None = None, neighbour_name: str = "neighbours") -> Figure:
    """Every searched row as a grey dot; the prompt's tokens labelled in blue, the chosen one a red
    star (traces 0-2). With ``neighbour_coords`` (k, 2): trace 3 joins the star to each of its k
    nearest rows in all D dimensions, trace 4 marks and names them in orange, so a student sees
    whether the map kept that neighbourhood."""
    xy, pxy, cxy = array(coords), array(prompt_coords).reshape(-1, 2), array(chosen_coords).reshape(-1, 2)
    nxy = array(neighbour_coords).reshape(-1, 2) if neighbour_coords is not None else np.zeros((0, 2), np.float32)
    near = list(neighbour_tokens or [])
    # Labels placed around their points so that near neighbours do not write over each other;
    # a repeated character is labelled once. The chosen character's label is placed first.
    everything = np.concatenate([a for a in (xy, pxy, cxy, nxy) if len(a)])
    first = [i for i, t in enumerate(prompt_tokens) if t not in prompt_tokens[:i]]
    where = label_positions(np.concatenate([cxy, pxy[first], nxy]), everything)
    chosen_at, prompt_at = where[0], ["top center"] * len(prompt_tokens)
    for i, pos in zip(first, where[1:1 + len(first)], strict=True):
        prompt_at[i] = pos
    near_at = where[1 + len(first):]
    shown = [label(t) if i in first else "" for i, t in enumerate(prompt_tokens)]
    data = [{"type": "scattergl", "x": xy[:, 0], "y": xy[:, 1], "mode": "markers", "name": names[0],
             "text": [label(t) for t in tokens], "hovertemplate": "%{text}<extra></extra>",
             "marker": {"size": 5, "color": "rgba(120,120,120,0.35)"}},
            {"type": "scatter", "x": pxy[:, 0], "y": pxy[:, 1], "mode": "markers+text", "name": names[1],
             "text": shown, "textposition": prompt_at, "customdata": [label(t) for t in prompt_tokens],
             "textfont": {"size": 20, "color": "#1f4e99"}, "hovertemplate": "%{customdata}<extra></extra>",
             "marker": {"size": 11, "color": PROMPT_COLOUR}},
            {"type": "scatter", "x": cxy[:, 0], "y": cxy[:, 1], "mode": "markers+text", "name": names[2],
             "text": [label(chosen_token)], "textposition": chosen_at,
             "textfont": {"size": 22, "color": "#c0392b"}, "hovertemplate": "%{text}<extra></extra>",
             "marker": {"size": 16, "color": CHOSEN_COLOUR, "symbol": "star"}}]
    if len(nxy):
        spokes_x = np.ravel([[cxy[0, 0], x, np.nan] for x in nxy[:, 0]]).astype(np.float32)
        spokes_y = np.ravel([[cxy[0, 1], y, np.nan] for y in nxy[:, 1]]).astype(np.float32)
        data += [{"type": "scatter", "x": spokes_x, "y": spokes_y, "mode": "lines", "showlegend": False,
                  "hoverinfo": "skip", "line": {"color": "rgba(229,118,0,0.55)", "width": 1.5}},
                 {"type": "scatter", "x": nxy[:, 0], "y": nxy[:, 1], "mode": "markers+text", "name": neighbour_name,
                  "text": [label(t) for t in near], "textposition": near_at,
                  "textfont": {"size": 17, "color": "#b35806"}, "hovertemplate": "%{text}<extra></extra>",
                  "marker": {"size": 10, "color": NEAR_COLOUR, "symbol": "diamond"}}]
    # The legend (four entries: two rows in a half-page column) sits under the x-axis title, not in
    # the band above the plot where it ran into the two-line title.
    layout = {"xaxis": {"title": {"text": axes[0]}, "zeroline": False},
              "yaxis": {"title": {"text": axes[1]}, "zeroline": False},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 150}}
    return make(data, layout, title, height=640)


WORD_FONT = 17               # px of a word's label on the word map
WORD_PLOT = (340, 340)       # px of the word map's plot at its narrowest (beside the code at 1440 px)
WORD_PAD = 0.15              # blank margin each side of the points (room for labels), a fraction of their span


def word_frame(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The axis ranges of the word map, (2, 2) as [[x0, x1], [y0, y1]], and the points in pixels
    of a WORD_PLOT plot drawn on them ((P, 2), y up): labels are placed in these pixels.

    Example: word_frame(np.array([[0., 0.], [1., 1.]]))[1] -> [[23.4, 23.4], [316.6, 316.6]]
    """
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.maximum(hi - lo, 1e-6)
    ranges = np.stack([lo - WORD_PAD * span, hi + WORD_PAD * span], axis=1)           # (2, 2)
    px = (xy - ranges[:, 0]) / (ranges[:, 1] - ranges[:, 0]) * np.array(WORD_PLOT)    # (P, 2)
    return ranges, px


def label_box(px: tuple[float, float], text: str, position: str) -> tuple[float, float, float, float]:
    """The (left, bottom, right, top) in pixels of ``text`` drawn at WORD_FONT at ``position``
    (plotly's textposition) around the point ``px``, its width from viz.common's text width."""
    return _box(px[0], px[1], _AROUND[position], _text_px(text, WORD_FONT), WORD_FONT + 5)


def place_words(px: np.ndarray, words: list[str]) -> tuple[list[str | None], list[int]]:
    """A textposition for each word where its label box meets no label placed before it, no
    other point and stays inside the plot: the eight places around the point are tried in
    order, the first free one taken (deterministic). A word with no free place gets a number
    instead (1, 2, ... in the order of the words), placed the same way but free to cover other
    points, and goes to the numbered key; a number with no free place either is left to the
    hover (None; the key then names it without a number on the map: ``word_map`` leaves it out).
    Returns the positions and, per word, its number (0: labelled by its name).

    Example: place_words(np.array([[100., 100.], [100., 100.]]), ["cat", "cat"])
             -> (["top center", "bottom center"], [0, 0])   # one above, one below
    """
    placed: list[tuple[float, float, float, float]] = []
    dots = [(x - 6, y - 6, x + 6, y + 6) for x, y in px]
    out: list[str | None] = []
    numbers: list[int] = []
    count = 0

    def free(box, own: int, over_dots: bool = False) -> bool:
        inside = box[0] >= 0 and box[1] >= 0 and box[2] <= WORD_PLOT[0] and box[3] <= WORD_PLOT[1]
        return inside and not any(_overlap(box, o) > 0 for o in placed) and \
            (over_dots or not any(_overlap(box, d) > 0 for k, d in enumerate(dots) if k != own))

    for i, (point, word) in enumerate(zip(px, words, strict=True)):
        where = next((name for name in _AROUND if free(label_box(point, word, name), i)), None)
        number = 0
        if where is None:
            count += 1
            number = count
            where = next((name for name in _AROUND if free(label_box(point, str(number), name), i, True)), None)
        if where is not None:
            placed.append(label_box(point, str(number) if number else word, where))
        out.append(where)
        numbers.append(number)
    return out, numbers


def word_map(coords, words: list[str], n_tokens: list[int], *, title: str | None = None,
             names: tuple[str, str] = ("one token", "several tokens, mean"), axes: tuple[str, str] = ("PC 1", "PC 2"),
             hover: list[str] | None = None, hover_only: str = "hover: {words}") -> Figure:
    """Each word of a list as a labelled point of a 2-D PCA: a word that is one token a blue dot
    (trace 0), a word cut into several tokens, drawn at the mean of their rows, an orange diamond
    (trace 1). ``hover`` adds each word's tokens.

    No label prints over another (issue 38: "Japan" over Paris and Italy): the axes are fixed
    (``word_frame``) and ``place_words`` gives each label a free place; a word crowded out is
    numbered, and the numbers are named under the title ("1 Japan · 2 Italy"); a word with no
    room for a number either is named there too (``hover_only``, "{words}" filled): its point
    says it on hover."""
    xy = array(coords).reshape(-1, 2)
    ranges, px = word_frame(xy) if len(xy) else (np.array([[-1.0, 1.0], [-1.0, 1.0]]), xy)
    shown = [label(w) for w in words]
    where, numbers = place_words(px, shown) if len(xy) else ([], [])
    hover = hover or words
    data = []
    for trace, (name, keep, colour, symbol) in enumerate(((names[0], lambda n: n == 1, PROMPT_COLOUR, "circle"),
                                                          (names[1], lambda n: n > 1, NEAR_COLOUR, "diamond"))):
        rows = [i for i, n in enumerate(n_tokens) if keep(n)]
        data.append({"type": "scatter", "x": xy[rows, 0] if rows else [], "y": xy[rows, 1] if rows else [],
                     "mode": "markers+text", "name": name,
                     "text": [("" if where[i] is None else str(numbers[i]) if numbers[i] else shown[i]) for i in rows],
                     "textposition": [where[i] or "top center" for i in rows],
                     "customdata": [label(hover[i]) for i in rows],
                     "textfont": {"size": WORD_FONT, "color": "#1f4e99" if trace == 0 else "#b35806"},
                     "hovertemplate": "%{customdata}<extra></extra>",
                     "marker": {"size": 11, "color": colour, "symbol": symbol}})
    key = " · ".join(f"{numbers[i]} {shown[i]}" for i in range(len(words)) if numbers[i] and where[i])
    rest = ", ".join(shown[i] for i in range(len(words)) if where[i] is None)
    if rest:
        key = f"{key} · {hover_only.format(words=rest)}" if key else hover_only.format(words=rest)
    if key:
        title = f"{title}<br>{key}" if title else key
    layout = {"xaxis": {"title": {"text": axes[0]}, "zeroline": False, "range": ranges[0].tolist()},
              "yaxis": {"title": {"text": axes[1]}, "zeroline": False, "range": ranges[1].tolist()},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
              "margin": {"b": 96}}
    return make(data, layout, title, height=560)
