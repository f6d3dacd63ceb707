"""Live controls: a figure that follows its slider while it is dragged (issue 25).

A Streamlit slider changes nothing until it is released, and then the press costs a server
round trip and a re-render of the page (2.2-4.4x the floor page here, docs/LESSONS.md). For the
control a lesson is about, the figure's changing data is computed for every value of a grid in
one batched ``core/`` call, sent with the figure, and the browser switches between these frames
as the slider moves (ui/chart.js): no round trip until the slider is let go. Then the value goes
into the URL under the control's key and into session state, and the page parts that depend on
it follow in one rerun.

A lesson:

    temperature = live_value(f"{NS}.temperature", TEMPERATURES, 0.0)   # before what depends on it
    ...
    live_figure(lambda: [bars(p) for p in core_batched(TEMPERATURES)], ("d1.bars", *inputs),
                f"{NS}.bars", f"{NS}.temperature", TEMPERATURES, 0.0, tr(f"{NS}.temperature"))

The builder returns one figure per grid value (each drawn by the viz function the lesson used
before, from one row of the batched result); ``frames`` keeps what differs between them. The
value is plain session state under the control's key, so an AppTest moves it as before
(``at.session_state[key] = v``) or through the URL (``?key=v``).
"""
from __future__ import annotations

import functools
import inspect
import json
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st
from streamlit.errors import StreamlitAPIException

from ui.chart import _typed

MAX_BYTES = 300_000          # a figure and its frames, as JSON (issue 25: <= 300 KB)
_SEEN = "_live.url"          # {key: the URL value this session last read or wrote}
_WANTED = "_live.wanted"     # {key: the value chosen last, before it was snapped to the grid}
_SHOWN = "_live.shown"       # {key: the value the last run used}


def snap(value, values: Sequence):
    """The grid value nearest ``value`` (the lower one on a tie). A grid of options (strings, as
    E1's capacity factors with "∞") takes an option as it is and a number by the options' own.

    Example: snap(0.07, [0.0, 0.05, 0.1]) -> 0.05; snap(9, [1, 2, 4]) -> 4; snap(1.3, ["1", "1.5", "∞"]) -> "1.5"
    """
    return values[nearest(value, values)]


def _number_of(option) -> float:
    if not isinstance(option, str):
        return float(option)
    return math.inf if option == "∞" else float(option)


def nearest(value, values: Sequence) -> int:
    """The index of the grid value nearest ``value``. Example: nearest(3.4, [1, 2, 4]) -> 2"""
    if value in values:
        return list(values).index(value)
    value = _number_of(value)
    return min(range(len(values)), key=lambda i: (abs(_number_of(values[i]) - value), i))


def parse(text: str | None, default: float | None) -> float | None:
    """A URL value as a number, ``default`` when it is none or not a finite number.

    Example: parse("1.5", 0.0) -> 1.5; parse("abc", 0.0) -> 0.0; parse("nan", 2) -> 2
    """
    if text is None:
        return default
    if text == "∞":
        return text
    try:
        value = float(text)
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def url_text(value: float) -> str:
    """How a value is written into the address. Example: url_text(2.0) -> "2"; url_text(0.35) -> "0.35" """
    if isinstance(value, str):
        return value
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def live_value(key: str, values: Sequence[float], default: float) -> float:
    """The control's value, always a grid value: the address's on a first visit or when a new
    link was opened (a value between two grid values snaps to the nearer, one that is not a number
    gets ``default``), else what this session chose last (session state under ``key``: the
    slider's release writes it there, and so can a test). A grid that shrinks (A3's positions)
    clamps the value; when it grows again, the chosen value comes back (as ui.frame.ranged_slider)."""
    seen = st.session_state.setdefault(_SEEN, {})
    wanted = st.session_state.setdefault(_WANTED, {})
    shown = st.session_state.setdefault(_SHOWN, {})
    in_url = st.query_params.get(key)
    if key not in st.session_state or key not in wanted or in_url != seen.get(key):
        seen[key] = in_url
        wanted[key] = parse(in_url, None)              # None: the default, which may follow the input
    elif st.session_state[key] != shown.get(key):      # chosen since the last run (a release, a test)
        held = st.session_state[key]
        wanted[key] = held if isinstance(held, str) and held in values else (
            float(held) if isinstance(held, (int, float)) and math.isfinite(held) else None)
    value = snap(default if wanted[key] is None else wanted[key], values)
    st.session_state[key] = shown[key] = value
    _write_url(key, value, default)
    return value


def _write_url(key: str, value: float, default: float) -> None:
    """The address holds the value (not the default, as a bound widget leaves it out). Written only
    when it differs: a page switch keeps only the parameters of bound widgets."""
    seen = st.session_state.setdefault(_SEEN, {})
    want = None if value == default else url_text(value)
    if st.query_params.get(key) == want:
        return
    try:
        if want is None:
            del st.query_params[key]
        else:
            st.query_params[key] = want
    except (KeyError, StreamlitAPIException):   # bound to a widget of another run (D1's other model)
        return
    seen[key] = want


