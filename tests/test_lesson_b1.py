"""B1 in both languages: every control to its minimum and maximum, figure data checked."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "b1_attention.py"


def _weights(at):
    return trace_array(figure_by_key(at, "b1.weights"), 0, "z")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b1_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    w = _weights(at)
    assert w.shape == (11, 11)                                  # 「君不见，黄河之水天上来」
    assert np.allclose(w.sum(1), 1, atol=1e-5) and (w >= 0).all()

    for value in (1, 64):
        at.slider(key="b1.d_k").set_value(value).run()
        assert_ok(at)
        w = _weights(at)
        assert np.allclose(w.sum(1), 1, atol=1e-5)
        title = figure_by_key(at, "b1.weights")["layout"]["title"]["text"]
        assert f"d_k = {value}" in title

    at.text_input(key="b1.text").set_value("之水之").run()
    assert_ok(at)
    w = _weights(at)
    assert w.shape == (3, 3)
    assert np.allclose(w[0], w[2])                               # same character, same row

    for seed in (0, 9999):
        at.number_input(key="b1.seed").set_value(seed).run()
        assert_ok(at)

    for width in (1, 1024):
        at.select_slider(key="b1.width").set_value(width).run()
        assert_ok(at)
        hist = figure_by_key(at, "b1.hist")
        for index, variance in ((0, width), (1, 1.0)):
            x, density = trace_array(hist, index, "x"), trace_array(hist, index, "y")
            mass = density * (x[1] - x[0])
            assert mass.sum() == pytest.approx(1.0, abs=1e-4)     # a density integrates to 1
            mean = (x * mass).sum()
            var = ((x - mean) ** 2 * mass).sum()
            assert var == pytest.approx(variance, rel=0.2)

    entropy = figure_by_key(at, "b1.entropy")
    raw_curve, scaled_curve = trace_array(entropy, 0, "y"), trace_array(entropy, 1, "y")
    assert raw_curve[-1] < raw_curve[0] / 2 and abs(scaled_curve[-1] - scaled_curve[0]) < 0.5


@pytest.mark.parametrize("text", ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"])
def test_b1_bad_text(text):
    at = open_lesson(PAGE, "en")
    at.text_input(key="b1.text").set_value(text).run()
    assert_ok(at)
    w = _weights(at)
    assert 1 <= w.shape[0] <= 48
    if not text.strip():
        assert at.info, "empty input must say so"
    if len(text) > 48:
        assert at.warning, "cut input must say so"


def test_b1_malformed_url_params():
    at = open_lesson(PAGE, "zh", {"b1.d_k": "9999", "b1.seed": "abc", "b1.width": "<b>", "lang": "zh"})
    assert _weights(at).shape == (11, 11)
