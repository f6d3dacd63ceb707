"""F4 in both languages: the numbers and maps on screen equal core.lab.patching's on SmolLM2 (the
two runs, the three position maps, the head map, a clicked cell's patched run), every control
moved (pair, direction, cell), the student's own pair with bad input, and the page without SmolLM2."""
from pathlib import Path

import numpy as np
import pytest

import ui.model
from core.lab import patching as P
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "f4_patching.py"


@pytest.fixture(scope="module")
def smol():
    from tests.real_util import real
    return real()


@pytest.fixture(autouse=True)
def _one_thread():
    """SmolLM2's sweeps, the page's and core's, on one thread (tests.real_util.one_thread)."""
    from tests.real_util import one_thread
    with one_thread():
        yield


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.real_util import shared_dir
    return shared_dir(tmp_path_factory)


_CORE: dict = {}


def _core(smol, name: str, noising: bool):
    model, tok = smol
    b = P.PAIRS[name]
    pair = P.tokenize_pair(tok, b.clean, b.corrupted, b.right, b.wrong)
    runs = P.run_pair(model, pair, noising)
    maps = P.sweeps(model, runs, (*P.SITES, "head"))
    return pair, runs, maps, maps["head"]


def core_maps(smol, name: str, noising: bool = False):
    """The pair's runs and every map, straight from core (once per pair and direction)."""
    key = (name, noising)
    if key not in _CORE:
        _CORE[key] = _core(smol, name, noising)
    return _CORE[key]


def _page_key(name: str, noising: bool) -> tuple:
    from ui import f4_patching

    b = P.PAIRS[name]
    return f4_patching.pair_key(b.clean, b.corrupted, b.right, b.wrong, noising, "cpu")


def warm(smol, folder, *pairs: tuple[str, bool], core: bool = True) -> None:
    """The page's shared maps of built-in pairs computed before the page opens (as a server's
    first student does), so that a run of the page stays inside AppTest's time limit on a busy
    machine. What the page shows is still checked against core_maps, computed apart: with
    ``core``, those are computed here too. Each once for every xdist worker
    (tests.real_util.shared): the page's maps by f4_patching.pair_maps, core's by _core, in
    whichever worker gets to them first, split between workers that ask at once."""
    from tests.real_util import shared
    from ui import f4_patching

    jobs = {}
    for name, noising in pairs:
        if core and (name, noising) not in _CORE:
            jobs[("f4 core", name, noising)] = lambda n=name, d=noising: _core(smol, n, d)
        key = _page_key(name, noising)
        if f4_patching.maps_ready(key) is None:
            jobs[("f4 page", *key)] = lambda k=key: f4_patching.pair_maps(k, smol)
    for job, got in shared(folder, jobs).items():
        if job[0] == "f4 core":
            _CORE[job[1:]] = got
        elif f4_patching.maps_ready(job[1:]) is None:       # computed by another worker
            with f4_patching._MAPS_LOCK:
                f4_patching._MAPS[job[1:]] = got


def _metrics(at) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric]


