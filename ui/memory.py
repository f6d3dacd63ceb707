"""The garbage collector and a server that many students share."""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import resource
import threading
import time


def settle_memory() -> None:
    """Move every object alive now (modules, plotly's validators, the course models, SmolLM2's
    tokenizer tables) into the collector's permanent generation.

    Why (issue 39): a full collection walks every tracked object, and with SmolLM2 loaded the
    process holds ~385,000 of them; each full collection held the GIL for 70-165 ms on a quiet
    machine, and under a class of 100 sixteen of them took 11.8 s of the server's 48 s of CPU
    in 120 s, up to 1.6 s at a time (every student's page and every static file waited). What
    is loaded here is never garbage, so it need not be walked again; the sessions' own objects
    are still collected as before. Called after the imports and again when the real model has
    loaded (ui.model._load_real)."""
    gc.collect()
    gc.freeze()


def _libc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


TRIM = _libc_trim()
TRIM_EVERY_S = 5.0
QUIET_SHARE = 0.05     # of one core: below it, nobody is being served and freed pages can go back


def give_back_free_memory() -> None:
    """Hand the pages that freed objects left in the allocator back to the system.

    Why (issue 39): Streamlit runs every session's script in its own thread, and glibc gives
    threads their own heaps (arenas); what a page's run frees there (a lesson's activations,
    its figures, a closed session's state) stays in the process, counted in its RSS, until
    ``malloc_trim``. Measured on a server warmed by every lesson in both languages: 1,280 MB
    before, 1,198 MB after (82 MB), under 4 ms. A ctypes call lets go of the GIL meanwhile."""
    if TRIM is not None:
        TRIM(0)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def quiet(cpu_seconds: float, every: float) -> bool:
    """Whether ``cpu_seconds`` of work in ``every`` s is a quiet server (under QUIET_SHARE of a core).

    Example: quiet(0.1, 5.0) -> True (2 % of a core); quiet(3.0, 5.0) -> False (a class at work)
    """
    return cpu_seconds < QUIET_SHARE * every


def _trim_when_quiet(every: float) -> None:
    before = _cpu_seconds()
    while True:
        time.sleep(every)
        now = _cpu_seconds()
        if quiet(now - before, every):
            give_back_free_memory()
        before = now


STOPPING = threading.Event()     # the process is ending (ui/preload.py sets it at exit)


def wait_until_quiet(every: float = 2.0) -> bool:
    """Block until the process has been quiet for ``every`` s (``quiet``): nobody served. False,
    at once, when the process is ending. For work nobody waits for (F4's built-in pairs at
    server start, ui.model.warm_real): it never competes with a class that has arrived."""
    before = _cpu_seconds()
    while not STOPPING.wait(every):
        now = _cpu_seconds()
        if quiet(now - before, every):
            return True
        before = now
    return False


def start_giving_back(every: float = TRIM_EVERY_S) -> None:
    """A daemon thread that gives freed memory back after every quiet ``every`` s (the process
    used under 5 % of a core): after a warm-up, after a class, not in the middle of one, where
    the pages handed back would be needed again at once (each one faulted in and zeroed anew)."""
    if TRIM is not None:
        threading.Thread(target=_trim_when_quiet, args=(every,), name="give-back-memory", daemon=True).start()
