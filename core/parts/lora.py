"""LoRA: a frozen linear layer plus a trainable low-rank update (Hu et al. 2021, "LoRA").

Dimension legend
    B       batch
    N       positions
    d_in    input width of the wrapped linear layer
    d_out   output width of the wrapped linear layer
    r       rank of the update, r << min(d_in, d_out)

h = W x + (alpha / r) * B (A x): W (d_out, d_in) stays as it is; only A (r, d_in) and
B (d_out, r) learn. A starts random and B at zero, so the update B A is zero at step 0
and fine-tuning starts exactly from the base model. Dividing by r (sec. 4.1 of the paper)
lets one alpha serve every rank without retuning the learning rate.

The base weight is borrowed, never written: the course model is shared by every student
(st.cache_resource), so merge() builds a new matrix instead of adding B A into W in place,
and unmerge() drops it (exact, where "W -= BA" would leave rounding behind).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    """A bias-free linear layer W with a rank-r adapter; only A and B are parameters."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, generator: torch.Generator | None = None):
        super().__init__()
        if r <= 0:
            raise ValueError(f"rank r must be positive, got {r}")
        if base.bias is not None:
            raise ValueError("the course model's projections have no bias")
        d_out, d_in = base.weight.shape
        # detach(): the same memory as the shared weight, but outside autograd and not a
        # parameter of this module, so no gradient or optimiser state is ever made for it.
        self.register_buffer("weight", base.weight.detach(), persistent=False)  # (d_out, d_in)
        self.r, self.alpha = r, float(alpha)
        dev = base.weight.device
        # A like nn.Linear's own init (Kaiming-uniform, bound 1/sqrt(d_in)); B zero (paper sec. 4.1).
        bound = 1.0 / math.sqrt(d_in)
        a = torch.rand(r, d_in, generator=generator) * 2 * bound - bound
        self.A = nn.Parameter(a.to(dev))                                   # (r, d_in)
        self.B = nn.Parameter(torch.zeros(d_out, r, device=dev))           # (d_out, r)
        self.merged: torch.Tensor | None = None

    @property
    def scale(self) -> float:
        """alpha / r, the factor in front of B A."""
        return self.alpha / self.r

    def delta(self) -> torch.Tensor:
        """ΔW = (alpha / r) B A, (d_out, d_in): a matrix of rank at most r."""
        return self.scale * (self.B @ self.A)                             # (d_out, d_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x (B, N, d_in) -> (B, N, d_out)
        if self.merged is not None:
            return F.linear(x, self.merged)  # Ŵ x
        base = F.linear(x, self.weight)          # W x      (B, N, d_out)
        low = F.linear(x, self.A)                # A x      (B, N, r)
        update = F.linear(low, self.B)           # B A x    (B, N, d_out)
        return base + self.scale * update

    @torch.no_grad()
    def merge(self) -> None:
        """Ŵ = W + (alpha / r) B A, in a matrix of its own
        (W is shared: it is never written)."""
        self.merged = self.weight + self.delta()  # (d_out, d_in)

    def unmerge(self) -> None:
        self.merged = None

    def extra_repr(self) -> str:
        d_out, d_in = self.weight.shape
        return f"d_in={d_in}, d_out={d_out}, r={self.r}, alpha={self.alpha:g}"