def _check_maps(at, smol, name: str, noising: bool) -> None:
    """Every map on the page equals core's, cell for cell (float32 on the way)."""
    pair, runs, sweeps, heads = core_maps(smol, name, noising)
    resid = trace_array(figure_by_key(at, "f4.resid"), 0, "z")
    assert resid.shape == (30, len(pair.clean_ids))
    np.testing.assert_allclose(resid, sweeps["resid_pre"].recovered.numpy(), atol=1e-5)
    sub = figure_by_key(at, "f4.sub")
    np.testing.assert_allclose(trace_array(sub, 0, "z"), sweeps["attn_out"].recovered.numpy(), atol=1e-5)
    np.testing.assert_allclose(trace_array(sub, 1, "z"), sweeps["ffn_out"].recovered.numpy(), atol=1e-5)
    h = trace_array(figure_by_key(at, "f4.heads"), 0, "z")
    assert h.shape == (9, 30)                                              # heads down, blocks across
    np.testing.assert_allclose(h, heads.recovered.numpy().T, atol=1e-5)
    # The two runs: the metrics are core's plain runs, rounded as shown.
    clean, corrupted = P.plain(runs.clean, pair), P.plain(runs.corrupted, pair)
    values = [v for _, v in _metrics(at)]
    assert values == [f"{clean.logit_diff:+.2f}", f"{100 * clean.p_right:.1f} %",
                      f"{corrupted.logit_diff:+.2f}", f"{100 * corrupted.p_right:.1f} %"]
    for run in (clean, corrupted):                                         # the wrong answer's, under each
        assert any(c.value.startswith("P(“") and f"{100 * run.p_wrong:.1f} %" in c.value for c in at.caption)
    bars = figure_by_key(at, "f4.runs")
    np.testing.assert_allclose(trace_array(bars, 0, "x"), [clean.p_right, clean.p_wrong], rtol=1e-5)
    np.testing.assert_allclose(trace_array(bars, 1, "x"), [corrupted.p_right, corrupted.p_wrong], rtol=1e-5)


