"""D2 in both languages: the step-through on the real course model, the cost charts, the calculator."""
import numpy as np
import pytest
import torch

from core.calc import configs, roofline
from core.calc.flops import decode_flops
from core.calc.kv_cache import DTYPE_BYTES, kv_cache_bytes
from core.lab.cache_steps import cache_history, watch_cache
from core.models.generate import Generation
from core.models.model import CourseModelUnavailable, load_course_model
from core.parts.trace import Trace
from tests.apptest_util import assert_ok, chart_keys, figure_by_key, open_lesson, set_live, trace_array

PAGE = "d2_kv_cache.py"
PROMPT = "君不见，黄河之水"
NEW = 16


def _model_or_skip():
    try:
        return load_course_model()
    except CourseModelUnavailable:
        pytest.skip("course model not built")


def _panels(at):
    fig = figure_by_key(at, "d2.fig")
    return fig, [trace_array(fig, i, "z") for i in range(6)]      # Q past, Q new, K, V, W past, W new


def test_course_model_cache_rows_equal_full_causal_attention():
    model, tok = _model_or_skip()
    c = model.config
    steps = watch_cache(Generation(model, tok, PROMPT, NEW))
    p = len(tok.encode(PROMPT))
    assert [s.k.shape[2] for s in steps] == [p + t for t in range(NEW)]        # t + prompt rows, every layer
    assert all(s.k.shape[0] == c.n_layers for s in steps)
    fed = tok.encode(PROMPT) + [s.chosen for s in steps[:-1]]
    trace = Trace()
    with torch.no_grad():
        logits = model(torch.tensor([fed]), trace=trace)
    assert logits[0, -1].argmax().item() == steps[-1].chosen                   # same continuation
    for layer in range(c.n_layers):
        full = trace[f"blocks.{layer}.attn.weights"][0]                        # (H, S, S)
        for head in range(c.n_heads):
            h = cache_history(steps, layer, head, NEW - 1)
            torch.testing.assert_close(h["weights"], full[head], atol=1e-5, rtol=0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_step_through(lang):
    model, _ = _model_or_skip()
    c = model.config
    at = open_lesson(PAGE, lang)
    fig, (q_past, q_new, k, v, w_past, w_new) = _panels(at)
    p = len(PROMPT)
    assert k.shape == v.shape == (p, c.d_head) and q_new.shape == (p, c.d_head)
    assert q_past.size == 0 and not np.isnan(q_new).any()                      # step 0: the whole prompt is new
    assert list(trace_array(fig, 1, "y")) == list(range(p))
    assert np.allclose(np.nansum(w_new, 1), 1, atol=1e-5)
    s = p + NEW - 1                       # every step is drawn in the last step's frame, the cache filling it
    y = fig["layout"]["yaxis"]
    assert y["range"] == [s - 0.5, -0.5]
    assert y["tickvals"] == list(range(s)) and len(y["ticktext"]) == s         # the same ticks at every step,
    assert y["ticktext"][p:] == [str(i) for i in range(p, s)]                 # rows to come: no token yet
    height = fig["layout"]["height"]

    for step in (NEW - 1, 0, NEW - 1):
        set_live(at, "d2.step", step)
        assert_ok(at)
    fig, (q_past, q_new, k, v, w_past, w_new) = _panels(at)
    assert k.shape == (s, c.d_head) and w_new.shape == (1, s)                 # the cache grew a row per step
    assert fig["layout"]["height"] == height and all(" " in t for t in fig["layout"]["yaxis"]["ticktext"])   # a token a row
    assert q_new.shape == (1, c.d_head) and trace_array(fig, 1, "y")[0] == s - 1   # one new query row, the last
    assert q_past.shape == (s - 1, c.d_head) and not np.isnan(q_past).any()   # earlier ones greyed
    assert list(trace_array(fig, 4, "y")) == list(range(s - 1))
    assert w_new[-1].sum() == pytest.approx(1, abs=1e-5)
    assert np.allclose(np.nansum(w_past, 1), 1, atol=1e-5)
    assert fig["layout"]["shapes"][0]["y0"] == pytest.approx(s - 1.5)         # the red frame on the last row

    for layer, head in ((0, 0), (c.n_layers - 1, c.n_heads - 1)):
        at.slider(key="d2.layer").set_value(layer).run()
        at.slider(key="d2.head").set_value(head).run()
        assert_ok(at)
        fig, panels = _panels(at)
        g = head // (c.n_heads // c.n_kv_heads)
        assert f" {g}" in fig["layout"]["annotations"][1]["text"]

    at.button(key="d2.reset_btn").click().run()
    assert at.session_state["d2.step"] == 0
    at.button(key="d2.next_btn").click().run()
    assert at.session_state["d2.step"] == 1
    assert _panels(at)[1][2].shape[0] == p + 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_cost_and_memory(lang):
    at = open_lesson(PAGE, lang)
    flops = figure_by_key(at, "d2.flops")
    course = configs.get("course")
    x = trace_array(flops, 0, "x")
    assert trace_array(flops, 0, "y")[-1] == pytest.approx(decode_flops(course, int(x[-1])), rel=1e-6)
    assert trace_array(flops, 1, "y")[-1] == pytest.approx(decode_flops(course, int(x[-1]), cache=False), rel=1e-6)

    def check(name, dtype, batch, context):
        fig = figure_by_key(at, "d2.memory")
        kv = trace_array(fig, 0, "y")
        assert trace_array(fig, 0, "x")[-1] == context
        expected = kv_cache_bytes(configs.get(name), context, batch, DTYPE_BYTES[dtype]) / 2**30
        assert kv[-1] == pytest.approx(expected, rel=1e-6) and kv[0] == 0
        lines = trace_array(fig, 2, "y")                                   # GPU sizes, NaN between them
        # One unit on the axis: an 80 GB card is drawn at 80e9 / 2^30 = 74.5 GiB, not at 80.
        assert list(lines[0::3]) == pytest.approx([gb * 1e9 / 2**30 for gb, _ in roofline.memory_sizes()])
        assert np.isnan(lines[2::3]).all()
        beyond = any("trained on contexts of up to" in w.value or "训练时的上下文" in w.value for w in at.warning)
        assert beyond == (context > configs.get(name).max_seq_len)

    check("llama-2-7b", "fp16", 1, 4096)
    assert trace_array(figure_by_key(at, "d2.memory"), 0, "y")[-1] == pytest.approx(2.0)   # 2 GiB
    for name in (configs.names()[0], configs.names()[-1], "llama-3-8b"):
        at.selectbox(key="d2.model").set_value(name).run()
        assert_ok(at)
        check(name, "fp16", 1, 4096)
    assert trace_array(figure_by_key(at, "d2.memory"), 0, "y")[-1] == pytest.approx(0.5)   # 512 MiB
    for dtype in ("fp32", "int4", "int8"):
        at.segmented_control(key="d2.dtype").set_value(dtype).run()
        assert_ok(at)
        check("llama-3-8b", dtype, 1, 4096)
    for batch in (1, 256):
        at.select_slider(key="d2.batch").set_value(batch).run()
        assert_ok(at)
        check("llama-3-8b", "int8", batch, 4096)
    for context in (1024, 131072):
        at.select_slider(key="d2.context").set_value(context).run()
        assert_ok(at)
        check("llama-3-8b", "int8", 256, context)


def test_d2_live_measurement_on_demand():
    _model_or_skip()
    at = open_lesson(PAGE, "en")
    assert not any("d2.timing" in k for k in chart_keys(at))   # nothing runs by itself
    at.button(key="d2.measure_btn").click().run()
    assert_ok(at)
    fig = figure_by_key(at, "d2.timing")
    assert list(trace_array(fig, 0, "x")) == [16, 32, 64, 96, 128, 160, 192, 224, 256]
    cached, full = trace_array(fig, 0, "y"), trace_array(fig, 1, "y")
    assert (cached > 0).all() and (full > 0).all()
    assert full[-1] > cached[-1]                         # at 256 tokens recomputing is slower
    at.slider(key="d2.layer").set_value(1).run()         # the measurement stays for this session
    assert figure_by_key(at, "d2.timing")


def test_d2_bad_text():
    _model_or_skip()
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"]:
        at.text_input(key="d2.prompt").set_value(text).run()
        assert_ok(at)
        set_live(at, "d2.step", NEW - 1)
        assert_ok(at)
        k = _panels(at)[1][2]
        assert 1 <= k.shape[0] <= 48 + NEW


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_common_mistakes_name_the_right_figures(lang):
    """Issue 16: the 512 MB myth (512 KiB is one token; 4,096 tokens are 2 GiB, the figure's
    default end point) and 'only earlier keys' (the new query reads its own key too)."""
    at = open_lesson(PAGE, lang)
    boxes = [w.value for w in at.warning]
    assert any("512 KiB" in b and "2 GiB" in b for b in boxes)
    assert any("j ≤ i" in b for b in boxes)
    assert trace_array(figure_by_key(at, "d2.memory"), 0, "y")[-1] == pytest.approx(2.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_openings_include_the_lecture_notes_example(lang):
    """Review D2 #6: 「将进酒：人生得」 → 「意」 is an opening; with the line before it the model writes 意."""
    _model_or_skip()
    at = open_lesson(PAGE, lang)
    at.pills(key="d2.example").set_value("将进酒：人生得").run()
    assert_ok(at)
    assert at.text_input(key="d2.prompt").value == "将进酒：人生得"
    assert _panels(at)[1][2].shape[0] == len("将进酒：人生得")          # the prompt's rows, no <bos>
    long = "君不见，高堂明镜悲白发，朝如青丝暮成雪。人生得"
    at.pills(key="d2.example").set_value(long).run()
    assert_ok(at)
    sequence = next(m.value for m in at.markdown if "→" in m.value and ":red[" in m.value)
    assert sequence.rstrip("*").endswith("意")                          # the next token the cache step draws


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_prompt_notices(lang):
    """Review D2 #5: an empty prompt says it decodes from <bos> (not "uses its example text");
    unknown characters get the same notice as in D1."""
    _model_or_skip()
    at = open_lesson(PAGE, lang)
    at.text_input(key="d2.prompt").set_value("").run()
    assert any("<bos>" in i.value for i in at.info)
    assert not any("example text" in i.value or "示例" in i.value for i in at.info)
    assert _panels(at)[1][2].shape[0] == 1                              # <bos> alone
    at.text_input(key="d2.prompt").set_value("黄河 river 🙂").run()
    assert_ok(at)
    assert any("<unk>" in w.value for w in at.warning)


def test_d2_step_brings_the_figure_into_view():
    """Review D2 #1: after Step the figure is scrolled into view (ui.frame.bring_into_view)."""
    _model_or_skip()
    at = open_lesson(PAGE, "en")
    scripts = lambda: [h.proto.body for h in at.get("html") if "st-key-d2-fig" in h.proto.body]  # noqa: E731
    assert not scripts()
    at.button(key="d2.next_btn").click().run()
    assert scripts()


def test_d2_gpu_labels_never_overlap():
    """Review D2 #4: Llama-3-8B, batch 256, 131,072 tokens: the GPU lines bunch near the bottom,
    and their labels are moved aside or left out, never drawn on top of each other."""
    from viz.kv import CHAR_PX, LABEL_PX, label_places
    at = open_lesson(PAGE, "en", {"d2.model": "llama-3-8b", "d2.batch": "256", "d2.context": "131072"})
    fig = figure_by_key(at, "d2.memory")
    notes = fig["layout"]["annotations"]
    y_max = fig["layout"]["yaxis"]["range"][1]
    assert notes and len(notes) <= len(roofline.memory_sizes())
    px = (fig["layout"]["height"] - 130) / y_max
    boxes = []
    for n in notes:
        w = CHAR_PX * len(n["text"])
        x0 = 440 - w if n["xanchor"] == "right" else n["x"] * 440
        boxes.append((x0, x0 + w, n["y"] * px, n["y"] * px + LABEL_PX))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2], (a, b)
    # Every line can still be named: on hover.
    assert set(fig["data"][2]["text"]) == {name for name, _ in [(f"{gb:g} GB = {gb * roofline.GIB_PER_GB:.1f} GiB · {t}", 0) for gb, t in roofline.memory_sizes()]}
    # On a small axis every label fits, at the left.
    assert [x for _, _, x in label_places([("a", 10.0), ("b", 5.0)], 12, 420)] == [0.0, 0.0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_mistake_ties_512_to_eight_kv_heads(lang):
    """Review D2 #7: 512 MiB at 4,096 tokens is right for 8 KV heads (Llama-3-8B)."""
    at = open_lesson(PAGE, lang)
    assert any("512 MiB" in w.value and "Llama-3-8B" in w.value for w in at.warning)
    assert kv_cache_bytes(configs.get("llama-3-8b"), 4096) == 512 * 2**20


# --- SmolLM2 (issue 24 §4): the switch, the live measurement, the cache weighed --------------

def test_smollm2_cache_per_token_counted_equals_weighed():
    """2 · 30 · 3 · 64 · b: 23,040 bytes a token in fp16, 46,080 in fp32, and a real KVCache after
    N tokens holds exactly N times that (k and v tensors of every layer)."""
    from core.lab.d_real_kv import cache_nbytes, measured_cache
    from tests.real_util import real
    cfg = configs.get(configs.SMOLLM2)
    assert kv_cache_bytes(cfg, 1, 1, DTYPE_BYTES["fp16"]) == 2 * 30 * 3 * 64 * 2 == 23_040
    assert kv_cache_bytes(cfg, 1, 1, DTYPE_BYTES["fp32"]) == 46_080
    model, tok = real()
    ids = tok.encode("The key and value of a past token never change.")
    weighed = measured_cache(model, ids)
    n = len(ids)
    assert weighed["tokens"] == n and weighed["bytes_per_value"] == 4
    assert weighed["bytes"] == n * kv_cache_bytes(cfg, 1, 1, 4) == n * 46_080
    assert weighed["bytes_fp16"] / n == kv_cache_bytes(cfg, 1, 1, 2) == 23_040
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.tensor([ids[:7]]), cache=cache)
    assert cache_nbytes(cache) == sum(layer.k.nbytes + layer.v.nbytes for layer in cache.layers) == 7 * 46_080


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_on_smollm2(lang):
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, lang, {"d2.lm": "smollm2"})
    flops = figure_by_key(at, "d2.flops")
    cfg = configs.get(configs.SMOLLM2)
    x = trace_array(flops, 0, "x")
    assert x[-1] == 256
    assert trace_array(flops, 0, "y")[-1] == pytest.approx(decode_flops(cfg, 256), rel=1e-6)
    assert trace_array(flops, 1, "y")[-1] == pytest.approx(decode_flops(cfg, 256, cache=False), rel=1e-6)
    assert "SmolLM2" in flops["layout"]["title"]["text"]
    text = " ".join(m.value for m in at.markdown)
    assert "23,040" in text and "46,080" in text                      # counted, and weighed per token
    assert any("23{,}040" in la.value for la in at.latex)
    at.segmented_control(key="d2.lm").set_value("course").run()      # and back: the course model's counts
    assert_ok(at)
    x = trace_array(figure_by_key(at, "d2.flops"), 0, "x")
    assert trace_array(figure_by_key(at, "d2.flops"), 0, "y")[-1] == pytest.approx(
        decode_flops(configs.get("course"), int(x[-1])), rel=1e-6)
    assert "23,040" not in " ".join(m.value for m in at.markdown)


