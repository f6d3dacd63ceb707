"""The KV cache: keys and values of past tokens, held by the caller.

Dimension legend
    B       batch
    H_kv    key/value heads (fewer than query heads under GQA/MQA)
    S       positions cached so far
    N       new positions appended in one step
    d_head  width of one head

In a causal decoder the key and value of a past token never change, so generation
computes K and V for the new token only and appends them here (D2). Queries are not
cached: a past query is never used again.

The cache is an object the caller creates and passes in, never an attribute of the
model: one model is shared by every student, each generation owns its own cache.
"""
from __future__ import annotations

import torch


class LayerKV:
    """Keys and values of one attention layer, (B, H_kv, S, d_head) each, or None when empty."""

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def append(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' k, v (B, H_kv, N, d_head); return the
        whole cache (B, H_kv, S+N, d_head)."""
        if self.k is None:
            self.k, self.v = k, v
        else:
            # torch.cat copies the whole cache each step; clear enough for a
            # course model, and the bench shows it is still far cheaper than
            # recomputing the prefix.
            self.k = torch.cat([self.k, k], dim=-2)  # (B, H_kv, S+N, d_head)
            self.v = torch.cat([self.v, v], dim=-2)  # (B, H_kv, S+N, d_head)
        return self.k, self.v


class KVCache:
    """One LayerKV per decoder block; ``cache.layers[i].k`` is layer i's key matrix."""

    def __init__(self, n_layers: int):
        self.layers: list[LayerKV] = [LayerKV() for _ in range(n_layers)]

    @property
    def length(self) -> int:
        """Positions cached so far (every layer holds the same number)."""
        return self.layers[0].length if self.layers else 0
