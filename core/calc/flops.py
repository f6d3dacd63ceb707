"""The cost of one forward step of a decoder: FLOPs and bytes counted, seconds measured.

Dimension legend (as in core/calc/configs.py)
    B       batch: sequences decoded side by side
    N       new positions fed in this step (the prompt at prefill, 1 per decoding step)
    P       positions already in the KV cache before the step
    T       P + N, the context the last new token attends over
    L       layers;  H query heads;  H_kv key/value heads;  d_head = D / H
    W       weights a token multiplies with (embedding lookups and norms excluded)

Counting rules (Kaplan et al. 2020, sec. 2.1): a multiply-add is 2 FLOPs, so each new
token costs 2·W FLOPs in the linear layers, plus 4·d_head FLOPs per query head and per
key it attends to (2 for q·k, 2 for weight·v). Causal attention lets position p see
p + 1 keys. Bytes are what must come from HBM at least once: every weight, and the KV
cache rows read or written. Activations are left out: with fused kernels
(FlashAttention, Dao et al. 2022) the (N, T) scores never leave the chip.
"""
from __future__ import annotations

import time
from dataclasses import replace

import torch

from core.calc.configs import ArchConfig
from core.calc.kv_cache import kv_cache_bytes
from core.calc.params import attention_params, expert_params, param_breakdown
from core.calc.timing import one_at_a_time


def attended_pairs(n_new: int, past: int) -> int:
    """(query, key) pairs a causal step computes: new query i (0-based) sees past + i + 1 keys.

    Example: attended_pairs(1, 9) -> 10          (one decoding step over 10 tokens)
             attended_pairs(4, 0) -> 1+2+3+4 = 10 (a 4-token prefill)
    """
    return n_new * past + n_new * (n_new + 1) // 2


def matmul_weights(c: ArchConfig, tokens: int = 1) -> int:
    """W: weights that ``tokens`` tokens of one step multiply with, hence must be read.

    A mixture of experts reads at most k experts per token, never more than all E of them,
    so a batch touches more experts than one token does (an upper bound: every token
    routed to different experts). A tied output projection is the embedding matrix.

    Example: matmul_weights(get("llama-2-7b")) -> 6_738_415_616 - 32000*4096 - 65*4096
             = 6_607_077_376  (all but the embedding lookup and the RMSNorm gains)
    """
    parts = param_breakdown(c)
    experts = min(c.n_experts, c.experts_per_token * max(tokens, 1))
    output = c.vocab_size * c.d_model if c.tied_embeddings else parts["output"]
    return (c.n_layers * attention_params(c) + c.n_layers * experts * expert_params(c)
            + parts["router"] + output)


def step_flops(c: ArchConfig, n_new: int, past: int = 0, batch: int = 1) -> int:
    """FLOPs of one forward step: ``n_new`` new tokens with ``past`` tokens
    in the cache.

    Example: a 4-layer, 4-head, d_head 32 model with W = 1,000,000, one
    decoding step at T = 10: 2·1e6 + 4·32·4·4·10 = 2,020,480
    """
    per_token = 2 * matmul_weights(c, tokens=1) * n_new
    pairs = attended_pairs(n_new, past)
    attention = 4 * c.n_layers * c.n_heads * c.head_dim * pairs
    return batch * (per_token + attention)


def decode_flops(c: ArchConfig, context: int, cache: bool = True, batch: int = 1) -> int:
    """FLOPs to produce the token at position ``context`` (T = context tokens attended).

    With the cache only the newest token is fed (N = 1, P = T - 1); without it the whole
    prefix is fed again (N = T, P = 0), and all but the last row of that work was already
    done at an earlier step: the cache turns a cost growing like T² per step into one
    growing like T.

    Example (course-sized model): decode_flops(c, 256, cache=False) / decode_flops(c, 256)
    is about 256 in the linear layers alone.
    """
    if cache:
        return step_flops(c, 1, context - 1, batch)
    return step_flops(c, context, 0, batch)


