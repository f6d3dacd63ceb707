"""E2 in both languages: the counts figure follows r and the projections, the shipped
adapter's results are shown at once, a short live fine-tune fills this session only, bad
input gets a message."""
import hashlib
import json
import math

import numpy as np
import pytest

from core.calc import configs
from core.calc.lora import lora_params
from core.lab import lora_finetune as lab
from core.models.lora import TARGETS
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, set_live, trace_array
from ui.model import _load
from ui.queue import JobQueue

PAGE = "e2_lora.py"
MODELS = ["course", "gpt2-small", "llama-2-7b", "llama-3-8b", "mistral-7b", "mixtral-8x7b",
          "llama-2-70b", "gpt3-175b"]


def _counts(at):
    fig = figure_by_key(at, "e2.counts")
    return trace_array(fig, 0, "x"), trace_array(fig, 1, "x"), fig


def _digest(model) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode() + t.detach().numpy().tobytes())
    return h.hexdigest()


def _segments(y):
    """The lines of one spectrum trace, split at its gaps (NaN)."""
    out, cur = [], []
    for v in np.asarray(y, dtype=np.float64):
        if np.isnan(v):
            out.append(np.array(cur))
            cur = []
        else:
            cur.append(v)
    return out + ([np.array(cur)] if cur else [])


def _expected(r, targets):
    return np.array([lora_params(configs.get(n), r, targets) for n in MODELS], dtype=np.float32)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_e2_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    trainable, frozen, _ = _counts(at)
    assert np.array_equal(trainable, _expected(8, tuple(TARGETS)))
    assert frozen[MODELS.index("llama-2-7b")] == np.float32(6_738_415_616)
    assert "73,984" in at.caption[0].value                              # the course model, r = 8, all seven

    for r in (1, 64):
        set_live(at, "e2.r", r)
        assert_ok(at)
        trainable, _, fig = _counts(at)
        assert np.array_equal(trainable, _expected(r, tuple(TARGETS)))
        assert f"/ {r} =" in at.caption[0].value                       # the scale α / r
    set_live(at, "e2.r", 8)

    at.pills(key="e2.targets").set_value(["w_q", "w_v"]).run()
    assert_ok(at)
    trainable, _, _ = _counts(at)
    assert trainable[MODELS.index("llama-2-7b")] == 4_194_304
    assert trainable[MODELS.index("gpt3-175b")] == 37_748_736
    at.pills(key="e2.targets").set_value([]).run()
    assert_ok(at)
    assert at.info and not _counts(at)[0].any()                         # nothing chosen: a message, zero bars
    assert at.button(key="e2.train_btn").disabled

    for alpha in (1, 64):
        at.slider(key="e2.alpha").set_value(alpha).run()
        assert_ok(at)
        assert f"α / r = {alpha} / 8" in at.caption[0].value
    for steps in (10, 300):
        at.slider(key="e2.steps").set_value(steps).run()
        assert_ok(at)

    # The shipped adapter: learned Song (loss at least halved), and forgot most of the Tang poems;
    # beside it the full fine-tune of the same budget, from the shipped comparison.
    forget = figure_by_key(at, "e2.forget")
    before, after, full = (trace_array(forget, i, "x") for i in range(3))
    compare = json.loads((lab.ASSETS / lab.COMPARE_FILE).read_text(encoding="utf-8"))
    meta = json.loads((lab.ASSETS / lab.ADAPTER_META).read_text(encoding="utf-8"))
    assert after[0] <= before[0] / 2
    assert np.allclose(after, [meta["after"]["song"], meta["after"]["tang"]], atol=1e-3)
    assert np.allclose(full, [compare["runs"]["full"]["song"], compare["runs"]["full"]["tang"]], atol=1e-4)
    assert np.allclose(before, [compare["before"]["song"], compare["before"]["tang"]], atol=1e-3)
    # the comparison's LoRA run is the shipped adapter's run (same settings, same seed)
    assert compare["runs"]["lora"]["config"] == meta["config"]
    assert compare["runs"]["lora"]["tang"] == pytest.approx(meta["after"]["tang"], abs=1e-3)
    uniform = math.log(2582)
    forgot = (after[1] - before[1]) / (uniform - before[1])
    caption = " ".join(c.value for c in at.caption)
    assert f"{forgot:.0%}" in caption and f"{uniform:.2f}" in caption and forgot > 0.5
    table = next(m.value for m in at.markdown if "|---|---:|---:|---:|---:|---:|" in m.value)
    rows = [r for r in table.splitlines() if r.startswith("|") and "---" not in r][2:]   # header, before
    assert len(rows) == len(compare["runs"])
    for row, run in zip(rows, compare["runs"].values(), strict=True):
        assert f"| {run['song']:.2f} | {run['tang']:.2f} |" in row and f"{run['trainable']:,}" in row
    assert "1,387,136" in table                                      # the full fine-tune trains every weight
    # The greedy lines: three columns (at 1024 px four broke every Chinese half-line over two rows),
    # the opening with the poet's half in bold, then the continuations before and after.
    lines = next(m.value for m in at.markdown if "\n|---|---|---|\n" in m.value)
    cells = [r.strip("|").split(" | ") for r in lines.splitlines()[2:]]
    assert [c[0].strip() for c in cells] == [f"{o}**{real}**" for o, real in lab.SONG_OPENINGS]
    assert all(len(c) == 3 and c[1].strip() and c[2].strip() for c in cells)
    stats = json.loads((lab.ASSETS / lab.SONG_STATS).read_text(encoding="utf-8"))
    assert f"{stats['body']['characters']:,}" in caption and f"{stats['whole']['characters']:,}" in caption
    assert f"{stats['body']['unknown']}" in caption and f"{stats['whole']['unknown']}" in caption
    loss = trace_array(figure_by_key(at, "e2.loss"), 0, "y")
    assert len(loss) == 150 and loss[-1] < loss[0] / 2
    svd = figure_by_key(at, "e2.svd")
    assert [t["name"] for t in svd["data"]] == list(TARGETS)
    for i in range(7):
        segments = _segments(trace_array(svd, i, "y"))
        assert len(segments) == 4                                          # one line per block
        for s in segments:
            assert len(s) == 16 and (s[:8] > 1e-3).all() and (s[8:] < 1e-4 * s[0]).all()   # r = 8 non-zero
    mem = figure_by_key(at, "e2.memory")
    computed, measured = trace_array(mem, 0, "x"), trace_array(mem, 1, "x")
    assert np.array_equal(computed, measured)
    assert computed[0] == 12 * 73_984 and computed[1] == 12 * 1_387_136


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_e2_live_fine_tune_is_this_sessions_own(lang):
    at = open_lesson(PAGE, lang, {"e2.steps": "10", "e2.r": "2", "e2.targets": "w_q"})
    shipped_loss = trace_array(figure_by_key(at, "e2.loss"), 0, "y")
    shared, _ = _load("cpu")                      # the course model every session is handed
    before = _digest(shared)
    at.button(key="e2.train_btn").click().run()
    assert_ok(at)
    assert _load("cpu")[0] is shared and _digest(shared) == before   # byte-identical after a fine-tune
    loss = trace_array(figure_by_key(at, "e2.loss"), 0, "y")
    assert len(loss) == 10 and len(shipped_loss) == 150
    assert any("this browser tab only" in i.value or "浏览器标签页" in i.value for i in at.info)
    svd = figure_by_key(at, "e2.svd")
    assert [t["name"] for t in svd["data"]] == ["w_q"]
    assert [len(s) for s in _segments(trace_array(svd, 0, "y"))] == [4] * 4   # 2 r values a block, r = 2
    # Another student, opening the lesson now, still sees the shipped adapter.
    other = open_lesson(PAGE, lang)
    assert len(trace_array(figure_by_key(other, "e2.loss"), 0, "y")) == 150
    at.button(key="e2.back_btn").click().run()
    assert_ok(at)
    assert len(trace_array(figure_by_key(at, "e2.loss"), 0, "y")) == 150


