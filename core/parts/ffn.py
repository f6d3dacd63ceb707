"""The SwiGLU feed-forward network of LLaMA (Shazeer 2020, "GLU Variants Improve Transformer").

Dimension legend
    B   batch
    N   positions
    D   model width
    F   hidden width of the feed-forward (ffn_hidden)

FFN(x) = w2( SiLU(w1 x) ⊙ w3 x ): w1 x decides how much of each hidden unit passes
(the gate), w3 x is what passes (the value). Each position is transformed on its own.
"""
from __future__ import annotations

import torch
from torch import nn

from core.parts.trace import Trace, record


def silu(x: torch.Tensor) -> torch.Tensor:
    """SiLU(x) = x * sigmoid(x), also called swish (Ramachandran et al. 2017).

    Smooth like GELU, zero-ish for very negative x, about x for large x.

    Example: silu(tensor([-1., 0., 1.])) -> [-0.2689, 0.0, 0.7311]
    """
    return x * torch.sigmoid(x)


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, hidden: int, bias: bool = False):
        super().__init__()
        # w1: the gate; w3: the value ("up"); w2: back to the residual width
        self.w1 = nn.Linear(d_model, hidden, bias=bias)
        self.w3 = nn.Linear(d_model, hidden, bias=bias)
        self.w2 = nn.Linear(hidden, d_model, bias=bias)

    def forward(
        self, x: torch.Tensor, trace: Trace | None = None
    ) -> torch.Tensor:
        gate = silu(self.w1(x))      # (B, N, F)
        up = self.w3(x)              # (B, N, F)
        record(trace, "ffn.gate", gate)
        record(trace, "ffn.up", up)
        return self.w2(gate * up)    # (B, N, D)