def test_d2_smollm2_measurement_is_shared_by_every_session():
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, "en", {"d2.lm": "smollm2"})
    at.button(key="d2.measure_btn").click().run(timeout=300)
    assert_ok(at)
    fig = figure_by_key(at, "d2.timing")
    assert list(trace_array(fig, 0, "x")) == [16, 64, 128, 256]
    cached, full = trace_array(fig, 0, "y"), trace_array(fig, 1, "y")
    assert (cached > 0).all() and (full > 0).all() and full[-1] > cached[-1]
    assert "SmolLM2" in fig["layout"]["title"]["text"]
    other = open_lesson(PAGE, "zh", {"d2.lm": "smollm2"})             # another student, no press
    assert list(trace_array(figure_by_key(other, "d2.timing"), 0, "y")) == list(cached)


def test_d2_without_the_real_model(monkeypatch):
    """No package: the switch stays, a note says how to install it, the course model runs."""
    import core.models.gguf_llama
    import ui.model
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(core.models.gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "en", {"d2.lm": "smollm2"})
    assert any("requirements-model.txt" in i.value for i in at.info)
    x = trace_array(figure_by_key(at, "d2.flops"), 0, "x")
    assert trace_array(figure_by_key(at, "d2.flops"), 0, "y")[-1] == pytest.approx(
        decode_flops(configs.get("course"), int(x[-1])), rel=1e-6)
    assert "23,040" not in " ".join(m.value for m in at.markdown)


