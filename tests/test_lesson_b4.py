"""B4 in both languages: a rectangular (N_target, N_source) weight matrix per head."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "b4_cross.py"


def _check(at, n_target, n_source, h):
    fig = figure_by_key(at, "b4.cross")
    assert len(fig["data"]) == h
    for i in range(h):
        w = trace_array(fig, i, "z")
        assert w.shape == (n_target, n_source)                            # rectangular
        assert np.allclose(w.sum(1), 1, atol=1e-5) and (w > 0).all()      # no mask in cross-attention
    assert len(trace_array(fig, 0, "y")) == n_target and len(trace_array(fig, 0, "x")) == n_source
    axes = fig["layout"]
    assert len(axes["yaxis"]["ticktext"]) == n_target * -(-h // 2)    # target tokens, once per row of panels
    assert len(axes["xaxis"]["ticktext"]) == n_source * min(h, 2)     # source tokens under each column
    table = next(m.value for m in at.markdown if "| Q = X W_q |" in m.value)
    assert f"(1, {h}, {n_target}, {n_source})" in table
    assert f"(1, {n_target}, 32)" in table and f"(1, {n_source}, 32)" in table


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b4_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    _check(at, 10, 7, 2)              # "The water of the Yellow River comes from the sky" × 「黄河之水天上来」
    for h in (1, 8):
        at.select_slider(key="b4.heads").set_value(h).run()
        assert_ok(at)
        _check(at, 10, 7, h)
    for seed in (0, 9999):
        at.number_input(key="b4.seed").set_value(seed).run()
        assert_ok(at)
    at.text_input(key="b4.source").set_value("君不见，黄河之水天上来").run()
    assert_ok(at)
    _check(at, 10, 11, 8)
    at.text_input(key="b4.target").set_value("River").run()
    assert_ok(at)
    _check(at, 1, 11, 8)                                                  # one query row: a single row of weights


@pytest.mark.parametrize("field", ["b4.target", "b4.source"])
@pytest.mark.parametrize("text", ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"])
def test_b4_bad_text(field, text):
    at = open_lesson(PAGE, "en")
    at.text_input(key=field).set_value(text).run()
    assert_ok(at)
    fig = figure_by_key(at, "b4.cross")
    w = trace_array(fig, 0, "z")
    assert 1 <= w.shape[0] <= 24 and 1 <= w.shape[1] <= 24
    assert np.allclose(w.sum(1), 1, atol=1e-5)
    if not text.strip():
        assert at.info, "empty input must say so"
    if text.startswith("🙂"):
        assert at.warning, "cut input must say so"
    if text.startswith("<script>"):
        labels = fig["layout"]["yaxis" if field == "b4.target" else "xaxis"]["ticktext"]
        assert "&lt;" in labels and "script" in labels                   # shown as text, not markup


def test_b4_malformed_url_params():
    at = open_lesson(PAGE, "zh", {"b4.heads": "16", "b4.seed": "seed", "b4.target": "", "lang": "zh"})
    _check(at, 10, 7, 2)
