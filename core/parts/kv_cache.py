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

from dataclasses import dataclass, replace

import torch

from core.parts.trace import Trace


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

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.layers[layer].append(k, v)

    def keys(self, layer: int) -> torch.Tensor | None:
        return self.layers[layer].k

    def values(self, layer: int) -> torch.Tensor | None:
        return self.layers[layer].v


# --- How big the cache is, and what it holds step by step (lessons D2-D4) ---------------

# Bytes per stored value. fp16 and bf16 both take 2; "int4" packs two values in a byte.
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "fp16": 2, "int8": 1, "int4": 0.5}


def kv_cache_bytes(
    cfg, seq_len: int, batch: int = 1, bytes_per_value: float = 2
) -> int:
    """Bytes of the KV cache: 2 (K and V) × layers × kv_heads × head_dim
    × seq_len × batch × bytes per value.

    ``cfg`` is a core.calc.configs.ArchConfig (anything with n_layers,
    n_kv_heads, head_dim). Query heads do not appear: under GQA/MQA only
    the H_kv shared heads are stored.

    Example: LLaMA-2-7B (32 layers, 32 KV heads, head_dim 128), fp16,
             4,096 tokens: 2 * 32 * 32 * 128 * 4096 * 1 * 2
             = 2_147_483_648 bytes (2 GiB, 512 KiB a token)
    """
    values = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * seq_len * batch
    return int(values * bytes_per_value)


@dataclass(frozen=True)
class CacheStep:
    """One step of a cached generation seen from inside, every layer stacked on axis 0."""
    fed: int                # N, positions fed in this step: the whole prompt first, then 1
    chosen: int             # token id picked from the last fed position's logits
    q: torch.Tensor         # (L, H, N, d_head) queries of the fed positions only: never cached
    k: torch.Tensor         # (L, H_kv, S, d_head) the key cache after the step
    v: torch.Tensor         # (L, H_kv, S, d_head) the value cache after the step
    weights: torch.Tensor   # (L, H, N, S) attention of the fed positions over the whole cache


def watch_cache(gen) -> list[CacheStep]:
    """Run a cached ``core.models.generate.Generation`` to its end, keeping what each step computed.

    Step 0 feeds the prompt (P positions) and leaves P rows in every layer's cache; step t
    feeds one token and leaves P + t.
    """
    steps = []
    n_layers = len(gen.cache.layers)
    while not gen.done:
        trace = Trace()
        step = gen.step(trace)
        q, k, v, w = (torch.cat([trace[f"blocks.{i}.attn.{name}"] for i in range(n_layers)]).cpu()
                      for name in ("q", "k", "v", "weights"))                # (L, ...) each
        steps.append(CacheStep(step.fed, step.chosen, q, k, v, w))
    return steps


def cache_history(steps: list[CacheStep], layer: int, head: int, upto: int) -> dict[str, torch.Tensor | int]:
    """What one layer and query head hold after step ``upto``, rebuilt from the cached steps.

    q       (S, d_head)  every query computed so far; rows of earlier steps are never read again
    k, v    (S, d_head)  the cache of the KV head this query head reads: head // (H / H_kv)
    weights (S, S)       row j is the attention row computed when position j was fed, 0 above
                         the diagonal. Stacked, the rows are the full causal attention matrix
                         that recomputing the whole prefix would give.
    """
    done = steps[: upto + 1]
    h, h_kv = done[0].q.shape[1], done[0].k.shape[1]
    kv_head = head // (h // h_kv)
    s = done[-1].k.shape[2]
    q = torch.cat([step.q[layer, head] for step in done])             # (S, d_head)
    weights = torch.zeros(s, s)                                       # (S, S)
    row = 0
    for step in done:
        w = step.weights[layer, head]                                 # (N, S at that step)
        weights[row: row + w.shape[0], : w.shape[1]] = w
        row += w.shape[0]
    return {"q": q, "k": done[-1].k[layer, kv_head], "v": done[-1].v[layer, kv_head],
            "weights": weights, "kv_head": kv_head}


def cache_histories(steps: list[CacheStep], layer: int, head: int, uptos: list[int]) -> list[dict]:
    """``cache_history`` after each step in ``uptos``, in one call (D2's live step slider sends
    them all with the page): entry i is exactly ``cache_history(steps, layer, head, uptos[i])``.
    Example: cache_histories(steps, 0, 0, [0, 1])[1]["k"].shape[0] -> prompt length + 1"""
    return [cache_history(steps, layer, head, t) for t in uptos]


def kv_head_choices(n_heads: int) -> list[int]:
    """Every valid number of KV heads: the divisors of H, from MQA (1) to MHA (H).

    Example: kv_head_choices(12) -> [1, 2, 3, 4, 6, 12]
    """
    return [h_kv for h_kv in range(1, n_heads + 1) if n_heads % h_kv == 0]


def kv_groups(n_heads: int, n_kv_heads: int) -> list[int]:
    """The KV head each query head reads: h // (H / H_kv), as
    core.parts.mha.repeat_kv lays them out.

    Example: kv_groups(8, 2) -> [0, 0, 0, 0, 1, 1, 1, 1]   (GQA, groups of 4)
             kv_groups(4, 1) -> [0, 0, 0, 0]               (MQA)
    """
    if n_kv_heads <= 0 or n_heads % n_kv_heads:
        raise ValueError(f"n_heads={n_heads} must be a multiple of "
                         f"n_kv_heads={n_kv_heads}")
    return [h // (n_heads // n_kv_heads) for h in range(n_heads)]


def cache_bytes_by_kv_heads(
    cfg, seq_len: int, batch: int = 1, bytes_per_value: float = 2
) -> dict[int, int]:
    """KV cache bytes for every valid H_kv of ``cfg``: MQA (1) up to MHA
    (H), the rest of the config unchanged.

    Example: LLaMA-2-7B at 4,096 tokens in fp16
             -> {1: 64 MiB, 2: 128 MiB, ..., 32: 2 GiB}
    """
    out = {}
    for h_kv in kv_head_choices(cfg.n_heads):
        variant = replace(cfg, n_kv_heads=h_kv)
        out[h_kv] = kv_cache_bytes(variant, seq_len, batch, bytes_per_value)
    return out