def test_d2_flops_lines_have_a_readable_value():
    """Review D2 #1: SmolLM2's cached line (~0.27-0.29 B FLOPs a step) lay under the lowest
    labelled tick (1B). The log axis now starts at the decade under the smallest value (100M)
    and each line's last value is written at its end."""
    from viz.kv import cost_lines, si
    cfg = configs.get(configs.SMOLLM2)
    x = list(range(1, 257))
    cached = [decode_flops(cfg, n) for n in x]
    full = [decode_flops(cfg, n, cache=False) for n in x]
    fig = cost_lines(x, {"cached": cached, "recomputed": full}, title="t", x_title="x", y_title="y", log_y=True)
    axis = fig["layout"]["yaxis"]
    assert axis["type"] == "log" and axis["dtick"] == 1
    assert axis["range"][0] == 8 <= np.log10(min(cached)) < 9               # a "100M" tick under the line
    assert axis["range"][1] > np.log10(max(full))                           # the top line inside too
    labels = fig["layout"]["annotations"]
    assert [a["text"] for a in labels] == ["287M", "71.1B"] == [si(cached[-1]), si(full[-1])]
    assert [a["y"] for a in labels] == pytest.approx([np.log10(cached[-1]), np.log10(full[-1])])
    assert si(2_635_264) == "2.64M" and si(950) == "950" and si(1.5e12) == "1.5T"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d2_flops_figure_labels_its_lines(lang):
    at = open_lesson(PAGE, lang)
    fig = figure_by_key(at, "d2.flops")
    cached, full = trace_array(fig, 0, "y"), trace_array(fig, 1, "y")
    assert fig["layout"]["yaxis"]["range"][0] <= np.log10(cached.min())
    assert [a["y"] for a in fig["layout"]["annotations"]] == pytest.approx([np.log10(cached[-1]), np.log10(full[-1])])


