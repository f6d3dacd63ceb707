"""C1 in both languages: every control to its minimum and maximum; the figures hold the model's
own tensors (checked against a run outside the app), LayerNorm's per-token statistics,
rows of attention that sum to 1 and the softmax of each decoding step."""
import functools
import re

import numpy as np
import pytest

from core.models.dates import read_date
from core.models.encdec import load_date_model
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "c1_encoder_decoder.py"
TEXT = "MONDAY, 30 NOVEMBER 2026"      # the default: out of style (capitals), the model writes 2026-10-30
ANSWER = "2026-11-30"
PARTS = ["encoder.self_attn", "encoder.self_attn_norm", "encoder.ffn", "encoder.ffn_norm", "decoder.self_attn",
         "decoder.self_attn_norm", "decoder.cross_attn", "decoder.cross_attn_norm", "decoder.ffn", "decoder.ffn_norm"]


DEFAULT_CKPT = 150    # the decoding section's default model: saved after 150 of 1,200 steps


@functools.cache
def reference_reading():
    """The default date read by the final model, outside the app (test_all_lessons' fallback check too)."""
    model, src_tok, tgt_tok = load_date_model("cpu")
    return model, read_date(model, TEXT, src_tok, tgt_tok)


@pytest.fixture(scope="module")
def reference():
    return reference_reading()


@pytest.fixture(scope="module")
def decoding_reference():
    """The default date read by the decoding section's default model (the checkpoint at step 150)."""
    from core.models.encdec import load_date_checkpoint
    from core.text.dates import source_tokenizer, target_tokenizer
    model = load_date_checkpoint(DEFAULT_CKPT, "cpu")
    return model, read_date(model, TEXT, source_tokenizer(), target_tokenizer())


def _check(at, ref, stack, layer, sub):
    model, r = ref
    d, n_src, n_tgt = model.config.d_model, len(TEXT) + 1, len(r.target)       # the source ends in <eos>
    rows = n_src if stack == "encoder" else n_tgt
    io = figure_by_key(at, "c1.io")
    x_in, x_out = trace_array(io, 0, "z"), trace_array(io, 1, "z")
    assert x_in.shape == x_out.shape == (rows, d)
    base = f"{stack}.layers.{layer}"
    name = (f"{base}.{sub}" if sub.endswith("norm") else f"{base}.ffn_out" if sub == "ffn"
            else f"{base}.{sub}.out")
    want = r.trace[name][0]
    np.testing.assert_allclose(x_out, want.numpy(), atol=1e-5)
    if sub in ("self_attn", "cross_attn"):
        w = trace_array(figure_by_key(at, "c1.weights"), 0, "z")
        cols = n_src if (sub == "cross_attn" or stack == "encoder") else n_tgt
        assert w.shape == (rows, cols)                                       # (target, source) for cross
        np.testing.assert_allclose(w.sum(1), 1, atol=1e-5)
        if stack == "decoder" and sub == "self_attn":
            assert np.allclose(np.triu(w, 1), 0)                             # the causal mask


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_every_sublayer(lang, reference):
    model, r = reference
    at = open_lesson(PAGE, lang)
    diagram = figure_by_key(at, "c1.diagram")
    clicks = diagram["data"][-1]["customdata"]                              # a click names its box
    assert "decoder.layers.1.cross_attn" in clicks and clicks.count("encoder.layers.0.ffn") == 7
    heads = next(t for t in diagram["data"] if t.get("marker", {}).get("symbol") == "triangle-left")
    n = model.config.n_layers
    assert len(heads["x"]) == 2 * n + 3 * n                                 # a residual arrow into every Add
    assert r.output == "2026-10-30" and at.info and any(ANSWER in i.value for i in at.info)  # the output, at the top
    assert at.info and at.warning                                           # out of style: said, and which characters
    _check(at, reference, "decoder", 0, "cross_attn")                         # the default
    for layer in (0, model.config.n_layers - 1):
        at.slider(key="c1.layer").set_value(layer).run()
        for part in PARTS:
            at.selectbox(key="c1.part").set_value(part).run()
            assert_ok(at)
            stack, sub = part.split(".")
            _check(at, reference, stack, layer, sub)


