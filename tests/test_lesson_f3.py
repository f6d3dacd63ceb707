"""F3 in both languages: the curve is the logged training, the next-character grid's rows are
distributions that grow certain, one head at seven checkpoints, continuations from noise to the
poem; every control at its extremes; bad openings get a notice, never a traceback."""
import json

import numpy as np
import pytest

import core.lab.learning
import ui.f3_learning as f3_ui
from core.models.model import ASSETS, LOSS_FILE
from tests.apptest_util import assert_ok, chart_keys, figure_by_key, open_lesson, trace_array

PAGE = "f3_learning.py"
STEPS = [0, 50, 100, 200, 400, 1000, 1400]


def _table(at) -> list[list[str]]:
    md = next(m.value for m in at.markdown if "|---:|---:|---|---|" in m.value)
    rows = [r for r in md.split("\n") if r.startswith("| ") and r[2].isdigit()]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows]


def _next(at):
    fig = figure_by_key(at, "f3.next")
    return trace_array(fig, 0, "customdata"), fig          # the probabilities (z is their log10)


def _head(at):
    fig = figure_by_key(at, "f3.head_grid")
    return [trace_array(fig, i, "z") for i in range(len(fig["data"]))]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f3_figures_at_the_defaults(lang):
    at = open_lesson(PAGE, lang)
    curve = figure_by_key(at, "f3.curve")
    logged = json.loads((ASSETS / LOSS_FILE).read_text(encoding="utf-8"))
    assert len(trace_array(curve, 0, "y")) == 1400
    assert np.allclose(trace_array(curve, 1, "y"), [p["loss"] for p in logged], atol=1.5e-4)   # the logged curve
    marks = curve["data"][-1]
    assert trace_array(curve, len(curve["data"]) - 1, "x").tolist() == STEPS
    assert marks["text"] == [str(s) for s in STEPS]

    z, fig = _next(at)
    assert z.shape[0] == 7 + 2 and np.allclose(z.sum(1), 1, atol=1e-4)   # 7 checkpoints + 2 counting models
    assert fig["data"][0]["x"][0] == "霜"                                # the final model's choice first
    assert z[0, :-1].max() < 0.01 and z[6, 0] > 0.9                          # uniform at step 0, near one-hot at the end
    order = figure_by_key(at, "f3.order")
    assert [len(d["x"]) for d in order["data"]] == [7, 7, 7]
    for i in range(3):
        assert ((trace_array(order, i, "y") >= 0) & (trace_array(order, i, "y") <= 1)).all()

    heads = _head(at)
    assert len(heads) == 7
    for w in heads:
        assert w.shape == (12, 12) and np.allclose(w.sum(1), 1, atol=1e-3) and (np.triu(w, 1) == 0).all()

    rows = _table(at)
    assert [int(r[0]) for r in rows] == STEPS
    assert rows[-1][2].startswith("\\\n") or "举头望明月" in rows[-1][2]     # the second line, recited
    assert "举头望明月" not in rows[0][2]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f3_every_control_at_its_extremes(lang):
    at = open_lesson(PAGE, lang)
    for value in (1, 12):
        at.slider(key="f3.read").set_value(value).run()
        assert_ok(at)
        z, fig = _next(at)
        assert np.allclose(z.sum(1), 1, atol=1e-4)
    for value in (4, 48):
        at.slider(key="f3.new").set_value(value).run()
        assert_ok(at)
        assert all(len(r[2].replace("↵", "\n")) <= value for r in _table(at))
    for seed in (0, 9999):
        at.number_input(key="f3.seed").set_value(seed).run()
        assert_ok(at)
        assert len(_table(at)) == 7
    for key in ("f3.layer", "f3.head"):
        for value in (0, 3):
            at.slider(key=key).set_value(value).run()
            assert_ok(at)
            for w in _head(at):
                assert np.allclose(w.sum(1), 1, atol=1e-3)


def test_f3_the_state_is_in_the_url():
    at = open_lesson(PAGE, "en", {"f3.prompt": "君不见，黄河之水", "f3.read": "5", "f3.layer": "2", "f3.head": "1",
                                  "f3.new": "8", "f3.seed": "3"})
    assert at.slider(key="f3.read").value == 5 and at.slider(key="f3.layer").value == 2
    assert at.slider(key="f3.new").value == 8 and at.number_input(key="f3.seed").value == 3
    z, fig = _next(at)
    assert fig["data"][0]["x"][0] == "河"                           # 「君不见，黄」 -> 「河」, read from the link
    assert all(w.shape == (8, 8) for w in _head(at))
    assert _table(at)[-1][2].startswith("天上来")


@pytest.mark.parametrize("text,notice", [("", "info"), ("🙂" * 300, "warning"), ("<b>x</b> **y** $z$", "warning"),
                                         ("黄河 river 🙂 ﷽", "warning"), ("月", None)])
def test_f3_bad_openings(text, notice):
    at = open_lesson(PAGE, "zh")
    at.text_input(key="f3.prompt").set_value(text).run()
    assert_ok(at)
    if notice:
        assert getattr(at, notice), f"{text!r} must get a notice"
    z, _ = _next(at)
    assert np.allclose(z.sum(1), 1, atol=1e-4)
    assert len(_table(at)) == 7
    for w in _head(at):
        assert w.shape[0] <= 16 and np.allclose(w.sum(1), 1, atol=1e-3)


def test_f3_without_the_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setattr(core.lab.learning, "ASSETS", tmp_path)             # an empty assets folder
    monkeypatch.setattr(f3_ui, "ASSETS", tmp_path)
    f3_ui._load.clear()
    f3_ui.checkpoint_models.clear()
    try:
        at = open_lesson(PAGE, "en")
        assert any("train_course_model.py" in e.value for e in at.error)   # why, and the rebuild command
        assert not [k for k in chart_keys(at) if "f3." in k]
        assert at.radio                                                    # the questions still show
    finally:
        f3_ui._load.clear()
        f3_ui.checkpoint_models.clear()
