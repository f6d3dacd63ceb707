"""D3 in both languages: every control to its extremes, the points on the roofline checked."""
import numpy as np
import pytest

from core.calc import configs, roofline
from core.calc.flops import prefill_and_decode
from tests.apptest_util import assert_ok, chart_keys, figure_by_key, open_lesson, set_live, trace_array

PAGE = "d3_memory_wall.py"


def _x(fig, i):
    return float(trace_array(fig, i, "x")[0])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    fig = figure_by_key(at, "d3.roofline")
    a100 = roofline.get("a100-80gb")
    assert trace_array(fig, 0, "y")[1] == pytest.approx(a100.peak_tflops)          # the flat roof
    assert trace_array(fig, 0, "x")[1] == pytest.approx(a100.ridge, rel=1e-6)      # the ridge
    prefill, decode = _x(fig, 1), _x(fig, 2)
    assert decode == pytest.approx(1.0, rel=1e-6)           # LLaMA-2-7B, fp16, batch 1: 1 FLOP per byte
    assert decode < a100.ridge < prefill
    hier = figure_by_key(at, "d3.hierarchy")
    assert np.allclose(trace_array(hier, 0, "x"), [lv["bytes"] for lv in roofline.hierarchy(a100)], rtol=1e-6)

    set_live(at, "d3.batch", 512)
    assert_ok(at)
    big = _x(figure_by_key(at, "d3.roofline"), 2)
    expected = prefill_and_decode(configs.get("llama-2-7b"), 4096, 512)["decode"]["intensity"]
    assert big == pytest.approx(expected, rel=1e-5) and big > 1.0
    set_live(at, "d3.batch", 1)

    for context in (128, 131072):
        at.select_slider(key="d3.context").set_value(context).run()
        assert_ok(at)
        pd = prefill_and_decode(configs.get("llama-2-7b"), context)
        fig = figure_by_key(at, "d3.roofline")
        assert _x(fig, 1) == pytest.approx(pd["prefill"]["intensity"], rel=1e-5)
    at.select_slider(key="d3.context").set_value(4096).run()

    for dtype, factor in (("fp32", 0.5), ("int4", 4.0), ("fp16", 1.0)):
        at.segmented_control(key="d3.dtype").set_value(dtype).run()
        assert_ok(at)
        assert _x(figure_by_key(at, "d3.roofline"), 2) == pytest.approx(factor, rel=1e-6)

    for name in roofline.names():
        at.selectbox(key="d3.gpu").set_value(name).run()
        assert_ok(at)
        fig = figure_by_key(at, "d3.roofline")
        assert trace_array(fig, 0, "y")[1] == pytest.approx(roofline.get(name).peak_tflops)

    for name in (configs.names()[0], configs.names()[-1], "llama-2-70b"):
        at.selectbox(key="d3.model").set_value(name).run()
        assert_ok(at)
    moves = figure_by_key(at, "d3.moves")                   # LLaMA-2-70B: mha, gqa, mqa, int8, int4
    xs = [_x(moves, i) for i in range(1, 6)]
    assert xs[0] < xs[1] < xs[2] and xs[1] < xs[3] < xs[4]
    assert len(moves["layout"]["annotations"]) == 1 + 4      # the ridge label, then 4 arrows


