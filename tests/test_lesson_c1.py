"""C1 in both languages: every control to its minimum and maximum; the figures hold the model's
own tensors (checked against a run outside the app), LayerNorm's per-token statistics,
rows of attention that sum to 1 and the softmax of each decoding step."""
import numpy as np
import pytest

from core.models.dates import read_date
from core.models.encdec import load_date_model
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "c1_encoder_decoder.py"
TEXT = "30 Nov 2026"
PARTS = ["encoder.self_attn", "encoder.self_attn_norm", "encoder.ffn", "encoder.ffn_norm", "decoder.self_attn",
         "decoder.self_attn_norm", "decoder.cross_attn", "decoder.cross_attn_norm", "decoder.ffn", "decoder.ffn_norm"]


@pytest.fixture(scope="module")
def reference():
    model, src_tok, tgt_tok = load_date_model("cpu")
    return model, read_date(model, TEXT, src_tok, tgt_tok)


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
    assert "decoder.layers.1.cross_attn" in diagram["data"][-1]["customdata"]
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
    for name in ["decoder.layers.0.cross_attn_norm"] + NORMS:                   # the default, then min, max
        if name != "decoder.layers.0.cross_attn_norm":
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
    for name in FFNS:
        at.selectbox(key="c1.ffn").set_value(name).run()
        assert_ok(at)
        hidden = trace_array(figure_by_key(at, "c1.ffn_fig"), 0, "z")
        np.testing.assert_allclose(hidden, r.trace[f"{name}.hidden"][0].numpy(), atol=1e-5)
        assert hidden.shape[1] == model.config.ffn_hidden and (hidden >= 0).all()    # after the ReLU
        off = float((hidden == 0).mean())
        assert f"{100 * off:.0f} %" in next(c.value for c in at.caption if "F = " in c.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_decoding_steps(lang, reference):
    _, r = reference
    at = open_lesson(PAGE, lang)
    n = len(r.target)
    forced = trace_array(figure_by_key(at, "c1.forcing"), 0, "z")
    assert forced.shape == (n, 15)                                    # 4 specials + "0-9" + "-"
    np.testing.assert_allclose(forced.sum(1), 1, atol=1e-5)
    for step in (0, n - 1):
        at.slider(key="c1.step").set_value(step).run()
        assert_ok(at)
        p = trace_array(figure_by_key(at, "c1.probs"), 0, "y")
        np.testing.assert_allclose(p, r.decoded.probs[0, step].numpy(), atol=1e-5)
        np.testing.assert_allclose(p, forced[step], atol=1e-5)                # teacher forcing = steps
        frame = figure_by_key(at, "c1.forcing")["layout"]["shapes"][0]
        assert frame["y0"] == step - 0.5


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


def test_c1_malformed_url_params(reference):
    at = open_lesson(PAGE, "en", {"c1.layer": "9", "c1.part": "decoder.nothing", "c1.step": "-3", "c1.date": ""})
    _check(at, reference, "decoder", 0, "cross_attn")


def test_c1_code_panels_fit_without_scrolling():
    """Every function C1 shows runs the full width under its figure: ≤ 64 characters a line
    fit at 1024 px."""
    import inspect

    from core.lab.date_lab import norm_stats, relu_off, standardise
    from core.models.encdec import DecoderLayer, EncoderLayer, FeedForward, cross_attend, greedy
    for fn in (norm_stats, relu_off, standardise, DecoderLayer.forward, EncoderLayer.forward, FeedForward,
               cross_attend, greedy):
        assert max(len(line) for line in inspect.getsource(fn).splitlines()) <= 64, fn.__qualname__
