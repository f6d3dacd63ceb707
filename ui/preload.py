"""Everything a lesson's first run would import or set up lazily, done once before any
session runs a lesson.

Why: a class opens the link in the same second. Streamlit runs each session's script in a
thread of one process, so the first runs of many sessions start together. Some libraries look
in ``sys.modules`` instead of importing (plotly's JSON encoder through narwhals asks "is pandas
loaded?"), and a module that another thread is still importing is already there, half
built: 59 of 100 sessions in a test got "partially initialized module 'pandas'". Importing
this module is the first thing app.py does; Python's import lock makes every other session's
``import ui.preload`` wait until it has finished, so no lesson starts on a half-loaded library.
"""
from __future__ import annotations

import atexit
import importlib
import os
import pkgutil
import threading

# Optional backends that plotly and narwhals look up in sys.modules. Imported whole here, in one
# thread. Not pandas or pyarrow: no page draws an st.dataframe (tables are markdown), so neither
# is ever loaded (~80 MB a process, issue 39; tests/test_preload.py keeps it so).
for _name in ("narwhals", "narwhals.stable.v1", "orjson"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass

import numpy as np  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import plotly.io as pio  # noqa: E402

import core  # noqa: E402
import ui  # noqa: E402
import viz  # noqa: E402
from ui.chart import CHART_MODULE, publish_chart_js, publish_plotly_js, static_dir  # noqa: E402
from ui.classroom import MODULE as CLASSROOM_MODULE  # noqa: E402
from ui.classroom import publish_classroom_js  # noqa: E402
from ui.memory import STOPPING, settle_memory, start_giving_back  # noqa: E402
from ui.model import real_model_available, warm_real  # noqa: E402
from ui.nodelay import tcp_nodelay  # noqa: E402
from ui.static_gzip import compressed, install  # noqa: E402
from ui.streamlit_internals import let_finished_runs_land  # noqa: E402


def _import_all(package) -> None:
    """Every module of our own packages, so that no page's first run imports one of them."""
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name != __name__:
            importlib.import_module(info.name)


def _draw_every_trace_type() -> None:
    """plotly loads a trace type's classes and validators on first use: use each type the
    lessons draw once, and serialise it as the chart component does."""
    z = np.zeros((2, 2), dtype=np.float32)
    fig = go.Figure(
        data=[{"type": "heatmap", "z": z, "colorbar": {"title": {"text": "x"}}},
              {"type": "scatter", "x": [0, 1], "y": [0, 1], "mode": "lines+markers+text", "text": ["a", "b"]},
              {"type": "scattergl", "x": [0, 1], "y": [0, 1]},
              {"type": "bar", "x": ["a", "b"], "y": [1, 2], "text": ["1", "2"]}],
        layout={"xaxis": {"type": "log"}, "yaxis": {"type": "category"},
                "shapes": [{"type": "rect", "x0": 0, "x1": 1, "y0": 0, "y1": 1},
                           {"type": "line", "x0": 0, "x1": 1, "y0": 0, "y1": 1}],
                "annotations": [{"text": "a", "x": 0, "y": 0}], "template": "none"})
    pio.to_json(fig, validate=False)


KINETO_QUIET = "6"     # above kineto's highest log level (USDT = 5)


def _start_the_profiler_here() -> None:
    """Start PyTorch's profiler once, in this thread, the one that imported torch.

    B5's memory column is measured by the profiler (core.lab.sparse_lab.peak_bytes). Its first
    start initialises libkineto, which checks that it runs in the thread that loaded torch and
    otherwise prints "ERROR: External init callback must run in same thread as registerClient"
    straight to the server's stderr (a C fprintf: no Python filter or log level reaches it).
    Streamlit runs each session in its own thread, so a student's first measurement always came
    from another thread; the message showed up or not by whether that thread's id happened to
    equal the first one's (CI saw it once in three runs). Started here, kineto is set up before
    any session measures. KINETO_LOG_LEVEL, read once at that start, silences kineto's own
    progress lines ("STAGE: ...", "USDT: ..."); 6 is above its highest level (USDT = 5). An
    operator's own setting is kept. The same profiler as peak_bytes (not torch.profiler's
    wrapper, which imports the compiler: 68 MB)."""
    import torch
    from torch.autograd.profiler import profile

    os.environ.setdefault("KINETO_LOG_LEVEL", KINETO_QUIET)
    with profile(use_cpu=True):
        torch.zeros(1).add_(1)


def _torch_threads() -> None:
    """One thread for PyTorch's operators in a server (ANATOMY_TORCH_THREADS to change it).

    Why (issue 39): with one intra-op thread per core, a student's heavy step (F1's ablations,
    SmolLM2's forward) took both cores of a 2-core laptop, and PyTorch's OpenMP threads keep
    spinning for a while after each operator: the server's event loop (every page, every static
    file) and every other student's run waited behind it (a class of 100: the server at 194 % of
    one core in its busiest second, first pages 8 s at the 95th percentile). With one thread the
    other core stays free for the class; one student's heavy step takes longer."""
    import torch

    threads = os.environ.get("ANATOMY_TORCH_THREADS", "1")
    if threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))


for _package in (core, viz, ui):
    _import_all(_package)
_torch_threads()
_start_the_profiler_here()
_draw_every_trace_type()
publish_plotly_js(static_dir())
publish_chart_js(static_dir())
publish_classroom_js(static_dir())
tcp_nodelay()
let_finished_runs_land()      # a fragment's output is not lost to the next request (issue 42)
# plotly.js, the chart's module and Streamlit's scripts gzipped once, not for each student
# (ui/static_gzip.py).
if install(static_dir()):
    compressed("/app/static/plotly.min.js", static_dir())
    compressed(f"/app/static/{CHART_MODULE}", static_dir())
    compressed(f"/app/static/{CLASSROOM_MODULE}", static_dir())

# What is loaded now lives as long as the process: out of the collector's reach (see settle_memory).
settle_memory()
# What the sessions' threads free goes back to the system every few seconds (ui/memory.py).
start_giving_back()

# SmolLM2-135M-Instruct (issue 24), only when its package is installed: the cache built once per
# machine (~40 s) and the model loaded into ui.model's st.cache_resource (~0.5-2 s), in a thread,
# so no session waits for it here and the first student who opens it finds it ready; then F4's three
# built-in pairs with ANATOMY_PRELOAD_PATCHING=1 (~10 s of one core; by default each is computed on its first visit).
# ANATOMY_PRELOAD_REAL=0 switches it off (a process that never shows the real model).
REAL_THREAD: threading.Thread | None = None
if real_model_available() and os.environ.get("ANATOMY_PRELOAD_REAL", "1") != "0":
    REAL_THREAD = threading.Thread(target=warm_real, args=("cpu",), name="preload-smollm2", daemon=True)
    REAL_THREAD.start()
    # A process that ends while the load is under way aborts ("terminate called without an active
    # exception", exit -6: PyTorch's threads torn down under it; a process ending 0.5 s after this
    # import did, and a CI run's B5 test process once). It waits for the load to end first.
    atexit.register(REAL_THREAD.join, 120)
    atexit.register(STOPPING.set)      # first (atexit runs last registered first): no pair begun at exit


def wait_for_real_model(timeout: float | None = None) -> None:
    """Block until the background load above has finished (at once when there is none): a
    benchmark measures a server that is ready for its class, not one still reading 0.5 GB."""
    if REAL_THREAD is not None:
        REAL_THREAD.join(timeout)