def test_d3_mha_model_has_no_gqa_point():
    at = open_lesson(PAGE, "en", {"d3.model": "gpt2-small"})
    moves = figure_by_key(at, "d3.moves")
    assert len(moves["data"]) == 1 + 4                       # roof + mha, mqa, int8, int4


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_operators_weights_move_with_the_batch_attention_does_not(lang):
    from core.calc.flops import decode_operators
    at = open_lesson(PAGE, lang)
    model = at.selectbox(key="d3.model").value
    for batch in (1, 64):
        set_live(at, "d3.batch", batch)
        assert_ok(at)
        fig = figure_by_key(at, "d3.ops")
        xs = [float(trace_array(fig, i, "x")[0]) for i in range(1, len(fig["data"])) if "x" in fig["data"][i]
              and len(trace_array(fig, i, "x")) == 1]
        ops = decode_operators(configs.get(model), at.select_slider(key="d3.context").value, batch)
        assert ops["weights"]["intensity"] == pytest.approx(float(batch))
        assert any(x == pytest.approx(ops["attention"]["intensity"], rel=1e-3) for x in xs)
        assert any(x == pytest.approx(ops["weights"]["intensity"], rel=1e-3) for x in xs)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_moves_figure_starts_where_the_effect_shows(lang):
    """Review D3 #2: the GQA/MQA/int figure has its own batch and context, starting at 16 and
    16,384, where the five points are far apart; they move it, and only it."""
    from core.calc.flops import decode_variants
    at = open_lesson(PAGE, lang)
    assert at.select_slider(key="d3.moves_batch").value == 16
    assert at.select_slider(key="d3.moves_context").value == 16384
    moves = figure_by_key(at, "d3.moves")
    xs = [_x(moves, i) for i in range(1, len(moves["data"]))]
    rows = decode_variants(configs.get("llama-2-7b"), 16384, 16)
    assert xs == pytest.approx([r["intensity"] for r in rows], rel=1e-5)
    assert max(xs) / min(xs) > 5                                      # visibly apart on the log axis
    roof = _x(figure_by_key(at, "d3.roofline"), 2)
    at.select_slider(key="d3.moves_batch").set_value(1).run()
    at.select_slider(key="d3.moves_context").set_value(128).run()
    assert_ok(at)
    xs = [_x(figure_by_key(at, "d3.moves"), i) for i in range(1, 5)]
    assert max(xs) / min(xs) < 1.1                                    # batch 1, short: they overlap
    assert _x(figure_by_key(at, "d3.roofline"), 2) == roof              # the roofline's own workload stays


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_sizes_in_binary_units_and_the_sxm_card(lang):
    """Review D3 #1, #3, #4, #5: SRAM 20.25 MiB (not "20.2 MB"), HBM "80 GB = 74.5 GiB", the
    table's cache in GiB, the A100 80GB named SXM, the hierarchy drawn as dots."""
    at = open_lesson(PAGE, lang)
    text = " ".join(m.value for m in at.markdown)
    assert "20.2 MiB" in text and "80 GB = 74.5 GiB" in text and "20.2 MB" not in text
    assert "| 128 GiB |" in text             # LLaMA-2-7B MHA, 16 x 16,384 tokens: 128 GiB (it read "137 GB")
    assert "A100 80GB SXM" in figure_by_key(at, "d3.roofline")["layout"]["title"]["text"]
    hier = figure_by_key(at, "d3.hierarchy")
    assert [t["type"] for t in hier["data"]] == ["scatter", "scatter"]
    assert hier["data"][0]["mode"] == "markers+text"
    assert trace_array(hier, 0, "x")[0] == 108 * 192 * 1024


# --- SmolLM2 (issue 24 §4): Q4_1's bits, the real bytes, the measured speed -------------------

def test_q4_1_is_five_bits_from_its_block_layout():
    q4, q8 = roofline.WEIGHT_FORMATS["q4_1"], roofline.WEIGHT_FORMATS["q8_0"]
    assert q4.bits_per_weight == (32 * 4 + 16 + 16) / 32 == 5.0
    assert q8.bits_per_weight == (32 * 8 + 16) / 32 == 8.5
    assert roofline.WEIGHT_FORMATS["fp16"].bits_per_weight == 16


