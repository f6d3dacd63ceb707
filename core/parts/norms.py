"""LayerNorm and RMSNorm, written out.

Dimension legend
    B   batch
    N   positions
    D   model width; both norms act on this last axis, one token vector at a time

Both keep the shape: (B, N, D) in, (B, N, D) out.
"""
from __future__ import annotations

import torch
from torch import nn


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
    eps: float,
) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) * g + b over the last axis (Ba et al. 2016).

    Example: layer_norm(tensor([1., 3.]), ones(2), zeros(2), 0.0) -> [-1., 1.]
    """
    mean = x.mean(dim=-1, keepdim=True)                  # (B, N, 1)
    # Biased variance (divide by D, not D - 1), as in the paper.
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)   # (B, N, 1)
    y = (x - mean) / torch.sqrt(var + eps) * weight      # (B, N, D)
    return y if bias is None else y + bias


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * g over the last axis (Zhang & Sennrich 2019).

    No mean is subtracted and there is no bias: the paper finds re-scaling
    alone keeps training stable, and skipping the mean saves time.

    Example: rms_norm(tensor([3., 4.]), ones(2), 0.0) -> [0.8485, 1.1314]
             (rms = 3.5355)
    """
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (B, N, 1)
    return x / rms * weight                                      # (B, N, D)


class LayerNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))   # g starts at 1: the norm starts as pure standardisation
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in float32 even for half-precision inputs: mean(x^2) loses precision in fp16.
        return rms_norm(x.float(), self.weight.float(), self.eps).to(x.dtype)
