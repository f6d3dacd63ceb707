"""F2's pictures: the logit lens grid, one token's probability through the layers, the direct
attribution of each write and of each head. Pure functions: arrays and translated labels in,
a ``viz.common.Figure`` out."""
from __future__ import annotations

import re

import numpy as np

from viz.attention import token_axis, token_font, weights_bar, word_label_px
from viz.common import DIVERGING_SCALE, WEIGHTS_SCALE, Figure, _text_px, array, label, make, unique_labels

ROW_PX = 19          # px a layer's row of the grid takes at least: 31 rows of SmolLM2 in ~590 px
GRID_PX = 560        # px of plot the full-width grid has at least (1024 px window, sidebar open)
CUT = "›"            # ends a label cut to fit its cell: "…" looked like the space sign "␣" at 9 px


def cell_word(token: str, n_cols: int) -> str:
    """A guess as a cell of the grid can hold it: blanks made visible, markup made literal, cut
    to the characters a column has room for (the hover names it whole).

    Over 32 columns a cell is too narrow for any word: it is left blank (colour and hover only).

    Example: cell_word(" Paris", 5) -> " Paris"; cell_word(" capital", 24) -> " ca›";
             cell_word("  ", 5) -> "␣␣"; cell_word("<b>", 5) -> "&lt;b&gt;"; cell_word("a", 40) -> ""
    """
    room = 7 if n_cols <= 12 else 5 if n_cols <= 18 else 4 if n_cols <= 32 else 0
    if room == 0:
        return ""
    shown = token.replace("\n", "↵").replace("\t", "⇥")
    if not shown.strip():
        shown = shown.replace(" ", "␣")
    if len(shown) > room:
        shown = shown[:room - 1] + CUT
    return label(shown)


_BYTES = re.compile(r"^(\\x[0-9a-f]{2})+$")


def fitted_tokens(tokens: list[str], font: float) -> list[str]:
    """Column labels that fit side by side. Labels with Chinese are never turned, so when
    SmolLM2's tokens of a Chinese text (whole characters, and pieces of one written \\xNN) do
    not fit upright, each piece is shown as "�", the sign for part of a character (the hover
    still names its bytes).

    Example: fitted_tokens(["上", "\\xe6\\x9d"] * 12, 10) -> ["上", "�"] * 12
    """
    if not any(ord(ch) >= 0x1100 for t in tokens for ch in t):
        return tokens
    if len(tokens) * max(_text_px(label(t), font) + 6 for t in tokens) <= GRID_PX:
        return tokens
    return ["\ufffd" if _BYTES.match(t) else t for t in tokens]


