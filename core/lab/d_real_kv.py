"""The KV cache and grouped-query attention of a real model (D2, D4), measured.

Dimension legend
    L       blocks (30 in SmolLM2)
    H       query heads (9);  H_kv key/value heads (3);  d_head 64
    N       tokens of the prompt

What core/calc counts from a config, measured here on a model's own tensors:
the bytes its KV cache holds after N tokens (D2), and which query heads read
which key/value head, with the attention each of them computed (D4).
"""
from __future__ import annotations

import torch

from core.calc.kv_cache import kv_groups
from core.parts.kv_cache import KVCache
from core.parts.trace import Trace


def cache_nbytes(cache: KVCache) -> int:
    """Bytes the cache's tensors take: every layer's k and v, as stored.

    Example: SmolLM2, 10 tokens, float32: 30 · 2 · (3 · 10 · 64) · 4 = 460,800
    """
    return sum(t.numel() * t.element_size()
               for layer in cache.layers for t in (layer.k, layer.v)
               if t is not None)


@torch.inference_mode()
def measured_cache(model: torch.nn.Module, ids: list[int]) -> dict[str, int]:
    """Feed ``ids`` into a fresh cache and weigh it: as the model keeps it
    (float32 here), and the same values in fp16, as llama.cpp keeps a cache.

    Example: SmolLM2, 32 tokens -> {"tokens": 32,
             "bytes": 1_474_560 (46,080 a token),
             "bytes_fp16": 737_280 (23,040 a token), "bytes_per_value": 4}
    """
    device = next(model.parameters()).device
    cache = model.new_cache()
    ids_t = torch.tensor([ids], device=device)              # (1, N)
    model(ids_t, cache=cache)                               # N rows a layer
    half = KVCache(len(cache.layers))
    for mine, layer in zip(half.layers, cache.layers, strict=True):
        mine.k = layer.k.half()                         # (1, H_kv, N, d_head)
        mine.v = layer.v.half()                         # (1, H_kv, N, d_head)
    return {"tokens": cache.length, "bytes": cache_nbytes(cache),
            "bytes_fp16": cache_nbytes(half),
            "bytes_per_value": cache.layers[0].k.element_size()}


def projection_shapes(model: torch.nn.Module) -> dict[str, tuple[int, int]]:
    """Block 0's attention matrices, (out, in) as nn.Linear holds them: w_k
    and w_v are narrower than w_q by H / H_kv, which is all GQA is in the
    weights.

    Example: SmolLM2 -> {"w_q": (576, 576), "w_k": (192, 576),
                         "w_v": (192, 576), "w_o": (576, 576)}
    """
    attn = model.blocks[0].attn
    return {name: tuple(getattr(attn, name).weight.shape)
            for name in ("w_q", "w_k", "w_v", "w_o")}


@torch.inference_mode()
def group_attention(model: torch.nn.Module, ids: list[int],
                    layer: int) -> list[dict]:
    """The attention of ``layer`` on ``ids`` from one traced forward pass,
    grouped by the key/value head each query head reads. One entry per KV
    head g:

    heads    the query heads h with h // (H / H_kv) == g (repeat_kv's order)
    weights  (len(heads), N, N) their attention weights
    keys     (N, d_head) the one key matrix all of them read

    Example: SmolLM2 -> heads [0, 1, 2], [3, 4, 5], [6, 7, 8]
    """
    c = model.config
    device = next(model.parameters()).device
    trace = Trace()
    model(torch.tensor([ids], device=device), trace=trace)
    blk = f"blocks.{layer}.attn"
    weights = trace[f"{blk}.weights"][0].float().cpu()     # (H, N, N)
    keys = trace[f"{blk}.k"][0].float().cpu()              # (H_kv, N, d_head)
    groups = kv_groups(c.n_heads, c.n_kv_heads)
    out = []
    for g in range(c.n_kv_heads):
        heads = [h for h in range(c.n_heads) if groups[h] == g]
        out.append({"heads": heads, "weights": weights[heads],
                    "keys": keys[g]})
    return out
