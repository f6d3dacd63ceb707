"""Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5).

Dimension legend
    P   positions (0, 1, ..., P - 1; fractional positions are allowed for smooth curves)
    D   model width, d_model; even, because dimensions come in (sin, cos) pairs
    K   offsets k of the similarity PE(p) . PE(p + k)

    PE(pos, 2i)     = sin(pos / 10000^(2i/D))
    PE(pos, 2i + 1) = cos(pos / 10000^(2i/D))

Pair i is a wave of wavelength 2*pi * 10000^(2i/D) positions: from 2*pi (about 6 positions)
for i = 0 up to nearly 2*pi * 10000 for the last pair, like the hands of a clock at many speeds.
"""
from __future__ import annotations

import math

import torch

BASE = 10000.0


def frequencies(d_model: int, base: float = BASE) -> torch.Tensor:
    """omega_i = 1 / base^(2i/D) for i = 0 .. D/2 - 1, radians per position, in float64.

    The speeds of the sinusoidal table (pair i is sin and cos of pos * omega_i) and of RoPE,
    which turns pair i of a query or key (D = d_head there) by pos * theta_i with the same
    theta_i = base^(-2i/d) (Su et al. 2021): pair 0 turns fastest (1 radian per position),
    the last pair slowest, like the hands of a clock at many speeds.

    Example: frequencies(4, base=100.0) -> tensor([1.0, 0.1])
    """
    if d_model <= 0 or d_model % 2:
        raise ValueError(
            f"d_model must be a positive even number, got {d_model}")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (D/2,)
    return base ** (-two_i / d_model)                          # (D/2,)


def wavelengths(d_model: int, base: float = BASE) -> torch.Tensor:
    """Positions per full turn of each dimension: 2*pi / omega_i, repeated for sin and cos.

    Example: wavelengths(4, base=100.0) -> [6.28, 6.28, 62.8, 62.8]
    """
    return (2 * math.pi / frequencies(d_model, base)).repeat_interleave(2)  # (D,)


def sinusoidal_at(
    positions: torch.Tensor, d_model: int, base: float = BASE
) -> torch.Tensor:
    """The encoding of any (even fractional) positions: sin in the even
    columns, cos in the odd ones.

    Example: sinusoidal_at(torch.tensor([0.0, 1.0]), 2)
             -> [[0.0, 1.0], [0.841, 0.540]]
    """
    p = positions.to(torch.float64)[:, None]                 # (P, 1)
    angles = p * frequencies(d_model, base)                  # (P, D/2)
    pe = torch.empty(len(positions), d_model, dtype=torch.float64)  # (P, D)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(torch.float32)                              # (P, D)


def sinusoidal(n_positions: int, d_model: int, device: str = "cpu") -> torch.Tensor:
    """The (n_positions, d_model) table added to the token embeddings of positions 0..P-1.

    Example: sinusoidal(2, 4)[1] -> [sin 1, cos 1, sin 0.01, cos 0.01] = [0.841, 0.540, 0.010, 1.000]
    """
    return sinusoidal_at(torch.arange(n_positions), d_model).to(device)          # (P, D)


def offset_similarity(pe: torch.Tensor, p: int) -> torch.Tensor:
    """PE(p) . PE(p + k) for k = 0 .. P - 1 - p.

    Each pair contributes sin(a)sin(b) + cos(a)cos(b) = cos(k * omega_i),
    so the sum is sum_i cos(k * omega_i): it depends on the offset k only,
    never on p, and equals D/2 at k = 0.
    Example: offset_similarity(sinusoidal(50, 8), 10)[0] -> 4.0
    """
    return pe[p:] @ pe[p]                                    # (K,) = (P - p,)


def offset_similarities(pe: torch.Tensor, starts: list[int]) -> list[torch.Tensor]:
    """``offset_similarity(pe, p)`` for every p in ``starts`` from one product: every dot product
    PE(a) . PE(b) at once (the Gram matrix), row p read from column p on. A3's live slider sends
    all of them with the page.
    Example: offset_similarities(sinusoidal(50, 8), [0, 10])[1][0] -> 4.0
    """
    gram = pe @ pe.T                                         # (P, P)
    return [gram[p, p:] for p in starts]                     # (P - p,) each


def first_block_input(
    token_embeddings: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """x_0 = embedding + PE: what the first block of the original
    Transformer reads.

    Returns (PE, x_0), both (N, D).
    Example: first_block_input(torch.zeros(3, 4))[1] == sinusoidal(3, 4)
    """
    n, d = token_embeddings.shape
    pe = sinusoidal(n, d, device=str(token_embeddings.device))  # (N, D)
    return pe, token_embeddings + pe                             # (N, D) each


def dimension_waves(n_positions: int, d_model: int, dims: list[int], per_position: int = 8
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Chosen columns of the PE table as continuous waves, and the integer positions that sample them.

    Returns (x_smooth (S,), waves (S, len(dims)), x (P,), samples (P, len(dims))).
    Example: dimension_waves(4, 8, [0])[3][:, 0] -> sin(0), sin(1), sin(2), sin(3)
    """
    x_smooth = torch.linspace(0, n_positions - 1, per_position * (n_positions - 1) + 1)  # (S,)
    x = torch.arange(n_positions)                                                         # (P,)
    return (x_smooth, sinusoidal_at(x_smooth, d_model)[:, dims],                          # (S, len(dims))
            x, sinusoidal(n_positions, d_model)[:, dims])                                 # (P, len(dims))
