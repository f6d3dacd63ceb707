"""Parameter counts from an architecture config, part by part.

Dimension legend (as in core/calc/configs.py)
    V vocabulary, D model width, L layers, H query heads, H_kv key/value heads,
    d_head = D / H, F feed-forward hidden width, E experts, k experts used per token

Only matrices and vectors that are stored are counted: RoPE and sinusoidal positions have
no parameters, a tied output projection is the embedding matrix counted once.
"Active" counts what one token actually multiplies with: in a mixture of experts, k of
the E feed-forward experts (Mixtral: 2 of 8), while attention, norms, the router and the
embeddings are shared by every token.
"""
from __future__ import annotations

import torch

from core.calc.configs import ArchConfig

PARTS = ("embeddings", "attention", "feed_forward", "norms", "router", "output")


def linear_params(d_in: int, d_out: int, bias: bool) -> int:
    """A (d_in -> d_out) linear layer: d_in * d_out weights, plus d_out biases.

    Example: linear_params(768, 2304, bias=True) -> 1_771_776
    """
    return d_in * d_out + (d_out if bias else 0)


def attention_params(c: ArchConfig) -> int:
    """w_q (D -> H d_head), w_k and w_v (D -> H_kv d_head), w_o (H d_head -> D): one block.

    Example: attention_params(get("llama-2-7b")) -> 4 * 4096 * 4096 = 67_108_864
    """
    q_width = c.n_heads * c.head_dim                                   # = D
    return (linear_params(c.d_model, q_width, c.bias)
            + 2 * linear_params(c.d_model, c.kv_dim, c.bias)           # k and v: GQA makes them narrow
            + linear_params(q_width, c.d_model, c.bias))


def expert_params(c: ArchConfig) -> int:
    """One feed-forward network (one expert): SwiGLU has w1, w3 (D -> F) and w2 (F -> D);
    the GELU MLP of GPT-2 has only the up and down projections.

    Example: expert_params(get("llama-2-7b")) -> 3 * 4096 * 11008 = 135_266_304
    """
    up_matrices = 2 if c.ffn == "swiglu" else 1
    return (up_matrices * linear_params(c.d_model, c.ffn_hidden, c.bias)
            + linear_params(c.ffn_hidden, c.d_model, c.bias))


def norm_params(c: ArchConfig) -> int:
    """One norm layer: RMSNorm has a gain g (D); LayerNorm a gain and a bias (2 D).

    Example: norm_params(get("gpt2-small")) -> 1536
    """
    return c.d_model * (2 if c.norm == "layer" else 1)


def param_breakdown(c: ArchConfig, active: bool = False) -> dict[str, int]:
    """Parameters per part of the whole model; ``active`` counts k experts
    instead of E.

    Example: param_breakdown(get("gpt2-small"))["output"] -> 0
             (tied to the embedding)
    """
    experts = c.experts_per_token if active else c.n_experts
    embeddings = c.vocab_size * c.d_model
    if c.learned_positions:
        embeddings += c.max_seq_len * c.d_model
    return {
        "embeddings": embeddings,
        "attention": c.n_layers * attention_params(c),
        "feed_forward": c.n_layers * experts * expert_params(c),
        # two per block (before attention, before the FFN), one before the
        # output
        "norms": (2 * c.n_layers + 1) * norm_params(c),
        # the router is a D -> E linear layer without bias in every MoE
        # block (Mixtral)
        "router": c.n_layers * c.d_model * c.n_experts if c.is_moe else 0,
        "output": 0 if c.tied_embeddings
        else linear_params(c.d_model, c.vocab_size, bias=False),
    }


def count_params(c: ArchConfig, active: bool = False) -> int:
    """All parameters (or the active ones per token) of the model described by ``c``.

    Example: count_params(get("llama-2-7b")) -> 6_738_415_616
    """
    return sum(param_breakdown(c, active).values())


def numel(model: torch.nn.Module) -> int:
    """Parameters of a built model, counted from its tensors (a shared tensor once).

    Example: numel(torch.nn.Linear(2, 3)) -> 9
    """
    return sum(p.numel() for p in model.parameters())


def model_stages(c: ArchConfig) -> list[dict[str, object]]:
    """The whole decoder as a strip, left to right: what each stage holds and what it hands on.

    Each stage: name ("ids", "embed", "block", "final_norm", "output", "softmax"), its layer
    index (blocks only), its parameters and the shape it outputs for N tokens. The parameters
    add up to count_params(c).

    Example: [s["name"] for s in model_stages(get("course"))] ->
             ["ids", "embed", "block", "block", "block", "block", "final_norm", "output", "softmax"]
    """
    parts = param_breakdown(c)
    block = parts["attention"] // c.n_layers + parts["feed_forward"] // c.n_layers + 2 * norm_params(c) \
        + parts["router"] // c.n_layers
    return ([{"name": "ids", "layer": None, "params": 0, "shape": "(N,)"},
             {"name": "embed", "layer": None, "params": parts["embeddings"], "shape": f"(N, {c.d_model})"}]
            + [{"name": "block", "layer": i, "params": block, "shape": f"(N, {c.d_model})"} for i in range(c.n_layers)]
            + [{"name": "final_norm", "layer": None, "params": norm_params(c), "shape": f"(N, {c.d_model})"},
               {"name": "output", "layer": None, "params": parts["output"], "shape": f"(N, {c.vocab_size})"},
               {"name": "softmax", "layer": None, "params": 0, "shape": f"({c.vocab_size},)"}])