def _check_cell(at, smol, name: str, noising: bool, layer: int, pos: int) -> None:
    """The clicked cell's bars are that patched run's top tokens; its recovered fraction is the map's."""
    model, _ = smol
    pair, runs, sweeps, _ = core_maps(smol, name, noising)
    got = P.patched_run(model, runs, "resid_pre", layer, pos)
    shown = trace_array(figure_by_key(at, "f4.cell"), 0, "x")
    np.testing.assert_allclose(shown, got.top_probs, rtol=1e-4, atol=1e-6)
    assert got.recovered == pytest.approx(float(sweeps["resid_pre"].recovered[layer, pos]), abs=1e-4)
    assert any(f"{got.recovered:.2f}" in c.value and f"{got.logit_diff:+.2f}" in c.value for c in at.caption)
    box = figure_by_key(at, "f4.resid")["layout"]["shapes"][0]            # the chosen cell outlined
    assert (box["x0"], box["y0"]) == (pos - 0.5, layer - 0.5)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f4_ioi_equals_core_and_the_cell_follows(lang, smol, folder):
    warm(smol, folder, ("ioi", False))
    at = open_lesson(PAGE, lang)
    assert at.segmented_control(key="f4.pair").value == "ioi"
    assert at.segmented_control(key="f4.dir").value == "denoise"
    _check_maps(at, smol, "ioi", False)
    pair, runs, sweeps, _ = core_maps(smol, "ioi", False)
    assert runs.clean_diff == pytest.approx(6.12, abs=0.01) and runs.corrupted_diff == pytest.approx(-5.49, abs=0.01)
    # The picture: the second name carries it early, the last position late.
    resid = trace_array(figure_by_key(at, "f4.resid"), 0, "z")
    assert resid[:7, 9].min() > 0.95 and resid[-3:, 13].min() > 0.9 and np.abs(resid[:, :9]).max() == 0
    assert (at.slider(key="f4.layer").value, at.slider(key="f4.pos").value) == (15, 9)
    _check_cell(at, smol, "ioi", False, 15, 9)
    for layer, pos in ((0, 0), (29, 13), (23, 13)):
        at.slider(key="f4.layer").set_value(layer)
        at.slider(key="f4.pos").set_value(pos).run()
        assert_ok(at)
        _check_cell(at, smol, "ioi", False, layer, pos)
    # The F1 comparison: one row a head, the patch's strongest first, with F1's four scores.
    table = next(m.value for m in at.markdown if m.value.startswith("| "))
    rows = table.split("\n")[2:]
    assert len(rows) == 5 and rows[0].startswith("| L23·H3 |")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f4_pairs_and_noising(lang, smol, folder):
    """The fact pair, then noising: the maps follow, and both are in the address."""
    warm(smol, folder, ("fact", False), ("fact", True), ("agreement", True))
    at = open_lesson(PAGE, lang, {"f4.pair": "fact"})
    _check_maps(at, smol, "fact", False)
    resid = trace_array(figure_by_key(at, "f4.resid"), 0, "z")
    assert resid.shape == (30, 10)
    assert resid[1:20, 2].min() > 0.6 and resid[-3:, -1].min() > 0.75   # "iffel" early, the last position late
    at.segmented_control(key="f4.dir").set_value("noise").run()
    assert_ok(at)
    assert (at.query_params["f4.dir"], at.query_params["f4.pair"]) == ("noise", "fact")
    _check_maps(at, smol, "fact", True)
    resid = trace_array(figure_by_key(at, "f4.resid"), 0, "z")
    assert np.all(resid[:, 0] == 1.0)                                     # "The": the clean run itself
    at.segmented_control(key="f4.pair").set_value("agreement").run()
    assert_ok(at)
    assert trace_array(figure_by_key(at, "f4.resid"), 0, "z").shape == (30, 5)
    _check_cell(at, smol, "agreement", True, at.slider(key="f4.layer").value, at.slider(key="f4.pos").value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f4_own_pair_and_bad_input(lang, smol, folder):
    """The student's own pair: lengths that differ show both tokenizations; an answer of several
    tokens is scored by its first (said); empty, emoji, markup and 5,000 characters give a
    message, never a traceback; a good pair is patched behind the button."""
    import i18n

    _, tok = smol
    warm(smol, folder, ("ioi", False), core=False)
    at = open_lesson(PAGE, lang, {"f4.pair": "own"})
    assert at.text_input(key="f4.clean").value == P.PAIRS["ioi"].clean
    assert not [b for b in at.button if b.key == "f4.run"]               # the IOI pair: ready already

    def typed(**boxes):
        for name, text in boxes.items():
            at.text_input(key=f"f4.{name}").set_value(text)
        at.run()
        assert_ok(at)
        return [e.value for e in at.error], [i.value for i in at.info], [w.value for w in at.warning]

    errors, _, _ = typed(corrupted="When Mary and John went to the store, Bartholomew gave a drink to")
    assert errors == [i18n.t(lang, "f4.error_lengths", clean=14, corrupted=16, limit=P.MAX_TOKENS)]
    assert any("[ Barth] [olome] [w]" in m.value for m in at.markdown)   # both tokenizations shown
    assert not [k for k in ("f4.resid", "f4.cell") if any(k in el.proto.id for el in at.get("bidi_component"))]

    errors, infos, _ = typed(corrupted=P.PAIRS["ioi"].corrupted, right=" Maryanne")
    pieces = tok.tokens(tok.encode(" Maryanne"))
    assert len(pieces) > 1 and not errors
    assert any(pieces[0].strip() in i and str(len(pieces)) in i for i in infos)

    _, infos, _ = typed(right="", clean="")                                # empty: the example text is used
    assert i18n.t(lang, "common.empty_input") in infos
    for bad in ("🙂" * 3, "<b>**x**</b> $x$", "x" * 5000, "   "):
        errors, infos, warnings = typed(clean=bad, corrupted=bad)
        assert errors or warnings or infos, bad
    errors, _, warnings = typed(clean="x" * 5000, corrupted="x" * 5000)
    assert i18n.t(lang, "common.truncated", limit=200, n=5000) in warnings
    n = len(tok.encode("x" * 200))                                          # 50 tokens, over MAX_TOKENS
    assert errors == [i18n.t(lang, "f4.error_too_long", clean=n, corrupted=n, limit=P.MAX_TOKENS)]
    _, _, warnings = typed(clean="<b>x</b>", corrupted="<b>x</b>")
    assert i18n.t(lang, "f4.same_prompts") in warnings
    errors, _, _ = typed(right=" is", wrong=" is")
    assert errors == [i18n.t(lang, "f4.error_same_answer", clean=4, corrupted=4, limit=P.MAX_TOKENS)]

    # A good pair of its own: a button, then the maps, equal to core's.
    clean, corrupted = f"The cat on the mat {lang}", f"The cats on the mat {lang}"
    typed(clean=clean, corrupted=corrupted, right=" is", wrong=" are")
    assert at.button(key="f4.run")
    at.button(key="f4.run").click().run()
    assert_ok(at)
    model, _ = smol
    pair = P.tokenize_pair(tok, clean, corrupted, " is", " are")
    want = P.sweep(model, P.run_pair(model, pair), "resid_pre").recovered.numpy()
    np.testing.assert_allclose(trace_array(figure_by_key(at, "f4.resid"), 0, "z"), want, atol=1e-5)


def test_a_click_on_the_map_moves_the_cell(monkeypatch):
    from ui import f4_patching

    state = {"f4.resid": {"select": "21,7"}}
    monkeypatch.setattr(f4_patching.st, "session_state", state)
    f4_patching.picked_cell("f4.resid", "f4.layer", "f4.pos")
    assert (state["f4.layer"], state["f4.pos"]) == (21, 7)
    for junk in ("<b>,1", "1", "٣,1", None):                               # anything else: nothing moves
        state["f4.resid"] = {"select": junk}
        f4_patching.picked_cell("f4.resid", "f4.layer", "f4.pos")
        assert (state["f4.layer"], state["f4.pos"]) == (21, 7)


@pytest.mark.parametrize("name", list(P.PAIRS))
def test_f4_maps_are_shared_and_small(smol, folder, name):
    """A pair's maps are computed once for every session, and what is kept is under 2 MB."""
    import pickle

    from ui import f4_patching

    warm(smol, folder, (name, False), core=False)
    key = _page_key(name, False)
    maps = f4_patching.pair_maps(key, smol)
    assert f4_patching.pair_maps(key, smol) is maps
    assert len(pickle.dumps(maps)) < 2_000_000


def test_f4_students_asking_at_once_share_one_computation(smol, monkeypatch):
    """Two sessions asking for a pair nobody has yet, at the same moment: one computes its maps,
    the other waits for them and gets the same object; the other direction reuses the same two
    plain runs (flipped), computed once."""
    import threading

    from ui import f4_patching

    calls = {"sweeps": 0, "run_pair": 0}
    sweeps, run_pair = P.sweeps, P.run_pair

    def counted(name, fn):
        def call(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(P, "sweeps", counted("sweeps", sweeps))
    monkeypatch.setattr(P, "run_pair", counted("run_pair", run_pair))
    texts = ("The dogs near the door", "The dog near the door", " are", " is")   # a pair no other test asks for
    key = f4_patching.pair_key(*texts, False, "cpu")
    start, got = threading.Barrier(2), []

    def student():
        start.wait()
        got.append(f4_patching.pair_maps(key, smol))

    threads = [threading.Thread(target=student) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0] is got[1]
    assert calls == {"sweeps": 1, "run_pair": 1}
    noised = f4_patching.pair_maps(f4_patching.pair_key(*texts, True, "cpu"), smol)
    assert noised.noising and calls == {"sweeps": 2, "run_pair": 1}
    model, tok = smol
    runs = run_pair(model, P.tokenize_pair(tok, *texts)).flipped()
    want = sweeps(model, runs, ("resid_pre",))["resid_pre"].recovered.numpy()
    np.testing.assert_allclose(noised.recovered["resid_pre"], want, atol=1e-5)
    f4_patching.cell_run(f4_patching.pair_key(*texts, True, "cpu"), "resid_pre", 3, 1, smol)
    assert calls["run_pair"] == 1                                           # a click: the same runs


def test_f4_without_the_real_model(monkeypatch):
    """Without the package: the install note and the lesson's own, the questions, no exception."""
    from core.models import gguf_llama
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "zh")
    assert any(gguf_llama.INSTALL in i.value for i in at.info)
    assert any("SmolLM2" in i.value and "\u4e00" <= i.value[1] for i in at.info)
    assert not at.get("bidi_component") or not any("f4.resid" in el.proto.id for el in at.get("bidi_component"))
    assert at.radio                                                         # try this is there


def test_the_server_computes_the_built_in_pairs_after_loading_smollm2(monkeypatch):
    """ui.model.warm_real (ui/preload.py's thread at server start) ends by computing every built-in
    pair's maps, denoising, the pair F4 opens on first, so that a class finds them ready;
    only with ANATOMY_PRELOAD_PATCHING=1: by default each waits for the first student who opens it."""
    from ui import f4_patching
    from ui.f4_page import PAIR_IDS

    asked = []
    monkeypatch.setattr(f4_patching, "pair_maps", lambda key, loaded, progress=None: asked.append((key, loaded)))
    monkeypatch.setattr(ui.model.gguf_llama, "cache_files", lambda: (Path(__file__), Path(__file__)))

    class Model:
        def __call__(self, ids):
            return ids

    class Tok:
        def encode(self, text):
            return [1, 2]

    loaded = (Model(), Tok())
    monkeypatch.setattr(ui.model, "_load_real", lambda device: loaded)
    lowered = []                                  # the thread's priority, lowered before the pairs
    monkeypatch.setattr(ui.model, "_background_priority", lambda: lowered.append(len(asked)))
    waited = []                                   # each pair waits until nobody is being served
    monkeypatch.setattr(ui.model, "wait_until_quiet", lambda: waited.append(len(asked)) or True)
    monkeypatch.setenv("ANATOMY_PRELOAD_PATCHING", "1")
    ui.model.warm_real("cpu")
    assert lowered == [0] and waited == [0, 1, 2]
    assert [key for key, _ in asked] == [_page_key(name, False) for name in P.PAIRS]
    assert all(got is loaded for _, got in asked)
    assert asked[0][0][:4] == tuple(getattr(P.PAIRS[PAIR_IDS[0]], f) for f in ("clean", "corrupted", "right", "wrong"))
    asked.clear()
    monkeypatch.setenv("ANATOMY_PRELOAD_PATCHING", "0")
    ui.model.warm_real("cpu")
    monkeypatch.delenv("ANATOMY_PRELOAD_PATCHING")            # off unless asked for
    ui.model.warm_real("cpu")
    assert asked == [] and lowered == [0]
    monkeypatch.setattr(ui.model, "wait_until_quiet", lambda: len(asked) < 1)   # a class arrives after one
    monkeypatch.setenv("ANATOMY_PRELOAD_PATCHING", "1")
    ui.model.warm_real("cpu")
    assert [key for key, _ in asked] == [_page_key(PAIR_IDS[0], False)]


def test_waiting_until_quiet_ends_at_once_when_the_process_ends():
    """ui.memory.wait_until_quiet: True after a quiet window (this test process does nothing in it);
    False at once once the process is ending (STOPPING)."""
    import time

    from ui import memory

    assert memory.wait_until_quiet(0.2) is True
    memory.STOPPING.set()
    try:
        start = time.monotonic()
        assert memory.wait_until_quiet(5.0) is False
        assert time.monotonic() - start < 1.0
    finally:
        memory.STOPPING.clear()


def test_the_background_priority_is_this_threads_alone():
    """ui.model._background_priority lowers the calling thread's CPU priority, not the process's."""
    import os
    import threading

    seen = {}

    def work():
        ui.model._background_priority()
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = os.getpriority(os.PRIO_PROCESS, 0)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen["thread"] == 19
    assert os.getpriority(os.PRIO_PROCESS, 0) == before