@pytest.mark.parametrize("text", ["", "   ", "🙂" * 300, "<b>x</b> $x$", "黄河 river 🙂 ﷽"])
def test_e2_bad_prompt(text):
    at = open_lesson(PAGE, "en")
    at.text_input(key="e2.prompt").set_value(text).run()
    assert_ok(at)
    if not text.strip():
        assert at.info, "empty input must say so"
    if len(text) > 60:
        assert at.warning, "cut input must say so"
    if any(ord(c) > 0x1F000 or c.isascii() and c.isalpha() for c in text):
        assert any("vocabulary" in w.value for w in at.warning), "unknown characters must say so"


def test_queue_first_come_first_served():
    q = JobQueue(1)
    a, b, c = q.join(), q.join(), q.join()
    assert (q.place(a), q.place(b), q.place(c)) == (1, 2, 3)
    assert not q.try_start(b) and q.try_start(a)
    assert (q.place(a), q.place(b), q.place(c)) == (0, 1, 2)
    assert not q.try_start(b)                                           # the one slot is taken
    q.leave(a)
    q.leave(b)                                                          # b gave up waiting
    assert q.place(c) == 1 and q.try_start(c) and q.running == 1 and q.waiting == 0
    two = JobQueue(2)
    x, y, z = two.join(), two.join(), two.join()
    assert two.try_start(y) and two.try_start(x) and not two.try_start(z)
    with pytest.raises(ValueError):
        JobQueue(0)


def test_e2_without_song_poems_says_so(monkeypatch, tmp_path):
    from core.lab import lora_finetune as lab

    monkeypatch.setattr(lab, "ASSETS", tmp_path)          # an empty folder: no song100, no adapter
    at = open_lesson(PAGE, "en")
    assert any("song100.txt" in w.value for w in at.warning)
    assert figure_by_key(at, "e2.counts")                  # the counts need no asset
