"""Attention pictures: weight heatmaps with tokens on both axes, head grids, histograms."""
from __future__ import annotations

import numpy as np

from viz.common import (
    DIVERGING_SCALE,
    WEIGHTS_SCALE,
    Figure,
    _text_px,
    array,
    legend_rows,
    line_mode,
    make,
    pool,
    unique_labels,
)


def hover(query: str, key: str, value: str, fmt: str = ".3f") -> str:
    return f"{query}: %{{y}}<br>{key}: %{{x}}<br>{value}: %{{z:{fmt}}}<extra></extra>"


# --- Every token named, masked cells that look masked (issue 11) -------------------------------
MAX_NAMED = 48               # up to this many tokens every one is named on the axis
MASKED_COLOUR = "#5f5f5f"    # a cell the mask closed: -inf before the softmax, exactly 0 after it


def token_font(n: int) -> int:
    """Tick font size that lets n token labels sit side by side in a ~480 px wide plot.

    Example: token_font(11) -> 14; token_font(48) -> 9
    """
    return 14 if n <= 16 else 12 if n <= 24 else 10 if n <= 36 else 9


def token_axis(n: int) -> dict:
    """Axis settings that name every one of ``n`` tokens (plotly skips labels that would crowd
    on a category axis), up to MAX_NAMED; beyond that plotly picks which to show."""
    return {"dtick": 1, "tickfont": {"size": token_font(n)}} if n <= MAX_NAMED else {}


def word_label_px(labels: list[str], size: float) -> float:
    """0 for characters and numbers (they sit upright side by side); for words (SmolLM2's byte-level
    BPE tokens: Latin letters, no CJK, some 3 or more characters long) the width in px of the
    longest at ``size``: such column labels are turned (tickangle -90) and need that much room,
    or "because" and "it" overlap in a 30 px column. CJK is never turned.

    Example: word_label_px(["君", "不", "&lt;bos&gt;"], 12) -> 0.0; word_label_px(["The", " cat"], 12) > 0;
             word_label_px(["the", "the\u200b"], 12) > 0 (a repeated word is still a word)
    """
    # The zero-width marks of unique_labels (U+200B, repeated tokens) are not CJK.
    if any(any(ord(ch) >= 0x1100 and ch != "\u200b" for ch in t) for t in labels):
        return 0.0
    if not any(len(t.strip("\u200b")) >= 3 and any(ch.isalpha() for ch in t) for t in labels):
        return 0.0
    return max(_text_px(t, size) for t in labels)


def masked_layer(blocked, x, y, text: str | None = None, text_size: int = 16, **axes) -> dict:
    """A heatmap trace that paints the cells the mask closed (``blocked`` True) in MASKED_COLOUR,
    over a trace whose scale would draw them like any value (white for 0 or for −∞ left blank).
    ``text`` ("−∞") is written in each closed cell at ``text_size`` px: readable on a projector."""
    b = np.asarray(blocked, dtype=bool)
    trace = {"type": "heatmap", "z": array(np.where(b, 1.0, np.nan)), "x": x, "y": y, "zmin": 0, "zmax": 1,
             "colorscale": [[0, MASKED_COLOUR], [1, MASKED_COLOUR]], "showscale": False, "xgap": 1, "ygap": 1,
             "hoverinfo": "skip", **axes}
    if text:
        trace.update({"text": np.where(b, text, "").tolist(), "texttemplate": "%{text}",
                      "textfont": {"color": "white", "size": text_size}})
    return trace


def weight_top(weights) -> float:
    """Top of the colour scale of attention weights: the largest weight shown, rounded up to a
    step of 0.05 (at least 0.05). Typical weights are ~1/N, and on a fixed 0..1 scale a whole
    map is nearly white at projector distance; the colour bar says where the scale ends.

    Example: weight_top([[0.07, 0.12], [0.5, 0.5]]) -> 0.5; weight_top([[0.5, 0.5]]) -> 0.5
    """
    w = array(weights)
    finite = w[np.isfinite(w)]
    top = float(finite.max()) if finite.size else 1.0
    return min(1.0, max(0.05, float(np.ceil(top / 0.05 - 1e-6) * 0.05)))


def weights_bar(top: float, title: str | None = None, **place) -> dict:
    """A colour bar for weights on 0..top, ticks at 0, top/2 and top, titled (e.g. "weight")."""
    bar = {"tickvals": [0.0, top / 2, top], "ticktext": ["0", f"{top / 2:.3g}", f"{top:.2g}"], "thickness": 12,
           "tickfont": {"size": 12}, **place}
    if title:
        bar["title"] = {"text": title, "side": "top", "font": {"size": 12}}
    return bar


