"""D4 in both languages: the head map, the cache bars and the course model's shared-K/V maps."""
import numpy as np
import pytest
import torch

from core.calc import configs
from core.calc.kv_cache import kv_cache_bytes, kv_groups, kv_head_choices
from core.models.model import CourseModelUnavailable, load_course_model
from core.parts.mha import repeat_kv
from core.parts.trace import Trace
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "d4_gqa.py"


def _model_or_skip():
    try:
        return load_course_model()
    except CourseModelUnavailable:
        pytest.skip("course model not built")


def _map(at):
    """(query head x positions, KV head x positions, KV head each query head's line ends at)."""
    fig = figure_by_key(at, "d4.diagram")
    qx, kx = trace_array(fig, len(fig["data"]) - 2, "x"), trace_array(fig, len(fig["data"]) - 1, "x")
    xs = trace_array(fig, 0, "x")                                   # segments: query, KV, NaN
    assert len(xs) == 3 * len(qx) and np.isnan(xs[2::3]).all()
    ends = {int(np.argmin(np.abs(qx - a))): int(np.argmin(np.abs(kx - b))) for a, b in zip(xs[0::3], xs[1::3], strict=True)}
    return qx, kx, [ends[h] for h in range(len(qx))]


def test_kv_groups_match_repeat_kv():
    for h in (1, 4, 12, 32, 64):
        for h_kv in kv_head_choices(h):
            heads = torch.arange(h_kv, dtype=torch.float32).view(1, h_kv, 1, 1)      # (B, H_kv, S, d_head)
            copied = repeat_kv(heads, h // h_kv)[0, :, 0, 0]                          # (H,)
            assert copied.long().tolist() == kv_groups(h, h_kv)
    assert kv_head_choices(12) == [1, 2, 3, 4, 6, 12]
    with pytest.raises(ValueError):
        kv_groups(8, 3)


def test_course_model_maps_use_shared_keys():
    model, tok = _model_or_skip()
    c = model.config
    ids = torch.tensor([tok.encode("君不见，黄河之水天上来")])
    trace = Trace()
    with torch.no_grad():
        model(ids, trace=trace)
    n = ids.shape[1]
    for layer in range(c.n_layers):
        q = trace[f"blocks.{layer}.attn.q"][0]                       # (H, N, d_head)
        k = trace[f"blocks.{layer}.attn.k"][0]                       # (H_kv, N, d_head)
        w = trace[f"blocks.{layer}.attn.weights"][0]                 # (H, N, N)
        assert k.shape[0] == c.n_kv_heads < c.n_heads
        for h, g in enumerate(kv_groups(c.n_heads, c.n_kv_heads)):
            scores = q[h] @ k[g].T / c.d_head ** 0.5
            scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
            torch.testing.assert_close(w[h], torch.softmax(scores, -1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d4_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    qx, kx, ends = _map(at)
    assert len(qx) == 64 and len(kx) == 8 and ends == kv_groups(64, 8)        # LLaMA-2-70B as published

    for h_kv in (1, 64):                                                      # MQA and MHA
        at.select_slider(key="d4.kv_heads").set_value(h_kv).run()
        assert_ok(at)
        qx, kx, ends = _map(at)
        assert len(kx) == h_kv and ends == kv_groups(64, h_kv)
        bars = figure_by_key(at, "d4.cache")
        gib = trace_array(bars, 0, "y")
        cfg = configs.get("llama-2-70b")
        assert gib[-1] == pytest.approx(2 * 80 * 64 * 128 * 4096 * 2 / 2**30, rel=1e-6)   # MHA: 10 GiB
        assert gib[0] == pytest.approx(gib[-1] / 64, rel=1e-6)                              # MQA
        assert gib[kv_head_choices(64).index(8)] == pytest.approx(kv_cache_bytes(cfg, 4096) / 2**30, rel=1e-6)
        colours = bars["data"][0]["marker"]["color"]
        assert colours[kv_head_choices(64).index(h_kv)] != colours[kv_head_choices(64).index(8 if h_kv != 8 else 1)]

    for context in (1024, 131072):
        at.select_slider(key="d4.context").set_value(context).run()
        assert_ok(at)
        gib = trace_array(figure_by_key(at, "d4.cache"), 0, "y")
        assert gib[-1] == pytest.approx(2 * 80 * 64 * 128 * context * 2 / 2**30, rel=1e-6)

    for name in ("gpt2-small", "course", "llama-2-7b"):                      # options change with the model
        at.selectbox(key="d4.model").set_value(name).run()
        assert_ok(at)
        cfg = configs.get(name)
        qx, kx, ends = _map(at)
        assert len(qx) == cfg.n_heads and len(kx) == cfg.n_kv_heads

    model, _ = _model_or_skip()
    c = model.config
    for layer in (0, c.n_layers - 1):
        at.slider(key="d4.layer").set_value(layer).run()
        assert_ok(at)
        maps = figure_by_key(at, "d4.maps")
        assert len(maps["data"]) == c.n_heads
        for h in range(c.n_heads):
            w = trace_array(maps, h, "z")
            assert w.shape == (11, 11)
            assert np.allclose(w.sum(1), 1, atol=1e-5) and np.allclose(np.triu(w, 1), 0)


def test_d4_bad_text():
    _model_or_skip()
    at = open_lesson(PAGE, "en")
    for text in ["", "🙂" * 300, "<b>bold</b> $x$", "黄河 river 🙂 ﷽"]:
        at.text_input(key="d4.prompt").set_value(text).run()
        assert_ok(at)
        w = trace_array(figure_by_key(at, "d4.maps"), 0, "z")
        assert 1 <= w.shape[0] <= 64


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d4_why_not_always_mqa(lang):
    """Review D4 #1: MQA's quality loss, GQA as the compromise, and who uses what."""
    at = open_lesson(PAGE, lang)
    table = next(m.value for m in at.markdown if "| PaLM 540B |" in m.value)
    for row in ("| LLaMA-2 70B | 64 | 8 | GQA-8 |", "| Llama-3 8B | 32 | 8 | GQA-8 |", "| Mistral 7B | 32 | 8 | GQA-8 |",
                "| PaLM 540B | 48 | 1 | MQA |", "| Falcon-7B | 71 | 1 | MQA |", "| LLaMA-2 7B | 32 | 32 | MHA |"):
        assert row in table
    assert "Ainslie" in table


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d4_course_model_beyond_its_context_is_flagged(lang):
    """Review D4 #3: the course model (trained up to 256 tokens) at 4,096 tokens gets a notice."""
    at = open_lesson(PAGE, lang)
    assert not at.warning                                               # LLaMA-2-70B at 4,096: within 4,096
    at.selectbox(key="d4.model").set_value("course").run()
    assert_ok(at)
    assert any("256" in w.value for w in at.warning)
    at.select_slider(key="d4.context").set_value(131072).run()
    assert any("131,072" in w.value for w in at.warning)


def test_d4_zh_fraction_not_times_smaller():
    """Review D4 #4: 「是 MHA 时的几分之一？」 with the answer 1/8; the title keeps 4,096 with 个词元."""
    at = open_lesson(PAGE, "zh")
    radio = next(r for r in at.radio if "几分之一" in r.label)
    assert list(radio.options) == ["1/2", "1/8", "1/64"]
    title = figure_by_key(at, "d4.cache")["layout"]["title"]["text"]
    assert "4,096\u00a0个词元" in title.replace("<br>", " ")


# --- SmolLM2 (issue 24 §4): 9 query heads reading 3 KV heads --------------------------------
REAL_PROMPT = "The little fox found a red ball. Then the little fox kicked the red ball into the river."


def test_smollm2_grouping_from_its_weights_is_repeat_kvs_order():
    from core.lab.d_real_kv import group_attention, projection_shapes
    from tests.real_util import real
    model, tok = real()
    shapes = projection_shapes(model)
    assert shapes == {"w_q": (576, 576), "w_k": (192, 576), "w_v": (192, 576), "w_o": (576, 576)}
    ids = tok.encode(REAL_PROMPT)
    n = len(ids)
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([ids]), trace=trace)
    layer = 15
    q = trace[f"blocks.{layer}.attn.q"][0]                          # (9, N, 64)
    k = trace[f"blocks.{layer}.attn.k"][0]                          # (3, N, 64)
    assert q.shape[0] == 9 and k.shape[0] == 3
    # repeat_kv's copies are torch.repeat_interleave's: query head h reads KV head h // 3.
    torch.testing.assert_close(repeat_kv(k[None], 3)[0], torch.repeat_interleave(k, 3, dim=0), atol=0, rtol=0)
    assert kv_groups(9, 3) == [h // 3 for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    groups = group_attention(model, ids, layer)
    assert [g["heads"] for g in groups] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for g, group in enumerate(groups):
        torch.testing.assert_close(group["keys"], k[g], atol=0, rtol=0)
        for i, h in enumerate(group["heads"]):
            scores = (q[h] @ k[g].T / 64 ** 0.5).masked_fill(~causal, float("-inf"))
            torch.testing.assert_close(group["weights"][i], torch.softmax(scores, -1), atol=1e-5, rtol=0)


def _titles(fig):
    return [a["text"] for a in fig["layout"]["annotations"] if "→" in a["text"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d4_on_smollm2(lang):
    from core.lab.d_real_kv import group_attention
    from tests.real_util import real
    model, tok = real()
    at = open_lesson(PAGE, lang, {"d4.lm": "smollm2"})
    fig = figure_by_key(at, "d4.real_map")
    qx, kx = trace_array(fig, 1, "x"), trace_array(fig, 2, "x")
    xs = trace_array(fig, 0, "x")
    ends = [int(np.argmin(np.abs(kx - b))) for b in xs[1::3]]
    assert len(qx) == 9 and len(kx) == 3 and ends == kv_groups(9, 3)
    text = " ".join(m.value for m in at.markdown)
    assert "576" in text and "192" in text
    ids = tok.encode(REAL_PROMPT)
    for layer, kv in ((0, 0), (29, 2), (15, 1)):                    # the sliders' ends, then the middle
        at.slider(key="d4.real_layer").set_value(layer).run()
        at.slider(key="d4.real_kv").set_value(kv).run()
        assert_ok(at)
        maps = figure_by_key(at, "d4.real_maps")
        assert len(maps["data"]) == 3
        heads = [3 * kv + i for i in range(3)]
        assert all(f"{h} " in t for h, t in zip(heads, _titles(maps), strict=True))
        expected = group_attention(model, ids, layer)[kv]["weights"]
        for i in range(3):
            w = trace_array(maps, i, "z")
            assert w.shape == (len(ids), len(ids))
            assert np.allclose(w.sum(1), 1, atol=1e-5) and np.allclose(np.triu(w, 1), 0)
            assert np.allclose(w, expected[i].numpy(), atol=1e-6)
    assert figure_by_key(at, "d4.diagram")                           # the sections above stay


@pytest.mark.parametrize("text", ["", "🙂" * 300, "<script>alert(1)</script> $x$ \x00\x1b[31m", "黄河 river ﷽",
                                  "word " * 400])
def test_d4_smollm2_bad_and_long_text(text):
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, "en", {"d4.lm": "smollm2"})
    at.text_input(key="d4.real_prompt").set_value(text).run()
    assert_ok(at)
    if text.strip():
        maps = figure_by_key(at, "d4.real_maps")
        assert trace_array(maps, 0, "z").shape[0] <= 256
    if text.startswith(("word", "🙂")):        # 2,000 characters cut to 1,024; 300 emoji > 256 byte tokens
        assert at.warning
        assert trace_array(figure_by_key(at, "d4.real_maps"), 0, "z").shape[0] <= 64                 # pooled


def test_d4_without_the_real_model(monkeypatch):
    import core.models.gguf_llama
    import ui.model
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(core.models.gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "zh", {"d4.lm": "smollm2"})
    assert any("requirements-model.txt" in i.value for i in at.info)
    _model_or_skip()
    assert figure_by_key(at, "d4.maps")                              # the course model's heads instead


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d4_cache_formula_is_two_lines(lang):
    """Review D4 #1: "2 × 80 × 8 × 128 × 4,096 × 2 B = 1,342,177,280 B ≈ 1.25 GiB" on one line was
    cut at the column's edge at 1440 px. The product and its value are two aligned lines."""
    at = open_lesson(PAGE, lang)
    formula = next(la.value for la in at.latex if "M_{KV} &=" in la.value).strip("$\n")
    assert formula.startswith(r"\begin{aligned}") and formula.endswith(r"\end{aligned}")
    first, second = formula.split(r"\\")
    assert r"2 \times 80 \times 8 \times 128 \times 4{,}096 \times 2\ \text{B}" in first
    assert r"&= 1{,}342{,}177{,}280\ \text{B} \approx 1.25\ \text{GiB}" in second
    assert 2 * 80 * 8 * 128 * 4096 * 2 == 1_342_177_280
