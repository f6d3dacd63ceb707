"""C2 in both languages: every control to its minimum and maximum, figure data checked
against an independent run of the course model."""
import math

import numpy as np
import pytest
import torch

import ui.model
from core.calc import configs
from core.calc.params import count_params
from core.models.model import CourseModelUnavailable, load_course_model
from core.parts.trace import Trace
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "c2_llama_block.py"
TEXT = "君不见，黄河之水天上来"


@pytest.fixture(scope="module")
def reference():
    """The same prompt through the course model, outside the app."""
    model, tok = load_course_model("cpu")
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([tok.encode(TEXT)]), trace=trace)
    return model, trace


def _tensor(at):
    return trace_array(figure_by_key(at, "c2.tensor"), 0, "z")


def _counts(fig, i):
    return [int(s.replace(",", "")) for s in fig["data"][i]["customdata"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_block_parts(lang, reference):
    model, ref = reference
    c = model.config
    at = open_lesson(PAGE, lang)
    diagram = figure_by_key(at, "c2.diagram")
    assert list(diagram["data"][0]["customdata"])[:3] == ["resid_pre", "attn_norm", "attn.q"]
    z = _tensor(at)
    assert z.shape == (11, c.d_model)                                       # attn_norm by default
    np.testing.assert_allclose(z, ref["blocks.0.attn_norm"][0].numpy(), atol=1e-5)

    for layer in (0, c.n_layers - 1):
        at.slider(key="c2.layer").set_value(layer).run()
        for head in (0, c.n_heads - 1):
            at.slider(key="c2.head").set_value(head).run()
            for part, want in (("attn.q", (11, c.d_head)), ("attn.k", (11, c.d_head)),
                               ("attn.v", (11, c.d_head)), ("attn.weights", (11, 11)),
                               ("ffn.gate", (11, c.ffn_hidden)), ("resid_post", (11, c.d_model))):
                at.segmented_control(key="c2.part").set_value(part).run()
                assert_ok(at)
                z = _tensor(at)
                assert z.shape == want, (part, z.shape)
                full = ref[f"blocks.{layer}.{part}"][0]
                expected = full[head // 2] if part in ("attn.k", "attn.v") else (
                    full[head] if part.startswith("attn.") else full)        # GQA: 4 query heads, 2 kv heads
                np.testing.assert_allclose(z, expected.numpy(), atol=1e-5)
                if part == "attn.k" and lang == "en":
                    assert any(f"reads key/value head {head // 2}" in cap.value for cap in at.caption)
                if part == "attn.weights":
                    assert np.allclose(z.sum(1), 1, atol=1e-5)
                    assert np.all(z[np.triu_indices(11, 1)] == 0)           # causal: no look ahead

    stream = figure_by_key(at, "c2.stream")
    line = [t for t in stream["data"] if t["type"] == "scatter"][0]
    y = trace_array({"data": [line]}, 0, "y")
    assert len(y) == 2 * c.n_layers + 1
    first = ref["blocks.0.resid_pre"][0].pow(2).mean(-1).sqrt().mean()
    last = ref[f"blocks.{c.n_layers - 1}.resid_post"][0].pow(2).mean(-1).sqrt().mean()
    assert y[0] == pytest.approx(float(first), rel=1e-5) and y[-1] == pytest.approx(float(last), rel=1e-5)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_norms_gate_timing(lang):
    at = open_lesson(PAGE, lang)
    for shift in (-3.0, 3.0):
        at.slider(key="c2.shift").set_value(shift).run()
        assert_ok(at)
        fig = figure_by_key(at, "c2.norms")
        in_mean, ln_mean, ln_rms, rms_mean, rms_rms = (trace_array(fig, i, f) for i, f in
                                                       ((0, "x"), (1, "x"), (1, "y"), (2, "x"), (2, "y")))
        assert np.allclose(in_mean, shift, atol=0.2)
        assert np.allclose(ln_mean, 0, atol=1e-5) and np.allclose(ln_rms, 1, atol=5e-3)   # eps = 1e-5 against a variance near 0.01
        assert np.allclose(rms_rms, 1, atol=5e-3)
        assert np.all(np.abs(rms_mean) > 0.9) and np.all(np.sign(rms_mean) == np.sign(shift))

    act = figure_by_key(at, "c2.act")
    x = trace_array(act, 0, "x")
    relu, gelu, silu = trace_array(act, 0, "y"), trace_array(act, 1, "y"), trace_array(act, 2, "y")
    np.testing.assert_allclose(silu, x / (1 + np.exp(-x)), atol=1e-5)
    np.testing.assert_allclose(gelu, [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x], atol=1e-5)
    assert silu.min() == pytest.approx(-0.2785, abs=1e-3) and relu.min() == 0

    assert (at.slider(key="c2.token").min, at.slider(key="c2.token").max) == (0, 10)   # the text's 11 tokens
    for token in (0, 10):
        at.slider(key="c2.token").set_value(token).run()
        assert_ok(at)
        gate_fig = figure_by_key(at, "c2.gate")
        up, gate, passed = (trace_array(gate_fig, i, "y") for i in range(3))
        np.testing.assert_allclose(passed, gate * up, rtol=1e-5, atol=1e-6)
        assert np.all(np.diff(gate) >= 0)                                  # sorted by the gate
        assert ("君" if token == 0 else "来") in gate_fig["layout"]["title"]["text"]

    for width in (256, 4096):
        at.select_slider(key="c2.twidth").set_value(width).run()
        assert_ok(at)
    at.select_slider(key="c2.twidth").set_value(256).run()
    assert not at.metric or len(at.metric) == 3                            # only the counter before timing
    at.button(key="c2.time").click().run()
    assert_ok(at)
    values = {m.label: m.value for m in at.metric}
    assert values["LayerNorm"].endswith(" ms") and values["RMSNorm"].endswith(" ms")
    ratio = [v for k, v in values.items() if k == "LayerNorm / RMSNorm"][0]
    assert float(ratio.rstrip("×")) > 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_parameter_counter(lang):
    at = open_lesson(PAGE, lang)
    for name in configs.names():
        at.selectbox(key="c2.config").set_value(name).run()
        assert_ok(at)
        fig = figure_by_key(at, "c2.params")
        cfg = configs.get(name)
        assert sum(_counts(fig, 0)) == count_params(cfg)                  # the breakdown sums to the total
        assert at.metric[0].value == f"{count_params(cfg):,}"
        if cfg.is_moe:
            assert len(fig["data"]) == 2 and sum(_counts(fig, 1)) == count_params(cfg, active=True)
        else:
            assert len(fig["data"]) == 1
    at.selectbox(key="c2.config").set_value("mixtral-8x7b").run()
    assert at.metric[0].value == "46,702,792,704" and at.metric[1].value == "12,879,925,248"
    at.selectbox(key="c2.config").set_value("course").run()
    model, _ = load_course_model("cpu")
    n = sum(p.numel() for p in model.parameters())
    assert at.metric[0].value == f"{n:,}"
    assert any(f"{n:,}" in cap.value for cap in at.caption)


def test_c2_bad_text():
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"]:
        at.text_input(key="c2.text").set_value(text).run()
        assert_ok(at)
        z = _tensor(at)
        assert 1 <= z.shape[0] <= 48
        sliders = [s for s in at.slider if s.key == "c2.token"]
        if sliders:                                                     # one token: a caption, no slider
            assert sliders[0].max == z.shape[0] - 1
            sliders[0].set_value(sliders[0].max).run()
            assert_ok(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_gate_slider_follows_the_text(lang):
    """Review C2 #2: the gate's token slider runs 0 … N − 1 and a value past a shorter text is
    clamped to its last token (the figure names that token), never a silent substitute."""
    at = open_lesson(PAGE, lang, {"c2.token": "9"})
    at.text_input(key="c2.text").set_value("床前明月光").run()
    assert_ok(at)
    slider = at.slider(key="c2.token")
    assert (slider.max, slider.value) == (4, 4)
    assert "光" in figure_by_key(at, "c2.gate")["layout"]["title"]["text"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_masked_cells_grey_and_strip_labels(lang):
    """Review C2 #4: the causal mask's upper triangle is drawn grey (a second trace), not as a
    weight of 0; #5: the softmax box says (N, V) and its last row; #6: the zh title keeps
    「1,387,136 个参数」 on one line."""
    at = open_lesson(PAGE, lang, {"c2.part": "attn.weights"})
    fig = figure_by_key(at, "c2.tensor")
    assert len(fig["data"]) == 2
    grey = trace_array(fig, 1, "z")
    assert np.array_equal(np.isfinite(grey), np.triu(np.ones((11, 11), dtype=bool), 1))
    strip = figure_by_key(at, "c2.strip")
    notes = [a["text"] for a in strip["layout"]["annotations"]]
    assert any(t.startswith("(N, 2582)") for t in notes)
    title = strip["layout"]["title"]["text"]
    n = f"{count_params(configs.get('course')):,}"
    assert (f"{n} 个参数<br>" if lang == "zh" else f"{n} parameters<br>") in title


def test_c2_url_params_are_applied():
    at = open_lesson(PAGE, "en", {"c2.part": "attn.weights", "c2.layer": "2", "c2.config": "mixtral-8x7b"})
    assert _tensor(at).shape == (11, 11)
    assert "blocks.2.attn.weights" in figure_by_key(at, "c2.tensor")["layout"]["title"]["text"]
    assert at.metric[0].value == "46,702,792,704"


def test_c2_without_the_model(monkeypatch):
    monkeypatch.setattr(ui.model, "_load", lambda device: CourseModelUnavailable("assets missing (test)"))
    at = open_lesson(PAGE, "en")
    assert at.error and "assets missing (test)" in at.error[0].value
    with pytest.raises(KeyError):
        figure_by_key(at, "c2.tensor")
    fig = figure_by_key(at, "c2.norms")                                    # random vectors instead
    assert np.allclose(trace_array(fig, 2, "y"), 1, atol=1e-3)
    assert sum(_counts(figure_by_key(at, "c2.params"), 0)) == 6_738_415_616
    figure_by_key(at, "c2.diagram")
    figure_by_key(at, "c2.act")


@pytest.mark.parametrize("saving,word", [(0.25, "25 % less time"), (-0.03, "3 % slower, not faster")])
def test_c2_timing_says_slower_when_it_was(saving, word):
    """Issue 16: a live timing that comes out negative says so (never "-3 % less time")."""
    at = open_lesson(PAGE, "en")
    at.session_state["c2.timing"] = {"width": 1024, "dev": "cpu", "layer_ms": 1.0, "rms_ms": 1.0 - saving,
                                     "ratio": 1 / (1 - saving), "saving": saving}
    at.run()
    assert_ok(at)
    text = next(c.value for c in at.caption if "alternating calls" in c.value)
    assert word in text and "-3" not in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_whole_model_strip_frames_the_chosen_block(lang):
    """Issue 16: embedding -> blocks -> final norm -> output, the block on screen framed in red."""
    at = open_lesson(PAGE, lang)
    course = configs.get("course")
    for layer in (0, course.n_layers - 1):
        at.slider(key="c2.layer").set_value(layer).run()
        assert_ok(at)
        fig = figure_by_key(at, "c2.strip")
        boxes = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
        assert len(boxes) == course.n_layers + 5                    # ids, embed, L blocks, norm, output, softmax
        red = [i for i, s in enumerate(boxes) if s["line"]["color"] == "#d62728"]
        assert red == [2 + layer]
    assert f"{count_params(course):,}" in fig["layout"]["title"]["text"]


# --- the walkthrough on SmolLM2-135M-Instruct (issue 24 §4) ------------------------------------
REAL_TEXT = "The quick brown fox jumps over the lazy dog."
REAL = {"c2.lm": "smollm2"}


@pytest.fixture(scope="module")
def real_reference():
    """SmolLM2 on the lesson's default text, fully traced, outside the app."""
    from tests.real_util import real
    model, tok = real()
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([tok.encode(REAL_TEXT)]), trace=trace)
    return model, tok, trace


def _close(shown, expected):
    """Equal to float32 rounding: 30 blocks of float32 sums, run once in the app and once here
    (a different thread count may order the sums differently), differ by ~1e-6 of the stream's size."""
    expected = np.asarray(expected)
    np.testing.assert_allclose(shown, expected, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(expected).max())))


def test_c2_smollm2_parameter_count_is_counted_once(real_reference):
    """134,515,008: the unique tensors of the loaded model (the tied embedding/output matrix
    once), the formula of core/calc for the registry config, and the published number."""
    model, _, _ = real_reference
    unique = {p.data_ptr(): p for p in model.state_dict(keep_vars=True).values()}
    assert model.output.weight is model.embed.weight
    assert sum(p.numel() for p in unique.values()) == 134_515_008
    assert count_params(configs.get(configs.SMOLLM2)) == 134_515_008
    at = open_lesson(PAGE, "en", REAL)
    check = next(c.value for c in at.caption if "counted from the loaded model" in c.value)
    assert check.count("134,515,008") == 2 and "162,826,560" in check          # + V x D if counted twice
    at.selectbox(key="c2.config").set_value(configs.SMOLLM2).run()
    assert_ok(at)
    assert at.metric[0].value == "134,515,008"
    assert any(c.value.count("134,515,008") == 2 and "tied" in c.value for c in at.caption)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_smollm2_block_parts(lang, real_reference):
    """Every part at block 0 and 29, head 0 and 8, equals the model's own trace; RMSNorm and the
    SwiGLU gate recomputed from the figure's own inputs with torch's modules match too."""
    model, tok, ref = real_reference
    c = model.config
    n = len(tok.encode(REAL_TEXT))
    at = open_lesson(PAGE, lang, REAL)
    assert (at.slider(key="c2.layer").max, at.slider(key="c2.head").max) == (29, 8)
    _close(_tensor(at), ref["blocks.0.attn_norm"][0].numpy())
    for layer in (0, c.n_layers - 1):
        at.slider(key="c2.layer").set_value(layer).run()
        block = model.blocks[layer]
        shown = {}
        for part in ("resid_pre", "attn_norm", "resid_mid", "ffn_norm", "ffn.gate", "ffn.up", "resid_post"):
            at.segmented_control(key="c2.part").set_value(part).run()
            assert_ok(at)
            shown[part] = torch.from_numpy(_tensor(at).copy())
            _close(shown[part], ref[f"blocks.{layer}.{part}"][0].numpy())
        for norm, before, after in ((block.attn_norm, "resid_pre", "attn_norm"),
                                    (block.ffn_norm, "resid_mid", "ffn_norm")):
            reference = torch.nn.RMSNorm(c.d_model, eps=c.norm_eps)
            reference.weight.data.copy_(norm.weight)
            with torch.no_grad():
                _close(reference(shown[before]), shown[after])
        with torch.no_grad():
            gate = torch.nn.functional.silu(torch.nn.functional.linear(shown["ffn_norm"], block.ffn.w1.weight))
        _close(gate, shown["ffn.gate"])
        for head in (0, c.n_heads - 1):
            at.slider(key="c2.head").set_value(head).run()
            for part, want in (("attn.q", (n, 64)), ("attn.k", (n, 64)), ("attn.v", (n, 64)),
                               ("attn.weights", (n, n))):
                at.segmented_control(key="c2.part").set_value(part).run()
                assert_ok(at)
                z = _tensor(at)
                assert z.shape == want
                full = ref[f"blocks.{layer}.{part}"][0]
                expected = full[head // 3] if part in ("attn.k", "attn.v") else full[head]   # 9 query, 3 kv heads
                _close(z, expected.numpy())
                if part == "attn.weights":
                    assert np.allclose(z.sum(1), 1, atol=1e-5)
                if part == "attn.k" and lang == "en":
                    assert any(f"reads key/value head {head // 3}" in cap.value for cap in at.caption)
        strip = figure_by_key(at, "c2.strip")
        boxes = [s for s in strip["layout"]["shapes"] if s["type"] == "rect"]
        red = [i for i, s in enumerate(boxes) if s["line"]["color"] == "#d62728"]
        assert len(boxes) == 8 and red == [2 if layer == 0 else 4]     # ids embed 0 [1–28] 29 norm out softmax
    assert "134,515,008" in strip["layout"]["title"]["text"]

    y = trace_array({"data": [t for t in figure_by_key(at, "c2.stream")["data"] if t["type"] == "scatter"]}, 0, "y")
    assert len(y) == 61
    assert y[-1] == pytest.approx(float(ref["blocks.29.resid_post"][0].pow(2).mean(-1).sqrt().mean()), rel=1e-5)

    assert at.slider(key="c2.token").max == n - 1
    for token in (0, n - 1):
        at.slider(key="c2.token").set_value(token).run()
        gate_fig = figure_by_key(at, "c2.gate")
        up, gate, passed = (trace_array(gate_fig, i, "y") for i in range(3))
        assert len(up) == 1536
        _close(np.sort(gate), np.sort(ref["blocks.29.ffn.gate"][0, token].numpy()))
        np.testing.assert_allclose(passed, gate * up, rtol=1e-5, atol=1e-6)
    for shift in (-3.0, 3.0):
        at.slider(key="c2.shift").set_value(shift).run()
        fig = figure_by_key(at, "c2.norms")
        _close(trace_array(fig, 0, "x"), ref["blocks.29.resid_pre"][0].mean(-1).numpy() + shift)
        assert np.allclose(trace_array(fig, 2, "y"), 1, atol=5e-3)


def test_c2_smollm2_bad_text():
    at = open_lesson(PAGE, "en", REAL)
    for text in ["", "🙂" * 300, "<script>alert(1)</script>\x00\x1b[31m", "黄河 river ﷽ <|im_end|>"]:
        at.text_input(key="c2.rtext").set_value(text).run()
        assert_ok(at)
        z = _tensor(at)
        assert 1 <= z.shape[0] <= 256
        if not text.strip():
            assert at.info
        if text.startswith("🙂"):                                         # 300 emoji: more than 256 tokens
            assert any("256" in w.value for w in at.warning)


def test_c2_without_the_real_model(monkeypatch):
    """Without the package the switch stays, a note gives the install command, and the page
    runs on the course model."""
    from core.models import gguf_llama
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "zh", REAL)
    assert any(gguf_llama.INSTALL in i.value for i in at.info)
    assert _tensor(at).shape == (11, 128)
    assert at.slider(key="c2.layer").max == 3


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_switch_to_smollm2_and_back(lang):
    """The switch itself: the course model by default, SmolLM2 on a click (its 30 blocks, its
    text box), the course model again, each with its own text."""
    at = open_lesson(PAGE, lang)
    assert at.segmented_control(key="c2.lm").value == "course" and at.slider(key="c2.layer").max == 3
    at.segmented_control(key="c2.lm").set_value("smollm2").run()
    assert_ok(at)
    assert at.slider(key="c2.layer").max == 29 and at.text_input(key="c2.rtext").value == REAL_TEXT
    at.slider(key="c2.layer").set_value(29).run()
    assert "blocks.29.attn_norm" in figure_by_key(at, "c2.tensor")["layout"]["title"]["text"]
    at.segmented_control(key="c2.lm").set_value("course").run()
    assert_ok(at)
    assert at.slider(key="c2.layer").value == 3                      # 29 clamped to the course model's last block
    assert _tensor(at).shape == (11, 128)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c2_prose_follows_the_chosen_model(lang):
    """Issue 38: the course model's shapes (D = 128, H = 4) are named only on the course model;
    on SmolLM2 its own, with what a Chinese character costs it counted by its tokenizer; a text
    with a byte SmolLM2 has no token for runs and says which bytes were dropped."""
    import i18n
    from tests.real_util import real
    _, tok = real()
    course_text = i18n.t(lang, "c2.course_text").strip()
    at = open_lesson(PAGE, lang)
    assert any(course_text in m.value for m in at.markdown)
    at.segmented_control(key="c2.lm").set_value("smollm2").run()
    assert_ok(at)
    prose = " ".join(m.value for m in at.markdown)
    assert course_text not in prose and "D = 128" not in prose and "D = 576" in prose
    n = len(tok.encode(TEXT))
    assert i18n.t(lang, "c2.real_cjk", line=TEXT, n=n, chars=len(TEXT), per=n / len(TEXT)) in prose
    assert f"{n / len(TEXT):.2f}" == "2.00"                          # A1 shows the same on this line
    assert not any("U+" in w.value for w in at.warning)
    at.text_input(key="c2.rtext").set_value("hello \U00050000 world").run()
    assert_ok(at)
    assert any("U+50000" in w.value and "0xF1" in w.value for w in at.warning)
    assert _tensor(at).shape[0] == len(tok.encode("hello \U00050000 world")) == 6
