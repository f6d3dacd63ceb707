""""The code": the real source of the core functions beside the figure they drew, and the sections
laid out around it. Part of the lesson frame (ui/frame.py).
"""
from __future__ import annotations

import functools
import inspect
import textwrap
import threading
from collections.abc import Callable

import streamlit as st

from ui.slides import slide
from ui.words import tr

# inspect.getsource of a class parses its whole module with the ast module, and CPython 3.11's
# conversion to ast objects keeps its recursion depth in a per-process counter: two sessions'
# first runs parsing at once (a class opening C1 together) raised "SystemError: AST constructor
# recursion depth mismatch" in one of them. One parse at a time; each source is read once.
_SOURCE_LOCK = threading.Lock()


@functools.cache
def _source(obj: Callable | type) -> str:
    # Dedented: a method's class indentation would cost 4 characters of every line.
    with _SOURCE_LOCK:
        return textwrap.dedent(inspect.getsource(obj))


def code_panel(*objs: Callable | type, height: int | None = 520) -> None:
    """The real source of the ``core/`` functions that drew the figure next to it."""
    st.markdown(f"**{tr('common.the_code')}**")
    # One code block for all of them, each headed by its module path as a comment: every element
    # on the page costs the browser on every press (docs/LESSONS.md), and a caption plus a block
    # per function made a panel of three functions six elements.
    text = "\n\n".join(f"# {obj.__module__}.{obj.__qualname__}\n{_source(obj)}".rstrip() for obj in objs)
    box = st.container(height=height, border=False) if height else st.container()
    box.code(text, language="python", wrap_lines=True)


def beside_code(*objs: Callable | type, height: int | None = 520, widths: tuple[int, int] = (1, 1)):
    """A row laid out once: "The code" of ``objs`` on the right, and on the left an empty slot
    (returned) that a fragment fills with the figure those functions compute."""
    # Half and half by default: at 1440 px "The code" is ~63 characters wide at 13 px (at
    # [3, 2] it was ~45, and every line wrapped); a figure of several panels side by side can
    # ask for more (widths=(3, 2)). Under a 920 px main column the two stack (LAYOUT_CSS).
    left, right = st.columns(list(widths))
    with right:
        code_panel(*objs, height=height)
    return left.container()


def section_with_controls(ns: str, name: str, *objs: Callable | type, height: int | None = 520):
    """A section laid out once: its title and prose (``{ns}.{name}_title``, ``_text``), an empty
    slot for its controls, then ``beside_code(*objs)``. Returns (controls slot, figure slot).
    In presenter mode the prose is one slide, the controls with their figure the next (slide())."""
    st.subheader(tr(f"{ns}.{name}_title"))
    st.markdown(tr(f"{ns}.{name}_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{ns}.{name}_title")))
    controls = st.container()
    return controls, beside_code(*objs, height=height)
