"""Activation functions side by side: ReLU, GELU and SiLU (the one inside SwiGLU).

Dimension legend
    X   points at which the curves are evaluated
"""
from __future__ import annotations

import math

import torch

from core.parts.ffn import silu


def relu(x: torch.Tensor) -> torch.Tensor:
    """max(0, x): the original Transformer's feed-forward (Vaswani et al. 2017).

    Example: relu(torch.tensor([-1.0, 2.0])) -> [0., 2.]
    """
    return x.clamp(min=0)


def gelu(x: torch.Tensor) -> torch.Tensor:
    """x * Phi(x), Phi the standard normal CDF (Hendrycks & Gimpel 2016;
    GPT-2, BERT).

    Example: gelu(torch.tensor([1.0])) -> [0.8413]
    """
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2.0)))


def activation_curves(lo: float = -5.0, hi: float = 5.0, points: int = 201) -> dict[str, torch.Tensor]:
    """x and ReLU, GELU, SiLU of x on an even grid, and where SiLU dips lowest.

    Example: activation_curves()["silu_min"] -> -0.2784 (the true minimum is at x ≈ -1.278)
    """
    x = torch.linspace(lo, hi, points)                                 # (X,)
    s = silu(x)                                                        # (X,)
    return {"x": x, "relu": relu(x), "gelu": gelu(x), "silu": s, "silu_min": s.min(), "silu_argmin": x[s.argmin()]}
