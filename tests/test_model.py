"""The course model: shapes, trace names, cache == full pass, loading the shipped weights."""
import shutil

import pytest
import torch

from core.models.generate import generate
from core.models.model import (
    CONFIG_FILE,
    REBUILD,
    WEIGHTS_FILE,
    CourseModelUnavailable,
    LlamaDecoder,
    ModelConfig,
    causal_mask_after,
    load_course_model,
)
from core.parts.kv_cache import KVCache
from core.parts.trace import Trace, is_known_name


def small(n_kv_heads: int, seed: int = 0) -> LlamaDecoder:
    torch.manual_seed(seed)
    c = ModelConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=n_kv_heads,
                    ffn_hidden=48, max_seq_len=32)
    return LlamaDecoder(c).eval()


def test_config_invariants():
    with pytest.raises(ValueError):
        ModelConfig(vocab_size=10, d_model=32, n_heads=4, n_kv_heads=3)
    with pytest.raises(ValueError):
        ModelConfig(vocab_size=10, d_model=12, n_heads=4, n_kv_heads=2)   # d_head 3 is odd
    c = ModelConfig(vocab_size=10, d_model=32, n_heads=4, n_kv_heads=2)
    assert ModelConfig.from_dict(c.to_dict()) == c


def test_causal_mask_after():
    assert causal_mask_after(2, 1).tolist() == [[True, True, False], [True, True, True]]
    assert causal_mask_after(3, 0).shape == (3, 3)
    assert causal_mask_after(1, 5).all() and causal_mask_after(1, 5).shape == (1, 6)


def test_logits_and_trace_shapes():
    m = small(n_kv_heads=2)
    ids = torch.randint(0, 50, (3, 7))
    trace = Trace()
    logits = m(ids, trace=trace)
    assert logits.shape == (3, 7, 50)
    torch.testing.assert_close(trace["logits"], logits)
    assert all(is_known_name(n) for n in trace.names())
    d, h, h_kv, f = 32, 4, 2, 48
    want = {
        "embed": (3, 7, d), "final_norm": (3, 7, d), "logits": (3, 7, 50),
        "resid_pre": (3, 7, d), "attn_norm": (3, 7, d), "attn.q": (3, h, 7, d // h),
        "attn.k": (3, h_kv, 7, d // h), "attn.v": (3, h_kv, 7, d // h),
        "attn.scores": (3, h, 7, 7), "attn.weights": (3, h, 7, 7), "attn.out": (3, 7, d),
        "resid_mid": (3, 7, d), "ffn_norm": (3, 7, d), "ffn.gate": (3, 7, f), "ffn.up": (3, 7, f),
        "ffn_out": (3, 7, d), "resid_post": (3, 7, d),
    }
    for i in range(2):
        for name, shape in want.items():
            full = name if name in ("embed", "final_norm", "logits") else f"blocks.{i}.{name}"
            assert tuple(trace[full].shape) == shape, full
    # Causal: nothing above the diagonal, rows sum to one.
    w = trace["blocks.1.attn.weights"]
    assert float(w.triu(diagonal=1).abs().max()) == 0.0
    torch.testing.assert_close(w.sum(-1), torch.ones(3, h, 7))
    torch.testing.assert_close(trace["blocks.0.resid_post"], trace["blocks.1.resid_pre"])


def test_causality_future_tokens_do_not_change_the_past():
    m = small(n_kv_heads=2)
    a = torch.randint(0, 50, (1, 8))
    b = a.clone()
    b[0, 5:] = (b[0, 5:] + 1) % 50
    torch.testing.assert_close(m(a)[:, :5], m(b)[:, :5])


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
def test_cached_decoding_equals_full_pass(n_kv_heads):
    m = small(n_kv_heads)
    ids = torch.randint(0, 50, (2, 12))
    with torch.no_grad():
        full = m(ids)                                        # (B, N, V)
        cache = KVCache(2)
        prefill = m(ids[:, :4], cache=cache)                 # the prompt in one go
        assert (prefill - full[:, :4]).abs().max() <= 1e-5
        for t in range(4, 12):
            trace = Trace()
            step = m(ids[:, t:t + 1], cache=cache, trace=trace)   # one new token
            assert step.shape == (2, 1, 50)
            assert (step[:, 0] - full[:, t]).abs().max() <= 1e-5
            assert cache.length == t + 1
            assert cache.layers[0].k.shape == (2, n_kv_heads, t + 1, 8)
            assert cache.layers[1].v.shape == (2, n_kv_heads, t + 1, 8)
            assert trace["blocks.0.attn.weights"].shape == (2, 4, 1, t + 1)
            assert trace["blocks.0.attn.q"].shape == (2, 4, 1, 8)


def test_context_limit_is_enforced():
    m = small(2)
    with pytest.raises(ValueError):
        m(torch.zeros(1, 33, dtype=torch.long))


def test_model_keeps_no_request_state():
    m = small(2)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    attrs = {id(mod): set(vars(mod)) for mod in m.modules()}
    m(torch.randint(0, 50, (1, 5)), cache=m.new_cache(), trace=Trace())
    assert {id(mod): set(vars(mod)) for mod in m.modules()} == attrs
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())


# --- the shipped course model -------------------------------------------------------

@pytest.fixture(scope="module")
def course():
    return load_course_model()


def test_shipped_model_loads_in_eval_mode(course):
    model, tok = course
    assert not model.training
    assert model.config.vocab_size == len(tok)
    assert model.config.n_kv_heads < model.config.n_heads          # GQA
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_shipped_weights_are_safetensors_not_pickle():
    from safetensors.torch import load_file

    from core.models.model import ASSETS
    raw = (ASSETS / WEIGHTS_FILE).read_bytes()
    assert not raw.startswith(b"\x80")                               # not a pickle stream
    tensors = load_file(str(ASSETS / WEIGHTS_FILE))
    assert "embed.weight" in tensors and (ASSETS / WEIGHTS_FILE).stat().st_size <= 10_000_000


def test_greedy_continues_the_famous_line(course):
    model, tok = course
    assert "天上来" in generate(model, tok, "君不见，黄河之水", max_new_tokens=8)


def copy_assets(tmp_path):
    from core.models.model import ASSETS
    for f in ASSETS.iterdir():
        if f.is_file():
            shutil.copy(f, tmp_path / f.name)
    return tmp_path


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "missing", "bad_config"])
def test_damaged_assets_raise_one_clear_error(tmp_path, damage):
    folder = copy_assets(tmp_path)
    weights = folder / WEIGHTS_FILE
    if damage == "garbage":
        weights.write_bytes(b"this is not a tensor file" * 10)
    elif damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:1000])
    elif damage == "flipped":
        raw = bytearray(weights.read_bytes())
        raw[-10] ^= 0xFF
        weights.write_bytes(bytes(raw))
    elif damage == "missing":
        weights.unlink()
    else:
        (folder / CONFIG_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(CourseModelUnavailable) as err:
        load_course_model(assets=folder)
    assert REBUILD in str(err.value)
    assert REBUILD == "python scripts/train_course_model.py"
