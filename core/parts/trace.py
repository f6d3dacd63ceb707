"""A recorder for intermediate tensors, under stable dotted names.

Modules take an optional ``trace``; with ``None`` they record nothing and cost nothing.
The recorder is created per request by the caller, so a model shared by every student
(``st.cache_resource``) carries no per-request state.

Every name a module may record is listed in ``NAMES`` (``{i}`` is a block index), in
the spirit of TransformerLens' ``blocks.0.attn.pattern``.
"""
from __future__ import annotations

import re

import torch

# The one list of names. Shapes use the legend of core/models/model.py.
NAMES: dict[str, str] = {
    "embed": "(B, N, D) token embeddings",
    "blocks.{i}.resid_pre": "(B, N, D) residual stream entering block i",
    "blocks.{i}.attn_norm": "(B, N, D) RMSNorm before attention",
    "blocks.{i}.attn.q": "(B, H, N, d_head) queries (after RoPE when the model uses it)",
    "blocks.{i}.attn.k": "(B, H_kv, S, d_head) keys (after RoPE), the whole cache",
    "blocks.{i}.attn.v": "(B, H_kv, S, d_head) values, the whole cache",
    "blocks.{i}.attn.scores": "(B, H, N, S) q k^T / sqrt(d_head), before mask and softmax",
    "blocks.{i}.attn.weights": "(B, H, N, S) attention weights after softmax",
    "blocks.{i}.attn.concat": "(B, N, H*d_head) heads concatenated, before w_o",
    "blocks.{i}.attn.out": "(B, N, D) after w_o: the attention sub-layer's output, added to the stream",
    "blocks.{i}.resid_mid": "(B, N, D) residual stream after the attention add",
    "blocks.{i}.ffn_norm": "(B, N, D) RMSNorm before the feed-forward",
    "blocks.{i}.ffn.gate": "(B, N, F) SiLU(x w1), the gate of SwiGLU",
    "blocks.{i}.ffn.up": "(B, N, F) x w3, the value of SwiGLU",
    "blocks.{i}.ffn_out": "(B, N, D) feed-forward sub-layer output (after w2)",
    "blocks.{i}.resid_post": "(B, N, D) residual stream leaving block i",
    "final_norm": "(B, N, D) final RMSNorm",
    "logits": "(B, N, V) next-token logits",
    # --- mixture of experts (core/parts/moe.py, core/models/moe_model.py); T = B * N tokens ---
    "blocks.{i}.moe.router_logits": "(T, E) router logits (noise included in noisy mode)",
    "blocks.{i}.moe.router_probs": "(T, E) router probabilities, softmax of the logits",
    "blocks.{i}.moe.experts": "(T, k) experts each token was sent to, best first",
    "blocks.{i}.moe.gates": "(T, k) gate weights of the chosen experts",
    "blocks.{i}.moe.fits": "(T, k) bool: the assignment found a slot (within capacity)",
    "blocks.{i}.moe_out": "(B, N, D) mixture-of-experts sub-layer output",
    "moe.router_logits": "(T, E) router logits of a stand-alone MoE layer",
    "moe.router_probs": "(T, E) router probabilities of a stand-alone MoE layer",
    "moe.experts": "(T, k) chosen experts of a stand-alone MoE layer",
    "moe.gates": "(T, k) gate weights of a stand-alone MoE layer",
    "moe.fits": "(T, k) bool: assignments within capacity, stand-alone MoE layer",
    # --- end mixture of experts ---
    "attn.q": "(..., H, N, d_head) queries of a stand-alone attention module",
    "attn.k": "(..., H_kv, S, d_head) keys of a stand-alone attention module",
    "attn.v": "(..., H_kv, S, d_head) values of a stand-alone attention module",
    "attn.scores": "(..., H, N, S) scores of a stand-alone attention module",
    "attn.weights": "(..., H, N, S) weights of a stand-alone attention module",
    "attn.concat": "(..., N, H*d_head) heads concatenated, before w_o",
    "attn.out": "(..., N, D) output of a stand-alone attention module",
    "ffn.gate": "(..., N, F) SiLU(x w1) of a stand-alone SwiGLU",
    "ffn.up": "(..., N, F) x w3 of a stand-alone SwiGLU",
}

# --- The encoder-decoder of C1 and B4 (core/models/encdec.py); legend of that module. -----------
# Each layer records its input, each attention's intermediates (as the multi-head module names
# them), each residual sum before its LayerNorm ("..._add") and after it ("..._norm").
_ENCDEC_ATTN = {"q": "(B, H, N, d_head) queries", "k": "(B, H, S, d_head) keys",
                "v": "(B, H, S, d_head) values", "scores": "(B, H, N, S) before mask and softmax",
                "weights": "(B, H, N, S) after softmax", "concat": "(B, N, D) heads side by side",
                "out": "(B, N, D) after w_o"}
NAMES.update({
    "encoder.embed": "(B, S, D) source embeddings * sqrt(D) + sinusoidal positions",
    "decoder.embed": "(B, N, D) target embeddings * sqrt(D) + sinusoidal positions",
})
for _stack, _subs in (("encoder", ("self_attn", "ffn")), ("decoder", ("self_attn", "cross_attn", "ffn"))):
    NAMES[f"{_stack}.layers.{{i}}.input"] = "(B, N, D) residual stream entering the layer"
    for _sub in _subs:
        if _sub != "ffn":
            NAMES.update({f"{_stack}.layers.{{i}}.{_sub}.{k}": v for k, v in _ENCDEC_ATTN.items()})
        NAMES[f"{_stack}.layers.{{i}}.{_sub}_add"] = "(B, N, D) x + sub-layer(x), before LayerNorm"
        NAMES[f"{_stack}.layers.{{i}}.{_sub}_norm"] = "(B, N, D) LayerNorm(x + sub-layer(x)): post-norm"
    NAMES[f"{_stack}.layers.{{i}}.ffn.hidden"] = "(B, N, F) ReLU(x w1 + b1), zeros where a unit is off"
    NAMES[f"{_stack}.layers.{{i}}.ffn_out"] = "(B, N, D) w2 h + b2, the feed-forward's output"



def _pattern(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(template).replace(r"\{i\}", r"\d+") + "$")


_PATTERNS = [_pattern(n) for n in NAMES]


def is_known_name(name: str) -> bool:
    """Example: is_known_name("blocks.3.attn.weights") -> True; is_known_name("blocks.x") -> False"""
    return any(p.match(name) for p in _PATTERNS)


class Trace:
    """Collects detached tensors by dotted name. ``prefix`` scopes a child recorder:
    ``trace.child("blocks.0")`` records ``attn.weights`` as ``blocks.0.attn.weights``."""

    def __init__(self, store: dict[str, torch.Tensor] | None = None, prefix: str = ""):
        self.tensors: dict[str, torch.Tensor] = {} if store is None else store
        self.prefix = prefix

    def child(self, name: str) -> "Trace":
        return Trace(self.tensors, f"{self.prefix}{name}.")

    def record(self, name: str, tensor: torch.Tensor) -> None:
        full = self.prefix + name
        if not is_known_name(full):
            raise KeyError(f"trace name {full!r} is not listed in core.parts.trace.NAMES")
        self.tensors[full] = tensor.detach()

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def names(self) -> list[str]:
        return list(self.tensors)


def record(trace: Trace | None, name: str, tensor: torch.Tensor) -> None:
    """Record when a recorder was given; a no-op otherwise."""
    if trace is not None:
        trace.record(name, tensor)