def heatmap(
    values,
    row_tokens: list[str],
    col_tokens: list[str],
    *,
    title: str | None = None,
    hover_names: tuple[str, str, str] = ("query", "key", "weight"),
    weights: bool = True,
    height: int = 460,
    masked=None,
    zmax: float | None = None,
    colorbar_title: str | None = None,
    least_font: int = 0,
) -> Figure:
    """A (rows, cols) matrix with a token on every row and column (labels of at least
    ``least_font`` px: the chart grows a row's height with them).

    ``masked`` (rows, cols) bool, True where a mask closed the cell: drawn in MASKED_COLOUR,
    not in the colour of a weight of 0.

    ``weights=True`` fixes the colour scale to 0..1 (or 0..``zmax``, e.g. ``weight_top(values)``:
    a sharper picture, the colour bar says where it ends), so two heatmaps of weights can be
    compared by eye; otherwise a diverging scale centred on 0 (scores; -inf drawn blank).
    Above ``viz.common.MAX_CELLS`` the matrix is pooled and the token axes become positions.
    """
    z = array(values)
    z = np.where(np.isfinite(z), z, np.nan).astype(np.float32)
    z, factor = pool(z)
    if factor == 1:
        x, y, kind = unique_labels(col_tokens), unique_labels(row_tokens), "category"
    else:
        x, y, kind = array(np.arange(z.shape[1]) * factor), array(np.arange(z.shape[0]) * factor), "linear"
    top = 1.0 if zmax is None else float(zmax)
    scale = {"zmin": 0.0, "zmax": top, "colorscale": WEIGHTS_SCALE,
             **({"colorbar": weights_bar(top, colorbar_title)} if zmax is not None or colorbar_title else {})
             } if weights else {
        "colorscale": DIVERGING_SCALE, "zmid": 0.0}
    trace = {"type": "heatmap", "z": z, "x": x, "y": y, "hovertemplate": hover(*hover_names),
             "xgap": 1, "ygap": 1, **scale}
    layout = {"yaxis": {"autorange": "reversed", "type": kind},
              "xaxis": {"side": "top", "type": kind, "tickangle": 0}}
    data = [trace]
    if kind == "category":
        # Every token named, even in a narrow panel with a colour bar (plotly would skip every other);
        # the chart grows so that each row keeps room for its label.
        n = max(z.shape)
        font = max(least_font, token_font(n))
        for axis in ("xaxis", "yaxis"):
            layout[axis].update(token_axis(n))
            if n <= MAX_NAMED:
                layout[axis]["tickfont"] = {"size": font}
        if font > token_font(n) and n <= MAX_NAMED:
            layout["xaxis"]["dtick"] = 2      # raised labels: every other key (a column stays as narrow)
        words = word_label_px(x, font) if n <= MAX_NAMED else 0.0
        # a row's room: its label's size and 4 px, and again what least_font added (a label's box
        # is taller than its size: 41 rows at 11 px met with 15 px a row)
        row = font + 4 + (font - token_font(n))
        height = max(height, round((90 if title else 40) + 40 + words + row * z.shape[0]))
        if words:                     # word tokens above the columns read upwards (see word_label_px)
            layout["xaxis"]["tickangle"] = -90
            layout["margin"] = {"t": round((60 if title else 10) + words + 12)}
        if masked is not None:
            data.append(masked_layer(masked, x, y))
    if title and "margin" not in layout:
        layout["margin"] = {"t": 90}
    return make(data, layout, title, height)


