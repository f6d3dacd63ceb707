"""Mask pictures: which query may look at which key, the scores the softmax sees, a padded batch."""
from __future__ import annotations

import numpy as np

from viz.attention import hover, masked_layer, token_axis, token_font
from viz.common import DIVERGING_SCALE, WEIGHTS_SCALE, Figure, array, label, make, unique_labels

ALLOWED_COLOUR = "#dbe9f6"   # may attend: pale blue, reads as "open"
BLOCKED_COLOUR = "#3b3b3b"   # masked: dark, reads as "closed"
MINUS_INF = "−∞"


def _square_layout(n: int) -> dict:
    """Keys along the top (read like a table), queries down the side, first query on top; up to
    16 tokens every one is named, even in a narrow panel (plotly would skip every other)."""
    return {"yaxis": {"autorange": "reversed", "type": "category", **token_axis(n)},
            "xaxis": {"side": "top", "type": "category", "tickangle": 0, **token_axis(n)},
            "margin": {"t": 90}}


def _square_height(height: int, rows: int, n: int) -> int:
    """At least a readable row per token: the chart grows with a long text."""
    return max(height, 150 + (token_font(n) + 4) * rows)


def mask_matrix(
    allowed,
    row_labels: list[str],
    col_labels: list[str],
    *,
    title: str,
    hover_names: tuple[str, str, str],
    cell_text: list[list[str]] | None = None,
    height: int = 420,
) -> Figure:
    """A boolean (rows, cols) mask: light cells may attend (0 is added), dark cells may not
    (−∞ is added). ``cell_text`` replaces the "0"/"−∞" written in each cell (tokens of a batch).
    The z data is 1 for allowed and 0 for masked."""
    ok = array(allowed)                                                  # (R, C) of 0/1
    text = cell_text or [["0" if v else MINUS_INF for v in row] for row in ok]
    text = [[label(t) for t in row] for row in text]
    trace = {"type": "heatmap", "z": ok, "x": unique_labels(col_labels), "y": unique_labels(row_labels),
             "zmin": 0, "zmax": 1, "showscale": False, "xgap": 1, "ygap": 1,
             "colorscale": [[0, BLOCKED_COLOUR], [0.5, BLOCKED_COLOUR], [0.5, ALLOWED_COLOUR], [1, ALLOWED_COLOUR]],
             "text": text, "texttemplate": "%{text}" if max(ok.shape) <= 24 else "",
             "textfont": {"size": 18 if max(ok.shape) <= 8 else 15 if max(ok.shape) <= 12 else 11},
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>{hover_names[2]}: %{{text}}"
                              "<extra></extra>"}
    n = max(trace["z"].shape)
    return make([trace], _square_layout(n), title, _square_height(height, trace["z"].shape[0], n))


def masked_scores(
    scores,
    row_tokens: list[str],
    col_tokens: list[str],
    *,
    title: str,
    hover_names: tuple[str, str, str],
    height: int = 420,
    write_up_to: int = 8,
) -> Figure:
    """Scores after the mask was added: finite cells coloured around 0, −∞ cells in the masked
    colour with "−∞" written in them (a second trace: z is NaN there, JSON has no infinity, and a
    blank cell would look like a score of 0 on the diverging scale). Up to ``write_up_to``
    tokens the finite scores are written out too; beyond that they no longer fit in a cell."""
    s = array(scores)
    finite = np.isfinite(s)
    z = np.where(finite, s, np.nan).astype(np.float32)
    write = max(s.shape) <= write_up_to
    text = [[(f"{v:.1f}" if write else "") if ok else "" for v, ok in zip(row, oks, strict=True)]
            for row, oks in zip(s, finite, strict=True)]
    limit = float(np.abs(z[finite]).max()) if finite.any() else 1.0
    trace = {"type": "heatmap", "z": z, "x": unique_labels(col_tokens), "y": unique_labels(row_tokens),
             "colorscale": DIVERGING_SCALE, "zmin": -limit, "zmax": limit, "xgap": 1, "ygap": 1,
             "colorbar": {"thickness": 12}, "text": text, "texttemplate": "%{text}", "textfont": {"size": 12 if write else 10},
             "hovertemplate": f"{hover_names[0]}: %{{y}}<br>{hover_names[1]}: %{{x}}<br>{hover_names[2]}: %{{text}}"
                              "<extra></extra>"}
    n = max(s.shape)
    # "−∞" large enough to read on a projector: 20 px in a cell of a short text, 16 px up to 12 tokens.
    closed = masked_layer(~finite, trace["x"], trace["y"], text=MINUS_INF if n <= 12 else None,
                          text_size=20 if n <= 8 else 16)
    return make([trace, closed], _square_layout(n), title, _square_height(height, s.shape[0], n))


