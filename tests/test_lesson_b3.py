"""B3 in both languages: masks, masked scores, exact zeros, a padded batch, the peeking test."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, live_of, open_lesson, set_live, trace_array

PAGE = "b3_masks.py"
# The explorer starts closed (it costs redraw time); these tests open it through the URL.
OPEN = {"b3.ex_open": "true"}


def _z(at, key, index=0):
    return trace_array(figure_by_key(at, key), index, "z")


def _check_single(at, n, causal):
    mask, scores, w = _z(at, "b3.mask"), _z(at, "b3.scores"), _z(at, "b3.weights")
    assert mask.shape == scores.shape == w.shape == (n, n)
    upper = np.triu(np.ones((n, n), bool), k=1)
    assert np.allclose(w.sum(1), 1, atol=1e-5) and (w >= 0).all()
    if causal:
        assert (mask[upper] == 0).all() and (mask[~upper] == 1).all()
        assert (w[upper] == 0).all()                                  # exactly zero, not small
        assert np.isnan(scores[upper]).all() and np.isfinite(scores[~upper]).all()
        assert w[0, 0] == pytest.approx(1.0)
    else:
        assert (mask == 1).all() and np.isfinite(scores).all() and (w > 0).all()
    # Masked cells look masked: a layer over the scores and the weights paints exactly the cells
    # the mask closed (-inf before the softmax, 0 after it), not the white of a value of 0.
    for key in ("b3.scores", "b3.weights"):
        closed = _z(at, key, 1)
        assert closed.shape == (n, n)
        assert (closed[upper] == 1).all() if causal else True
        assert np.isnan(closed[~upper]).all() and (np.isnan(closed).all() or causal)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b3_controls_and_figures(lang):
    at = open_lesson(PAGE, lang, OPEN)
    _check_single(at, 11, causal=True)                                # 「君不见，黄河之水天上来」

    for d_k in (1, 64):
        at.slider(key="b3.d_k").set_value(d_k).run()
        assert_ok(at)
        _check_single(at, 11, causal=True)
    for seed in (0, 9999):
        at.number_input(key="b3.seed").set_value(seed).run()
        assert_ok(at)

    # The padded batch: 「君不见」 and 「黄河之水天上来」, lengths 3 and 7.
    fig = figure_by_key(at, "b3.batch")
    assert len(fig["data"]) == 4                                      # two panels, two masked layers
    for i, closed in enumerate((trace_array(fig, 2, "z"), trace_array(fig, 3, "z"))):
        weights = trace_array(fig, i, "z")
        assert (weights[closed == 1] == 0).all() and (weights[np.isnan(closed)] > 0).all()
    short, long_ = trace_array(fig, 0, "z"), trace_array(fig, 1, "z")
    assert short.shape == long_.shape == (7, 7)
    assert (short[:, 3:] == 0).all()                                  # no weight on <pad> keys
    assert np.allclose(short.sum(1), 1, atol=1e-5) and np.allclose(long_.sum(1), 1, atol=1e-5)
    assert (np.triu(long_, k=1) == 0).all()                           # causal mask combined
    padding = _z(at, "b3.padding")
    assert padding.shape == (2, 7) and padding.sum(1).tolist() == [3, 7]

    # Positions and texts counted from 0, as in the code (issue 22).
    pad_fig = figure_by_key(at, "b3.padding")
    assert pad_fig["data"][0]["x"][0] == "0" and pad_fig["data"][0]["y"][0] == ("text 0" if lang == "en" else "文本 0")
    batch_fig = figure_by_key(at, "b3.batch")
    x_last, y_last = batch_fig["data"][0]["x"][-1], batch_fig["data"][0]["y"][-1]
    assert x_last == y_last and x_last.rstrip("\u200b") == "pad"               # named alike on both axes
    table = next(m.value for m in at.markdown if "(2, 1, 7)" in m.value)
    assert ("padding mask & causal mask" if lang == "en" else "填充掩码与因果掩码") in table
    # −∞ readable on a projector: written at 16 px in the 11 × 11 scores
    closed = figure_by_key(at, "b3.scores")["data"][1]
    assert closed["textfont"]["size"] >= 16 and "−∞" in closed["text"][0]

    # Peeking: change the character at position p (from 0); before p nothing moves with the mask.
    assert live_of(at, "b3.leak")["values"] == list(range(1, 11))
    for p in (1, 10):
        set_live(at, "b3.changed", p)
        assert_ok(at)
        fig = figure_by_key(at, "b3.leak")
        before, after = trace_array(fig, 0, "y"), trace_array(fig, 1, "y")
        # Both traces hold every position, the other's as a gap: the changed position is p.
        assert before.shape == after.shape == (11,)
        assert (before[:p] == 0).all() and np.isnan(before[p:]).all()
        assert np.isnan(after[:p]).all() and not np.isnan(after[p:]).any()
        assert fig["data"][1]["x"][p].startswith(f"{p}<br>")
        # One scale for every frame: the largest change of any position, with room for its label.
        assert fig["layout"]["yaxis"]["range"][1] >= 1.1 * np.nanmax(after)
        assert float(at.metric[0].value) == 0.0 and float(at.metric[1].value) > 0.01

    at.toggle(key="b3.causal").set_value(False).run()
    assert_ok(at)
    _check_single(at, 11, causal=False)
    before = trace_array(figure_by_key(at, "b3.leak"), 0, "y")
    before = before[~np.isnan(before)]
    assert before.size and (before > 0).all()                         # the earlier outputs saw the change
    short = trace_array(figure_by_key(at, "b3.batch"), 0, "z")
    assert (short[:, 3:] == 0).all() and (short[:, :3] > 0).all()     # padding still hidden, no causal
    table = next(m.value for m in at.markdown if "(2, 1, 7)" in m.value)
    assert ("broadcast to (B, N, N)" if lang == "en" else "广播到 (B, N, N)") in table   # not "padding mask" twice


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b3_explorer(lang):
    at = open_lesson(PAGE, lang, OPEN)
    assert at.slider(key="b3.ex_layer").min == 0 and at.slider(key="b3.ex_head").max == 3   # from 0
    for layer in (0, 3):
        for head in (0, 3):
            at.slider(key="b3.ex_layer").set_value(layer).run()
            at.slider(key="b3.ex_head").set_value(head).run()
            assert_ok(at)
            w = _z(at, "b3.ex_fig_head")
            n = len("君不见，黄河之水天上来，奔流到海不复回。") + 1            # + <bos>
            assert w.shape == (n, n)
            assert np.allclose(w.sum(1), 1, atol=1e-4)
            assert (np.triu(w, k=1) == 0).all()                        # the course model is causal
    at.toggle(key="b3.ex_grid").set_value(True).run()
    assert_ok(at)
    assert len(figure_by_key(at, "b3.ex_fig_grid")["data"]) == 16      # 4 layers × 4 heads


def test_b3_bad_text():
    at = open_lesson(PAGE, "en", OPEN)
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽", "，。！"]:
        at.text_input(key="b3.text").set_value(text).run()
        assert_ok(at)
        w = _z(at, "b3.weights")
        assert 1 <= w.shape[0] <= 24
        assert np.allclose(w.sum(1), 1, atol=1e-5)
        if text == "，。！":
            assert any("punctuation" in i.value for i in at.info)          # no phrases: the example batch
        at.text_input(key="b3.ex_text").set_value(text).run()
        assert_ok(at)
        assert _z(at, "b3.ex_fig_head").shape[0] >= 2


def test_b3_equal_phrases_fall_back_to_an_unequal_batch():
    at = open_lesson(PAGE, "en", OPEN)
    at.text_input(key="b3.text").set_value("床前明月光，疑是地上霜").run()
    assert_ok(at)
    assert any("padding" in i.value for i in at.info)
    fig = figure_by_key(at, "b3.batch")
    panels = [t for t in fig["data"] if t.get("hoverinfo") != "skip"]   # not the masked-cell layers
    assert len(panels) == 3 and trace_array(fig, 0, "z").shape == (7, 7)   # 君不见 / 黄河之水天上来 / 奔流到海


def test_b3_one_character():
    at = open_lesson(PAGE, "zh", OPEN)
    at.text_input(key="b3.text").set_value("河").run()
    assert_ok(at)
    assert _z(at, "b3.weights").shape == (1, 1)
    assert at.info                                                    # too short to change a later token


def test_b3_the_text_decides_the_picture():
    """Issue 22: two texts of one length with different characters give different weights."""
    at = open_lesson(PAGE, "en")
    first = _z(at, "b3.weights")
    at.text_input(key="b3.text").set_value("床前明月光，疑是地上霜").run()
    assert_ok(at)
    second = _z(at, "b3.weights")
    assert first.shape == second.shape == (11, 11) and np.abs(first - second).max() > 0.01
