"""Shared look of every figure: fonts that draw Chinese, safe labels, small payloads."""
from __future__ import annotations

import copy
import html
import os
import re
import zlib

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.colors import get_colorscale

# Browsers pick the first family they have; the CJK ones make 黄河 draw as text, not boxes.
FONT = "Noto Sans CJK SC, Noto Sans SC, WenQuanYi Micro Hei, PingFang SC, Microsoft YaHei, sans-serif"
# Explicit lists, not names: without plotly's validation (VALIDATE off) a name reaches plotly.js,
# whose "Blues" runs dark blue -> grey and which has no "RdBu_r" at all.
WEIGHTS_SCALE = get_colorscale("Blues")        # 0..1 attention weights, white -> dark blue
DIVERGING_SCALE = get_colorscale("RdBu_r")     # signed values around 0
MAX_CELLS = 128 * 128          # a heatmap above this is pooled (≈ 64 KB of float32)
# plotly's property validation costs ~1.5 ms a figure, a lesson has 50 ms: the tests switch it
# on (tests/conftest.py) so every figure the lessons draw is still checked once per change.
VALIDATE = os.environ.get("ANATOMY_VALIDATE_FIGURES") == "1"


def array(x: torch.Tensor | np.ndarray | list) -> np.ndarray:
    """float32 numpy on the CPU: plotly then sends it as a compact typed array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().to("cpu", torch.float32).numpy()
    return np.asarray(x, dtype=np.float32)


def label(token: str) -> str:
    """A token as text that plotly draws literally (it reads '<b>' as markup otherwise).

    Example: label("<bos>") -> "&lt;bos&gt;"; label(" ") -> "␣"
    """
    visible = {" ": "␣", "\n": "↵", "\t": "⇥", "": "∅"}.get(token, token)
    return visible.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unique_labels(tokens: list[str]) -> list[str]:
    """Axis categories must be unique; repeated tokens get invisible zero-width marks.

    Example: unique_labels(["之", "水", "之"]) -> ["之", "水", "之\\u200b"]
    """
    seen: dict[str, int] = {}
    out = []
    for tok in tokens:
        lab = label(tok)
        k = seen.get(lab, 0)
        seen[lab] = k + 1
        out.append(lab + "\u200b" * k)
    return out


def pool(z: np.ndarray, max_cells: int = MAX_CELLS) -> tuple[np.ndarray, int]:
    """Average-pool a 2-D array by an integer factor until it has at most ``max_cells``.

    Example: pool(np.ones((256, 256)), 128 * 128) -> (array of shape (128, 128), 2)
    """
    factor = 1
    while z.shape[0] * z.shape[1] / (factor * factor) > max_cells:
        factor += 1
    if factor == 1:
        return z, 1
    rows, cols = -(-z.shape[0] // factor) * factor, -(-z.shape[1] // factor) * factor
    padded = np.full((rows, cols), np.nan, dtype=np.float32)
    padded[: z.shape[0], : z.shape[1]] = z
    pooled = np.nanmean(padded.reshape(rows // factor, factor, cols // factor, factor), axis=(1, 3))
    return pooled.astype(np.float32), factor


# The shared look, written into each figure's own layout rather than as a plotly template.
# - No template object at all: plotly's default template adds 7 KB a figure, and plotly.js
#   compares templates by identity, so every new figure's copy of a template made it redraw
#   everything (the chart component, ui/chart.js, hands plotly.js a freshly parsed figure).
# - A datarevision (see make): Plotly.react then compares one string, not every array, to know
#   whether the data changed or only the text around it.
# - ticklabeloverflow "allow": plotly's default checks every tick label against the plot's
#   edge, ~1 ms a label here (a head grid with 66 token labels: 119 -> 69 ms a redraw). Our
#   margins are sized for the labels (_margins), so no label is past the edge to hide.
# Streamlit's first two colours, then the nearest colours that keep every pair >= 10 ΔE00 apart for
# deuteranopia, protanopia and tritanopia and >= 3:1 against white (tests/test_colour_vision.py;
# E2's spectra draw seven of them at once). Was "#29b09d", "#ff8700", "#6d3fc0", "#83c9ff", "#ffabab", "#7defa1".
COLORWAY = ["#0068c9", "#ff4b4b", "#2ea390", "#aa5c00", "#4e27b1", "#7c96b7", "#cb6f83", "#5c6f62"]
LOOK = {"colorway": COLORWAY, "paper_bgcolor": "white", "plot_bgcolor": "white"}
AXIS_LOOK = {"gridcolor": "#e6e6e6", "zerolinecolor": "#c8c8c8", "linecolor": "#c8c8c8",
             "ticklabeloverflow": "allow"}
COLORBAR_LOOK = {"ticklabeloverflow": "allow"}
_COLORBAR_TRACES = {"heatmap", "contour", "histogram2d"}
_AXIS_KEY = re.compile(r"^[xy]axis\d*$")


def line_mode(n_points: int) -> str:
    """Plotly scatter mode for a line of ``n_points``: markers only on short lines. Each marker
    is a shape of its own for the browser to draw; hundreds cost tens of ms a redraw.

    Example: line_mode(11) -> "lines+markers"; line_mode(200) -> "lines"
    """
    return "lines+markers" if n_points <= 40 else "lines"


def _text_width(text: str) -> int:
    """Rough width in half-em units: CJK and full-width characters count two.

    Example: _text_width("黄河 ab") -> 7
    """
    return sum(0 if ch == "\u200b" else 2 if ord(ch) >= 0x1100 else 1 for ch in str(text))


# Widths of text in the charts' font (Noto Sans CJK first: its Latin letters and digits, and its
# full-width middle dot, which makes "L1·H1" half again as wide as Latin fonts draw it), in em.
_NARROW = set("il.,:;'|!()[]{}ijtfr ")
_WIDE_SIGNS = set("·×÷—…‘’“”→←≈≤≥√")
_TAG = re.compile(r"<[^>]*>")


def _text_px(text: str, size: float = 15) -> float:
    """Width in pixels of ``text`` drawn at ``size`` px in FONT, its widest line ("<br>"), a
    little on the large side: it sizes margins, and a margin too small cuts the label.

    Example: _text_px("L1·H1") -> 57.42; _text_px("黄河") -> 33.0
    """
    widest = 0.0
    for line in str(text).split("<br>"):
        line = html.unescape(_TAG.sub("", line))
        em = 0.0
        for ch in line:
            if ch == "\u200b":
                continue
            if ord(ch) >= 0x1100 or ch in _WIDE_SIGNS:
                em += 1.0
            elif ch in _NARROW:
                em += 0.3
            elif ch.isupper() or ch in "mwMW%&@":
                em += 0.68
            else:
                em += 0.56
        widest = max(widest, em)
    return round(widest * size * 1.1, 3)


def _font_size(axis: dict, default: float = 15) -> float:
    return ((axis.get("tickfont") or {}).get("size")) or default


def _margins(data: list[dict], layout: dict) -> dict:
    """Room for the y tick labels and the axis titles, worked out here from the labels
    themselves: plotly's automargin costs 50-70 ms a redraw in the browser."""
    yaxis, xaxis = layout.get("yaxis") or {}, layout.get("xaxis") or {}
    # The labels are the traces' categories, or the axis' own tick texts (panels on one axis pair).
    y_lists = [trace.get("y") for trace in data if trace.get("yaxis", "y") == "y"] + [yaxis.get("ticktext")]
    x_lists = [trace.get("x") for trace in data] + [xaxis.get("ticktext")]
    y_size = _font_size(yaxis, (layout.get("font") or {}).get("size", 15))
    widest = _text_px("0.25", y_size)  # numeric ticks such as "0.25" or "1000"
    for values in y_lists:
        if isinstance(values, (list, tuple)) and values and isinstance(values[0], str):
            widest = max(widest, max(_text_px(v, y_size) for v in values[:200]))
    x_widest, x_count, x_lines = 0, 0, 1
    for values in x_lists:
        if isinstance(values, (list, tuple)) and values and isinstance(values[0], str):
            # A label on two lines ("8<br>GQA") is as wide as its longest line, one line taller.
            x_widest = max(x_widest, max(_text_width(part) for v in values[:200] for part in v.split("<br>")))
            x_count = max(x_count, len(values))
            x_lines = max(x_lines, max(v.count("<br>") + 1 for v in values[:200]))
    # The y title stands TITLE_STANDOFF px beyond the widest tick label (see make), one line tall.
    y_title = (yaxis.get("title") or {}).get("text")
    left = 14 + min(widest, 260) + (TITLE_STANDOFF + 24 * (str(y_title).count("<br>") + 1) if y_title else 0)
    # Labels tilted by the figure (tickangle), or by plotly when many long ones crowd the axis:
    # leave room for the slant, or their first characters fall off the bottom.
    angle = xaxis.get("tickangle")
    tilted = angle not in (None, 0) or (angle is None and x_count * x_widest > 60)
    slant = 6 * min(x_widest, 24) if tilted and xaxis.get("side") != "top" else 0
    bottom = 36 + 18 * (x_lines - 1) + slant + (26 if (xaxis.get("title") or {}).get("text") else 0)
    return {"l": round(left), "b": bottom}


