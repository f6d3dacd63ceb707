"""Controls whose state is in the address, so a link reproduces the screen: the URL cleaned before
any widget reads it, text boxes that cut over-long text in the box and the address, choices by
language-neutral id, and sliders whose range follows another control. Part of the lesson frame.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import streamlit as st

from core.text.clean import CleanText, clean_text
from ui import streamlit_internals as internals
from ui.words import tr

_DROPPED = "_frame.url_dropped"


def _non_finite(value: str) -> bool:
    """A URL value that reads as a number no widget can hold.

    Example: _non_finite("1e309") -> True; _non_finite("-inf") -> True; _non_finite("12") -> False;
    _non_finite("君") -> False
    """
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def sanitise_url() -> None:
    """Drop URL values that would break a widget before any widget reads them.

    Streamlit already drops a bound value of the wrong type or out of range (the default is
    used), but a non-finite number (``1e309``, ``-inf``, 400 nines) crashes an int widget's
    reader. Such values are removed here, in one place, for every lesson. A text box may hold
    any text, "inf" included: ``text_box`` gets the dropped value back as its default."""
    dropped = {}
    for key in list(st.query_params.keys()):
        values = st.query_params.get_all(key)
        if any(_non_finite(v) for v in values):
            dropped[key] = values[-1]
            del st.query_params[key]
    if dropped:
        st.session_state.setdefault(_DROPPED, {}).update(dropped)


_CUT = "_frame.cut"    # {key: length before the cut}: the text box says so once, in the next run


def _cut(key: str, limit: int) -> None:
    """An over-long text goes back into its box cut to ``limit`` (an on_change callback: it runs
    before the script, when the box's state may still be set)."""
    cleaned = clean_text(st.session_state.get(key), limit)
    if cleaned.truncated:
        st.session_state.setdefault(_CUT, {})[key] = cleaned.original_len
        st.session_state[key] = cleaned.text


def _address_holds(key: str, value: str) -> None:
    """Put ``value`` in the address under the bound widget ``key`` (Streamlit's own correction of a
    bound value: ``st.query_params`` refuses a bound key)."""
    internals.correct_url_value(key, value)


def text_box(key: str, default: str, limit: int, label: str, area: bool = False,
             empty_key: str = "common.empty_input") -> CleanText:
    """A text box bound to the URL. Shows a notice for empty input (``empty_key``: what the
    lesson does then) or over-long input; the returned text is cut to ``limit`` characters and
    safe to show (never as HTML). An over-long text is put back cut, box and address both: 2,000
    characters pasted into A1 made an 18,090-character link, of which the lesson used 64."""
    widget = st.text_area if area else st.text_input
    default = st.session_state.get(_DROPPED, {}).get(key, default)   # "inf" is text too
    cuts = st.session_state.setdefault(_CUT, {})
    if key not in st.session_state:               # a link's text: cut before the box takes it
        linked = clean_text(st.query_params.get(key, default), limit)
        if linked.truncated:
            cuts[key] = linked.original_len
            st.session_state[key] = linked.text
            _forget_url_value(key)
    # Its text was just set through session state (cut here, or an example pill's on_change set
    # it and ``{key}_set``): then no default value, or Streamlit warns (review D1 #6).
    just_set = st.session_state.pop(f"{key}_set", False)
    value = {} if key in cuts or just_set else {"value": default}
    raw = widget(label, key=key, bind="query-params", max_chars=None, on_change=_cut, args=(key, limit), **value)
    cleaned = clean_text(raw, limit)
    was = cuts.pop(key, None)
    if was is not None:
        _address_holds(key, raw)
        cleaned = CleanText(cleaned.text, cleaned.empty, True, was)
    if cleaned.empty:
        st.info(tr(empty_key))
    elif cleaned.truncated:
        st.warning(tr("common.truncated", limit=limit, n=cleaned.original_len))
    return cleaned


WIDGETS = {"selectbox": st.selectbox, "radio": st.radio, "segmented": st.segmented_control}


def choice(label: str, options: Sequence, key: str, labels: dict, widget: str = "selectbox",
           default=None, **kwargs):
    """A selectbox, radio or segmented control whose options are language-neutral ids shown with
    translated ``labels`` (id -> label, or a list in the options' order); the address holds the id under ``key``.

    A widget bound with ``bind="query-params"`` writes its *shown label* to the address, so a
    translated one put "因果窗口" in a link that then failed in English (and English ids showed on
    Chinese pages). This one is not bound: its value is read from the address when the widget
    first appears (a shared link, an old link with the id, back and forward), and written back on
    every run where it is not the default (a page switch keeps only bound parameters). A value
    that is not one of the ids falls back to ``default`` (the first option if None), and leaves
    the address. Returns the chosen id."""
    options = list(options)
    if not isinstance(labels, dict):                  # labels given in the options' order
        labels = dict(zip(options, labels, strict=True))
    default = options[0] if default is None else default
    by_text = {str(option): option for option in options}
    history = internals.is_history_navigation()
    if key not in st.session_state or history:
        st.session_state[key] = by_text.get(st.query_params.get(key), default)
    elif st.session_state[key] not in options:       # the options changed under it
        st.session_state[key] = default
    extra = {"required": True} if widget == "segmented" else {}
    value = WIDGETS[widget](label, options, format_func=lambda o: labels.get(o, str(o)), key=key,
                            **extra, **kwargs)
    value = default if value is None else value
    in_url = st.query_params.get_all(key)
    if value == default:
        if in_url:
            del st.query_params[key]
    elif in_url != [str(value)]:
        st.query_params[key] = str(value)
    return value


# Each ranged slider's bounds and values in the last run that drew it: {key: (lo, hi, shown, wanted)}.
# ``shown`` is the value the slider held (CAPTION when there was one value and no slider),
# ``wanted`` the value the student (or a link) chose, which a shrunken range clamps for a while.
_RANGED = "_frame.ranged"
CAPTION = "caption"


def _forget_url_value(key: str) -> None:
    """This run's widget with ``key`` is not seeded from the address.

    A slider whose bounds changed is a new widget to Streamlit (its id holds min and max), and a
    new bound widget takes its value from the address the browser sent, before any value set in
    ``st.session_state``: the clamp lost to the URL (B5: the address still said 40 when the range
    had shrunk to 0-31). The address is not changed; Streamlit rewrites it from the value the
    widget ends up with. Back and forward (history navigation) still follow the address."""
    internals.forget_url_value(key)


def ranged_slider(label: str, lo: int, hi: int, default: int | tuple[int, int], key: str, **kwargs):
    """A URL-bound slider whose range follows another control (a text's length, a width).

    It survives the smallest input: with ``hi <= lo`` there is one possible value, said in a
    caption, and no slider (Streamlit refuses equal bounds). It survives a range that shrinks:
    a value beyond the new bounds, from the last input or a shared link, is clamped, and the
    clamp wins over the address. The student's own choice is remembered: when the range grows
    again, the slider goes back to it (A3: the pair of dimensions clamped to 0-3 at D = 4 is
    0-10 again at D = 128), until the student moves the slider. Returns an int, or a sorted
    (low, high) pair when ``default`` is one."""
    pair = isinstance(default, tuple)
    top = max(lo, hi)

    def clamp(v):
        if pair:
            return tuple(sorted(min(max(int(x), lo), top) for x in v))
        return min(max(int(v), lo), top)

    memory = st.session_state.setdefault(_RANGED, {})
    last = memory.get(key)
    held = st.session_state.get(key)
    if held is not None:
        held = tuple(held) if pair else held
    if last is not None and last[2] == CAPTION:
        # Back from a single value: the slider was not drawn, and what its state still holds is
        # the value from before (Streamlit keeps an undrawn widget's last value under its key).
        wanted = last[3]
    elif held is not None:
        moved = last is None or held != last[2]
        wanted = held if moved else last[3]
    else:
        wanted = None                         # a first visit: the address or the default
    if hi <= lo:
        memory[key] = (lo, hi, CAPTION, default if wanted is None else wanted)
        st.caption(tr("common.one_value", label=label, value=lo))
        return (lo, lo) if pair else lo
    if wanted is None:
        value = st.slider(label, lo, hi, clamp(default), key=key, bind="query-params", **kwargs)
        value = clamp(value)
        memory[key] = (lo, hi, value, default if value == clamp(default) else value)
        return value
    value = clamp(wanted)
    if last is None or last[:2] != (lo, hi) or value != held:
        # New bounds are a new widget (see _forget_url_value): it gets its value from here.
        st.session_state[key] = value
        _forget_url_value(key)
    value = clamp(st.slider(label, lo, hi, key=key, bind="query-params", **kwargs))
    if not pair and value == lo != clamp(default):
        # Drawn without a value of its own, the slider's default is lo, and a bound widget at its
        # default is left out of the address: a link would open at ``default`` (F1: head 0 chosen
        # by a click, the link opened at head 6). Put it there.
        _address_holds(key, str(value))
    memory[key] = (lo, hi, value, wanted)
    return value
