"""B1 in both languages: every control to its minimum and maximum, figure data checked."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "b1_attention.py"


def _weights(at):
    return trace_array(figure_by_key(at, "b1.weights"), 4, "z")     # panels: Q, K, V, scores, weights, output


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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b1_whole_computation_cell_course_and_batch(lang):
    """Issue 16: Q, K, V, scores, weights and weights·V side by side; one cell worked out;
    the course model's real Q, K one switch away; a batch in one call; the entropy curve marks d_k."""
    import math

    from core.lab.block_anatomy import trace_prompt
    from core.models.model import load_course_model
    at = open_lesson(PAGE, lang)
    fig = figure_by_key(at, "b1.weights")
    q, k, v, scores, w, out = (trace_array(fig, i, "z") for i in range(6))
    assert q.shape == k.shape == v.shape == out.shape == (11, 8) and scores.shape == w.shape == (11, 11)
    assert np.allclose(scores, q @ k.T / math.sqrt(8), atol=1e-4)
    assert np.allclose(out, w @ v, atol=1e-4)
    for r, c in ((0, 0), (10, 10), (10, 0)):
        at.slider(key="b1.r").set_value(r).run()
        at.slider(key="b1.c").set_value(c).run()
        assert_ok(at)
        text = next(m.value for m in at.markdown if "({}, {})".format(r, c) in m.value and "softmax" in m.value)
        assert f"{float(_weights(at)[r, c]):.3f}" in text

    at.segmented_control(key="b1.source").set_value("course").run()
    assert_ok(at)
    model, tok = load_course_model("cpu")
    _, trace = trace_prompt(model, tok, "君不见，黄河之水天上来")
    for layer, head in ((0, 0), (3, 3)):
        at.slider(key="b1.layer").set_value(layer).run()
        at.slider(key="b1.head").set_value(head).run()
        assert_ok(at)
        real = trace[f"blocks.{layer}.attn.weights"][0, head].numpy()
        assert np.allclose(_weights(at), real, atol=1e-5)
        assert np.allclose(np.triu(_weights(at), 1), 0)                # causal: no later key

    batch = figure_by_key(at, "b1.batch")
    assert len(batch["data"]) == 3
    for i in range(3):
        assert np.allclose(trace_array(batch, i, "z").sum(1), 1, atol=1e-5)

    at.select_slider(key="b1.width").set_value(16).run()
    entropy = figure_by_key(at, "b1.entropy")
    marker = trace_array(entropy, 2, "y")
    assert np.isfinite(marker).sum() == 1 and np.isfinite(marker[4])  # WIDTHS[4] == 16
    assert any("ln 64" in c.value for c in at.caption)