# The narrowest a chart is drawn: half the main column at 1440 px, beside a code panel (the
# server does not know the width; a legend estimated for the narrowest chart has room in any).
CHART_PX = 440
TITLE_STANDOFF = 8       # px between an axis' tick labels and its title
LEGEND_ROW = 24          # px a row of a horizontal legend takes at 15 px
_NO_LEGEND = {"heatmap", "contour", "histogram2d", "image", "table", "splom"}


def _legend_names(data: list[dict], layout: dict) -> list[str]:
    """The names a horizontal legend shows, or [] when plotly shows no legend.

    Example: _legend_names([{"type": "bar", "name": "a"}, {"type": "bar", "name": "b"}], {}) -> ["a", "b"]
    """
    if layout.get("showlegend") is False:
        return []
    items = [t for t in data if t.get("type", "scatter") not in _NO_LEGEND and t.get("showlegend", True)]
    if layout.get("showlegend") is not True and len(items) < 2 and not any(t.get("showlegend") for t in items):
        return []
    return [str(t.get("name") or f"trace {i}") for i, t in enumerate(items)]


def legend_rows(names: list[str], width: float, size: float = 15) -> int:
    """How many rows a horizontal legend of ``names`` takes in ``width`` px: plotly fills a
    row with items (a 40 px symbol, the name, a gap) and starts a new one when the next does not fit.

    Example: legend_rows(["q·k (not scaled)", "q·k / √d_k", "your d_k"], 300) -> 2
    """
    rows, used = (1, 0.0) if names else (0, 0.0)
    for name in names:
        item = 46 + _text_px(name, size)
        if used and used + item > width:
            rows, used = rows + 1, 0.0
        used += item
    return rows


