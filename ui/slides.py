"""Presenter mode's marks in a page (ui/classroom.py draws the slides): where a slide starts, a
control repeated on a later slide, and a chart scrolled into view after a press.
"""
from __future__ import annotations

import html
from collections.abc import Callable

import streamlit as st

from ui.chart import PRESENTING


def _copy_back(copy: str, key: str) -> None:
    """The repeated control moved: the control itself takes its value (a callback, before the run)."""
    st.session_state[key] = st.session_state[copy]


def repeat_control(widget: Callable, label: str, *args, key: str, copy: str = "again", **kwargs) -> None:
    """In presenter mode, a copy of the URL-bound control ``key`` on the slide of another figure it
    drives (E1: the capacity above the load chart, two slides after the router's controls); nothing
    in normal mode, where the control itself is on the same page. The copy shows the control's
    value, and moving it moves the control, so the address (``key``) and every figure follow.
    ``widget`` and its arguments as for the control itself (``st.slider``, ``st.select_slider``),
    without ``key``, ``value`` or ``bind``. Draw it after the control, in the same run; a second
    copy on a third slide takes its own ``copy`` name (B1's row and column on both its slides)."""
    if not st.session_state.get(PRESENTING):
        return
    copy = f"{key}.{copy}"
    if key in st.session_state:
        st.session_state[copy] = st.session_state[key]
    widget(label, *args, key=copy, on_change=_copy_back, args=(copy, key), **kwargs)


def slide(title: str) -> None:
    """Start a new slide here in presenter mode (ui/classroom.py), titled ``title`` (our own text,
    already translated) on the slide and in the overview (key O). Nothing shows in normal mode.
    For a long section: its prose on one slide, then its controls with the figure they drive on
    the next. At the top level of the page or directly inside a top-level fragment or container."""
    st.html(f'<div class="anatomy-slide">{html.escape(title)}</div>')


def bring_into_view(key: str, press: int) -> None:
    """Scroll the element with ``key`` (a chart) into view unless it is wholly on screen: after
    a button press changed it, the student sees the change (D1's Step sat above the fold of the
    figure it moves). ``press`` counts the presses, so that each one is a new element and runs
    again. A fixed script: only the key, turned into Streamlit's class name, is put into it."""
    name = "st-key-" + "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else "-" for ch in key.strip())
    st.html(f"""<script>/* press {int(press)} */
(() => {{
  let tries = 0;
  const look = () => {{
    const el = document.querySelector('[class~="{name}"]');
    if (!el || !el.querySelector('.main-svg')) {{ if (++tries < 40) setTimeout(look, 50); return; }}
    const r = el.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight) el.scrollIntoView({{block: "nearest", behavior: "smooth"}});
  }};
  look();
}})();
</script>""", unsafe_allow_javascript=True)