def head_grid(
    weights,
    tokens: list[str],
    *,
    titles: list[str],
    cols: int = 4,
    hover_names: tuple[str, str, str] = ("query", "key", "weight"),
    height_per_row: int = 260,
    zmax: float | None = None,
    colorbar_title: str | None = None,
    key_labels: bool = False,
    label_size: int = 11,
) -> Figure:
    """One small 0..1 heatmap per head, ``weights`` is (H, N, N): one trace per head, all on
    one pair of axes, each panel shifted by its place in the grid (``label_size``: its token
    labels' largest size, for panels drawn large). ``zmax`` (e.g.
    ``weight_top(weights)``) ends the shared colour scale below 1: every head on the same scale,
    sharper; the colour bar is labelled with it.

    One axis pair instead of H subplots: the browser lays out and redraws a grid of many
    heads several times faster (a slider that changes H rebuilds every panel).

    ``key_labels``: the key tokens are named under every panel, not only under the grid's last
    row (the axis' ticks): one text trace after the heads, upright, every k-th key where a
    column is narrower than the longest label (issue 38: B2's rows of heads named no key).
    """
    w = array(weights)
    h = w.shape[0]
    # More than 16 tokens: one head a row, full width, so every token keeps a readable label.
    cols = min(cols, h) if len(tokens) <= 16 else 1
    if len(tokens) > 16:
        height_per_row = max(height_per_row, 50 + (token_font(len(tokens)) + 4) * len(tokens))
    rows = -(-h // cols)
    shown = [pool(w[i], 64 * 64) for i in range(h)]
    n, factor = shown[0][0].shape[0], shown[0][1]
    gap = max(1.5, 0.15 * n)                                    # blank space between panels, in cells
    if key_labels and rows > 1:
        gap += 1.2                                              # a row of key labels above the next titles
    step = n + gap
    query, key, value = hover_names
    top = 1.0 if zmax is None else float(zmax)
    labels = unique_labels(tokens) if factor == 1 else [str(j * factor) for j in range(n)]
    cells = [[f"{labels[r]} → {labels[c]}" for c in range(n)] for r in range(n)]
    data, notes = [], []
    for i, (z, _) in enumerate(shown):
        r, c = divmod(i, cols)
        data.append({"type": "heatmap", "z": z, "x0": c * step, "dx": 1, "y0": r * step, "dy": 1,
                     "zmin": 0, "zmax": top, "colorscale": WEIGHTS_SCALE, "showscale": i == 0,
                     **({"colorbar": weights_bar(top, colorbar_title)} if i == 0 else {}),
                     "customdata": cells if n <= 32 else None,
                     "hovertemplate": (f"{titles[i]}<br>{query} → {key}: %{{customdata}}<br>{value}: %{{z:.3f}}"
                                       "<extra></extra>") if n <= 32 else hover(*hover_names)})
        notes.append({"text": titles[i], "x": c * step + (n - 1) / 2, "y": r * step - 0.6, "xref": "x", "yref": "y",
                      "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 14}})
    show = len(tokens) <= MAX_NAMED
    words = word_label_px(labels, min(label_size, token_font(n))) if show else 0.0     # turned below the grid
    if key_labels and show and rows > 1:
        data.append(key_label_trace(labels, n, step, cols, [i for i in range(h) if i // cols < rows - 1],
                                    min(11, token_font(n))))
    ticks_x = [c * step + j for c in range(cols) for j in range(n)] if show else []
    ticks_y = [r * step + j for r in range(rows) for j in range(n)] if show else []
    layout = {
        "xaxis": {"tickvals": ticks_x, "ticktext": labels * cols if show else [], "tickangle": -90 if words else 0,
                  "tickfont": {"size": min(label_size, token_font(n))}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, cols * step - gap - 0.5]},
        "yaxis": {"tickvals": ticks_y, "ticktext": labels * rows if show else [],
                  "tickfont": {"size": min(label_size, token_font(n))},
                  "showgrid": False, "zeroline": False, "range": [rows * step - gap - 0.5, -1.8]},
        "annotations": notes,
        "margin": {"t": 20},
    }
    return make(data, layout, None, height_per_row * rows + 60 + round(words))


def key_every(labels: list[str], n: int, step: float, cols: int, size: float, plot_px: float = 640) -> int:
    """Every how many keys a label fits upright under a panel of ``head_grid``: a column of a
    grid ``cols`` panels wide in a plot ``plot_px`` wide (the narrowest it is drawn: the page at
    1024 px) against the widest label at ``size`` px, plus a 4 px gap.

    Example: key_every(["君", "不"], 2, 3.5, 2, 11) -> 1; key_every(["because"] * 12, 12, 15, 2, 11) -> 3
    """
    column = plot_px / (cols * step)                               # px of one cell
    widest = max(_text_px(t, size) for t in labels) + 4
    return max(1, int(-(-widest // column)))


def key_label_trace(labels: list[str], n: int, step: float, cols: int, panels: list[int], size: float) -> dict:
    """The key tokens written under each of ``panels`` (every k-th, ``key_every``), as one text
    trace: cheaper to draw than an annotation a label."""
    k = key_every(labels, n, step, cols, size)
    x, y, text = [], [], []
    for i in panels:
        r, c = divmod(i, cols)
        for j in range(0, n, k):
            x.append(c * step + j)
            y.append(r * step + n - 0.5 + 0.55)
            text.append(labels[j])
    return {"type": "scatter", "mode": "text", "x": array(np.array(x, dtype=np.float32)),
            "y": array(np.array(y, dtype=np.float32)), "text": text, "textposition": "bottom center",
            "textfont": {"size": size, "color": "#444"}, "hoverinfo": "skip", "showlegend": False,
            "cliponaxis": False}


def histogram(series: dict[str, np.ndarray], *, title: str | None = None, x_title: str = "",
              y_title: str = "", nbins: int = 60, height: int = 360) -> Figure:
    """Overlaid density histograms, one per named series, each binned on its own range so a
    narrow series keeps its shape next to a wide one. The browser receives ``nbins``
    densities per series instead of every raw value."""
    data = []
    for name, values in series.items():
        density, edges = np.histogram(array(values).ravel(), bins=nbins, density=True)
        data.append({"type": "bar", "x": array((edges[:-1] + edges[1:]) / 2), "y": array(density),
                     "name": name, "width": float(edges[1] - edges[0]), "opacity": 0.6})
    layout = {"barmode": "overlay", "bargap": 0, "xaxis": {"title": {"text": x_title}},
              "yaxis": {"title": {"text": y_title}}}
    return make(data, layout, title, height)


def lines(x, series: dict[str, np.ndarray], *, title: str | None = None, x_title: str = "",
          y_title: str = "", log_x: bool = False, height: int = 360, markers: bool | None = None,
          styles: dict[str, dict] | None = None, legend_below: bool = False) -> Figure:
    """Several named lines over the same x; markers by default only on short lines (line_mode).
    ``styles`` adds trace properties by series name (a big marker for one point);
    ``legend_below`` puts the legend under the x axis, where a long title cannot touch it."""
    x = array(x)
    mode = line_mode(len(x)) if markers is None else ("lines+markers" if markers else "lines")
    data = [{"type": "scatter", "x": x, "y": array(y), "name": name, "mode": mode, **(styles or {}).get(name, {})}
            for name, y in series.items()]
    layout = {"xaxis": {"title": {"text": x_title}, "type": "log" if log_x else "linear"},
              "yaxis": {"title": {"text": y_title}}}
    if legend_below:
        layout["legend"] = {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0}
        layout["margin"] = {"b": 62 + 24 * (-(-len(series) // 2))}
    return make(data, layout, title, height)


def rect_grid(
    weights,
    row_tokens: list[str],
    col_tokens: list[str],
    *,
    titles: list[str],
    cols: int = 2,
    hover_names: tuple[str, str, str] = ("query", "key", "weight"),
    height_per_row: int = 340,
) -> Figure:
    """One 0..1 heatmap per head of a rectangular (H, N, S) weight tensor: rows are the
    query tokens, columns the key tokens (cross-attention: target down, source across).

    As in ``head_grid``, every panel is a trace on one pair of axes, shifted to its place in
    the grid: moving H redraws one plot area, not H subplots with an axis pair each. The
    source tokens are named under the bottom row, the target tokens left of the first column.
    """
    w = array(weights)
    h, n, s = w.shape
    cols = min(cols, h)
    rows = -(-h // cols)
    gap_x, gap_y = max(1.0, 0.12 * s), max(1.5, 0.15 * n)          # blank space between panels, in cells
    step_x, step_y = s + gap_x, n + gap_y
    x_labels, y_labels = unique_labels(col_tokens), unique_labels(row_tokens)
    query, key, value = hover_names
    cells = [[f"{y_labels[r]} → {x_labels[c]}" for c in range(s)] for r in range(n)]
    data, notes = [], []
    for i in range(h):
        r, c = divmod(i, cols)
        data.append({"type": "heatmap", "z": w[i], "x": array(c * step_x + np.arange(s)),
                     "y": array(r * step_y + np.arange(n)), "zmin": 0, "zmax": 1, "colorscale": WEIGHTS_SCALE,
                     "showscale": i == 0, "xgap": 1, "ygap": 1, "customdata": cells,
                     "hovertemplate": f"{titles[i]}<br>{query} → {key}: %{{customdata}}<br>{value}: %{{z:.3f}}"
                                      "<extra></extra>"})
        notes.append({"text": titles[i], "x": c * step_x + (s - 1) / 2, "y": r * step_y - 0.6, "xref": "x",
                      "yref": "y", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                      "font": {"size": 15}})
    layout = {
        "xaxis": {"tickvals": [c * step_x + j for c in range(cols) for j in range(s)], "ticktext": x_labels * cols,
                  "tickangle": 0, "tickfont": {"size": 12}, "showgrid": False, "zeroline": False,
                  "range": [-0.5, cols * step_x - gap_x - 0.5]},
        "yaxis": {"tickvals": [r * step_y + j for r in range(rows) for j in range(n)], "ticktext": y_labels * rows,
                  "tickfont": {"size": 12}, "showgrid": False, "zeroline": False,
                  "range": [rows * step_y - gap_y - 0.5, -1.6]},
        "annotations": notes,
        "margin": {"t": 20},
    }
    return make(data, layout, None, height_per_row * rows + 60)


def head_bands(
    values,
    tokens: list[str],
    n_heads: int,
    *,
    head_names: list[str],
    title: str | None = None,
    hover_names: tuple[str, str, str] = ("token", "column", "value"),
    height: int = 380,
) -> Figure:
    """An (N, H*d_head) matrix such as the concatenated head outputs, with a line between
    the heads and each band named: the picture of "concat" before W_o."""
    z = array(values)
    n, width = z.shape
    d_head = width // n_heads
    limit = float(np.abs(z).max()) or 1.0
    trace = {"type": "heatmap", "z": z, "x": array(np.arange(width)), "y": unique_labels(tokens),
             "colorscale": DIVERGING_SCALE, "zmin": -limit, "zmax": limit,
             "hovertemplate": hover(*hover_names, fmt=".2f")}
    lines_ = [{"type": "line", "x0": h * d_head - 0.5, "x1": h * d_head - 0.5, "y0": 0, "y1": 1,
               "xref": "x", "yref": "paper", "line": {"color": "black", "width": 3}} for h in range(1, n_heads)]
    notes = [{"text": head_names[h], "x": h * d_head + (d_head - 1) / 2, "y": 1.0, "xref": "x", "yref": "paper",
              "yanchor": "bottom", "showarrow": False, "font": {"size": 14}} for h in range(n_heads)]
    layout = {"yaxis": {"autorange": "reversed", "type": "category"},
              "xaxis": {"title": {"text": hover_names[1]}, "range": [-0.5, width - 0.5]},
              "shapes": lines_, "annotations": notes, "margin": {"t": 90 if title else 40}}
    return make([trace], layout, title, height)


def bars(categories: list[str], series: dict[str, list[float]], *, title: str | None = None,
         y_title: str = "", fmt: str = ",d", height: int = 360) -> Figure:
    """Grouped horizontal bars, one group per category (top to bottom) and one bar per named
    series, each labelled with its value, so that equal bars can be checked by reading.
    The values are the x data of each trace."""
    data = [{"type": "bar", "orientation": "h", "y": categories, "x": array(values), "name": name,
             "texttemplate": f"%{{x:{fmt}}}", "textposition": "outside", "cliponaxis": False,
             "hovertemplate": f"%{{y}}: %{{x:{fmt}}}<extra>{name}</extra>"}
            for name, values in series.items()]
    layout = {"barmode": "group", "xaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
              "yaxis": {"type": "category", "autorange": "reversed"}, "margin": {"r": 70}}
    return make(data, layout, title, height)


def score_map(
    lift,
    scores,
    row_labels: list[str],
    col_labels: list[str],
    *,
    title: str | None = None,
    hover_names: tuple[str, str, str] = ("pattern", "head", "mean weight"),
    height: int = 330,
) -> Figure:
    """A (rows, cols) table of ratios to chance, e.g. heads × patterns, coloured on a log
    scale: white is chance (1×), red is 2× and more, blue is below chance. Each cell is
    written as "2.6×"; hover shows ``scores``, the mean weight itself."""
    ratio = array(lift)
    safe = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
    z = np.clip(np.log2(safe), -2, 2).astype(np.float32)
    text = [["" if not np.isfinite(v) else f"{v:.1f}×" for v in row] for row in safe]
    trace = {"type": "heatmap", "z": z, "x": col_labels, "y": row_labels, "customdata": array(scores),
             "colorscale": DIVERGING_SCALE, "zmin": -2, "zmax": 2, "xgap": 1, "ygap": 1,
             "text": text, "texttemplate": "%{text}", "textfont": {"size": 13},
             "colorbar": {"tickvals": [-2, -1, 0, 1, 2], "ticktext": ["¼×", "½×", "1×", "2×", "4×"]},
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>"
                              f"{hover_names[2]}: %{{customdata:.3f}} (%{{text}})<extra></extra>"}
    # Room for the row labels ("L0·H0") however wide the font draws digits: ~10 px a character.
    left = 24 + 10 * max((len(r) for r in row_labels), default=4)
    layout = {"yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 14}},
              # level labels, a word a line: tilted, Chinese reads sideways; level, two met
              "xaxis": {"side": "top", "type": "category", "tickangle": 0, "tickfont": {"size": 10},
                        "tickvals": col_labels, "ticktext": [c.replace(" ", "<br>") for c in col_labels]},
              "margin": {"t": 130 if title else 80, "l": left}}
    return make([trace], layout, title, height)


# --- B1 and B2: the computation step by step (issue 22: colour bars, masks, a scale that shows) --
def _signed_bar(limit: float, title: str | None, **place) -> dict:
    bar = {"tickvals": [-limit, 0.0, limit], "ticktext": [f"{-limit:.2g}", "0", f"{limit:.2g}"], "thickness": 10,
           "tickfont": {"size": 11}, **place}
    if title:
        bar["title"] = {"text": title, "side": "top", "font": {"size": 11}}
    return bar


def _domain(lo: float, hi: float) -> list[float]:
    """An axis domain inside [0, 1], rounded (sums of fractions land at -5e-17, which plotly refuses).

    Example: _domain(-5e-17, 0.43) -> [0.0, 0.43]
    """
    return [round(min(1.0, max(0.0, lo)), 6), round(min(1.0, max(0.0, hi)), 6)]


def steps_grid(q, k, v, scores, weights, output, tokens: list[str], *, titles: list[str], cell: tuple[int, int],
               hover: tuple[str, str, str], title: str | None = None, height: int = 760, masked=None,
               bar_titles: tuple[str, str, str] = ("value", "score", "weight"),
               show: tuple[int, ...] = (0, 1, 2, 3, 4, 5), value_titles: tuple[str, str] | None = None) -> Figure:
    """Q, K (N, d_k), V (N, d_v); scores (N, S), weights (N, S) and output (N, d_v), each on its
    own axes: two rows of three up to 24 tokens, three rows of two beyond (wider cells). One cell
    (r, c) is framed: row r of Q, row c of K and V, the cell in scores and weights, and row r of
    the output that the weights mix. Traces 0-5 are the six panels in that order; ``titles``
    names them; masked cells come after them.

    Every colour says a number, and a colour bar says which: Q and K share one signed scale
    (they are compared), V and the output another (the output is a mix of V's rows: never
    outside V's range; SmolLM2's V is ~10x smaller than its Q and K, and on Q's scale looked
    empty, issue 38), the scores their own, the weights run from 0 to the largest weight shown
    (``weight_top``), not to 1. ``value_titles`` name the two shared bars (default "Q, K" and
    "V, <output's title>"), so the figure says which panels share a scale.
    ``masked`` (N, S) bool, True where the mask closed a cell: drawn dark in the scores ("−∞" is
    added there) and in the weights (exactly 0).

    ``show``: the panels drawn (by the numbers above), in one row when there are three or fewer;
    their traces come in that order. Presenter mode draws (0, 1, 2) and (3, 4, 5) on two slides.
    The Q/K bar sits beside K (Q when K is not shown), the V/output bar beside V (the output
    when V is not shown)."""
    labels = unique_labels(tokens)
    n = len(labels)
    r, c = cell
    panels = [array(p) for p in (q, k, v, scores, weights, output)]
    closed = None if masked is None else np.asarray(masked, dtype=bool)
    axis_font = max(11, min(12, token_font(n)))     # 11 px at least: read on a laptop (test_layout)
    # Word tokens over the square panels read upwards (see word_label_px), in three rows of two
    # (a column of a third of a 660 px chart is narrower than a turned label); the gaps between
    # the rows hold the turned labels and a panel's title.
    words = word_label_px(labels, axis_font) if n <= 24 else 0.0
    shown = [i for i in range(6) if i in show]
    cols = len(shown) if len(shown) <= 3 else 3 if n <= 24 and not words else 2
    rows = -(-len(shown) // cols)
    bar_of = {0: 1 if 1 in shown else 0, 2: 2 if 2 in shown else 5}        # the panel that carries a shared bar
    bar_of.update({1: bar_of[0], 5: bar_of[2]})
    # on two lines: a bar title wider than the gap beside its panel met the next panel's tokens
    shared = tuple(t.replace(", ", ",<br>", 1).replace("、", "、<br>", 1)
                   for t in (value_titles or (f"{titles[0]}, {titles[1]}", f"{titles[2]}, {titles[5]}")))
    gap_x, gap_y = 0.15 if cols == 3 else 0.17, 0.12 if cols == 3 else 0.08   # a colour bar and the next panel's tokens
    if words and rows > 1:
        height = max(height, 3 * (90 + (axis_font + 4) * n)) + 2 * round(words)   # rows 2 and 3 hold squares
        gap_y = max(gap_y, (words + 48) / (height - (100 if title else 50) - 40))
        # the gap beside a panel holds its colour bar and the next panel's row labels (words too),
        # in the narrowest chart this is drawn in: the page's width at 1024 px, ~660 px
        gap_x = max(gap_x, (words + 80) / 640)
    width = (1 - gap_x * (cols - 1)) / cols - 0.04 / cols       # room for the last colour bar
    tall = (1 - gap_y * (rows - 1)) / rows
    def span(*ps) -> float:
        return float(max(np.abs(p[np.isfinite(p)]).max(initial=0) for p in ps)) or 1.0
    signed = {0: span(panels[0], panels[1]), 2: span(panels[2], panels[5])}
    signed.update({1: signed[0], 5: signed[2]})
    allowed = np.isfinite(panels[3]) if closed is None else np.isfinite(panels[3]) & ~closed
    limit = float(np.abs(panels[3][allowed]).max(initial=0)) or 1.0
    top = weight_top(panels[4])
    data, layout, shapes, notes, extra = [], {}, [], [], []
    for j, i in enumerate(shown):
        z = np.where(np.isfinite(panels[i]), panels[i], np.nan).astype(np.float32)
        square = i in (3, 4)
        row, col = divmod(j, cols)
        x0 = col * (width + gap_x)
        y1 = 1 - row * (tall + gap_y)
        bar_x = x0 + width + 0.008
        place = {"x": bar_x, "xanchor": "left", "y": y1 - tall / 2, "yanchor": "middle", "len": tall,
                 "lenmode": "fraction"}
        if i == 4:
            scale = {"zmin": 0.0, "zmax": top, "colorscale": WEIGHTS_SCALE, "showscale": True,
                     "colorbar": weights_bar(top, bar_titles[2], **place)}
        elif i == 3:
            scale = {"colorscale": DIVERGING_SCALE, "zmin": -limit, "zmax": limit, "showscale": True,
                     "colorbar": _signed_bar(limit, bar_titles[1], **place)}
        else:   # Q and K share a bar (beside K), V and the output another (beside V)
            mine = bar_of[i] == i
            scale = {"colorscale": DIVERGING_SCALE, "zmin": -signed[i], "zmax": signed[i], "showscale": mine,
                     **({"colorbar": _signed_bar(signed[i], shared[0 if i in (0, 1) else 1], **place)}
                        if mine else {})}
        suffix = "" if j == 0 else str(j + 1)
        x = labels if square else array(np.arange(z.shape[1]))
        data.append({"type": "heatmap", "z": z, "x": x, "y": labels, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "xgap": 1 if square else 0, "ygap": 1,
                     "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}"
                                      "<extra></extra>", **scale})
        if square and closed is not None and closed.any():
            extra.append(masked_layer(closed, labels, labels, text="−∞" if i == 3 and n <= 12 else None,
                                      text_size=14, xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        named = token_axis(n) if n <= MAX_NAMED else {}
        if named and axis_font > token_font(n):
            named = {**named, "dtick": 2}         # labels raised to 11 px: every other token named
        layout[f"xaxis{suffix}"] = {"domain": _domain(x0, x0 + width), "anchor": f"y{suffix}",
                                    "type": "category" if square else "linear", "showticklabels": square,
                                    "tickangle": -90 if square and words else 0, "side": "top", "showgrid": False,
                                    # beyond 24 tokens the columns are too narrow to name each: plotly picks
                                    **({**(named if n <= 24 else {}), "tickfont": {"size": axis_font}}
                                       if square else {})}
        layout[f"yaxis{suffix}"] = {"domain": _domain(y1 - tall, y1), "anchor": f"x{suffix}", "type": "category",
                                    "autorange": "reversed", "showticklabels": col == 0 or square,
                                    **named, "tickfont": {"size": axis_font}}
        notes.append({"text": titles[i], "x": x0 + width / 2, "y": y1, "xref": "paper", "yref": "paper",
                      "yanchor": "bottom", "yshift": ((words or axis_font) + 14) if square else 6, "showarrow": False,
                      "font": {"size": 15}})
        frame = {"type": "rect", "xref": f"x{suffix}", "yref": f"y{suffix}", "line": {"color": "#d62728", "width": 3},
                 "fillcolor": "rgba(0,0,0,0)"}
        span = z.shape[1]
        if i in (0, 5):          # row r of Q, and the output row the weights of row r mix
            shapes.append({**frame, "x0": -0.5, "x1": span - 0.5, "y0": r - 0.5, "y1": r + 0.5})
        elif i in (1, 2):        # row c of K (and of V, which weight (r, c) scales)
            shapes.append({**frame, "x0": -0.5, "x1": span - 0.5, "y0": c - 0.5, "y1": c + 0.5})
        else:                    # the cell itself, in scores and in weights
            shapes.append({**frame, "x0": c - 0.5, "x1": c + 0.5, "y0": r - 0.5, "y1": r + 0.5})
    if rows == 3:
        height = max(height, 3 * (90 + (axis_font + 4) * n))
    layout.update({"shapes": shapes, "annotations": notes, "margin": {"t": 100 if title else 50, "r": 70}})
    return make(data + extra, layout, title, height)


def batch_grid(weights, token_lists: list[list[str]], *, titles: list[str], hover: tuple[str, str, str],
               title: str | None = None, height: int = 400, bar_title: str | None = None) -> Figure:
    """The (B, N, N) weights of one batched call, one panel per sequence, each with its own
    tokens, all on one colour scale from 0 to the largest weight shown (its bar at the right).
    Trace b is sequence b."""
    b = len(token_lists)
    gap = 0.07
    width = (1 - gap * (b - 1) - 0.04) / b
    top = weight_top(weights)
    data, layout, notes = [], {}, []
    for i, tokens in enumerate(token_lists):
        labels = unique_labels(tokens)
        suffix = "" if i == 0 else str(i + 1)
        x0 = i * (width + gap)
        last = i == b - 1
        data.append({"type": "heatmap", "z": array(weights[i]), "x": labels, "y": labels, "xaxis": f"x{suffix}",
                     "yaxis": f"y{suffix}", "zmin": 0.0, "zmax": top, "colorscale": WEIGHTS_SCALE,
                     "showscale": last, "xgap": 1, "ygap": 1,
                     **({"colorbar": weights_bar(top, bar_title, x=x0 + width + 0.01, xanchor="left")} if last else {}),
                     "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}<extra></extra>"})
        layout[f"xaxis{suffix}"] = {"domain": _domain(x0, x0 + width), "anchor": f"y{suffix}", "type": "category",
                                    "side": "top", "tickangle": 0, "dtick": 1}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "type": "category", "autorange": "reversed", "dtick": 1}
        notes.append({"text": titles[i], "x": x0 + width / 2, "y": 1.0, "xref": "paper", "yref": "paper",
                      "yanchor": "bottom", "yshift": 24, "showarrow": False, "font": {"size": 15}})
    layout.update({"annotations": notes, "margin": {"t": 110 if title else 60, "r": 60}})
    return make(data, layout, title, height)


def head_split(w_q, q_flat, q_heads, tokens: list[str], *, head_names: list[str], titles: list[str],
               hover: tuple[str, str, str], height: int = 520) -> Figure:
    """How one wide matrix becomes H heads. Left: W_q (D, D) cut into H column blocks, one per
    head. Middle: Q = X·W_q (N, D), the same blocks. Right: the reshape to (H, N, d_head), the
    blocks stacked as a batch axis, every row named by its token (the head's name beside its
    block, at the right). Traces 0-2 are the three panels; a black line marks every cut."""
    h, n, d_head = q_heads.shape
    d = w_q.shape[0]
    labels = unique_labels(tokens)
    stacked = array(q_heads).reshape(h * n, d_head)                       # (H·N, d_head)
    rows_named = h * n <= 48                                              # else the first block only
    height = max(height, 120 + 18 * min(h * n, 64))                      # ~18 px a named row: CJK at 11 px
    panels = [(array(w_q), array(np.arange(d)), array(np.arange(d))), (array(q_flat), array(np.arange(d)), labels),
              (stacked, array(np.arange(d_head)), array(np.arange(h * n)))]
    domains = [(0.0, 0.27), (0.36, 0.62), (0.74, 0.92)]
    data, layout, shapes, notes = [], {}, [], []
    for i, (z, x, y) in enumerate(panels):
        n_ax = "" if i == 0 else str(i + 1)
        data.append({"type": "heatmap", "z": z, "x": x, "y": y, "xaxis": f"x{n_ax}", "yaxis": f"y{n_ax}",
                     "colorscale": DIVERGING_SCALE, "zmid": 0.0, "showscale": False,
                     "hovertemplate": f"{hover[0]}: %{{y}}<br>{hover[1]}: %{{x}}<br>{hover[2]}: %{{z:.3f}}<extra></extra>"})
        layout[f"xaxis{n_ax}"] = {"domain": list(domains[i]), "anchor": f"y{n_ax}", "showgrid": False, "side": "top",
                                  "tickangle": 0}
        layout[f"yaxis{n_ax}"] = {"anchor": f"x{n_ax}", "autorange": "reversed", "showgrid": False,
                                  "type": "category" if i == 1 else "linear", "showticklabels": i != 0,
                                  "dtick": 1 if i == 1 and n <= 24 else None}
        if i == 2:                                  # each row its token; each block its head, at the right
            # Too many rows to name each: the first block's tokens, every k-th where a row is
            # under ~16 px tall (128 rows in ~1150 px: 9 px each, 11-px labels would meet).
            every = 1 if rows_named else max(1, -(-16 * h * n // (height - 120)))
            shown = range(h * n) if rows_named else range(0, n, every)
            layout[f"yaxis{n_ax}"].update({"tickvals": list(shown), "ticktext": [labels[j % n] for j in shown],
                                           "tickmode": "array", "tickfont": {"size": 11}})
            notes += [{"text": head_names[j], "x": domains[2][1] + 0.01, "y": j * n + (n - 1) / 2, "xref": "paper",
                       "yref": "y3", "xanchor": "left", "yanchor": "middle", "showarrow": False,
                       "font": {"size": 13}} for j in range(h)]
        notes.append({"text": titles[i], "x": sum(domains[i]) / 2, "y": 1.0, "xref": "paper", "yref": "paper",
                      "yanchor": "bottom", "yshift": 26, "showarrow": False, "font": {"size": 15}})
        line = {"type": "line", "xref": f"x{n_ax}", "yref": f"y{n_ax}", "line": {"color": "black", "width": 2}}
        if i < 2:                                   # column cuts every d_head
            top, bottom = (-0.5, d - 0.5) if i == 0 else (-0.5, n - 0.5)
            shapes += [{**line, "x0": j * d_head - 0.5, "x1": j * d_head - 0.5, "y0": top, "y1": bottom}
                       for j in range(1, h)]
        else:                                       # head boundaries in the stacked batch axis
            shapes += [{**line, "x0": -0.5, "x1": d_head - 0.5, "y0": j * n - 0.5, "y1": j * n - 0.5}
                       for j in range(1, h)]
    layout.update({"shapes": shapes, "annotations": notes, "margin": {"t": 80, "l": 60, "r": 10}})
    return make(data, layout, None, height)


def head_param_bars(matrices: list[str], per_head: int, whole: int, n_heads: int, *, head_names: list[str],
                    group_names: tuple[str, str], title: str | None, x_title: str, height: int = 420,
                    row_names: tuple[str, str] | None = None) -> Figure:
    """For each matrix, two rows: H heads (one stacked segment of D·d_head per head, each head
    its own slice of the matrix) and one head (a single D·D block). Same total, split differently.
    Traces 0..H-1 are the heads, trace H the single head. ``row_names`` (short: "H heads",
    "1 head") name the rows after the matrix, ``group_names`` the legend; the legend lies in
    rows under the axis, so the bars get the chart's width beside the code (issue 38: long row
    names and a legend at the right left them ~40 px)."""
    short = row_names or group_names
    rows = [f"{m} · {g}" for m in matrices for g in short]
    data = []
    for j in range(n_heads):
        values = [per_head if i % 2 == 0 else 0 for i in range(len(rows))]
        data.append({"type": "bar", "orientation": "h", "y": rows, "x": array(values), "name": head_names[j],
                     "hovertemplate": f"%{{y}}: {head_names[j]} %{{x:,d}}<extra></extra>",
                     "marker": {"line": {"color": "white", "width": 1.5}}})
    data.append({"type": "bar", "orientation": "h", "y": rows, "x": array([0 if i % 2 == 0 else whole
                                                                          for i in range(len(rows))]),
                 "name": group_names[1], "marker": {"color": "#7f7f7f"},
                 "hovertemplate": "%{y}: %{x:,d}<extra></extra>"})
    # the narrowest width the chart is drawn at: half the page beside the code at 1440 px, ~440 px
    lines = legend_rows([*head_names, group_names[1]], 400, 13)
    layout = {"barmode": "stack", "bargap": 0.25,
              "xaxis": {"title": {"text": x_title, "standoff": 10}, "rangemode": "tozero", "nticks": 5,
                        "tickformat": "~s"},
              "yaxis": {"type": "category", "autorange": "reversed"},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0,
                         "xanchor": "left", "font": {"size": 13}, "traceorder": "normal"},
              "margin": {"r": 20, "b": 70 + 24 * lines}}
    return make(data, layout, title, height + 24 * lines)


# --- Every head of a real model at once (issue 24 §4: SmolLM2's 30 layers × 9 heads) ---------
def layer_head_map(
    values,
    *,
    selected: tuple[int, int],
    title: str | None = None,
    axis_titles: tuple[str, str] = ("layer", "head"),
    hover_names: tuple[str, str, str] = ("layer", "head", "mean weight"),
    colorbar_title: str | None = None,
    zmax: float = 1.0,
    height: int = 330,
) -> Figure:
    """One number per head, ``values`` (L, H), as an H × L heatmap: layers left to right (the
    model's depth reads like a line of text), heads top to bottom, both counted from 0. The
    ``selected`` (layer, head) is outlined. Each cell's customdata is "layer,head" (a click on
    it can pick that head, ``ui.chart(on_select=...)``). NaN (no query to average over) is blank.

    Example: layer_head_map(np.zeros((30, 9)), selected=(16, 0)) -> one heatmap of z shape (9, 30)
    """
    v = array(values)                                                     # (L, H)
    n_layers, n_heads = v.shape
    z = np.where(np.isfinite(v), v, np.nan).T.astype(np.float32)          # (H, L)
    layer_name, head_name, value_name = hover_names
    trace = {"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": 0, "dy": 1, "zmin": 0.0, "zmax": float(zmax),
             "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1,
             "customdata": [[f"{i},{j}" for i in range(n_layers)] for j in range(n_heads)],
             "colorbar": weights_bar(float(zmax), colorbar_title),
             "hovertemplate": f"{layer_name} %{{x}} · {head_name} %{{y}}<br>{value_name}: %{{z:.3f}}<extra></extra>"}
    layer, head = selected
    box = {"type": "rect", "xref": "x", "yref": "y", "x0": layer - 0.5, "x1": layer + 0.5,
           "y0": head - 0.5, "y1": head + 0.5, "line": {"color": "#d62728", "width": 3}}
    layout = {"xaxis": {"title": {"text": axis_titles[0]}, "dtick": 1 if n_layers <= 12 else 2,
                        "range": [-0.5, n_layers - 0.5], "showgrid": False, "zeroline": False},
              "yaxis": {"title": {"text": axis_titles[1]}, "dtick": 1, "autorange": "reversed",
                        "showgrid": False, "zeroline": False},
              "shapes": [box], "margin": {"b": 60}}
    return make([trace], layout, title, height)


def head_mosaic(
    thumbs,
    *,
    title: str | None = None,
    axis_titles: tuple[str, str] = ("layer", "head"),
    hover_names: tuple[str, str, str] = ("layer", "head", "weight"),
    colorbar_title: str | None = None,
    zmax: float = 1.0,
    tile_px: int = 40,
) -> Figure:
    """Every head's pattern small, ``thumbs`` (L, H, m, m) (e.g. core.lab.real_attention.thumbnails),
    laid out as ``layer_head_map`` lays out its cells: layer l's column, head h's row, one blank
    cell between tiles. One heatmap trace for all of them (270 traces would be 270 images to
    lay out on every redraw). Hover names the layer and the head (the tile's position, rounded).

    Example: head_mosaic(np.zeros((30, 9, 12, 12))) -> z of shape (9 * 13 - 1, 30 * 13 - 1)
    """
    t = array(thumbs)
    n_layers, n_heads, m = t.shape[0], t.shape[1], t.shape[2]
    step = m + 1
    z = np.full((n_heads * step - 1, n_layers * step - 1), np.nan, dtype=np.float32)
    for i in range(n_layers):
        for j in range(n_heads):
            z[j * step: j * step + m, i * step: i * step + m] = t[i, j]
    # Cell k of tile i sits at i - 0.5 + (k + 0.5) / step: inside (i - 0.5, i + 0.5), so the
    # hover's rounded x is the layer and the ticks at whole numbers stand under the tiles.
    layer_name, head_name, value_name = hover_names
    trace = {"type": "heatmap", "z": z, "x0": -0.5 + 0.5 / step, "dx": 1 / step, "y0": -0.5 + 0.5 / step,
             "dy": 1 / step, "zmin": 0.0, "zmax": float(zmax), "colorscale": WEIGHTS_SCALE,
             "colorbar": weights_bar(float(zmax), colorbar_title),
             "hovertemplate": f"{layer_name} %{{x:.0f}} · {head_name} %{{y:.0f}}<br>{value_name}: %{{z:.3f}}"
                              "<extra></extra>"}
    layout = {"xaxis": {"title": {"text": axis_titles[0]}, "dtick": 1 if n_layers <= 12 else 2,
                        "range": [-0.5, n_layers - 0.5], "showgrid": False, "zeroline": False},
              "yaxis": {"title": {"text": axis_titles[1]}, "dtick": 1, "range": [n_heads - 0.5, -0.5],
                        "showgrid": False, "zeroline": False},
              "margin": {"b": 60}}
    return make([trace], layout, title, (90 if title else 30) + 70 + tile_px * n_heads)