def _clear_top_ticks(layout: dict) -> None:
    """Panel titles set above the plot (paper y = 1, anchored at their bottom) clear the tick labels
    of an x axis drawn on top, and the top margin holds them: B1's "text 0" sat on its tokens.
    Each annotation is copied, never changed in place (the caller may share it)."""
    tops = [axis for key, axis in layout.items() if _AXIS_KEY.match(key) and key.startswith("x")
            and isinstance(axis, dict) and axis.get("side") == "top" and axis.get("showticklabels", True)]
    notes = layout.get("annotations")
    if not tops or not isinstance(notes, list):
        return
    # A tick label's box is ~1.45 em tall in the CJK font, drawn a few px above the axis.
    clear = round(max(_font_size(axis) for axis in tops) * 1.45 + 8)
    placed, top = [], 0
    for note in notes:
        if (isinstance(note, dict) and note.get("yref") == "paper" and note.get("yanchor") == "bottom"
                and note.get("y", 0) >= 0.999 and not note.get("showarrow", True)):
            note = {**note, "yshift": max(note.get("yshift", 0), clear)}
            size = (note.get("font") or {}).get("size", 15)
            top = max(top, note["yshift"] + round(1.45 * size) + 4)
        placed.append(note)
    if top:
        layout["annotations"] = placed
        margin = layout["margin"]
        margin["t"] = max(margin.get("t", 0), _title_band(layout.get("title")) + top)


