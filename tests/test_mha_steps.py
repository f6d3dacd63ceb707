"""B2 shows MultiHeadAttention.queries, keys_values and attend (split, attend, merge): called one
after another, as the code panel reads, they are the module's forward, and torch's."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from core.lab.attention_lab import seeded_mha
from core.parts.masks import causal_mask
from core.parts.mha import MHAConfig, MultiHeadAttention
from core.parts.trace import Trace


def multi_head_attention(mha: MultiHeadAttention, x: torch.Tensor, mask: torch.Tensor | None = None):
    """Self-attention by the steps B2 shows -> the output (B, N, D) and every head's weights (B, H, N, N)."""
    trace = Trace()
    out = mha.attend(mha.queries(x), *mha.keys_values(x), mask, trace)      # (B, N, D)
    return out, trace["attn.weights"]


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
        forward = mha(x, mask=mask)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(forward, got, rtol=0, atol=0)
    torch.testing.assert_close(weights, want_weights, rtol=1e-5, atol=1e-6)


def test_the_same_steps_serve_shared_key_value_heads():
    """The lesson-sized copy B2 showed refused GQA (lesson D4); the module's own steps read each
    key/value head for its group of query heads, as forward does."""
    torch.manual_seed(0)
    gqa = MultiHeadAttention(MHAConfig(32, 4, n_kv_heads=2)).eval()
    x = _x(3, 32)
    k, v = gqa.keys_values(x)
    assert k.shape == v.shape == (2, 2, 3, 8)                            # (B, H_kv, N, d_head)
    with torch.no_grad():
        got, weights = multi_head_attention(gqa, x, mask=causal_mask(3))
        want = gqa(x, mask=causal_mask(3))
    assert weights.shape == (2, 4, 3, 3)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