def test_smollm2_weight_bytes_equal_the_gguf_tensors():
    """The layout counted from the config (Q4_1 matrices, Q8_0 embedding, fp32 norms) is the sum
    of the file's own tensor sizes, and its Q4_1 tensors hold exactly 5 bits a weight."""
    import os

    from gguf import GGUFReader

    from core.models import gguf_llama
    from tests.real_util import need_package
    need_package()
    path = gguf_llama.gguf_path()
    reader = GGUFReader(str(path))
    counted = roofline.gguf_weight_bytes(configs.get(configs.SMOLLM2))
    assert counted["total"] == sum(int(t.n_bytes) for t in reader.tensors) == 96_576_768
    q4 = [t for t in reader.tensors if t.tensor_type.name == "Q4_1"]
    assert 8 * sum(int(t.n_bytes) for t in q4) / sum(int(t.n_elements) for t in q4) == 5.0
    assert counted["matrices"] == sum(int(t.n_bytes) for t in q4)
    assert 0 < os.path.getsize(path) - counted["total"] < 0.02 * os.path.getsize(path)   # ≈ 98 MB: the header


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_on_smollm2(lang):
    from core.calc.params import count_params
    at = open_lesson(PAGE, lang, {"d3.model": "smollm2-135m", "d3.dtype": "q4_1"})
    cfg = configs.get(configs.SMOLLM2)
    expected = prefill_and_decode(cfg, 4096, 1, 0.625, 2)["decode"]["intensity"]   # Q4_1 weights, fp16 cache
    assert _x(figure_by_key(at, "d3.roofline"), 2) == pytest.approx(expected, rel=1e-6)
    n = count_params(cfg)
    mib = trace_array(figure_by_key(at, "d3.real_bytes"), 0, "x")
    assert mib == pytest.approx([n * 4 / 2**20, n * 2 / 2**20, n * 0.625 / 2**20, 96_576_768 / 2**20], rel=1e-6)
    assert mib[1] / mib[2] == pytest.approx(3.2)                                     # 16 bits / 5 bits
    for dtype, (w, c) in (("fp32", (4, 4)), ("int4", (0.5, 0.5))):                    # the format's extremes
        at.segmented_control(key="d3.dtype").set_value(dtype).run()
        assert_ok(at)
        expected = prefill_and_decode(cfg, 4096, 1, w, c)["decode"]["intensity"]
        assert _x(figure_by_key(at, "d3.roofline"), 2) == pytest.approx(expected, rel=1e-6)


def test_d3_choosing_smollm2_shows_it_in_q4_1():
    at = open_lesson(PAGE, "en")
    assert at.segmented_control(key="d3.dtype").value == "fp16"
    at.selectbox(key="d3.model").set_value("smollm2-135m").run()
    assert_ok(at)
    assert at.segmented_control(key="d3.dtype").value == "q4_1"


def test_d3_smollm2_measured_against_the_bandwidth_bound():
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, "en", {"d3.model": "smollm2-135m"})
    assert not any(k.endswith("d3.real_speed") for k in chart_keys(at))            # nothing runs by itself
    at.button(key="d3.real_btn").click().run(timeout=300)
    assert_ok(at)
    tps = trace_array(figure_by_key(at, "d3.real_speed"), 0, "x")
    assert len(tps) == 5 and (tps > 0).all()
    # The bounds are one measured bandwidth over each format's bytes: fp32 / Q4_1 = 0.625 / 4.
    assert tps[1] / tps[3] == pytest.approx(0.625 / 4, rel=1e-6)
    assert tps[1] / tps[2] == pytest.approx(0.5, rel=1e-6)
    assert any("GB/s" in m.value for m in at.markdown)
    other = open_lesson(PAGE, "zh")                                                   # shared: no press
    assert list(trace_array(figure_by_key(other, "d3.real_speed"), 0, "x")) == list(tps)


def test_d3_without_the_real_model(monkeypatch):
    import core.models.gguf_llama
    import ui.model
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(core.models.gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "zh", {"d3.model": "smollm2-135m"})
    assert any("requirements-model.txt" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "d3.real_btn"]
    assert figure_by_key(at, "d3.real_bytes")                                         # counted, no model needed


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_format_control_says_what_the_cache_is_stored_as(lang):
    """Review D3 #1: the control read "Weights and cache stored as", but with q4_1 the cache stays
    fp16. The label names the weights; a caption under it names the cache's format."""
    at = open_lesson(PAGE, lang, {"d3.model": "smollm2-135m", "d3.dtype": "q4_1"})
    control = at.segmented_control(key="d3.dtype")
    assert control.label == ("权重的存储格式" if lang == "zh" else "Weights stored as")
    cache = [c.value for c in at.caption if c.value.startswith(("KV cache:", "KV 缓存："))]
    assert cache == (["KV 缓存：fp16。q4_1 只是权重的格式，llama.cpp 的缓存仍按 fp16 存。"] if lang == "zh"
                     else ["KV cache: fp16. q4_1 is a format for weights only; llama.cpp keeps the cache in fp16."])
    for dtype in ("fp32", "int4"):                      # the cache follows every other format
        at.segmented_control(key="d3.dtype").set_value(dtype).run()
        assert_ok(at)
        cache = [c.value for c in at.caption if c.value.startswith(("KV cache:", "KV 缓存："))]
        assert cache == ([f"KV 缓存：同样是 {dtype}。"] if lang == "zh" else [f"KV cache: {dtype} as well."])
