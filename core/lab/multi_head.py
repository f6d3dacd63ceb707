"""B2's multi-head attention, lesson-sized: split, attend, merge, and nothing else.

``core.parts.mha.MultiHeadAttention.forward`` also handles RoPE, the KV cache,
cross-attention and shared key/value heads (GQA); B2 teaches none of these yet. This is
the same computation for plain self-attention, on the same module's weights, short enough
to read beside the figure. tests/test_multi_head_lab.py proves it equal to the module and
to torch's ``nn.MultiheadAttention``.

Dimension legend
    B       batch
    N       positions
    D       model width
    H       heads
    d_head  D / H
"""
from __future__ import annotations

import torch

from core.parts.attention import scaled_dot_product_attention
from core.parts.mha import MultiHeadAttention, merge_heads, split_heads


def multi_head_attention(
    mha: MultiHeadAttention, x: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention of x (B, N, D) with H heads of width d_head = D / H.

    Returns the output (B, N, D) and every head's weights (B, H, N, N).
    Example: with H = 4, D = 32: weights (1, 4, N, N), each row sums to 1
    """
    h = mha.config.n_heads
    if mha.config.n_kv_heads != h:
        raise ValueError("one key/value head per query head (GQA: lesson D4)")
    q = split_heads(mha.w_q(x), h)                     # (B, H, N, d_head)
    k = split_heads(mha.w_k(x), h)                     # (B, H, N, d_head)
    v = split_heads(mha.w_v(x), h)                     # (B, H, N, d_head)
    # Each head attends on its own: softmax(q kᵀ / √d_head) v
    att = scaled_dot_product_attention(q, k, v, mask=mask)
    concat = merge_heads(att.output)                   # (B, N, H*d_head)
    return mha.w_o(concat), att.weights                # (B, N, D), (B, H, N, N)
