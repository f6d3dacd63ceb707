"""The MoE course model: the course model with every feed-forward replaced by a sparse
mixture of experts (E = 8 SwiGLU experts, 2 per token, as Mixtral 8x7B).

Dimension legend
    B       batch
    N       new positions in this call
    S       key/value positions attended over (cached + new)
    T       tokens routed together, B * N
    D       model width
    F       hidden width of one expert
    E       experts per block;  k experts per token
    V       vocabulary size

Each expert is half as wide as the dense model's feed-forward (F = 172 against 344), so a
token that runs k = 2 of them multiplies as many feed-forward weights as in the dense
model, while the model holds E / k = 4 times as many. Attention, norms, embeddings and
the output projection are the dense model's parts, shared by every token.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from core.models.model import ASSETS, Block, LlamaDecoder, ModelConfig, load_trained
from core.parts.kv_cache import KVCache
from core.parts.moe import MoE, MoEResult, Routing
from core.parts.trace import Trace, record
from core.text.tokenizer import CharTokenizer

WEIGHTS_FILE = "moe_model.safetensors"
CONFIG_FILE = "moe_model_config.json"
LOSS_FILE = "moe_model_loss.json"
EXPERTS_FILE = "moe_model_experts.json"
# Trained the same way without the load-balancing loss: its router collapses onto few experts.
NO_AUX_PREFIX = "moe_model_noaux"
REBUILD = "python scripts/train_moe_model.py"

# Inference routing: Mixtral's softmax top-2 with no capacity limit, so every token is
# routed on its own and decoding with the KV cache gives what the full forward gives.
INFERENCE = Routing(mode="topk", k=2)


@dataclass(frozen=True)
class MoEConfig(ModelConfig):
    ffn_hidden: int = 172        # F of ONE expert: half the dense 344, so k = 2 experts cost what one dense FFN does
    n_experts: int = 8           # E, experts per block (Mixtral 8x7B: 8)
    experts_per_token: int = 2   # k, experts each token runs at inference (Mixtral: 2)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.experts_per_token <= self.n_experts:
            raise ValueError("experts_per_token must be between 1 and n_experts")


class MoEBlock(Block):
    """x + Attn(RMSNorm(x)), then + MoE(RMSNorm(...)): the course model's block with the
    feed-forward replaced by experts. ``routing``, ``rng`` and ``results`` (a list that receives
    the layer's MoEResult) come with each call, through the block to its experts."""

    def add_ffn(self, c: MoEConfig) -> None:
        self.moe = MoE(c.d_model, c.ffn_hidden, c.n_experts)

    def ffn_out(self, h: torch.Tensor, trace: Trace | None = None, routing: Routing = INFERENCE,
                rng: torch.Generator | None = None, results: list[MoEResult] | None = None
                ) -> torch.Tensor:
        r = self.moe(h, routing, rng, trace)                                 # r.output (B, N, D)
        record(trace, "moe_out", r.output)
        if results is not None:
            results.append(r)
        # A token no expert took (all its experts full) gets 0 here: the residual carries it
        # on unchanged, as in GShard and Switch; a token that lost one of two keeps the other.
        return r.output


class MoEModel(LlamaDecoder):
    """ids (B, N) -> next-token logits (B, N, V): the course model's decoder built from MoEBlock.
    Routing, random generator, cache and trace are passed in per call; ``results`` (a list)
    receives each block's MoEResult, in block order."""

    block_type = MoEBlock

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None, trace: Trace | None = None,
                routing: Routing = INFERENCE, rng: torch.Generator | None = None,
                results: list[MoEResult] | None = None) -> torch.Tensor:
        return super().forward(ids, cache, trace, routing=routing, rng=rng, results=results)


class MoEModelUnavailable(RuntimeError):
    """The shipped MoE model is missing or damaged; the message says how to rebuild it."""


def load_moe_model(device: str | torch.device = "cpu", assets: Path | str | None = None,
                   prefix: str = "moe_model") -> tuple[MoEModel, CharTokenizer]:
    """A trained MoE course model (eval mode, float32) and its tokenizer, from assets/.
    ``prefix`` "moe_model" is the model trained with the load-balancing loss,
    ``NO_AUX_PREFIX`` the one trained without it."""
    folder = Path(assets) if assets is not None else ASSETS
    hint = f"Rebuild it with `{REBUILD}` (see assets/CORPUS.md)."
    try:
        model, tokenizer = load_trained(MoEModel, MoEConfig, folder, f"{prefix}_config.json",
                                        f"{prefix}.safetensors")     # the vocabulary is the course model's
    except Exception as err:  # missing file, bad JSON, truncated tensors, wrong shapes
        raise MoEModelUnavailable(f"The MoE model {prefix} in {folder} cannot be loaded ({err}). {hint}") from err
    return model.to(device).eval(), tokenizer
