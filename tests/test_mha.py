"""Multi-head attention: shapes, equality with torch's reference, GQA == MHA with repeated K/V."""
import pytest
import torch

from core.parts.kv_cache import LayerKV
from core.parts.masks import causal_mask
from core.parts.mha import MHAConfig, MultiHeadAttention, merge_heads, repeat_kv, split_heads
from core.parts.trace import Trace


def test_split_heads_shape_and_layout():
    x = torch.randn(2, 3, 8)
    heads = split_heads(x, 2)
    assert heads.shape == (2, 2, 3, 4)
    assert torch.equal(heads[0, 1, 2], x[0, 2, 4:8])


def test_merge_heads_inverts_split():
    x = torch.randn(2, 5, 12)
    assert merge_heads(split_heads(x, 3)).shape == (2, 5, 12)
    assert torch.equal(merge_heads(split_heads(x, 3)), x)


def test_repeat_kv_copies_each_head_for_its_group():
    a, b = torch.zeros(1, 1, 2, 3), torch.ones(1, 1, 2, 3)
    x = torch.cat([a, b], dim=1)                      # heads [A, B]
    out = repeat_kv(x, 2)
    assert out.shape == (1, 4, 2, 3)
    assert [float(out[0, h, 0, 0]) for h in range(4)] == [0.0, 0.0, 1.0, 1.0]
    assert repeat_kv(x, 1) is x


@pytest.mark.parametrize("h, h_kv", [(4, 4), (4, 2), (4, 1)])
def test_config_accepts_mha_gqa_mqa(h, h_kv):
    c = MHAConfig(d_model=16, n_heads=h, n_kv_heads=h_kv)
    assert c.n_rep * c.n_kv_heads == c.n_heads


def test_config_defaults_to_mha_and_rejects_bad_groups():
    assert MHAConfig(16, 4).n_kv_heads == 4
    with pytest.raises(ValueError):
        MHAConfig(16, 4, n_kv_heads=3)
    with pytest.raises(ValueError):
        MHAConfig(18, 4)


@pytest.mark.parametrize("causal", [False, True])
def test_equals_torch_multihead_attention(causal):
    torch.manual_seed(0)
    d, h = 32, 4
    ours = MultiHeadAttention(MHAConfig(d, h, bias=True))
    ref = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True)
    with torch.no_grad():
        w = ref.in_proj_weight
        bias = ref.in_proj_bias
        for i, lin in enumerate([ours.w_q, ours.w_k, ours.w_v]):
            lin.weight.copy_(w[i * d:(i + 1) * d])
            lin.bias.copy_(torch.randn(d))
            bias[i * d:(i + 1) * d].copy_(lin.bias)
        ours.w_o.weight.copy_(ref.out_proj.weight)
        ref.out_proj.bias.copy_(torch.randn(d))
        ours.w_o.bias.copy_(ref.out_proj.bias)
    x = torch.randn(2, 7, d)
    mask = causal_mask(7) if causal else None
    trace = Trace()
    got = ours(x, mask=mask, trace=trace)
    # torch's boolean attn_mask means the opposite: True = NOT allowed.
    want, want_weights = ref(x, x, x, attn_mask=None if mask is None else ~mask,
                             need_weights=True, average_attn_weights=False)
    assert got.shape == (2, 7, d)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trace["attn.weights"], want_weights, atol=1e-5, rtol=1e-5)


def test_trace_shapes_gqa():
    m = MultiHeadAttention(MHAConfig(d_model=24, n_heads=6, n_kv_heads=2))
    trace = Trace()
    out = m(torch.randn(2, 5, 24), trace=trace)
    assert out.shape == (2, 5, 24)
    assert trace["attn.q"].shape == (2, 6, 5, 4)
    assert trace["attn.k"].shape == (2, 2, 5, 4)
    assert trace["attn.v"].shape == (2, 2, 5, 4)
    assert trace["attn.scores"].shape == (2, 6, 5, 5)
    assert trace["attn.weights"].shape == (2, 6, 5, 5)
    assert trace["attn.concat"].shape == (2, 5, 24)
    assert trace["attn.out"].shape == (2, 5, 24)
    torch.testing.assert_close(trace["attn.weights"].sum(-1), torch.ones(2, 6, 5))


@pytest.mark.parametrize("h_kv", [2, 1])
def test_gqa_equals_mha_with_repeated_kv_heads(h_kv):
    torch.manual_seed(1)
    d, h = 32, 4
    d_head = d // h
    gqa = MultiHeadAttention(MHAConfig(d, h, n_kv_heads=h_kv))
    mha = MultiHeadAttention(MHAConfig(d, h))
    rep = h // h_kv
    with torch.no_grad():
        mha.w_q.weight.copy_(gqa.w_q.weight)
        mha.w_o.weight.copy_(gqa.w_o.weight)
        for big, small in [(mha.w_k, gqa.w_k), (mha.w_v, gqa.w_v)]:
            # Rows of kv head g serve query heads g*rep .. g*rep+rep-1.
            rows = small.weight.view(h_kv, d_head, d).repeat_interleave(rep, dim=0)
            big.weight.copy_(rows.reshape(h * d_head, d))
    x = torch.randn(2, 6, d)
    mask = causal_mask(6)
    torch.testing.assert_close(gqa(x, mask=mask, rope_base=10000.0),
                               mha(x, mask=mask, rope_base=10000.0), atol=1e-5, rtol=1e-5)


def test_cross_attention_weights_are_rectangular():
    m = MultiHeadAttention(MHAConfig(d_model=16, n_heads=2))
    trace = Trace()
    out = m(torch.randn(1, 3, 16), context=torch.randn(1, 9, 16), trace=trace)
    assert out.shape == (1, 3, 16)
    assert trace["attn.weights"].shape == (1, 2, 3, 9)
    assert trace["attn.k"].shape == (1, 2, 9, 8)


def test_cache_grows_and_matches_full_pass():
    torch.manual_seed(2)
    m = MultiHeadAttention(MHAConfig(d_model=16, n_heads=4, n_kv_heads=2))
    x = torch.randn(1, 6, 16)
    full = m(x, mask=causal_mask(6), rope_base=10000.0)
    cache = LayerKV()
    steps = []
    for t in range(6):
        steps.append(m(x[:, t:t + 1], rope_base=10000.0, cache=cache))
        assert cache.k.shape == (1, 2, t + 1, 4)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_module_keeps_no_request_state():
    m = MultiHeadAttention(MHAConfig(d_model=16, n_heads=4, n_kv_heads=2))
    before = set(vars(m))
    m(torch.randn(1, 3, 16), trace=Trace(), cache=LayerKV(), rope_base=10000.0)
    assert set(vars(m)) == before
    assert {n for n, _ in m.named_buffers()} == set()
