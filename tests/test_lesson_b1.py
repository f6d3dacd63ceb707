"""B1 in both languages: every control to its minimum and maximum, figure data checked."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, set_live, trace_array
from viz.attention import weight_top

PAGE = "b1_attention.py"


def _weights(at):
    return trace_array(figure_by_key(at, "b1.weights"), 4, "z")     # panels: Q, K, V, scores, weights, output


def _set_source(at, value):
    """The random/course choice, whichever widget ui.frame.choice draws it with."""
    for kind in ("segmented_control", "radio", "selectbox"):
        try:
            widget = getattr(at, kind)(key="b1.source")
        except (KeyError, IndexError):
            continue
        widget.set_value(value).run()
        return
    raise AssertionError("no b1.source control")


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

    # d_v: the width of V and of the output; the weights do not depend on it (issue 22, B1 #10)
    at.slider(key="b1.d_k").set_value(8).run()
    before = _weights(at)
    for d_v in (1, 64):
        at.slider(key="b1.d_v").set_value(d_v).run()
        assert_ok(at)
        fig = figure_by_key(at, "b1.weights")
        v, out = trace_array(fig, 2, "z"), trace_array(fig, 5, "z")
        assert v.shape == out.shape == (11, d_v) and trace_array(fig, 0, "z").shape == (11, 8)
        assert np.allclose(out, _weights(at) @ v, atol=1e-4) and np.allclose(_weights(at), before)
        table = next(m.value for m in at.markdown if "| X |" in m.value and "(11, 32)" in m.value)
        assert f"| W_v | `(32, {d_v})` |" in table and "| W_q, W_k | `(32, 8)` |" in table
        assert f"d_v = {d_v}" in fig["layout"]["title"]["text"]
    # colour bars: one for the values, one for the scores, one for the weights, on 0..max weight
    fig = figure_by_key(at, "b1.weights")
    assert [t.get("showscale") for t in fig["data"][:6]] == [False, True, True, True, True, False]
    assert fig["data"][4]["zmax"] == pytest.approx(weight_top(_weights(at))) and fig["data"][4]["zmax"] < 1

    at.toggle(key="b1.large").set_value(True).run()                   # one panel large, for a projector
    assert_ok(at)
    assert np.array_equal(trace_array(figure_by_key(at, "b1.large_fig"), 0, "z"), _weights(at))
    at.toggle(key="b1.large").set_value(False).run()

    at.text_input(key="b1.text").set_value("之水之").run()
    assert_ok(at)
    w = _weights(at)
    assert w.shape == (3, 3)
    assert np.allclose(w[0], w[2])                               # same character, same row

    for seed in (0, 9999):
        at.number_input(key="b1.seed").set_value(seed).run()
        assert_ok(at)

    for width in (1, 1024):
        set_live(at, "b1.width", width)
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


def test_b1_bad_text():
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"]:
        at.text_input(key="b1.text").set_value(text).run()
        assert_ok(at)
        assert 1 <= _weights(at).shape[0] <= 48


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

    _set_source(at, "course")
    assert_ok(at)
    model, tok = load_course_model("cpu")
    cfg = model.config
    _, trace = trace_prompt(model, tok, "君不见，黄河之水天上来")
    for layer, head in ((0, 0), (3, 3)):
        at.slider(key="b1.layer").set_value(layer).run()
        at.slider(key="b1.head").set_value(head).run()
        assert_ok(at)
        real = trace[f"blocks.{layer}.attn.weights"][0, head].numpy()
        assert np.allclose(_weights(at), real, atol=1e-5)
        assert np.allclose(np.triu(_weights(at), 1), 0)                # causal: no later key
    # Course mode (issue 22, B1 #3, #4): shapes from the model's config, the mask drawn on the
    # scores (the caption's dark cells), no d_k slider, no "the weights are random".
    n = _weights(at).shape[0]                                          # the tokens the model read
    fig = figure_by_key(at, "b1.weights")
    assert trace_array(fig, 0, "z").shape == (n, cfg.d_head)
    layers = fig["data"][6:]
    assert len(layers) == 2 and all(t["hoverinfo"] == "skip" for t in layers)   # scores and weights panels
    closed = trace_array(fig, 6, "z")
    assert (closed[np.triu(np.ones((n, n), bool), 1)] == 1).all() and np.isnan(np.tril(closed) + 0 * closed).any()
    table = next(m.value for m in at.markdown if "| X |" in m.value and f"({n}, {cfg.d_model})" in m.value)
    assert f"`({cfg.d_model}, {cfg.d_head})`" in table and f"({n}, {n})" in table
    assert not [s for s in at.slider if s.key in ("b1.d_k", "b1.d_v")]
    captions = " ".join(c.value for c in at.caption)
    assert "random" not in captions.split("d_head")[0] if lang == "en" else "随机的" not in captions
    assert f"d_head = {cfg.d_head}" in captions

    batch = figure_by_key(at, "b1.batch")
    assert len(batch["data"]) == 3
    panels = [trace_array(batch, i, "z") for i in range(3)]
    for w in panels:
        assert np.allclose(w.sum(1), 1, atol=1e-5)
    assert np.abs(panels[0] - panels[1]).max() > 0.01 and np.abs(panels[1] - panels[2]).max() > 0.01   # issue 22
    names = [a["text"] for a in batch["layout"]["annotations"]][:3]
    assert names == (["text 0", "text 1", "text 2"] if lang == "en" else ["文本 0", "文本 1", "文本 2"])

    set_live(at, "b1.width", 16)
    entropy = figure_by_key(at, "b1.entropy")
    marker = trace_array(entropy, 2, "y")
    assert np.isfinite(marker).sum() == 1 and np.isfinite(marker[4])  # WIDTHS[4] == 16
    assert any("ln 64" in c.value for c in at.caption)


def test_b1_the_text_decides_the_picture():
    """Issue 22: 「床前明月光，疑是地上霜」 used to draw exactly the picture of 「君不见，黄河之水天上来」."""
    at = open_lesson(PAGE, "en")
    first = trace_array(figure_by_key(at, "b1.weights"), 0, "z")           # Q
    at.text_input(key="b1.text").set_value("床前明月光，疑是地上霜").run()
    assert_ok(at)
    second = trace_array(figure_by_key(at, "b1.weights"), 0, "z")
    assert first.shape == second.shape and np.abs(first - second).max() > 0.1


def test_b1_chosen_cell_is_clamped_not_reset():
    at = open_lesson(PAGE, "en")
    at.slider(key="b1.r").set_value(8).run()
    at.slider(key="b1.c").set_value(5).run()
    at.text_input(key="b1.text").set_value("床前明月").run()
    assert_ok(at)
    assert (at.slider(key="b1.r").value, at.slider(key="b1.c").value) == (3, 3)
    text = next(m.value for m in at.markdown if "(3, 3)" in m.value)
    assert f"{float(_weights(at)[3, 3]):.3f}" in text


def test_b1_try3_text_has_the_repeat_it_names():
    """Try this q3 names 君 at positions 0 and 4 of 「君不见，君不见」: rows 0 and 4 are equal."""
    at = open_lesson(PAGE, "zh")
    at.text_input(key="b1.text").set_value("君不见，君不见").run()
    w = _weights(at)
    assert np.allclose(w[0], w[4]) and not np.allclose(w[0], w[1])


# --- SmolLM2-135M as the source of Q, K, V (issue 24 §4) ------------------------------------
REAL_TEXT = "The cat sat on the mat because it was tired."


def _real_weights(text: str, layer: int, head: int) -> np.ndarray:
    import torch

    from core.parts.trace import Trace
    from tests.real_util import real
    model, tok = real()
    trace = Trace()
    model(torch.tensor([tok.encode(text)[:48]]), trace=trace)
    return trace[f"blocks.{layer}.attn.weights"][0, head].numpy()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b1_on_smollm2(lang):
    from tests.real_util import real
    _, tok = real()
    at = open_lesson(PAGE, lang, {"b1.source": "smollm2"})
    n = len(tok.encode(REAL_TEXT))
    assert (at.slider(key="b1.layer").min, at.slider(key="b1.layer").max) == (0, 29)
    assert (at.slider(key="b1.head").min, at.slider(key="b1.head").max) == (0, 8)
    for layer, head in ((0, 0), (29, 8), (16, 0)):
        at.slider(key="b1.layer").set_value(layer).run()
        at.slider(key="b1.head").set_value(head).run()
        assert_ok(at)
        fig = figure_by_key(at, "b1.weights")
        w = _weights(at)
        assert w.shape == (n, n) and np.allclose(w, _real_weights(REAL_TEXT, layer, head), atol=1e-5)
        assert np.allclose(w.sum(1), 1, atol=1e-5) and np.allclose(np.triu(w, 1), 0)
        assert trace_array(fig, 0, "z").shape == (n, 64)                          # Q: d_head = 64
        assert "SmolLM2-135M" in fig["layout"]["title"]["text"] and str(layer) in fig["layout"]["title"]["text"]
    assert np.diag(_weights(at), -1).mean() > 0.5                                 # layer 16 head 0: previous token
    captions = " ".join(c.value for c in at.caption)
    assert "The cat sat" in captions                                              # the English example, said so
    assert not [s for s in at.slider if s.key in ("b1.d_k", "b1.d_v")]
    table = next(m.value for m in at.markdown if "| X |" in m.value and f"({n}, 576)" in m.value)
    assert "`(576, 64)`" in table

    at.text_input(key="b1.text").set_value("Hello world, hello!").run()            # the student's own text
    assert_ok(at)
    assert np.allclose(_weights(at), _real_weights("Hello world, hello!", 16, 0), atol=1e-5)
    at.text_input(key="b1.text").set_value("🙂" * 40).run()                        # 40 chars, > 48 tokens
    assert_ok(at)
    assert _weights(at).shape == (48, 48) and at.warning
    at.text_input(key="b1.text").set_value("<script>alert(1)</script>").run()
    assert_ok(at)


def test_b1_course_links_still_work():
    at = open_lesson(PAGE, "en", {"b1.source": "course", "b1.layer": "3", "b1.head": "3"})
    assert _weights(at).shape == (11, 11) and "course model" in figure_by_key(at, "b1.weights")["layout"]["title"]["text"]


def test_b1_without_smollm2(monkeypatch):
    """Without the package: the install note, and the course model in its place (no traceback)."""
    import ui.model
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    at = open_lesson(PAGE, "zh", {"b1.source": "smollm2"})
    assert any("pip install" in i.value for i in at.info)
    assert "课程模型" in figure_by_key(at, "b1.weights")["layout"]["title"]["text"]
    assert np.allclose(_weights(at).sum(1), 1, atol=1e-5)


def _chain(at) -> tuple[float, float, float]:
    """(e, Σ, weight) as the worked cell prints them: "… = e / Σ = **w**" (e is 0 on a masked cell)."""
    import re
    text = next(m.value for m in at.markdown if "(d_k)" not in m.value and "**" in m.value
                and re.search(r"/ [\d.]+ =\$ \*\*", m.value))
    e, total, weight = re.search(r"\$?([\d.]+) / ([\d.]+) =\$ \*\*([\d.]+)\*\*", text).groups()
    return float(e), float(total), float(weight)


@pytest.mark.parametrize("source", ["random", "course", "smollm2"])
def test_b1_worked_cell_adds_up(source):
    """Issue 38 §1: the printed e / Σ gives the printed weight, which is the framed cell of the
    figure; Σ is recomputed from the scores panel over the keys the row may see (all of them
    without a mask, keys 0..r with the causal mask); a masked cell prints 0 / Σ = 0."""
    if source == "smollm2":
        from tests.real_util import real
        real()
    at = open_lesson(PAGE, "en", {"b1.source": source})
    fig = figure_by_key(at, "b1.weights")
    scores, weights = trace_array(fig, 3, "z"), _weights(at)
    n = len(weights)
    for r, c in ((3, 0), (n - 1, n - 1), (1, 3), (0, n - 1)):
        at.slider(key="b1.r").set_value(r).run()
        at.slider(key="b1.c").set_value(c).run()
        e, total, weight = _chain(at)
        masked = source != "random" and c > r
        assert f"{weights[r, c]:.3f}" == f"{weight:.3f}"                 # the framed cell
        assert abs(e / total - weight) <= 0.0006
        seen = scores[r, : r + 1] if source != "random" else scores[r]
        assert total == pytest.approx(float(np.exp(seen - seen.max()).sum()), abs=2e-4)
        if masked:
            assert e == 0 and weight == 0 and "\\infty" in " ".join(m.value for m in at.markdown)


@pytest.mark.parametrize("source", ["random", "smollm2"])
def test_b1_each_panel_has_a_scale_it_shows_on(source):
    """Issue 38 §2: Q and K share one colour range (their largest |value|), V and weights·V
    another; the two bars say which panels share them. On SmolLM2 V is far smaller than Q, K:
    on Q's range it looked empty."""
    if source == "smollm2":
        from tests.real_util import real
        real()
    at = open_lesson(PAGE, "en", {"b1.source": source})
    fig = figure_by_key(at, "b1.weights")
    z = [trace_array(fig, i, "z") for i in range(6)]
    qk, vo = max(np.abs(z[0]).max(), np.abs(z[1]).max()), max(np.abs(z[2]).max(), np.abs(z[5]).max())
    for i, top in ((0, qk), (1, qk), (2, vo), (5, vo)):
        t = fig["data"][i]
        assert t["zmin"] == pytest.approx(-top, rel=1e-5) and t["zmax"] == pytest.approx(top, rel=1e-5)
    assert fig["data"][1]["colorbar"]["title"]["text"] == "Q,<br>K"               # beside K
    assert fig["data"][2]["colorbar"]["title"]["text"] == "V,<br>weights·V"       # beside V
    if source == "smollm2":
        assert vo < qk / 3                 # the case of the review: one shared range hid V
        assert np.abs(z[2]).max() > 0.5 * fig["data"][2]["zmax"]             # V's own cells reach its bar's ends


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b1_text_label_follows_the_model(lang):
    """Issue 38 §3: the box's label says how the source reads the text (a character a token, or
    SmolLM2's BPE), and on SmolLM2 a note under the box names the English text read instead of the
    Chinese example; a text the student typed stays when the source changes."""
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, lang)
    box = at.text_input(key="b1.text")
    assert ("character" in box.label) if lang == "en" else ("每个字" in box.label)
    _set_source(at, "smollm2")
    assert_ok(at)
    box = at.text_input(key="b1.text")
    assert "BPE" in box.label and "character" not in box.label and "每个字" not in box.label
    assert box.value == "君不见，黄河之水天上来"
    assert any("The cat sat" in c.value for c in at.caption)                     # the stand-in, said
    box.set_value("Hello world").run()
    assert_ok(at)
    assert not any("The cat sat" in c.value for c in at.caption)
    assert _weights(at).shape == (2, 2)                                           # Hello | ␣world
    _set_source(at, "random")
    assert at.text_input(key="b1.text").value == "Hello world" and _weights(at).shape == (11, 11)
    assert "BPE" not in at.text_input(key="b1.text").label
