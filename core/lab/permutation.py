"""Attention alone is blind to order: permute the tokens, and the outputs permute the same way.

Dimension legend
    N   tokens
    D   model width
    d_k width of queries, keys and values here (d_v = d_k)

For a permutation matrix P, softmax((PX W_q)(PX W_k)^T / sqrt(d_k)) (PX W_v)
= P softmax(X W_q (X W_k)^T / sqrt(d_k)) P^T P X W_v = P Attention(X): self-attention is
permutation-equivariant. 「我和你」 and 「你和我」 get the same set of output rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.parts.attention import scaled_dot_product_attention


@dataclass(frozen=True)
class EquivarianceCheck:
    output: torch.Tensor           # (N, d_k) attention of X
    output_permuted: torch.Tensor  # (N, d_k) attention of X[perm]
    matched: torch.Tensor          # (N, d_k) output[perm]: the first output, rows reordered
    difference: torch.Tensor       # (N, d_k) matched - output_permuted; all ~0 without positions
    error: float                   # max |output[perm] - output_permuted|; ~1e-7 means equivariant


def reverse_order(n: int) -> list[int]:
    """Example: reverse_order(3) -> [2, 1, 0]  (「我和你」 -> 「你和我」)"""
    return list(range(n - 1, -1, -1))


def equivariance(
    x: torch.Tensor, perm: list[int], w_q: torch.Tensor, w_k: torch.Tensor,
    w_v: torch.Tensor, positions: torch.Tensor | None = None,
) -> EquivarianceCheck:
    """Attend over X and over X[perm] with the same weights and compare.

    ``positions`` (N, D), if given, is added to both inputs *after*
    permuting, as a model does: slot t always gets PE(t), whatever token
    sits there. Then the error is large.
    Example: with x = the rows of 「我和你」 and perm = [2, 1, 0],
             error < 1e-6.
    """
    index = torch.tensor(perm, dtype=torch.long, device=x.device)  # (N,)
    x_perm = x[index]                                           # (N, D)
    if positions is not None:
        x, x_perm = x + positions, x_perm + positions           # (N, D) each

    def attend(x: torch.Tensor) -> torch.Tensor:
        return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v).output

    out, out_perm = attend(x), attend(x_perm)                   # (N, d_k) each
    matched = out[index]                                        # (N, d_k)
    difference = matched - out_perm                             # (N, d_k)
    error = float(difference.abs().max()) if len(perm) else 0.0
    return EquivarianceCheck(out, out_perm, matched, difference, error)