def _title_band(title: dict | None) -> int:
    """Pixels from the chart's top edge to the bottom of its title (0 without one)."""
    if not title or not title.get("text"):
        return 0
    size = (title.get("font") or {}).get("size", 18)
    lines = str(title["text"]).count("<br>") + 1
    return round((title.get("pad") or {}).get("t", 8) - 22 * (lines - 1) + lines * size * 1.3 + 2)


def _place_legend(data: list[dict], layout: dict, own: dict) -> None:
    """A horizontal legend of the shared look sits under the title, its top pinned in pixels, and
    the plot starts under its last row: a title and a legend can never meet however many rows
    it wraps to (rows estimated for the narrowest chart, CHART_PX). A legend the figure placed
    itself at the bottom of the chart gets its rows added to the bottom margin."""
    names = _legend_names(data, layout)
    legend = layout.get("legend") or {}
    if not names or legend.get("orientation", "v") != "h":
        return
    margin = layout["margin"]
    size = (legend.get("font") or {}).get("size", 15)
    width = CHART_PX - margin.get("l", 0) - margin.get("r", 0)
    rows = legend_rows(names, width, size)
    height = rows * (LEGEND_ROW * size / 15) + 6
    placed = own.get("legend") or {}
    # The chart grows by the room the legend takes, so its plot keeps the height the figure asked for.
    if "y" not in placed and "yref" not in placed:
        band = _title_band(layout.get("title")) or 4
        top = max(margin.get("t", 0), round(band + height + 14))
        layout["height"] += top - margin.get("t", 0)
        margin["t"] = top
        layout["legend"] = {**legend, "yref": "container", "y": 1 - (band + 6) / layout["height"], "yanchor": "top"}
    elif placed.get("yref") == "container" and placed.get("y", 1) <= 0.05 and legend.get("yanchor") == "bottom":
        margin["b"] = margin.get("b", 0) + round(height)
        layout["height"] += round(height)


def _axis_keys(data: list[dict], layout: dict) -> set[str]:
    """Layout keys of every cartesian axis the figure uses: "xaxis", "yaxis2", ...

    Example: _axis_keys([{"xaxis": "x2", "yaxis": "y2"}], {}) -> {"xaxis", "yaxis", "xaxis2", "yaxis2"}
    """
    keys = {"xaxis", "yaxis"} | {k for k in layout if _AXIS_KEY.match(k)}
    for trace in data:
        for axis in ("xaxis", "yaxis"):
            ref = trace.get(axis)
            if isinstance(ref, str) and ref[1:].isdigit():
                keys.add(axis + ref[1:])
    return keys


def _crc(value, crc: int) -> int:
    """``crc`` carried over ``value``: an array by its bytes, a dict or list by its parts (a marker's
    colours are an array inside a dict: ``repr`` would print it slowly and shorten a long one with
    "...", so two different arrays could read the same)."""
    if isinstance(value, np.ndarray):
        return zlib.crc32(value.tobytes(), zlib.crc32(f"{value.dtype}{value.shape}".encode(), crc))
    if isinstance(value, dict):
        for name in sorted(value):
            crc = _crc(value[name], zlib.crc32(name.encode(), crc))
        return crc
    if isinstance(value, (list, tuple)) and any(isinstance(v, (np.ndarray, dict, list, tuple)) for v in value):
        for v in value:
            crc = _crc(v, zlib.crc32(b"|", crc))
        return crc
    return zlib.crc32(repr(value).encode(), crc)


def _revision(data: list[dict]) -> str:
    """A short digest of the traces, sent as ``layout.datarevision``: plotly.js then compares
    one string instead of every array when a new figure reaches the same chart."""
    crc = 0
    for trace in data:
        crc = _crc(trace, crc)
    return f"{crc:08x}"


_OPEN, _CLOSE = "([{⟨", ")]}⟩"
_OPERATORS = set("=+−-×·/<>≤≥≈→←^*⊙")


