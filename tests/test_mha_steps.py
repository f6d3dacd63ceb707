"""B2 shows core.lab.multi_head.multi_head_attention: it equals the real module and torch's."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from core.lab.attention_lab import seeded_mha
from core.lab.multi_head import multi_head_attention
from core.parts.masks import causal_mask
from core.parts.mha import MHAConfig, MultiHeadAttention
from core.parts.trace import Trace


def _x(n: int, d: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, n, d, generator=g)                             # (B, N, D)


@pytest.mark.parametrize("d_model,n_heads", [(16, 1), (32, 4), (64, 8), (128, 8)])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_the_course_module(d_model, n_heads, causal):
    mha = seeded_mha(d_model, n_heads, seed=3)
    x = _x(11, d_model)
    mask = causal_mask(11) if causal else None
    trace = Trace()
    with torch.no_grad():
        want = mha(x, mask=mask, trace=trace)
        got, weights = multi_head_attention(mha, x, mask=mask)
    assert got.shape == (2, 11, d_model) and weights.shape == (2, n_heads, 11, 11)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    torch.testing.assert_close(weights, trace["attn.weights"], rtol=0, atol=1e-7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, n_heads, 11))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_torch_multihead_attention(bias, causal):
    d_model, n_heads, n = 32, 4, 9
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).eval()
    mha = MultiHeadAttention(MHAConfig(d_model, n_heads, bias=bias)).eval()
    with torch.no_grad():
        w_q, w_k, w_v = ref.in_proj_weight.chunk(3)                     # (D, D) each
        mha.w_q.weight.copy_(w_q)
        mha.w_k.weight.copy_(w_k)
        mha.w_v.weight.copy_(w_v)
        mha.w_o.weight.copy_(ref.out_proj.weight)
        if bias:
            b_q, b_k, b_v = ref.in_proj_bias.chunk(3)
            mha.w_q.bias.copy_(b_q)
            mha.w_k.bias.copy_(b_k)
            mha.w_v.bias.copy_(b_v)
            mha.w_o.bias.copy_(ref.out_proj.bias)
        x = _x(n, d_model, seed=1)
        mask = causal_mask(n) if causal else None
        # torch's boolean attn_mask is True where attention is NOT allowed: the opposite of ours.
        want, want_weights = ref(x, x, x, attn_mask=None if mask is None else ~mask,
                                 need_weights=True, average_attn_weights=False)
        got, weights = multi_head_attention(mha, x, mask=mask)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(weights, want_weights, rtol=1e-5, atol=1e-6)


def test_refuses_shared_key_value_heads():
    with torch.device("meta"):
        gqa = MultiHeadAttention(MHAConfig(32, 4, n_kv_heads=2))
    with pytest.raises(ValueError):
        multi_head_attention(gqa, torch.zeros(1, 3, 32, device="meta"))