def _calculator_model(at) -> str:
    return at.selectbox(key="d2.model").value


def test_d2_calculator_follows_the_lessons_model():
    """Review D2 #2: on SmolLM2 the calculator opened on llama-2-7b. It opens on smollm2-135m,
    follows a switch of the lesson's model, and keeps a model the URL or the student chose."""
    from tests.real_util import need_package
    need_package()
    at = open_lesson(PAGE, "en", {"d2.lm": "smollm2"})
    assert _calculator_model(at) == "smollm2-135m"
    cfg = configs.get("smollm2-135m")
    kv = trace_array(figure_by_key(at, "d2.memory"), 0, "y")
    assert kv[-1] == pytest.approx(kv_cache_bytes(cfg, 4096, 1, 2) / 2**30, rel=1e-6)
    assert "d2.model" not in at.query_params                                  # the default: not written
    course = open_lesson(PAGE, "en")
    assert _calculator_model(course) == "llama-2-7b"
    course.segmented_control(key="d2.lm").set_value("smollm2").run()           # switched: it follows
    assert_ok(course)
    assert _calculator_model(course) == "smollm2-135m"
    course.segmented_control(key="d2.lm").set_value("course").run()            # and back
    assert _calculator_model(course) == "llama-2-7b"
    course.selectbox(key="d2.model").set_value("mistral-7b").run()             # the student's choice stays
    course.segmented_control(key="d2.lm").set_value("smollm2").run()
    assert _calculator_model(course) == "mistral-7b"
    linked = open_lesson(PAGE, "en", {"d2.lm": "smollm2", "d2.model": "llama-2-13b"})   # the URL wins
    assert _calculator_model(linked) == "llama-2-13b"
