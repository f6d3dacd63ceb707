"""LoRA adapters on the course model, without touching the course model.

Dimension legend (as in core/models/model.py)
    D       model width;  F feed-forward hidden width;  H_kv key/value heads;  d_head D / H
    r       adapter rank

The course model is loaded once and shared by every student (st.cache_resource). An
adapted model is a second module tree whose frozen weights are the *same memory* as the
shared model's (no copy, ~5 MB saved per student) but are detached buffers outside autograd;
only the adapters (A, B) are new, and they belong to the one fine-tune that made them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.models.model import LlamaDecoder
from core.parts.lora import LoRALinear

# Where each projection lives inside a block, by its paper name.
TARGETS: dict[str, tuple[str, str]] = {
    "w_q": ("attn", "w_q"), "w_k": ("attn", "w_k"), "w_v": ("attn", "w_v"), "w_o": ("attn", "w_o"),
    "w1": ("ffn", "w1"), "w2": ("ffn", "w2"), "w3": ("ffn", "w3"),
}


@dataclass
class Adapted:
    model: LlamaDecoder                 # frozen view of the shared weights, adapters in place
    adapters: dict[str, LoRALinear]    # "blocks.0.attn.w_q" -> its LoRA layer
    trainable: int                     # parameters that learn: A and B of every adapter
    frozen: int                        # the base model's parameters, all of them


def frozen_view(model: LlamaDecoder) -> LlamaDecoder:
    """A LlamaDecoder reading the same weight memory as ``model``, with every weight detached.

    Built on the meta device first: no random init (which would draw from torch's global
    generator) and no second copy of the weights.
    """
    with torch.device("meta"):
        view = LlamaDecoder(model.config)
    view.load_state_dict({k: v.detach() for k, v in model.state_dict().items()}, assign=True)
    view.requires_grad_(False)   # the view's own Parameter objects; the shared ones are untouched
    return view.eval()


def add_lora(model: LlamaDecoder, targets: tuple[str, ...] | list[str],
             r: int, alpha: float, seed: int = 0) -> Adapted:
    """The course model with a rank-r adapter on each chosen
    projection of every block; ``model`` itself is only read.

    Example: add_lora(m, ["w_q", "w_v"], r=8, alpha=16).trainable
             -> 4 * (8 * (128 + 128) + 8 * (128 + 64)) = 14_336
    """
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        raise ValueError(f"unknown projections {unknown}; "
                         f"choose from {list(TARGETS)}")
    frozen = sum(p.numel() for p in model.parameters())
    view = frozen_view(model)
    gen = torch.Generator().manual_seed(seed)
    adapters: dict[str, LoRALinear] = {}
    for i, block in enumerate(view.blocks):
        # a fixed order, so one seed always gives the same A's
        for name in TARGETS:
            if name not in targets:
                continue
            part, attr = TARGETS[name]
            holder = getattr(block, part)
            base = getattr(holder, attr)
            lora = LoRALinear(base, r, alpha, generator=gen)
            setattr(holder, attr, lora)
            adapters[f"blocks.{i}.{part}.{attr}"] = lora
    trainable = sum(p.numel() for p in view.parameters()
                    if p.requires_grad)
    return Adapted(view, adapters, trainable, frozen)


def adapter_state(adapted: Adapted) -> dict[str, torch.Tensor]:
    """Every A and B by name ("blocks.0.attn.w_q.A"), detached copies on the CPU."""
    return {f"{name}.{p}": getattr(lora, p).detach().to("cpu").clone()
            for name, lora in adapted.adapters.items() for p in ("A", "B")}


@torch.no_grad()
def load_adapter_state(adapted: Adapted, state: dict[str, torch.Tensor]) -> None:
    """Copy saved A and B matrices into the adapters (names and shapes must match)."""
    expected = {f"{name}.{p}" for name in adapted.adapters for p in ("A", "B")}
    if set(state) != expected:
        raise ValueError(f"adapter names differ: {sorted(set(state) ^ expected)[:4]}")
    for name, lora in adapted.adapters.items():
        lora.A.copy_(state[f"{name}.A"])
        lora.B.copy_(state[f"{name}.B"])
