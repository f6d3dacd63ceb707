"""KV cache size, FLOP counts with and without the cache, and the step-by-step cache record."""
import pytest
import torch

from core.calc import configs
from core.calc.flops import (
    attended_pairs,
    decode_flops,
    decode_variants,
    matmul_weights,
    prefill_and_decode,
    seconds_per_token,
    step_bytes,
    step_flops,
)
from core.calc.kv_cache import DTYPE_BYTES, kv_cache_bytes
from core.calc.params import count_params
from core.lab.cache_steps import cache_history, watch_cache
from core.models.generate import Generation
from core.models.model import LlamaDecoder, ModelConfig
from core.parts.trace import Trace
from core.text.tokenizer import CharTokenizer


def test_published_cache_sizes():
    assert kv_cache_bytes(configs.get("llama-2-7b"), 4096, 1, 2) == 2_147_483_648        # 2 GiB
    assert kv_cache_bytes(configs.get("llama-3-8b"), 4096, 1, 2) == 536_870_912          # 512 MiB
    assert kv_cache_bytes(configs.get("llama-2-70b"), 1, 1, 2) == 327_680                # per token
    assert kv_cache_bytes(configs.get("llama-2-7b"), 1) == 512 * 1024                    # 512 KiB a token
    assert kv_cache_bytes(configs.get("llama-3-8b"), 1) == 128 * 1024


@pytest.mark.parametrize("name", configs.names())
def test_cache_bytes_scale_linearly(name):
    c = configs.get(name)
    one = kv_cache_bytes(c, 1)
    assert kv_cache_bytes(c, 100, batch=3) == 300 * one
    assert kv_cache_bytes(c, 7, bytes_per_value=DTYPE_BYTES["int4"]) * 4 == kv_cache_bytes(c, 7)
    assert kv_cache_bytes(c, 5, bytes_per_value=DTYPE_BYTES["fp32"]) == 2 * kv_cache_bytes(c, 5)
    assert isinstance(kv_cache_bytes(c, 3, bytes_per_value=0.5), int)


def test_attended_pairs_is_the_causal_count():
    for n, past in [(1, 0), (1, 9), (4, 0), (3, 5)]:
        mask = torch.ones(n, past + n, dtype=torch.bool).tril(diagonal=past)
        assert attended_pairs(n, past) == int(mask.sum())


def test_matmul_weights_docstring_and_moe():
    assert matmul_weights(configs.get("llama-2-7b")) == 6_607_077_376
    mix = configs.get("mixtral-8x7b")
    one, many = matmul_weights(mix, 1), matmul_weights(mix, 1000)
    # one token: 2 of 8 experts; a big batch: all 8 (never more)
    assert many - one == 6 * mix.n_layers * 3 * mix.d_model * mix.ffn_hidden
    assert many == matmul_weights(mix, 4)
    gpt2 = configs.get("gpt2-small")       # tied output: the embedding matrix is multiplied with
    assert matmul_weights(gpt2) > count_params(gpt2) - gpt2.vocab_size * gpt2.d_model


