"""Rotary position embedding, RoPE (Su et al. 2021, "RoFormer").

Dimension legend
    B       batch
    H       heads (any leading dims are allowed: "...")
    N       positions of the vectors being rotated
    d       width of one query/key vector (d_head); must be even
    P       number of rotated pairs, d / 2

Each pair of dimensions (2i, 2i+1) of a vector at position m is turned by the angle
m * theta_i, theta_i = base^(-2i/d). Rotating q by m*theta and k by n*theta leaves their
dot product a function of m - n only: position is absolute in form, relative in effect.
The same rotation is written twice, with sin/cos on real pairs and as a multiplication
by e^{i m theta} on complex numbers, so the lesson can show that they agree.
"""
from __future__ import annotations

import torch

from core.parts.positional import frequencies


def rope_angles(positions: torch.Tensor, d: int, base: float = 10000.0) -> torch.Tensor:
    """The angle m * theta_i of every position m and pair i, in float32; theta_i = base^(-2i/d)
    are the sinusoidal encoding's frequencies (core.parts.positional.frequencies).

    Example: rope_angles(torch.tensor([0, 2]), 4, base=100.0) -> [[0.0, 0.0], [2.0, 0.2]]
    """
    theta = frequencies(d, base).float().to(positions.device)  # (P,)
    return positions.float()[..., None] * theta                # (N, P)


def rotate_pairs(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Turn each pair (x[2i], x[2i+1]) by its angle: the real-valued form.

        y[2i]   = x[2i] cos a - x[2i+1] sin a
        y[2i+1] = x[2i] sin a + x[2i+1] cos a

    ``angles`` (N, P) broadcasts against x (..., N, d).

    Example: rotate_pairs(torch.tensor([[1.0, 0.0]]),
                          torch.tensor([[pi / 2]])) -> [[0.0, 1.0]]
    """
    x_even = x[..., 0::2].float()             # (..., N, P)
    x_odd = x[..., 1::2].float()              # (..., N, P)
    cos, sin = angles.cos(), angles.sin()     # (N, P)
    y_even = x_even * cos - x_odd * sin       # (..., N, P)
    y_odd = x_even * sin + x_odd * cos        # (..., N, P)
    # Interleave back so pair i sits again at dimensions (2i, 2i+1).
    y = torch.stack([y_even, y_odd], dim=-1)  # (..., N, P, 2)
    return y.flatten(-2).to(x.dtype)          # (..., N, d)


def apply_rope(
    x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0
) -> torch.Tensor:
    """Rotate queries or keys x (..., N, d) that sit at ``positions`` (N,).

    Position 0 has angle 0, so it is left unchanged.

    Example: apply_rope(torch.tensor([[1.0, 0.0]]), torch.tensor([1]), base=1.0)
             -> [[cos 1, sin 1]] = [[0.5403, 0.8415]]
    """
    angles = rope_angles(positions, x.shape[-1], base)  # (N, P)
    return rotate_pairs(x, angles)                       # (..., N, d)


def apply_rope_complex(
    x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0
) -> torch.Tensor:
    """The same rotation as complex multiplication:
    (x[2i] + i x[2i+1]) * e^{i m theta_i}.

    Example: apply_rope_complex(torch.tensor([[1.0, 0.0]]),
                                torch.tensor([1]), base=1.0)
             -> [[0.5403, 0.8415]], equal to apply_rope
    """
    angles = rope_angles(positions, x.shape[-1], base)    # (N, P)
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)       # (..., N, P, 2)
    z = torch.view_as_complex(pairs.contiguous())         # (..., N, P) complex
    turn = torch.polar(torch.ones_like(angles), angles)   # (N, P) e^{i m theta}
    turned = z * turn                                     # (..., N, P) complex
    return torch.view_as_real(turned).flatten(-2).to(x.dtype)  # (..., N, d)