@dataclass(frozen=True)
class Frames:
    """One figure per grid value, and the JSON of what differs between them."""
    figures: tuple            # viz.common.Figure per value, in grid order
    json: str                 # {"traces": [[i, [keys]]], "layout": [keys], "pool": [arrays],
                              #  "frames": [{"data", "layout"}]}; a value {"prefix": j, "rows": r,
                              #  "cols": c, "blank": [a, b]} is pool[j][:r, :c] with rows a..b-1 NaN
    revision: str             # a digest of ``json``: the browser parses the frames once per revision

    @functools.cached_property
    def bytes(self) -> int:
        """The largest figure's JSON plus the frames' JSON (issue 25's budget, checked by the tests:
        the page sends one figure and the frames, so the page never needs every figure's JSON)."""
        from ui.chart import figure_json

        return max(len(figure_json(f)[0]) for f in self.figures) + len(self.json.encode())


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _changed(dicts: list[dict]) -> list[str]:
    """The keys whose values are not the same in every dict (a key missing in some counts)."""
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    first = dicts[0]
    return [k for k in keys if any(k not in d or k not in first or not _same(d[k], first[k]) for d in dicts)]


def _rows_blank(v: np.ndarray) -> np.ndarray:
    """Which rows of ``v`` hold nothing (every value NaN). Example: [[nan, nan], [1, nan]] -> [True, False]"""
    if v.dtype.kind != "f":
        return np.zeros(len(v), dtype=bool)
    return np.isnan(v) if v.ndim == 1 else np.isnan(v).all(axis=tuple(range(1, v.ndim)))   # 0 rows too


def _block(v, full) -> dict | None:
    """How ``v`` is cut from ``full``: {"rows", "cols", "blank": [a, b]}: its first rows (and first
    columns), rows a..b-1 left blank (NaN). None if it is not."""
    if isinstance(v, list):
        return {"rows": len(v)} if v == full[: len(v)] else None
    r = v.shape[0]
    c = v.shape[1] if v.ndim == 2 else None
    part = full[:r] if c is None else full[:r, :c]
    blank = np.flatnonzero(_rows_blank(v) & ~_rows_blank(part))
    a, b = (int(blank[0]), int(blank[-1]) + 1) if len(blank) else (0, 0)
    if b - a != len(blank):
        return None
    keep = np.ones(r, dtype=bool)
    keep[a:b] = False
    if not np.array_equal(v[keep], part[keep], equal_nan=v.dtype.kind == "f"):
        return None
    out = {"rows": r}
    if c is not None:
        out["cols"] = c
    if b > a:
        out["blank"] = [a, b]
    return out


def _grown(values: list) -> np.ndarray | list | None:
    """One array (or list of labels) that each of ``values`` is cut from: its first rows (and
    columns), some rows perhaps blank (NaN). The cache of D2 grows row by row, C3's trail point by
    point: sent once, not once a frame. None if the values are not all cut from one.

    Example: [arange(2), arange(5), arange(3)] -> arange(5); [arange(2), ones(3)] -> None
    """
    if all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in values):
        longest = max(values, key=len)
        ok = len({len(v) for v in values}) > 1 and all(v == longest[: len(v)] for v in values)
        return longest if ok else None
    if not all(isinstance(v, np.ndarray) and v.ndim in (1, 2) and v.dtype.kind in "fiu" for v in values):
        return None
    if len({(v.ndim, v.dtype) for v in values}) != 1 or len({v.shape for v in values}) == 1:
        return None
    shape = tuple(max(v.shape[d] for v in values) for d in range(values[0].ndim))
    if values[0].dtype.kind != "f":
        longest = max(values, key=lambda v: v.size)
        return longest if longest.shape == shape and all(_block(v, longest) for v in values) else None
    full = np.full(shape, np.nan, dtype=values[0].dtype)
    filled = np.zeros(shape[0], dtype=bool)
    for v in sorted(values, key=lambda v: -v.size):   # every row from the widest frame that shows it
        shown = np.flatnonzero(~_rows_blank(v))
        first, again = shown[~filled[shown]], shown[filled[shown]]
        target = full[:, : v.shape[1]] if v.ndim == 2 else full
        if not np.array_equal(target[again], v[again], equal_nan=True):   # a row two frames disagree on
            return None
        target[first] = v[first]
        filled[first] = True
    return full if all(_block(v, full) is not None for v in values) else None


def _pooled(values: list, pool: list) -> list:
    """``values`` (one a frame) with every growing array (``_prefixes``) replaced by a reference
    into ``pool``, looking inside dicts too (a marker's colours)."""
    full = _grown(values)
    if full is not None:
        pool.append(full)
        return [{"prefix": len(pool) - 1, **_block(v, full)} for v in values]
    if values and all(isinstance(v, dict) for v in values) and len({tuple(v) for v in values}) == 1:
        inner = {k: _pooled([v[k] for v in values], pool) for k in values[0]}
        return [{k: inner[k][j] for k in values[0]} for j in range(len(values))]
    return values