NORMS = ["encoder.layers.0.self_attn_norm", "decoder.layers.1.ffn_norm"]      # first and last option
FFNS = ["encoder.layers.0.ffn", "decoder.layers.1.ffn"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_add_norm_and_ffn(lang, reference):
    model, r = reference
    at = open_lesson(PAGE, lang)
    for name in ["encoder.layers.0.self_attn_norm"] + NORMS[1:]:                # the default (min), then max
        if name != "encoder.layers.0.self_attn_norm":
            at.selectbox(key="c1.norm").set_value(name).run()
            assert_ok(at)
        rows = len(TEXT) + 1 if name.startswith("encoder") else len(r.target)
        norm = figure_by_key(at, "c1.norm_fig")
        assert len(norm["data"]) == 6
        before = r.trace[name.removesuffix("_norm") + "_add"][0]
        np.testing.assert_allclose(trace_array(norm, 0, "y"), before.mean(-1).numpy(), atol=1e-4)
        # LayerNorm per token: standardised, every mean 0 and every variance 1 (traces 1 and 4)
        np.testing.assert_allclose(trace_array(norm, 1, "y"), 0, atol=1e-5)
        np.testing.assert_allclose(trace_array(norm, 4, "y"), 1, atol=1e-3)
        after = r.trace[name][0]
        np.testing.assert_allclose(trace_array(norm, 5, "y"), after.var(-1, unbiased=False).numpy(), atol=1e-4)
        assert len(trace_array(norm, 0, "y")) == rows
        assert "-0.00 " not in next(c.value for c in at.caption if name in c.value)
    for name in FFNS:
        at.selectbox(key="c1.ffn").set_value(name).run()
        assert_ok(at)
        hidden = trace_array(figure_by_key(at, "c1.ffn_fig"), 0, "z")
        np.testing.assert_allclose(hidden, r.trace[f"{name}.hidden"][0].numpy(), atol=1e-5)
        assert hidden.shape[1] == model.config.ffn_hidden and (hidden >= 0).all()    # after the ReLU
        off = float((hidden == 0).mean())
        assert f"{100 * off:.0f} %" in next(c.value for c in at.caption if "F = " in c.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_decoding_steps(lang, decoding_reference):
    """Default: the model after 150 training steps. Teacher forcing fed the right answer 2026-11-30
    where the model wrote 2026-10-30: the rows agree up to the first mistake (position 6, the
    month's second digit) and differ after it. Fed its own output: equal everywhere."""
    model, r = decoding_reference
    at = open_lesson(PAGE, lang)
    assert at.select_slider(key="c1.ckpt").value == DEFAULT_CKPT
    n = len(r.target)
    assert at.segmented_control(key="c1.feed").value == "answer"
    forced = trace_array(figure_by_key(at, "c1.forcing"), 0, "z")
    assert forced.shape == (n, 15)                                    # 4 specials + "0-9" + "-"
    np.testing.assert_allclose(forced.sum(1), 1, atol=1e-5)
    rows = figure_by_key(at, "c1.forcing")["data"][0]["y"]
    assert rows[0] == "&lt;bos&gt;" and "".join(rows[1:]).replace("\u200b", "") == ANSWER   # fed the right answer
    vocab = figure_by_key(at, "c1.forcing")["data"][0]["x"]
    assert any(v.startswith("&lt;eos&gt;") for v in vocab) and "eos" not in vocab                   # <eos> as elsewhere
    # On the axis each special token is one coloured glyph (written out, <eos> met its neighbours);
    # the hover keeps the full name (the category), the caption gives the key, in the page's language.
    ticks = figure_by_key(at, "c1.forcing")["layout"]["xaxis"]
    assert ticks["tickvals"] == vocab and len(ticks["ticktext"]) == 15
    marks = {v: t for v, t in zip(vocab, ticks["ticktext"], strict=True) if v.startswith("&lt;")}
    assert [re.sub("<[^>]+>", "", t) for t in marks.values()] == ["∅", "►", "■", "�"]
    assert all(t.startswith("<span style=") for t in marks.values())
    assert all(t == v for v, t in zip(vocab, ticks["ticktext"], strict=True) if v not in marks)
    rows_ticks = figure_by_key(at, "c1.forcing")["layout"]["yaxis"]["ticktext"]
    assert "►" in rows_ticks[0] and rows_ticks[1:] == rows[1:]
    probs_ticks = figure_by_key(at, "c1.probs")["layout"]["xaxis"]["ticktext"]
    assert probs_ticks == ticks["ticktext"]
    key = [c.value for c in at.caption if "■" in c.value and "`<eos>`" in c.value]
    assert len(key) == 2 and ("结束" in key[0]) is (lang == "zh")
    stepped = r.decoded.probs[0].numpy()
    assert r.output == "2026-10-30"                                        # the shipped model's mistake too
    # Not one-hot at the default: the steps' largest probabilities, in the figure and in the caption.
    step_max = stepped.max(-1)
    assert step_max.min() < 0.6 and (step_max < 0.95).sum() >= 4, step_max
    assert forced.max(1).min() < 0.6 and (forced.max(1) < 0.95).sum() >= 4
    line = next(c.value for c in at.caption if "`2026-10-30`" in c.value and "%" in c.value)
    assert f"{DEFAULT_CKPT}" in line and re.search(r"`1` 5\d %", line), line     # the month's first digit
    assert at.slider(key="c1.step").value == 5                             # the month's first digit
    shown = trace_array(figure_by_key(at, "c1.probs"), 0, "y")
    np.testing.assert_allclose(shown, stepped[5], atol=1e-5)
    assert 0.5 < shown.max() < 0.6 and np.sort(shown)[-2] > 0.35           # "1" 58 % against "0" 39 %
    why = "把滑块拖到 1,200" if lang == "zh" else "Move the slider to 1,200"
    assert any(why in c.value and "100 %" in c.value for c in at.caption)   # why not the shipped model
    np.testing.assert_allclose(forced[:7], stepped[:7], atol=1e-4)          # same prefix: the same rows
    assert forced[6][vocab.index("1")] < 0.5                               # the right "1": the training loss is here
    assert rows[7].replace("\u200b", "") == "1" and r.target[7] == "0"                           # from 7 on they read different prefixes
    assert "6" in next(c.value for c in at.caption if ANSWER in c.value)
    for step in (0, 6, n - 1):
        at.slider(key="c1.step").set_value(step).run()
        assert_ok(at)
        fig = figure_by_key(at, "c1.probs")
        p = trace_array(fig, 0, "y")
        np.testing.assert_allclose(p, stepped[step], atol=1e-5)
        np.testing.assert_allclose(trace_array(fig, 1, "y"), forced[step], atol=1e-5)   # the marks
        frame = figure_by_key(at, "c1.forcing")["layout"]["shapes"][0]
        assert frame["y0"] == step - 0.5
    at.segmented_control(key="c1.feed").set_value("own").run()
    assert_ok(at)
    assert at.query_params["c1.feed"] == "own"
    own = trace_array(figure_by_key(at, "c1.forcing"), 0, "z")
    np.testing.assert_allclose(own, stepped[:n], atol=1e-5)                # teacher forcing = steps
    at.text_input(key="c1.date").set_value("30 Nov 2026").run()            # a date it writes right
    at.segmented_control(key="c1.feed").set_value("answer").run()
    assert_ok(at)
    assert at.success and any("2026-11-30" in c.value for c in at.caption)


@pytest.mark.parametrize("text", ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽",
                                  "31 February 2026", "二〇二六年十一月三十日"])
def test_c1_bad_and_other_input(text):
    at = open_lesson(PAGE, "zh")
    at.text_input(key="c1.date").set_value(text).run()
    assert_ok(at)
    w = trace_array(figure_by_key(at, "c1.weights"), 0, "z")
    np.testing.assert_allclose(w.sum(1), 1, atol=1e-5)
    assert w.shape[1] <= 32
    if not text.strip():
        assert at.info
    if "🙂" in text or "<" in text:
        assert any("🙂" in m.value or "\\<" in m.value for m in at.warning)  # unknown characters named, escaped


def test_c1_code_panels_fit_without_scrolling():
    """Every function C1 shows runs the full width under its figure: ≤ 64 characters a line
    fit at 1024 px."""
    import inspect

    from core.lab.date_lab import norm_stats, relu_off, standardise, teacher_forced
    from core.models.encdec import DecoderLayer, EncoderLayer, FeedForward, cross_attend, greedy
    for fn in (norm_stats, relu_off, standardise, DecoderLayer.forward, EncoderLayer.forward, FeedForward,
               cross_attend, greedy, teacher_forced):
        assert max(len(line) for line in inspect.getsource(fn).splitlines()) <= 64, fn.__qualname__


# --- decoding by an earlier, unsure model (issue 26: the date model's checkpoints) -------------
@pytest.fixture(scope="module")
def checkpoint_readings():
    from core.models.encdec import load_date_checkpoint
    from core.text.dates import source_tokenizer, target_tokenizer
    src_tok, tgt_tok = source_tokenizer(), target_tokenizer()
    return {step: read_date(load_date_checkpoint(step, "cpu"), TEXT, src_tok, tgt_tok) for step in (40, 80, 1200)}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_checkpoint_control_decodes_with_an_earlier_model(lang, checkpoint_readings):
    at = open_lesson(PAGE, lang)
    ckpt = at.select_slider(key="c1.ckpt")
    assert ckpt.value == DEFAULT_CKPT and list(ckpt.options) == ["40", "80", "150", "300", "1200"]
    assert (ckpt.label == "训练到第几步的模型") is (lang == "zh")
    for step in (40, 80, 1200):                                              # min, an unsure middle, max
        at.select_slider(key="c1.ckpt").set_value(step).run()
        assert_ok(at)
        r = checkpoint_readings[step]
        stepped = r.decoded.probs[0].numpy()
        line = next(c.value for c in at.caption if f"`{r.output}`" in c.value and "%" in c.value)
        assert f"{step:,}" in line and "1,200" in line
        n = len(r.target)
        for at_step in (0, n - 1):
            at.slider(key="c1.step").set_value(at_step).run()
            assert_ok(at)
            np.testing.assert_allclose(trace_array(figure_by_key(at, "c1.probs"), 0, "y"), stepped[at_step], atol=1e-5)
        forced = trace_array(figure_by_key(at, "c1.forcing"), 0, "z")          # the right answer fed, by this model
        assert forced.shape == (len(ANSWER) + 1, stepped.shape[1])
        np.testing.assert_allclose(forced.sum(1), 1, atol=1e-5)
        at.slider(key="c1.step").set_value(0).run()
    low = checkpoint_readings[80].decoded.probs[0].max(-1).values
    high = checkpoint_readings[1200].decoded.probs[0].max(-1).values
    assert low.mean() < high.mean() and low.min() < 0.3                        # unsure, per step
    assert checkpoint_readings[80].output != ANSWER
    link = open_lesson(PAGE, lang, {"c1.ckpt": "80"})                          # a shared link opens on that model
    assert link.select_slider(key="c1.ckpt").value == 80
    np.testing.assert_allclose(trace_array(figure_by_key(link, "c1.probs"), 0, "y"),
                               checkpoint_readings[80].decoded.probs[0].numpy()[link.slider(key="c1.step").value],
                               atol=1e-5)


@pytest.mark.parametrize("value", ["abc", "7", "-40", "1e9", ""])
def test_c1_malformed_checkpoint_url(value, decoding_reference):
    at = open_lesson(PAGE, "en", {"c1.ckpt": value, "c1.step": "10"})
    assert at.select_slider(key="c1.ckpt").value == DEFAULT_CKPT
    np.testing.assert_allclose(trace_array(figure_by_key(at, "c1.probs"), 0, "y"),
                               decoding_reference[1].decoded.probs[0].numpy()[at.slider(key="c1.step").value],
                               atol=1e-5)


def test_c1_damaged_checkpoint_says_so_and_decodes_with_the_shipped_model(monkeypatch, reference):
    from core.models.encdec import DateModelUnavailable
    monkeypatch.setattr("ui.date_model._load_step",
                        lambda device, step: DateModelUnavailable("date_model_step0080.safetensors does not match"))
    at = open_lesson(PAGE, "en", {"c1.ckpt": "80"})
    assert any("date_model_step0080" in w.value and "train_date_model" in w.value for w in at.warning)
    np.testing.assert_allclose(trace_array(figure_by_key(at, "c1.probs"), 0, "y"),
                               reference[1].decoded.probs[0].numpy()[at.slider(key="c1.step").value], atol=1e-5)
    assert any("1,200 of 1,200" in c.value for c in at.caption)               # the caption names the model shown