def batch_panels(
    weights,
    token_rows: list[list[str]],
    *,
    titles: list[str],
    hover_names: tuple[str, str, str],
    height: int = 380,
    masked=None,
    pad: str = "<pad>",
) -> Figure:
    """One 0..1 weight heatmap per sequence of a padded batch, two to a row; ``weights`` is
    (B, N, N) and each panel has the tokens of its own sequence (padding included) on both axes.
    ``masked`` (B, N, N) bool, True where the mask closed the cell: drawn in the masked colour.

    Labels stay upright (a turned Chinese character is hard to read): two panels to a row keep
    room for them, and both axes write the padding token ``pad`` as "pad" (it fits a column).
    """
    w = array(weights)
    b, n = w.shape[0], w.shape[1]
    cols = min(b, 2)
    rows = -(-b // cols)
    font = min(12, token_font(n))
    # Laid out in pixels, then turned into paper fractions: between two rows stand the upper
    # panel's tick labels and the lower panel's title (a fixed 12 % met at 440 px: B3's third
    # text's title sat on the first one's keys).
    panel_px = max(120, (font + 6) * n) if rows > 1 else None
    if panel_px is None:
        plot_px = height - 20 - (font * 2 + 20)
        gap_y, top = 0.0, 0.9
    else:
        title_px, gap_px = 40, int(font * 1.6) + 52               # tick row + title of the next row
        plot_px = rows * panel_px + (rows - 1) * gap_px + title_px
        height = plot_px + 20 + (font * 2 + 20)
        gap_y, top = gap_px / plot_px, 1 - title_px / plot_px
    gap_x = 0.12
    width = (1 - gap_x * (cols - 1)) / cols
    tall = (top - gap_y * (rows - 1)) / rows
    title_y = 8 / plot_px                                         # a title 8 px above its panel
    data, layout, notes, closed = [], {}, [], []
    for i in range(b):
        r, c = divmod(i, cols)
        suffix = "" if i == 0 else str(i + 1)
        keys = unique_labels(["pad" if t == pad else t for t in token_rows[i]])
        axis = keys                  # queries and keys named alike: "pad" on both axes
        x0, y1 = c * (width + gap_x), top - r * (tall + gap_y)
        data.append({"type": "heatmap", "z": w[i], "x": keys, "y": axis, "zmin": 0, "zmax": 1,
                     "colorscale": WEIGHTS_SCALE, "showscale": i == 0, "xgap": 1, "ygap": 1,
                     "hovertemplate": hover(*hover_names), "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"})
        if masked is not None:   # drawn after every panel: trace i stays sequence i
            closed.append(masked_layer(masked[i], keys, axis, xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        layout[f"xaxis{suffix}"] = {"domain": [x0, x0 + width], "anchor": f"y{suffix}", "tickangle": 0,
                                    "type": "category", "tickfont": {"size": font}, "dtick": 1}
        layout[f"yaxis{suffix}"] = {"domain": [max(0.0, round(y1 - tall, 6)), min(1.0, round(y1, 6))], "anchor": f"x{suffix}", "autorange": "reversed",
                                    "type": "category", "tickfont": {"size": font}, "dtick": 1}
        notes.append({"text": titles[i], "x": x0 + width / 2, "y": y1 + title_y, "xref": "paper", "yref": "paper",
                      "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 15}})
    layout["annotations"] = notes
    layout["margin"] = {"t": 20}
    return make(data + closed, layout, None, height)


def change_bars(
    tokens: list[str],
    change,
    position: int,
    *,
    names: tuple[str, str],
    title: str,
    x_title: str,
    y_title: str,
    height: int = 360,
    y_max: float | None = None,
) -> Figure:
    """How far each output row moved, one bar per position: the positions before the changed
    token in one colour (``names[0]``), the changed token and after it in another. Both traces
    hold every position (the other trace's as a gap), so a live slider moving ``position`` changes
    bar heights only; ``y_max`` fixes the scale (the largest change over all the frames), so the
    frames compare on one axis."""
    c = array(change)
    # Position over token, on two lines: upright, and narrow enough for a column of its own.
    x = [f"{i}<br>{t}" for i, t in enumerate(unique_labels(tokens))]   # positions from 0, as in the code
    before = np.where(np.arange(len(c)) < position, c, np.nan).astype(np.float32)
    after = np.where(np.arange(len(c)) >= position, c, np.nan).astype(np.float32)
    data = [
        # Labels as text, not a texttemplate: a template prints "NaN" over the gaps.
        {"type": "bar", "x": x, "y": before, "name": names[0], "marker": {"color": "#d62728"},
         "text": [f"{v:.2f}" if i < position else "" for i, v in enumerate(c.tolist())],
         "textposition": "outside", "cliponaxis": False,
         "hovertemplate": "%{x}: %{y:.4f}<extra></extra>"},
        {"type": "bar", "x": x, "y": after, "name": names[1], "marker": {"color": "#9bb7d4"},
         "hovertemplate": "%{x}: %{y:.4f}<extra></extra>"},
    ]
    yaxis = {"title": {"text": y_title}, "rangemode": "tozero"}
    if y_max is not None and np.isfinite(y_max) and y_max > 0:
        # Room above the tallest bar for its "outside" label.
        yaxis = {**yaxis, "range": [0, float(y_max) * 1.15], "autorange": False}
    layout = {"xaxis": {"title": {"text": x_title}, "type": "category", "tickangle": 0,
                        "categoryorder": "array", "categoryarray": x},
              "yaxis": yaxis, "barmode": "overlay"}
    return make(data, layout, title, height)
