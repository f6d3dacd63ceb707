"""Scaled dot-product attention, written out so every intermediate can be shown.

Dimension legend
    B       batch
    H       attention heads (any leading dims are allowed: "...")
    N       query positions (target length)
    S       key/value positions (source length; S == N for self-attention)
    d_k     width of a query/key vector
    d_v     width of a value vector
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class AttentionResult:
    output: torch.Tensor   # (..., N, d_v)  weights @ v
    weights: torch.Tensor  # (..., N, S)    softmax over the last axis; each row sums to 1
    scores: torch.Tensor   # (..., N, S)    q k^T / sqrt(d_k), before the mask and the softmax


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: bool = True,
) -> AttentionResult:
    """softmax(q k^T / sqrt(d_k)) v  (Vaswani et al. 2017, eq. 1).

    ``mask`` is boolean, True where a query may look at a key; it
    broadcasts against the (..., N, S) scores. Masked cells get -inf
    before the softmax, so exp(-inf) = 0 makes their weight exactly zero
    and the row still sums to 1. ``scale=False`` drops the 1/sqrt(d_k),
    for the lesson that shows why it is there.

    Example: with q = k = [[1, 0], [0, 1]] the scores are eye(2) / sqrt(2),
    and row 0 of the weights is softmax([0.707, 0]) = [0.670, 0.330].
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)                       # (..., N, S)
    if scale:
        scores = scores / math.sqrt(d_k)
    if mask is not None:
        masked = scores.masked_fill(~mask, float("-inf"))   # (..., N, S)
    else:
        masked = scores
    weights = torch.softmax(masked, dim=-1)                 # (..., N, S)
    # A row whose every key is masked (a padding query) would be NaN:
    # it attends to nothing.
    if mask is not None:
        weights = torch.nan_to_num(weights, nan=0.0)
    output = weights @ v                                    # (..., N, d_v)
    return AttentionResult(output=output, weights=weights, scores=scores)


def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of each distribution along the last axis (0 · log 0 counts as 0): log(S)
    for a uniform row, 0 for a one-hot one. Rows of attention weights (..., N, S) -> (..., N);
    D1's draw distributions (T, V) -> (T,).

    Example: row_entropy(torch.tensor([[0.5, 0.5], [1.0, 0.0]])) -> [0.693, 0.0]
    """
    p = weights.clamp_min(1e-30)
    return -(weights * p.log()).sum(dim=-1) + 0.0           # (...,); + 0.0: a one-hot row is 0, not "-0.00"


def scaling_experiment(q: torch.Tensor, k: torch.Tensor) -> dict[str, torch.Tensor]:
    """Why divide by sqrt(d_k): the same q, k attended with and without the scale.

    For q, k with independent unit-variance entries, q·k has variance d_k, so without the
    scale the scores spread out as d_k grows and softmax rows collapse towards one-hot
    (low entropy). Returns the raw and scaled scores and the row entropies of both.
    """
    scaled = scaled_dot_product_attention(q, k, k, scale=True)
    raw = scaled_dot_product_attention(q, k, k, scale=False)
    return {
        "scores_raw": raw.scores,                               # (N, S), variance ≈ d_k
        "scores_scaled": scaled.scores,                         # (N, S), variance ≈ 1
        "entropy_raw": row_entropy(raw.weights),                # (N,)
        "entropy_scaled": row_entropy(scaled.weights),          # (N,)
    }


def entropy_by_width(widths: list[int], n: int = 64, seed: int = 0) -> dict[str, torch.Tensor]:
    """Mean row entropy of softmax(q kᵀ) with and without 1/sqrt(d_k), for each width d_k.

    Example: entropy_by_width([1, 512])["raw"] falls from ≈3.5 towards 0 while
    ["scaled"] stays near the same value for both widths.
    """
    g = torch.Generator().manual_seed(seed)
    raw, scaled = [], []
    for d in widths:
        q, k = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)   # (n, d) each
        stats = scaling_experiment(q, k)
        raw.append(stats["entropy_raw"].mean())
        scaled.append(stats["entropy_scaled"].mean())
    return {"raw": torch.stack(raw), "scaled": torch.stack(scaled)}              # (len(widths),)