def title_lines(title: str, limit: int = 50) -> str:
    """A title wider than ``limit`` half-em units (what a chart half the page wide holds at
    16 px) split in two at the break nearest its middle: plotly never wraps a title. A formula
    stays whole: no break inside brackets or beside an operator ("ReLU(xW₁ + b₁)W₂").

    Example: title_lines("X: 11 tokens × 128 dimensions (trained course model, table «embed»)")
             -> "X: 11 tokens × 128 dimensions<br>(trained course model, table «embed»)"
    """
    if _text_width(title) <= limit or "<br>" in title:
        return title
    middle = len(title) / 2
    depth, breaks, loose = 0, [], []
    for i, ch in enumerate(title):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        if depth == 0 and ch in " ，：（、；" and 0 < i < len(title) - 1:
            loose.append(i)
            beside = (title[:i].rstrip()[-1:], title[i + 1:].lstrip()[:1])
            if ch != " " or not (set(beside) & _OPERATORS):
                breaks.append(i)
    breaks = breaks or loose
    if not breaks:
        return title
    i = min(breaks, key=lambda j: abs(j - middle))
    if title[i] == " ":
        return title[:i] + "<br>" + title[i + 1:]
    if title[i] == "（":
        return title[:i] + "<br>" + title[i:]
    return title[:i + 1] + "<br>" + title[i + 1:]


def make(data: list[dict], layout: dict | None = None, title: str | None = None, height: int = 420) -> Figure:
    """One Figure from plain trace and layout dicts, with the shared look applied.

    Built in one constructor call: plotly's ``update_layout``/``update_xaxes`` cost ~1 ms
    each, and a lesson must rerun in under 50 ms. Readable on a projector: large fonts,
    tight margins.
    """
    base = {
        **LOOK,
        "font": {"family": FONT, "size": 15, "color": "#31333F"},
        "height": height,
        # r: room for half of a last tick label at the right end of an axis (ticklabeloverflow
        # "allow" shows it rather than hiding it).
        "margin": {"l": 10, "r": 24, "t": 60 if title else 10, "b": 10},
        # namelength -1: a trace's whole name in its hover label (plotly cuts it at 15 characters:
        # "q·k (not sca…" in B1, "qₘ · kₙ (all…" in C3).
        "hoverlabel": {"font": {"family": FONT, "size": 15}, "bgcolor": "white", "namelength": -1},
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        # Plotly's toolbar stands on the right edge, not across the top where the title is: on
        # hover a horizontal one covered the title of a narrow chart (E1's router).
        "modebar": {"orientation": "v"},
        "template": "none",  # no template object: see LOOK
        "datarevision": _revision(data),
    }
    if title:
        # Pinned a fixed 8 px below the top edge: at y=0.98 of a short chart the glyphs' tops were
        # cut. A long title is set a size smaller, so it fits a half-width chart at 1440 px.
        size = 18 if _text_width(title) <= 48 else 16
        title = title_lines(title)
        base["title"] = {"text": title, "font": {"size": size}, "y": 1, "yref": "container",
                         "yanchor": "top", "pad": {"t": 8}}
        if "<br>" in title:
            # plotly anchors a two-line title by its first line: move it down by the second.
            base["title"]["pad"]["t"] = 30
            base["margin"]["t"] += 30
    for key in _axis_keys(data, layout or {}):
        base[key] = dict(AXIS_LOOK)
    for key, value in (layout or {}).items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    for key in _axis_keys(data, base):
        title = base[key].get("title")
        if isinstance(title, dict) and title.get("text") and "standoff" not in title:
            # With a standoff plotly measures the drawn tick labels and sets the title beyond the
            # widest (without one it assumes one line of tick height: B2's x title sat on its ticks).
            base[key]["title"] = {**title, "standoff": TITLE_STANDOFF}
    for trace in data:
        # A colour bar has an axis of its own: same reason as AXIS_LOOK (~3 ms a colour bar).
        if trace.get("type") in _COLORBAR_TRACES and trace.get("showscale", True):
            trace["colorbar"] = {**COLORBAR_LOOK, **(trace.get("colorbar") or {})}
    room = _margins(data, base)
    base["margin"] = {**base["margin"], "l": max(base["margin"].get("l", 0), room["l"]),
                      "b": max(base["margin"].get("b", 0), room["b"])}
    _place_legend(data, base, layout or {})
    _clear_top_ticks(base)
    if VALIDATE:
        _validate(data, base)
    return Figure(data=data, layout=base)


