"""Boolean attention masks: True where a query may attend to a key.

Dimension legend
    B   batch
    N   query positions
    S   key positions
"""
from __future__ import annotations

import torch


def causal_mask(
    n: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """(n, n) bool, True on and below the diagonal: position t sees 0..t only.

    Example: causal_mask(3) ->
        [[T, F, F],
         [T, T, F],
         [T, T, T]]
    """
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (N, N)


def padding_mask(
    lengths: list[int], n: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """(B, 1, n) bool: key j of sequence b is real (True) when j < lengths[b].

    The middle axis of size 1 broadcasts over the queries, so every query of a
    sequence ignores the same padding keys.

    Example: padding_mask([2, 3], 3) -> [[[T, T, F]], [[T, T, T]]]
    """
    positions = torch.arange(n, device=device)                 # (N,)
    lens = torch.tensor(lengths, device=device).unsqueeze(-1)  # (B, 1)
    return (positions < lens).unsqueeze(1)                     # (B, 1, N)


def additive(mask: torch.Tensor) -> torch.Tensor:
    """The same mask as numbers to add to the scores: 0 where allowed, -inf where not.

    Example: additive(causal_mask(2)) -> [[0, -inf], [0, 0]]
    """
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    return out.masked_fill(~mask, float("-inf"))
