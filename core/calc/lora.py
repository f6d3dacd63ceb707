"""How many parameters LoRA trains on a real model (Hu et al. 2021).

Dimension legend (as in core/calc/configs.py)
    D model width, L layers, H query heads, H_kv key/value heads, d_head = D / H,
    F feed-forward hidden width, E experts, r adapter rank

A rank-r adapter on a (d_in -> d_out) matrix is A (r, d_in) and B (d_out, r): r (d_in + d_out)
parameters instead of d_in d_out. Everything else is frozen.
"""
from __future__ import annotations

from core.calc.configs import ArchConfig
from core.calc.params import count_params

PROJECTIONS = ("w_q", "w_k", "w_v", "w_o", "w1", "w2", "w3")


def projection_shapes(c: ArchConfig) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each projection of one block; a GELU MLP (GPT-2, GPT-3) has no w3.

    Example: projection_shapes(get("llama-2-7b"))["w_q"] -> (4096, 4096)
    """
    shapes = {
        "w_q": (c.d_model, c.n_heads * c.head_dim),
        "w_k": (c.d_model, c.kv_dim),
        "w_v": (c.d_model, c.kv_dim),
        "w_o": (c.n_heads * c.head_dim, c.d_model),
        "w1": (c.d_model, c.ffn_hidden),     # SwiGLU's gate, or the MLP's up-projection
        "w2": (c.ffn_hidden, c.d_model),     # back to D
    }
    if c.ffn == "swiglu":
        shapes["w3"] = (c.d_model, c.ffn_hidden)
    return shapes


def lora_params(c: ArchConfig, r: int, targets: tuple[str, ...] | list[str]) -> int:
    """Trainable parameters of rank-r adapters on ``targets`` in every block (every expert's
    feed-forward in an MoE).

    Example: lora_params(get("llama-2-7b"), 8, ["w_q", "w_v"]) -> 32 * 2 * 8 * (4096 + 4096) = 4_194_304
    """
    unknown = set(targets) - set(PROJECTIONS)
    if unknown:
        raise ValueError(f"unknown projections {sorted(unknown)}; choose from {PROJECTIONS}")
    shapes = projection_shapes(c)
    per_block = 0
    for name in targets:
        if name in shapes:
            d_in, d_out = shapes[name]
            copies = c.n_experts if name in ("w1", "w2", "w3") else 1
            per_block += copies * r * (d_in + d_out)
    return c.n_layers * per_block


def lora_splits(c: ArchConfig, ranks: list[int], targets: tuple[str, ...] | list[str]) -> list[dict[str, float]]:
    """``lora_split`` at every rank in ``ranks``, in one call (E2's live rank slider sends the
    counts at each with the page); entry i equals ``lora_split(c, ranks[i], targets)``.

    Example: lora_splits(get("gpt3-175b"), [1, 2], ["w_q", "w_v"])[1]["trainable"] -> 9_437_184
    """
    return [lora_split(c, r, targets) for r in ranks]


def lora_split(c: ArchConfig, r: int, targets: tuple[str, ...] | list[str]) -> dict[str, float]:
    """Trainable (the adapters) and frozen (the whole base model) parameters, and their ratio.

    Example: lora_split(get("gpt3-175b"), 1, ["w_q", "w_v"])["trainable"] -> 4_718_592
    """
    trainable, frozen = lora_params(c, r, targets), count_params(c)
    return {"trainable": trainable, "frozen": frozen, "fraction": trainable / frozen}
