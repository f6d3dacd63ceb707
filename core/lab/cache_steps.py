"""D2's experiment: a cached generation watched step by step, and what one query head's cache
holds after each step.

Dimension legend
    L       layers
    H       query heads;  H_kv key/value heads
    P       prompt positions;  S positions cached after a step
    N       positions fed in one step: the whole prompt first, then 1
    d_head  width of one head
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.parts.trace import Trace


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
