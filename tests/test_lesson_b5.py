"""B5 in both languages: every control to its minimum and maximum; the gallery's masks and the
density bars match the formula of each pattern; the receptive field grows w per layer; the
measured comparison has a row per N."""
import numpy as np
import pytest
import streamlit as st

from core.parts.sparse import PATTERNS
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "b5_sparse.py"
DEFAULTS = {"n": 64, "w": 4, "dil": 2, "glob": 2, "rand": 2}


def _band(n, w, step=1, both=True):
    """Pairs with 0 <= i - j <= w·step at multiples of step (both: either sign)."""
    one_side = sum(max(0, n - r * step) for r in range(1, w + 1))
    return n + (2 if both else 1) * one_side


def expected_pairs(name, n, w, dil, glob, rand):
    """How many pairs each pattern keeps, counted from its definition (not from its mask)."""
    g = min(glob, n)
    if name == "window":
        return _band(n, w)
    if name == "causal":
        return _band(n, w, both=False)
    if name == "dilated":
        return _band(n, w, dil)
    if name == "strided":
        return sum(min(i + 1, w) + i // w for i in range(n))
    if name == "fixed":
        c = max(1, w // 8)
        return sum(i % w + 1 + (i // w) * min(c, w) for i in range(n))
    if name == "block":
        sizes = [min(w, n - s) for s in range(0, n, w)]
        return sum(s * (s + (sizes[p - 1] if p else 0)) for p, s in enumerate(sizes))
    local = _band(n - g, w)                               # the window among the non-global tokens
    longformer = 2 * g * n - g * g + local
    if name == "longformer":
        return longformer
    rows = [min(n - g - 1, i + w) - max(0, i - w) + 1 for i in range(n - g)]   # window row sizes
    return longformer + sum(min(rand, n - g - r) for r in rows)           # + r new keys a row


def _check_patterns(at, n, w, dil, glob, rand):
    bars = trace_array(figure_by_key(at, "b5.density"), 0, "x") / 100   # density per pattern
    gallery = figure_by_key(at, "b5.gallery")
    assert len(gallery["data"]) == len(PATTERNS) + 1 == len(bars) + 1    # + one trace of frames
    frames = gallery["data"][-1]
    assert frames["mode"] == "lines" and frames["x"].count(None) == len(PATTERNS)  # a frame a square
    for p, name in enumerate(PATTERNS):
        want = expected_pairs(name, n, w, dil, glob, rand) / n ** 2
        assert bars[p] == pytest.approx(want, rel=1e-5), name
        z = trace_array(gallery, p, "z")
        if n <= 64:                                        # drawn cell by cell: the mask itself
            assert z.shape == (n, n) and set(np.unique(z)) <= {0.0, 1.0}
            assert (np.diag(z) == 1).all(), f"{name}: every query keeps itself"
        assert z.mean() == pytest.approx(want, rel=1e-5), name          # pooled cells: fractions


def _check_reach(at, n, query, layers):
    reach = trace_array(figure_by_key(at, "b5.reach"), 0, "z")
    assert reach.shape == (layers, n)
    assert (reach[:, query] == 1).all()                    # a query always hears itself
    assert (np.diff(reach, axis=0) >= 0).all()             # what is reached stays reached
    axis = figure_by_key(at, "b5.reach")["layout"]["yaxis"]
    assert axis.get("autorange") != "reversed" and axis["range"] == [0.5, layers + 0.5]  # layer 1 at the bottom


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b5_pattern_controls(lang):
    at = open_lesson(PAGE, lang)
    cfg = dict(DEFAULTS)
    _check_patterns(at, **cfg)
    for key, lo, hi in (("n", 16, 256), ("w", 1, 32), ("dil", 1, 8), ("glob", 0, 16), ("rand", 0, 16)):
        for value in (lo, hi):
            at.slider(key=f"b5.{key}").set_value(value).run()
            assert_ok(at)
            cfg[key] = value
            _check_patterns(at, **cfg)
        at.slider(key=f"b5.{key}").set_value(DEFAULTS[key]).run()
        cfg[key] = DEFAULTS[key]
    for seed in (0, 9999):
        at.number_input(key="b5.seed").set_value(seed).run()
        assert_ok(at)
        _check_patterns(at, **cfg)
    # The banded kernel's own weights: (N/b·b, 3b) with rows summing to 1; the exact zeros marked.
    fig = figure_by_key(at, "b5.band")
    band, zeros = trace_array(fig, 0, "z"), trace_array(fig, 1, "z")
    assert band.shape == zeros.shape == (64, 12)                   # 16 chunks of 4, 12 key slots
    assert np.allclose(band.sum(1), 1, atol=1e-5)
    np.testing.assert_array_equal(np.isnan(zeros), band != 0)      # grey exactly where the weight is 0
    assert (band == 0).sum() == 64 * 12 - 556                      # the 556 kept pairs are the rest
    table = next(m.value for m in at.markdown if m.value.startswith("| ") and "556" in m.value)
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in table.splitlines()[2:]}
    names = at.segmented_control(key="b5.pat").options
    assert rows[names[0]][:2] == ["556", "1/7.4"]                  # window: FLOPs are 1/7.4 of dense
    assert rows[names[PATTERNS.index("longformer")]][2] == "2"     # from token 2 (not global): two hops
    assert "2" in table.splitlines()[0]                            # the header names token 2
    if lang == "zh":
        assert names[0] == "窗口" and "FLOPs 为稠密的" in table     # translated choices, "1/n" in Chinese


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b5_receptive_field(lang):
    at = open_lesson(PAGE, lang)
    at.segmented_control(key="b5.pat").set_value("causal").run()
    for layers in (1, 32):
        at.slider(key="b5.layers").set_value(layers).run()
        for query in (0, 63):
            at.slider(key="b5.query").set_value(query).run()
            assert_ok(at)
            _check_reach(at, 64, query, layers)
            reach = trace_array(figure_by_key(at, "b5.reach"), 0, "z")
            for ell in range(1, layers + 1):                       # one-sided window: L·w
                assert reach[ell - 1].sum() == min(query, ell * 4) + 1
    for name in PATTERNS:
        at.segmented_control(key="b5.pat").set_value(name).run()
        assert_ok(at)
        _check_reach(at, 64, 63, 32)
    # The query's range follows N: shrinking N clamps it, walking N from its max to its min with
    # the query at its max (the review's traceback: 64 -> 48 -> 32 raised above the max).
    at.slider(key="b5.n").set_value(16).run()
    assert_ok(at)
    assert at.slider(key="b5.query").value == 15
    _check_reach(at, 16, 15, 32)
    at.slider(key="b5.n").set_value(256).run()
    at.slider(key="b5.query").set_value(255).run()
    for n in range(240, 15, -16):
        at.slider(key="b5.n").set_value(n).run()
        assert_ok(at)
        assert at.slider(key="b5.query").value == n - 1
        _check_reach(at, n, n - 1, 32)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b5_measured_table_has_a_row_per_n(lang, monkeypatch):
    import core.lab.sparse_lab as lab
    st.cache_data.clear()
    # A machine that can hold dense attention at 256 and 512 but not at 1,024: skipped, not a crash.
    monkeypatch.setattr(lab, "available_bytes", lambda: 4 * lab.dense_bytes(512))
    at = open_lesson(PAGE, lang)
    assert at.info                                                  # nothing measured yet
    at.select_slider(key="b5.largest").set_value(1024).run()
    at.select_slider(key="b5.mw").set_value(32).run()
    at.button(key="b5.measure_btn").click().run()
    assert_ok(at)
    for key in ("b5.time", "b5.memory"):
        fig = figure_by_key(at, key)
        assert len(fig["data"]) == 4                               # dense, fused, banded, gather
        for trace in range(4):
            assert trace_array(fig, trace, "x").tolist() == [256, 512, 1024]
        dense = trace_array(fig, 0, "y")
        assert np.isfinite(dense[:2]).all() and np.isnan(dense[2])  # 1,024 skipped
        assert np.isfinite(trace_array(fig, 2, "y")).all()         # banded at every size
    tables = [m.value for m in at.markdown if "| N |" in m.value]
    assert len(tables) == 2
    assert tables[0].startswith("**") and tables[1].startswith("**")   # each table has its title
    for table in tables:
        rows = table.split("\n\n", 1)[1].splitlines()[2:]
        assert [r.split("|")[1].strip() for r in rows[:3]] == ["256", "512", "1,024"]
        assert len(rows) == 4                                      # a row per N, then the slopes
    assert at.warning and "1,024" in at.warning[0].value
    # flex_attention on a server that cannot compile it: a note, the other kernels still drawn.
    def no_compiler():
        raise RuntimeError("no C++ compiler")
    monkeypatch.setattr(lab, "compiled_flex", no_compiler)
    at.toggle(key="b5.flex").set_value(True).run()
    at.button(key="b5.measure_btn").click().run()
    assert_ok(at)
    fig = figure_by_key(at, "b5.time")
    assert len(fig["data"]) == 5 and np.isnan(trace_array(fig, 4, "y")).all()
    assert np.isfinite(trace_array(fig, 2, "y")).all()
    assert any("RuntimeError" in w.value for w in at.warning)
    at.toggle(key="b5.flex").set_value(False).run()
    # The largest N and the window at their maxima (not measured: that would take minutes).
    at.select_slider(key="b5.largest").set_value(16384).run()
    at.select_slider(key="b5.mw").set_value(256).run()
    assert_ok(at)
    st.cache_data.clear()


def test_b5_query_from_url_past_n_is_clamped():
    at = open_lesson(PAGE, "en", {"b5.n": "16", "b5.query": "60"})
    _check_reach(at, 16, 15, 6)


QUIET_RUN = """
from tests.apptest_util import open_lesson
at = open_lesson("b5_sparse.py", "en")
at.select_slider(key="b5.largest").set_value(1024).run()
at.button(key="b5.measure_btn").click().run()
assert not at.exception and at.markdown, "the measurement did not run"
print("measured", sum("| N |" in m.value for m in at.markdown))
"""


def test_b5_measurement_keeps_the_server_log_quiet():
    """Review (server log): PyTorch's profiler, which measures the memory column, printed kineto's
    lines to stderr at every measurement. Run in a fresh process, as a server is: kineto reads
    its log level once, at the first profile, so an earlier test's profile in this process
    would decide it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    run = subprocess.run([sys.executable, "-c", QUIET_RUN], cwd=Path(__file__).resolve().parent.parent, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "measured 2" in run.stdout                                       # time and memory tables
    noise = [line for line in run.stderr.splitlines()
             if any(mark in line for mark in ("STAGE:", "USDT:", "profiler_start", "registerClient", "libkineto"))]
    assert not noise, noise[:5]


OTHER_THREAD_RUN = """
import threading

loaded = threading.Event()
done = threading.Event()

def first_session():                 # the thread that loads torch, as the first student's run does
    import ui.preload  # noqa: F401
    loaded.set()
    done.wait()                      # kept alive, so the next thread cannot reuse its id

def measuring_session():
    import torch
    from core.lab.sparse_lab import peak_bytes
    print("peak", peak_bytes(lambda: torch.ones(256, 256)))

first = threading.Thread(target=first_session)
first.start()
loaded.wait()
second = threading.Thread(target=measuring_session)
second.start()
second.join()
done.set()
first.join()
"""


def test_a_measurement_in_another_sessions_thread_writes_nothing_to_stderr():
    """CI (stop 28): kineto printed "External init callback must run in same thread as
    registerClient" when the first profile ran in another thread than the one that loaded torch,
    which is every Streamlit session after the first. Here that other thread is certain (the
    first one is still alive); ui.preload must have started the profiler in the first."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    env["ANATOMY_PRELOAD_REAL"] = "0"
    run = subprocess.run([sys.executable, "-c", OTHER_THREAD_RUN], cwd=Path(__file__).resolve().parent.parent,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "peak 262144" in run.stdout, run.stdout
    noise = [line for line in run.stderr.splitlines()
             if any(mark in line for mark in ("STAGE:", "USDT:", "profiler_start", "registerClient", "libkineto"))]
    assert not noise, noise[:5]