def step_bytes(c: ArchConfig, n_new: int, past: int = 0, batch: int = 1,
               weight_bytes: float = 2, cache_bytes: float = 2) -> int:
    """Bytes one step moves through HBM: the weights once for the whole
    batch, plus every sequence's KV cache (the ``past`` rows read, the
    ``n_new`` rows written).

    Example: LLaMA-2-7B, fp16, batch 1, one decoding step at T = 4096:
             weights 2 · 6,607,077,376 + cache 2 GiB = 15,361,638,400 bytes
    """
    weights = int(matmul_weights(c, tokens=batch * n_new) * weight_bytes)
    return weights + kv_cache_bytes(c, past + n_new, batch, cache_bytes)


def intensity(flops: float, n_bytes: float) -> float:
    """Arithmetic intensity: FLOPs done per byte moved (Williams et al. 2009, the roofline).

    Example: intensity(2e9, 1e9) -> 2.0
    """
    return flops / n_bytes


def prefill_and_decode(c: ArchConfig, context: int, batch: int = 1, weight_bytes: float = 2,
                       cache_bytes: float = 2) -> dict[str, dict[str, float]]:
    """FLOPs, bytes and intensity of a ``context``-token prefill and of one decoding step
    at that context, for ``batch`` sequences.

    Example: for LLaMA-2-7B at batch 1, decode intensity is ≈ 1 FLOP/byte (2 FLOPs per
    2-byte weight), prefill of 4096 tokens is in the thousands.
    """
    out = {}
    for name, (n_new, past) in {"prefill": (context, 0), "decode": (1, context - 1)}.items():
        flops = step_flops(c, n_new, past, batch)
        moved = step_bytes(c, n_new, past, batch, weight_bytes, cache_bytes)
        out[name] = {"flops": flops, "bytes": moved, "intensity": intensity(flops, moved)}
    return out


def prefill_and_decode_at(c: ArchConfig, context: int, batches: list[int], weight_bytes: float = 2,
                          cache_bytes: float = 2) -> list[dict[str, dict[str, float]]]:
    """``prefill_and_decode`` at every batch size in ``batches``, in one call (D3's live batch
    slider sends the roofline at each with the page); entry i equals
    ``prefill_and_decode(c, context, batches[i], weight_bytes, cache_bytes)``.

    Example: for LLaMA-2-7B, decode intensity at batch 1, 2, 4 ≈ 1, 2, 4 FLOPs/byte.
    """
    return [prefill_and_decode(c, context, b, weight_bytes, cache_bytes) for b in batches]


def decode_operators(c: ArchConfig, context: int, batch: int = 1, weight_bytes: float = 2,
                     cache_bytes: float = 2) -> dict[str, dict[str, float]]:
    """One decoding step split in its two kinds of work, each with FLOPs, bytes and intensity.

    "weights": every matmul with a weight matrix. Its weights are read once for the whole batch
    and used by each of the ``batch`` new tokens: intensity ≈ 2·B / weight_bytes, it moves right
    as the batch grows. "attention": each sequence's new query against its own cached keys and
    values, 4·H·d_head FLOPs per cached position for 2·H_kv·d_head values read: intensity
    2·(H / H_kv) / cache_bytes whatever the batch (every sequence brings its own cache), so
    ≈ 1 FLOP/byte for MHA in fp16 and the group size H / H_kv with GQA.
    The two add up to step_flops and step_bytes of the same step.

    Example: LLaMA-2-7B, fp16, T = 4096: weights 1.0 at B = 1 and 64.0 at B = 64; attention 1.0
             at both. Llama-3-8B (H = 32, H_kv = 8): attention 4.0.
    """
    flops_w = batch * 2 * matmul_weights(c, tokens=1)
    bytes_w = matmul_weights(c, tokens=batch) * weight_bytes
    flops_a = batch * 4 * c.n_layers * c.n_heads * c.head_dim * attended_pairs(1, context - 1)
    bytes_a = kv_cache_bytes(c, context, batch, cache_bytes)
    return {"weights": {"flops": flops_w, "bytes": bytes_w, "intensity": intensity(flops_w, bytes_w)},
            "attention": {"flops": flops_a, "bytes": bytes_a, "intensity": intensity(flops_a, bytes_a)}}