def _number(value):
    """JSON for what the encoder does not know: numpy scalars."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def frames_of(figures: Sequence) -> Frames:
    """What the browser needs to draw each of ``figures`` from any one of them: the trace keys and
    layout keys that change, and their values in each figure. ``datarevision`` changes with the
    data, so it is among the layout keys and plotly.js redraws each frame."""
    if len({len(f["data"]) for f in figures}) != 1:
        raise ValueError("every frame needs the same traces (draw empty ones where a value has none)")
    n = len(figures[0]["data"])
    traces = [(i, _changed([f["data"][i] for f in figures])) for i in range(n)]
    traces = [(i, keys) for i, keys in traces if keys]
    layout = _changed([f["layout"] for f in figures])
    # An array that grows with the value (a trail of positions 0..m, a cache of t rows) is cut
    # from one array: sent once, each frame names its rows, columns and blank rows.
    pool: list[np.ndarray] = []
    columns = {(i, k): _pooled([f["data"][i].get(k) for f in figures], pool) for i, keys in traces for k in keys}
    frames = [{"data": [{k: columns[(i, k)][j] for k in keys if k in f["data"][i]} for i, keys in traces],
               "layout": {k: f["layout"][k] for k in layout if k in f["layout"]}} for j, f in enumerate(figures)]
    # Written as UTF-8, not \uXXXX: a Chinese title in every frame was six bytes a character.
    text = json.dumps(_typed({"traces": [[i, keys] for i, keys in traces], "layout": layout, "pool": pool,
                              "frames": frames}), ensure_ascii=False, separators=(",", ":"), default=_number)
    return Frames(figures=tuple(figures), json=text, revision=f"{zlib.crc32(text.encode()):08x}")


@st.cache_resource(max_entries=128, show_spinner=False)
def built_frames(key: tuple | str, _build: Callable[[], Sequence]) -> Frames:
    """The frames ``_build`` draws, built once per ``key`` for every session (as
    ``ui.frame.built_figure``: ``key`` holds plain values only, every input but the live one)."""
    return frames_of(_build())


def _commit(fig_key: str, key: str, values: Sequence[float], default: float) -> None:
    """On release (before the rerun): the chosen value into session state and the address."""
    sent = (st.session_state.get(fig_key) or {}).get("commit")
    try:
        value = snap(sent if isinstance(sent, str) and sent in values else float(sent), values)
    except (TypeError, ValueError):
        return
    st.session_state[key] = value
    _write_url(key, value, default)


def _takes_arguments(build: Callable) -> bool:
    """A named module-level function with parameters (not a lambda, closure or partial)."""
    if getattr(build, "__name__", "<lambda>") == "<lambda>" or getattr(build, "__closure__", None):
        return False
    try:
        return any(p.default is inspect.Parameter.empty for p in inspect.signature(build).parameters.values())
    except (TypeError, ValueError):
        return False


def live_figure(build: Callable[..., Sequence], cache_key: tuple | str, fig_key: str, key: str,
                values: Sequence[float], default: float, label: str, texts: Sequence[str] | None = None,
                help: str | None = None, name: str | None = None) -> float:
    """Draw the figure at the control's value with a slider of its own over ``values`` that redraws
    it in the browser while it moves. ``build`` returns one figure per value (one batched core
    call). Preferred: ``build`` a module-level function and ``cache_key`` its arguments (every
    input but the live one, the language included): the frames are then built once for every
    session per function and arguments, a key nobody writes. Still accepted: a function of no
    arguments and a key written by hand. ``label`` and ``texts`` (each value as the
    slider shows it; default ``url_text``) and ``help`` (the label's tooltip) are in the page's
    language; so is ``name``, what a screen reader calls frames drawn without a title
    (ui.figures.figure). Returns the value."""
    from ui.figures import figure, figure_key

    values = list(values)
    value = live_value(key, values, default)
    if isinstance(cache_key, tuple) and _takes_arguments(build):
        # live_figure(draw, args, ...): the key derived from the function and its arguments
        # (ui.figures.figure_key), as drawn() does for a figure; nothing written by hand.
        cache_key, build = figure_key(build, cache_key), functools.partial(build, *cache_key)
    frames = built_frames(cache_key, build)
    index = values.index(value)
    live = {"frames": frames.json, "rev": frames.revision, "index": index, "label": label,
            "texts": list(texts) if texts is not None else [url_text(v) for v in values],
            "values": values, "help": help}
    figure(frames.figures[index], fig_key, live=live,
           on_commit=lambda: _commit(fig_key, key, values, default), name=name)
    return value
