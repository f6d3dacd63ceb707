"""A fragment's elements sent to the browser together (one re-render instead of three or four).
"""
from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable

import streamlit as st

from ui import streamlit_internals as internals


class _Held:
    """Stands in for a script run's message sender while ``at_once`` holds its messages."""

    def __init__(self, send: Callable, limit_s: float):
        self.send, self.until = send, time.perf_counter() + limit_s
        self.msgs: list = []
        self.lock = threading.Lock()
        self.released = False

    def __call__(self, msg) -> None:
        with self.lock:
            self.msgs.append(msg)
            if not self.released and time.perf_counter() < self.until:
                return
        self.release()   # past the limit: what is held goes now, and from here on as it comes

    def release(self) -> None:
        with self.lock:   # held while sending: a spinner's timer thread sends too, in order
            self.released = True
            msgs, self.msgs = self.msgs, []
            for msg in msgs:
                self.send(msg)


@contextlib.contextmanager
def at_once(limit_s: float = 0.1):
    """Send the elements made inside this block together, when it ends.

    The browser draws the page again each time new elements arrive (it gathers what arrives
    within ~10 ms, then re-renders the whole page: 10-20 ms on a lesson). A fragment that made
    a figure, computed the next, then made that one sent its elements in three or four waves,
    and the student waited for three or four re-renders before the figure changed. Held here
    and sent in one go, they are drawn in one. Slow work is not hidden: a block still running
    after ``limit_s`` sends what it holds and then sends as usual (a spinner or a progress bar
    shows), and ``send_now()`` lets go at once. Messages are held on this script run's own
    context (one per session and run): no other student's page is touched. A stop or rerun
    request (Streamlit checks for one on each message) is honoured when they are sent."""
    ctx = internals.script_context()
    if ctx is None or isinstance(internals.message_sender(ctx), _Held):
        yield
        return
    held = _Held(internals.message_sender(ctx), limit_s)
    internals.hold_messages(ctx, held)
    try:
        yield
    finally:
        internals.hold_messages(ctx, held.send)
        held.release()


def send_now() -> None:
    """Inside ``at_once``: send what is held, and send the rest as usual (before a progress bar)."""
    ctx = internals.script_context()
    if ctx is not None and isinstance(internals.message_sender(ctx), _Held):
        held = internals.message_sender(ctx)
        internals.hold_messages(ctx, held.send)
        held.release()


def fragment(fn: Callable) -> Callable:
    """``st.fragment`` whose elements reach the browser together (``at_once``)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with at_once():
            return fn(*args, **kwargs)

    return st.fragment(run)