def decode_variants(c: ArchConfig, context: int, batch: int = 1, weight_bytes: float = 2
                    ) -> list[dict[str, float | int | str]]:
    """One decoding step of ``c``, then the same step with fewer KV heads or a smaller cache dtype.

    Each row: id ("mha", "gqa", "mqa", "int8", "int4"), the KV heads and cache bytes per
    value it assumes, its FLOPs, bytes moved, cache size (kv_bytes) and intensity. MHA gives every query head its
    own KV head (H_kv = H), MQA one for all (H_kv = 1); "gqa" is the config as published
    (left out when that is already MHA or MQA); int8/int4 keep the config's heads and
    shrink each cached value. Fewer bytes for the same FLOPs: the point moves right.

    Example: for LLaMA-2-70B (H = 64, H_kv = 8) the rows are mha (64), gqa (8), mqa (1),
    int8 (8), int4 (8).
    """
    rows = []
    heads = {"mha": c.n_heads, "gqa": c.n_kv_heads, "mqa": 1}
    for name, h_kv in heads.items():
        if name == "gqa" and h_kv in (1, c.n_heads):
            continue
        rows.append((name, h_kv, 2.0))
    rows += [("int8", c.n_kv_heads, 1.0), ("int4", c.n_kv_heads, 0.5)]
    out = []
    for name, h_kv, cache_bytes in rows:
        variant = replace(c, n_kv_heads=h_kv)                          # narrower w_k, w_v too
        flops = step_flops(variant, 1, context - 1, batch)
        moved = step_bytes(variant, 1, context - 1, batch, weight_bytes, cache_bytes)
        out.append({"id": name, "n_kv_heads": h_kv, "cache_bytes": cache_bytes, "flops": flops, "bytes": moved,
                    "kv_bytes": kv_cache_bytes(variant, context, batch, cache_bytes),
                    "intensity": intensity(flops, moved)})
    return out


# --- Measured: the same two ways of decoding, timed on a real model ---------------------

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # GPU kernels run asynchronously; wait before reading the clock


@torch.inference_mode()
def seconds_per_token(model: torch.nn.Module, ids: list[int], context: int, use_cache: bool,
                      window: int = 8, repeats: int = 3) -> float:
    """Seconds to produce one token with about ``context`` tokens of context, on the model's device.

    The last ``window`` positions up to ``context`` are produced one at a time: with the
    cache, one token fed per step after an untimed prefill; without it, the whole prefix
    fed again each step. The fastest of ``repeats`` runs is kept (the least disturbed by
    other work on the machine).
    """
    device = next(model.parameters()).device
    seq = torch.tensor([ids[:context]], device=device)               # (1, T)
    start = max(1, context - window)
    best = float("inf")
    for _ in range(repeats):
        cache = model.new_cache() if use_cache else None
        if use_cache:
            model(seq[:, :start], cache=cache)                        # prefill, not timed
        _sync(device)
        t0 = time.perf_counter()
        for pos in range(start, context):
            if use_cache:
                model(seq[:, pos:pos + 1], cache=cache)               # N = 1, attends over pos + 1
            else:
                model(seq[:, :pos + 1])                               # N = pos + 1, all recomputed
        _sync(device)
        best = min(best, (time.perf_counter() - t0) / (context - start))
    return best


@one_at_a_time
def measure_decoding(model: torch.nn.Module, ids: list[int], contexts: list[int], window: int = 8,
                     repeats: int = 3, progress=None) -> dict[str, list[float]]:
    """Seconds per token with and without the cache at each context length, in one run.

    The two ways alternate (cached, recomputed, next context, ..., then the next repeat), so
    both see the same load on a shared machine; each keeps its fastest repeat.
    ``progress(fraction)`` is called after each measurement (a page's progress bar).
    """
    best = {"cached": [float("inf")] * len(contexts), "recomputed": [float("inf")] * len(contexts)}
    total, done = 2 * len(contexts) * repeats, 0
    for use in (True, False):     # warm both paths up (allocator, first calls), or the first one measured pays it
        seconds_per_token(model, ids, min(contexts), use, 2, 1)
    for _ in range(repeats):
        for i, n in enumerate(contexts):
            for name, use in (("cached", True), ("recomputed", False)):
                best[name][i] = min(best[name][i], seconds_per_token(model, ids, n, use, window, 1))
                done += 1
                if progress is not None:
                    progress(done / total)
    return best