# The figure shapes plotly has already accepted in this process (tests only: VALIDATE).
_ACCEPTED: set = set()
# Properties that take any text (plotly's string validators without a list of values) and any
# array (its data array validators): which text or which numbers cannot change validation's verdict.
_ANY_TEXT = frozenset({"text", "name", "hovertext", "hovertemplate", "texttemplate", "ticktext",
                       "datarevision", "uirevision", "legendgroup", "title", "tickformat", "ticksuffix",
                       "tickprefix", "meta", "label"})
_ANY_ARRAY = frozenset({"x", "y", "z", "customdata", "ids", "tickvals"})


def _shape(value, key: str | None = None):
    """What plotly's validation can tell apart in ``value``: every key and every other string and
    scalar as it is; a free text (``_ANY_TEXT``) as text; a data array (``_ANY_ARRAY``) as an array;
    and any other numeric array by its kind, its rank and the bounds plotly's number validators
    check (>= 0, <= 1), not by its numbers. Two figures of one shape pass or fail validation together."""
    if isinstance(value, dict):
        return tuple((k, _shape(v, k)) for k, v in value.items())
    if key in _ANY_TEXT and isinstance(value, str):
        return "<text>"
    if isinstance(value, (list, tuple, np.ndarray)):
        if key in _ANY_ARRAY or (key in _ANY_TEXT and all(isinstance(v, str) for v in value)):
            return "<array>"
        arr = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
        if isinstance(value, np.ndarray) or (arr.size and all(
                isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in arr.flat)):
            arr = np.asarray(value)
            if arr.dtype.kind in "biuf":
                return ("numbers", arr.dtype.kind, arr.ndim, arr.size > 0,
                        bool((arr >= 0).all()), bool((arr <= 1).all()))
        return ("list",) + tuple(_shape(v) for v in value)
    return value


def _validate(data: list[dict], layout: dict) -> None:
    """plotly's validation of the figure (raises on a property or value plotly.js does not know),
    once per shape: a live slider's frames differ in their numbers only, and validating each of
    them cost the tests half their time in an AppTest of a lesson."""
    shape = (_shape(data), _shape(layout))
    if shape not in _ACCEPTED:
        # On a copy: plotly's constructor reorders the keys of the dicts it is given (a trace's
        # "type" moves), and the figure sent must not depend on whether its shape was new.
        go.Figure(copy.deepcopy({"data": data, "layout": layout}))
        _ACCEPTED.add(shape)


class Figure(dict):
    """A figure as plotly.js reads it, ``{"data": [...], "layout": {...}}``, in plain dicts.

    Not a ``plotly.graph_objects.Figure``: building one walks every property through plotly's
    object tree (~1.4 ms a figure here even unvalidated), and a lesson draws up to eight figures
    a run in its 50 ms. ``ui.chart`` turns it into JSON the way plotly does (numeric numpy
    arrays as typed arrays); ``to_plotly_json()`` is the same dict, as on plotly's own figure."""

    def to_plotly_json(self) -> dict:
        return self



def steady_margins(figures: list[Figure]) -> list[Figure]:
    """``figures`` (the frames of one live slider) with one margin, each side the widest any of
    them needs, and one height, the tallest: the plot area then stays put while the slider moves
    (D2's row labels grow with the cache, D3's legend names wrap to two rows at some batch sizes),
    and a frame is drawn over the one before without a new layout (ui/chart.js). Each figure's
    plot keeps at least the height it had: the margins grow by no more than the height does."""
    sides = ("l", "r", "t", "b")
    widest = {k: max(f["layout"].get("margin", {}).get(k, 0) for f in figures) for k in sides}
    plot = max(f["layout"].get("height", 420) - f["layout"].get("margin", {}).get("t", 0)
               - f["layout"].get("margin", {}).get("b", 0) for f in figures)
    tallest = max(max(f["layout"].get("height", 420) for f in figures), plot + widest["t"] + widest["b"])
    for f in figures:
        f["layout"]["margin"] = {**f["layout"].get("margin", {}), **widest}
        f["layout"]["height"] = tallest
    return figures