def test_flops_with_and_without_cache():
    c = configs.get("llama-2-7b")
    w = matmul_weights(c)
    assert decode_flops(c, 1) == decode_flops(c, 1, cache=False)          # a 1-token prompt: the same work
    cached = decode_flops(c, 4096)
    assert cached == 2 * w + 4 * 32 * 32 * 128 * 4096
    full = decode_flops(c, 4096, cache=False)
    assert full == 2 * w * 4096 + 4 * 32 * 32 * 128 * (4096 * 4097 // 2)
    # recomputing costs the cached step T times in the linear layers, more in attention
    assert full > 4096 * 2 * w and 3000 < full / cached < 4096
    assert step_flops(c, 1, 9, batch=8) == 8 * step_flops(c, 1, 9)
    # without the cache the step grows like T², with it like T
    growth_cached = decode_flops(c, 2048) - decode_flops(c, 1024)
    assert decode_flops(c, 3072) - decode_flops(c, 2048) == growth_cached


def test_bytes_and_intensity():
    c = configs.get("llama-2-7b")
    assert step_bytes(c, 1, 4095) == 2 * 6_607_077_376 + 2_147_483_648
    pd = prefill_and_decode(c, 4096)
    # MHA in fp16 at batch 1: 2 FLOPs per 2-byte weight, and 4 FLOPs per 4 cache bytes (k and v of a
    # head and a position, 2 bytes each, used by q·k and weight·v): exactly 1 FLOP per byte
    assert pd["decode"]["intensity"] == pytest.approx(1.0, abs=1e-12)
    gqa = prefill_and_decode(configs.get("llama-3-8b"), 8192)["decode"]["intensity"]
    assert 1.0 < gqa < 4.0                                  # H / H_kv = 4 FLOPs per cache byte
    assert pd["prefill"]["intensity"] > 1000
    assert prefill_and_decode(c, 512, batch=64)["decode"]["intensity"] > 25 * pd["decode"]["intensity"]
    int4 = prefill_and_decode(c, 4096, weight_bytes=0.5, cache_bytes=0.5)["decode"]["intensity"]
    assert int4 == pytest.approx(4 * pd["decode"]["intensity"], rel=1e-9)


def test_decode_variants_move_right():
    c = configs.get("llama-2-70b")
    rows = {r["id"]: r for r in decode_variants(c, 32768, batch=16)}
    assert list(rows) == ["mha", "gqa", "mqa", "int8", "int4"]
    assert rows["mha"]["n_kv_heads"] == 64 and rows["gqa"]["n_kv_heads"] == 8 and rows["mqa"]["n_kv_heads"] == 1
    assert rows["mha"]["intensity"] < rows["gqa"]["intensity"] < rows["mqa"]["intensity"]
    assert rows["gqa"]["intensity"] < rows["int8"]["intensity"] < rows["int4"]["intensity"]
    assert [r["id"] for r in decode_variants(configs.get("llama-2-7b"), 128)] == ["mha", "mqa", "int8", "int4"]


# --- the cache step by step, on a small random model -------------------------------------

TOK = CharTokenizer("君不见黄河之水天上来奔流到海复回")


def _model(seed: int = 0) -> LlamaDecoder:
    torch.manual_seed(seed)
    c = ModelConfig(vocab_size=len(TOK), d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, ffn_hidden=48,
                    max_seq_len=32)
    m = LlamaDecoder(c).eval()
    with torch.no_grad():
        m.output.weight[: 4] = -100.0           # never stop early at EOS
    return m


def test_cache_grows_one_row_per_step_and_rows_equal_full_attention():
    model = _model()
    prompt = "君不见黄河之水"
    steps = watch_cache(Generation(model, TOK, prompt, max_new_tokens=6))
    p = len(TOK.encode(prompt))
    assert len(steps) == 6
    for t, step in enumerate(steps):
        assert step.fed == (p if t == 0 else 1)
        assert step.k.shape == (3, 2, p + t, 8) and step.v.shape == (3, 2, p + t, 8)   # (L, H_kv, S, d_head)
        assert step.q.shape == (3, 4, step.fed, 8)                                      # (L, H, N, d_head)
        assert step.weights.shape == (3, 4, step.fed, p + t)                            # (L, H, N, S)
    # the sequence that was fed, recomputed at once without a cache
    fed = TOK.encode(prompt) + [s.chosen for s in steps[:-1]]
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([fed]), trace=trace)
    for layer in range(3):
        full = trace[f"blocks.{layer}.attn.weights"][0]                                 # (H, S, S)
        keys = trace[f"blocks.{layer}.attn.k"][0]                                       # (H_kv, S, d_head)
        for head in range(4):
            h = cache_history(steps, layer, head, len(steps) - 1)
            assert h["kv_head"] == head // 2
            torch.testing.assert_close(h["weights"], full[head], atol=1e-5, rtol=0)
            torch.testing.assert_close(h["k"], keys[head // 2], atol=1e-5, rtol=0)
            # each step's one new row is the matching row of the full causal matrix
            for t in range(1, len(steps)):
                row = steps[t].weights[layer, head, 0]                                  # (p + t,)
                torch.testing.assert_close(row, full[head, p + t - 1, : p + t], atol=1e-5, rtol=0)
    mid = cache_history(steps, 1, 3, 2)
    assert mid["q"].shape == (p + 2, 8) and mid["weights"].shape == (p + 2, p + 2)
    assert torch.allclose(mid["weights"].sum(-1), torch.ones(p + 2), atol=1e-5)
    assert (mid["weights"].triu(1) == 0).all()


def test_measured_cached_step_is_faster_at_long_context():
    model = _model()
    ids = [5 + i % 12 for i in range(32)]
    cached = seconds_per_token(model, ids, 32, use_cache=True, window=4, repeats=2)
    full = seconds_per_token(model, ids, 32, use_cache=False, window=4, repeats=2)
    assert cached > 0 and full > 0


def test_decode_variants_cache_sizes():
    c = configs.get("llama-2-7b")
    rows = {r["id"]: r for r in decode_variants(c, 4096, batch=2)}
    assert rows["mha"]["kv_bytes"] == 2 * 2_147_483_648
    assert rows["mqa"]["kv_bytes"] == rows["mha"]["kv_bytes"] // 32
    assert rows["int8"]["kv_bytes"] == rows["mha"]["kv_bytes"] // 2
    assert rows["int4"]["kv_bytes"] == rows["mha"]["kv_bytes"] // 4


def test_decode_operators_against_hand_computed_intensities():
    """Issue 16: attention over the KV cache stays near 1 FLOP/byte (times the group size with
    GQA) whatever the batch; the weight matmuls move right with the batch."""
    from core.calc.flops import decode_operators, step_bytes, step_flops
    c = configs.get("llama-2-7b")                                   # H = H_kv = 32, d_head 128, 32 layers
    for batch in (1, 64):
        ops = decode_operators(c, 4096, batch)
        assert ops["attention"]["intensity"] == pytest.approx(1.0)
        assert ops["weights"]["intensity"] == pytest.approx(float(batch))
        # by hand: 4 · 32 layers · 32 heads · 128 · 4096 keys per sequence; 2 GiB of fp16 cache each
        assert ops["attention"]["flops"] == batch * 4 * 32 * 32 * 128 * 4096
        assert ops["attention"]["bytes"] == batch * 2 * 2**30
        assert ops["weights"]["bytes"] == 2 * 6_607_077_376
        assert ops["weights"]["flops"] + ops["attention"]["flops"] == step_flops(c, 1, 4095, batch)
        assert ops["weights"]["bytes"] + ops["attention"]["bytes"] == step_bytes(c, 1, 4095, batch)
    gqa = decode_operators(configs.get("llama-3-8b"), 8192, 16)     # H = 32, H_kv = 8: groups of 4
    assert gqa["attention"]["intensity"] == pytest.approx(4.0)
    assert decode_operators(c, 4096, 1, cache_bytes=1)["attention"]["intensity"] == pytest.approx(2.0)
