"""Multi-head attention with grouped key/value heads: MHA, GQA and MQA in one module.

Dimension legend
    B       batch
    N       query positions (the new tokens)
    S       key/value positions (all cached tokens, or the context for cross-attention)
    D       model width, d_model
    H       query heads
    H_kv    key/value heads: H (MHA), a divisor of H (GQA), 1 (MQA)
    d_head  width of one head, D / H

Vaswani et al. 2017 sec. 3.2.2 split one wide attention into H narrow ones; Shazeer 2019
(MQA) and Ainslie et al. 2023 (GQA) let groups of query heads share one key/value head,
which shrinks the KV cache by H / H_kv while the query side stays as wide.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from core.parts.attention import scaled_dot_product_attention
from core.parts.kv_cache import LayerKV
from core.parts.rope import apply_rope
from core.parts.trace import Trace, record


@dataclass(frozen=True)
class MHAConfig:
    d_model: int           # D, width of the residual stream that goes in and comes out
    n_heads: int           # H, query heads; each looks at the sequence with its own d_head-wide q, k
    n_kv_heads: int = 0    # H_kv, key/value heads; 0 means "same as n_heads" (plain MHA)
    bias: bool = False     # LLaMA drops biases; the original Transformer (and nn.MultiheadAttention) keeps them

    def __post_init__(self) -> None:
        if self.n_kv_heads == 0:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if self.n_heads <= 0 or self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must split evenly into n_heads={self.n_heads}")
        if self.n_kv_heads <= 0 or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.n_kv_heads}: "
                "each key/value head serves an equal group of query heads"
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def n_rep(self) -> int:
        """Query heads per key/value head: 1 for MHA, H for MQA."""
        return self.n_heads // self.n_kv_heads


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, N, H*d_head) -> (B, H, N, d_head): the wide projection cut into
    H narrow heads.

    Nothing is computed: the last axis is viewed as H blocks of d_head, then
    the head axis moves in front of the positions, so each head is an
    (N, d_head) matrix.

    Example: x of shape (1, 3, 8), n_heads=2 -> shape (1, 2, 3, 4), and
             out[0, 1, t] == x[0, t, 4:8]
    """
    b, n, width = x.shape
    x = x.view(b, n, n_heads, width // n_heads)  # (B, N, H, d_head)
    return x.transpose(1, 2)                      # (B, H, N, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, N, d_head) -> (B, N, H*d_head): the heads laid side by side
    again ("concat").

    Example: merge_heads(split_heads(x, 2)) == x for any x (B, N, 2*d_head)
    """
    b, h, n, d_head = x.shape
    x = x.transpose(1, 2)                          # (B, N, H, d_head)
    return x.reshape(b, n, h * d_head)             # (B, N, H*d_head)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, H_kv, S, d_head) -> (B, H_kv*n_rep, S, d_head): each key/value
    head copied for its group.

    Query head h reads key/value head h // n_rep, so the copies of one head
    sit next to each other. With n_rep = 1 (MHA) the tensor is returned as is.

    Example: heads [A, B] with n_rep=2 -> [A, A, B, B]
    """
    if n_rep == 1:
        return x
    b, h_kv, s, d_head = x.shape
    x = x[:, :, None, :, :]                       # (B, H_kv, 1, S, d_head)
    x = x.expand(b, h_kv, n_rep, s, d_head)       # (B, H_kv, n_rep, S, d_head)
    return x.reshape(b, h_kv * n_rep, s, d_head)  # (B, H, S, d_head)


class MultiHeadAttention(nn.Module):
    """Self- or cross-attention with H query heads and H_kv key/value heads.

    Holds weights only. Everything that belongs to one request (the KV cache, the
    trace) is passed into ``forward`` by the caller, so one instance can serve many.
    """

    def __init__(self, config: MHAConfig):
        super().__init__()
        self.config = config
        c = config
        self.w_q = nn.Linear(c.d_model, c.n_heads * c.d_head, bias=c.bias)
        self.w_k = nn.Linear(c.d_model, c.n_kv_heads * c.d_head, bias=c.bias)
        self.w_v = nn.Linear(c.d_model, c.n_kv_heads * c.d_head, bias=c.bias)
        self.w_o = nn.Linear(c.n_heads * c.d_head, c.d_model, bias=c.bias)

    def forward(
        self,
        x: torch.Tensor,
        context: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        trace: Trace | None = None,
        rope_base: float | None = None,
        cache: LayerKV | None = None,
        positions: torch.Tensor | None = None,
        head_mask: torch.Tensor | None = None,
        head_fill: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x (B, N, D) -> (B, N, D).

        context   (B, S, D): keys and values come from it
                  (cross-attention); None = self-attention.
        mask      bool, True = may attend, broadcastable to (B, H, N, S).
        rope_base rotate q and k by RoPE with this base; None = no rotation.
        cache     this layer's KV cache: the new k, v are appended and q
                  attends over all of it.
        positions (N,) positions of x for RoPE; default: continue after
                  what the cache holds.
        head_mask (H,) 1 keeps a head's output, 0 switches it off (ablation,
                  lesson F1); None = every head as it is.
        head_fill (H, d_head) what a switched-off head writes instead (e.g.
                  its mean output); None = zeros.
        """
        cross = context is not None
        if cross and (cache is not None or rope_base is not None):
            raise ValueError("cross-attention takes neither a KV cache nor "
                             "RoPE in this course")
        source = x if context is None else context
        q = self.queries(x)                      # (B, H, N, d_head)
        k, v = self.keys_values(source)          # (B, H_kv, S_new, d_head) each

        if rope_base is not None:
            if positions is None:
                start = 0 if cache is None else cache.length
                stop = start + x.shape[1]
                positions = torch.arange(start, stop, device=x.device)  # (N,)
            # Rotate before caching: a cached key keeps the angle of its own
            # position.
            q = apply_rope(q, positions, rope_base)
            k = apply_rope(k, positions, rope_base)
        if cache is not None:
            k, v = cache.append(k, v)                # (B, H_kv, S, d_head) each
        return self.attend(q, k, v, mask, trace, head_mask,
                           head_fill)                # (B, N, D)

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, N, D) -> q (B, H, N, d_head): one wide w_q, cut
        into H heads."""
        return split_heads(self.w_q(x), self.config.n_heads)

    def keys_values(
        self, source: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """source (B, S, D) -> k, v (B, H_kv, S, d_head) each: x
        itself in self-attention, the encoder output C in
        cross-attention."""
        h_kv = self.config.n_kv_heads
        k = split_heads(self.w_k(source), h_kv)  # (B, H_kv, S, d_h)
        v = split_heads(self.w_v(source), h_kv)  # (B, H_kv, S, d_h)
        return k, v

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        trace: Trace | None = None,
        head_mask: torch.Tensor | None = None,
        head_fill: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """q (B, H, N, d_head) attends over k, v (B, H_kv, S,
        d_head), every head at once; w_o mixes the heads
        -> (B, N, D). mask, head_mask, head_fill: as in
        forward."""
        record(trace, "attn.q", q)
        record(trace, "attn.k", k)
        record(trace, "attn.v", v)
        # GQA/MQA: every query head in a group reads the same
        # key/value head (D4); with MHA k, v stay as they are.
        n_rep = self.config.n_rep
        att = scaled_dot_product_attention(
            q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), mask=mask)
        record(trace, "attn.scores", att.scores)    # (B, H, N, S)
        record(trace, "attn.weights", att.weights)  # (B, H, N, S)

        heads = att.output                        # (B, H, N, d_h)
        if head_mask is not None:
            # Ablation (F1): a head is removed before w_o mixes
            # the heads, so the rest of the model reads what it
            # would without it.
            keep = head_mask.view(1, -1, 1, 1)    # (1, H, 1, 1)
            keep = keep.to(heads.dtype)
            fill = (0.0 if head_fill is None      # (1, H, 1, d_h)
                    else head_fill[None, :, None, :])
            heads = heads * keep + fill * (1 - keep)
        concat = merge_heads(heads)               # (B, N, H*d_h)
        record(trace, "attn.concat", concat)
        out = self.w_o(concat)                    # (B, N, D)
        record(trace, "attn.out", out)
        return out
