"""How big a KV cache is, and how key/value heads are shared: counted from a config.

Dimension legend (as in core/calc/configs.py)
    L       layers
    H       query heads;  H_kv key/value heads (H_kv < H: GQA, 1: MQA)
    d_head  width of one head
    T       cached positions (tokens);  B batch

The cache itself, the object a generation holds, is core/parts/kv_cache.py; what one holds
step by step, core/lab/cache_steps.py. Here only arithmetic on ArchConfig numbers (D2-D4).
"""
from __future__ import annotations

from dataclasses import replace

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
