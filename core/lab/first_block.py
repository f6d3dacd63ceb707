"""What the first block of the original Transformer reads: x0 = E[ids] + PE (lesson A3).

Dimension legend
    N   tokens of the text
    D   model width

A lookup gives the same row to every copy of a character; adding PE makes the copies differ,
and since E[id] - E[id] = 0 the difference of the two rows of x0 is exactly PE(p) - PE(p').
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RepeatedRows:
    token: str                # the first character that occurs twice
    positions: tuple[int, int]  # p < p', both counted from 0
    rows: torch.Tensor        # (2, D) x0[p] and x0[p']
    difference: torch.Tensor  # (D,) x0[p] - x0[p']
    embedding_gap: float      # max |E[p] - E[p']|: 0, one id, one row
    pe_gap: float             # max |(x0[p] - x0[p']) - (PE(p) - PE(p'))|: rounding only


def first_repeat(tokens: list[str]) -> tuple[int, int] | None:
    """Positions (p, p') of the first token whose second copy comes first in the text.

    Example: first_repeat(list("明月光明月")) -> (0, 3); first_repeat(list("我和你")) -> None
    """
    seen: dict[str, int] = {}
    for i, t in enumerate(tokens):
        if t in seen:
            return seen[t], i
        seen[t] = i
    return None


def repeated_rows(
    tokens: list[str], emb: torch.Tensor, pe: torch.Tensor, x0: torch.Tensor
) -> RepeatedRows | None:
    """The two rows of x0 that belong to the first repeated character, and
    how far each part of the sum differs between them. None without a repeat.

    Example: tokens 明月明, emb rows e, f, e: difference = PE(0) - PE(2),
             embedding_gap = 0.0
    """
    where = first_repeat(tokens)
    if where is None:
        return None
    p, q = where
    rows = x0[[p, q]]                                        # (2, D)
    difference = rows[0] - rows[1]                           # (D,)
    return RepeatedRows(
        tokens[p], (p, q), rows, difference,
        float((emb[p] - emb[q]).abs().max()),
        float((difference - (pe[p] - pe[q])).abs().max()))