def lens_grid(probs, words, tokens: list[str], row_names: list[str], hover: list[list[str]], *,
              title: str | None, x_title: str, y_title: str, bar_title: str) -> Figure:
    """The logit lens as one heatmap: a column per position (the token read there, at the
    bottom), a row per layer (the embedding at the bottom, the model's output at the top), each
    cell coloured by its top guess's probability, ``probs`` (R, N), and labelled with that guess,
    ``words`` (R, N). ``hover`` (R, N) holds each cell's text (its top guesses with their
    probabilities). Row r is drawn at y = r."""
    z = array(probs)                                                     # (R, N)
    rows, n = z.shape
    font = min(12, token_font(n))
    x = unique_labels(fitted_tokens(tokens, font))
    trace = {"type": "heatmap", "z": z, "x": x, "y0": 0, "dy": 1, "zmin": 0.0, "zmax": 1.0,
             "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1, "customdata": hover,
             "colorbar": weights_bar(1.0, bar_title),
             "text": [[cell_word(w, n) for w in row] for row in words], "texttemplate": "%{text}",
             "textfont": {"size": 11 if n <= 12 else 9},
             "hovertemplate": "%{customdata}<extra></extra>"}
    # Word tokens are turned only when they do not fit upright side by side: the grid is drawn
    # full width, ~560 px of plot at 1024 px (see viz.attention.word_label_px).
    words_px = word_label_px(x, font)
    if words_px and n * (words_px + 8) <= GRID_PX:
        words_px = 0.0
    row_px = max(ROW_PX, min(34, 300 // rows))
    layout = {"xaxis": {"type": "category", "title": {"text": x_title}, "tickangle": -90 if words_px else 0,
                        **token_axis(n), "tickfont": {"size": font}},
              "yaxis": {"tickvals": list(range(rows)), "ticktext": row_names, "title": {"text": y_title},
                        "tickfont": {"size": 11}, "range": [-0.5, rows - 0.5], "showgrid": False,
                        "zeroline": False}}
    height = (90 if title else 30) + 60 + row_px * rows + round(words_px)
    return make([trace], layout, title, max(height, 260))


def layer_lines(series: dict[str, np.ndarray], row_names: list[str], *, title: str | None, x_title: str,
                y_title: str, height: int = 360) -> Figure:
    """Probabilities through the layers: one line per named series over the R rows of the lens
    (x = 0 .. R - 1, named by ``row_names``: the embedding, then each block)."""
    rows = len(row_names)
    every = 1 if rows <= 12 else 3
    data = [{"type": "scatter", "x": array(np.arange(rows)), "y": array(y), "name": name,
             "mode": "lines+markers", "marker": {"size": 5}} for name, y in series.items()]
    # The x range starts a whole step left of the embedding's row: its tick then keeps clear of
    # the y axis' "0" in the corner.
    layout = {"xaxis": {"title": {"text": x_title}, "tickvals": list(range(0, rows, every)),
                        "ticktext": row_names[::every], "range": [-1.2, rows - 0.5], "tickangle": 0},
              "yaxis": {"title": {"text": y_title}, "range": [-0.02, 1.02]}}
    return make(data, layout, title, height)


def write_bars(embed: float, attn, ffn, names: tuple[str, str, str], embed_tick: str, *, title: str | None,
               x_title: str, y_title: str, height: int = 380) -> Figure:
    """The direct attribution of every write: the embedding's term left of block 0 (one tick
    step before it, its tick ``embed_tick``), then block l's attention and feed-forward terms
    side by side at x = l. Traces: embedding, attention, FFN, named by ``names``."""
    a, f = array(attn), array(ffn)
    n = len(a)
    every = 1 if n <= 12 else 2 if n <= 24 else 3
    ticks = [-every] + list(range(0, n, every))
    data = [{"type": "bar", "x": [-every], "y": array([embed]), "name": names[0],
             "marker": {"color": "#7f7f7f"}},
            {"type": "bar", "x": array(np.arange(n)), "y": a, "name": names[1]},
            {"type": "bar", "x": array(np.arange(n)), "y": f, "name": names[2]}]
    for trace in data:
        where = "" if trace is data[0] else " · %{x}"
        trace["hovertemplate"] = f"{trace['name']}{where}: %{{y:+.3f}}<extra></extra>"
    layout = {"barmode": "group", "bargap": 0.15,
              "xaxis": {"title": {"text": x_title}, "tickvals": ticks,
                        "ticktext": [embed_tick] + [str(t) for t in ticks[1:]],
                        "range": [-every - 0.6, n - 0.4], "tickangle": 0},
              "yaxis": {"title": {"text": y_title}, "zeroline": True}}
    return make(data, layout, title, height)


def head_contributions(values, *, title: str | None, axis_titles: tuple[str, str],
                       hover_names: tuple[str, str, str], bar_title: str, height: int = 330) -> Figure:
    """One signed number per head, ``values`` (L, H), as an H × L heatmap (layers left to right,
    heads top to bottom, as ``viz.attention.layer_head_map``), red for a head that raises the
    answer, blue for one that lowers it, white for none; the scale is symmetric about 0.

    Example: head_contributions(np.zeros((30, 9)), ...) -> one heatmap of z shape (9, 30)
    """
    v = array(values)                                                     # (L, H)
    n_layers, n_heads = v.shape
    z = v.T.astype(np.float32)                                            # (H, L)
    top = float(np.abs(z).max()) or 1.0
    layer_name, head_name, value_name = hover_names
    bar = {"tickvals": [-top, 0.0, top], "ticktext": [f"{-top:.2g}", "0", f"{top:.2g}"], "thickness": 12,
           "tickfont": {"size": 12}, "title": {"text": bar_title, "side": "top", "font": {"size": 12}}}
    trace = {"type": "heatmap", "z": z, "x0": 0, "dx": 1, "y0": 0, "dy": 1, "zmin": -top, "zmax": top,
             "colorscale": DIVERGING_SCALE, "xgap": 1, "ygap": 1, "colorbar": bar,
             "hovertemplate": f"{layer_name} %{{x}} · {head_name} %{{y}}<br>{value_name}: %{{z:+.3f}}"
                              "<extra></extra>"}
    layout = {"xaxis": {"title": {"text": axis_titles[0]}, "dtick": 1 if n_layers <= 12 else 2,
                        "range": [-0.5, n_layers - 0.5], "showgrid": False, "zeroline": False},
              "yaxis": {"title": {"text": axis_titles[1]}, "dtick": 1, "autorange": "reversed",
                        "showgrid": False, "zeroline": False},
              "margin": {"b": 60}}
    return make([trace], layout, title, height)
