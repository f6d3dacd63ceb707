"""The attention of every layer and head of a trained model on one prompt (B1, B2, the explorer).

Written for SmolLM2-135M-Instruct (30 layers of 9 query heads reading 3 key/value heads), and
run the same way on the course model: the model records its weights under
``blocks.{i}.attn.weights`` (core/parts/trace.py) and these helpers stack them. Nothing
re-computes attention here; the tests recompute it from the recorded q and k.

Dimension legend (as in core/models/model.py)
    L       layers (blocks)
    H       query heads;  H_kv key/value heads, each read by H / H_kv query heads (GQA)
    N       prompt positions, start token included (causal: S == N)
    d_head  width of one head
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.lab import toy
from core.parts.attention import scaled_dot_product_attention
from core.parts.masks import causal_mask
from core.parts.trace import Trace

TOKEN_LIMIT = 256     # tokens read at most (a 256-token forward of SmolLM2 takes ~1 s on 2 CPU cores)


@dataclass(frozen=True)
class PromptAttention:
    tokens: list[str]        # N tokens the model read, start token first
    weights: torch.Tensor    # (L, H, N, N) attention weights, every row sums to 1
    n_ids: int               # tokens of the whole prompt before the cut (> N when it was cut)


def prompt_ids(tokenizer, text: str, limit: int = TOKEN_LIMIT, bos: bool = True) -> tuple[list[int], int]:
    """The ids the model reads (the start token, then the text, cut to ``limit``) and the
    length before the cut.

    Example (SmolLM2): prompt_ids(tok, "The cat", 2) -> ([1, 504], 3)   # <|im_start|> The | cat
    """
    ids = tokenizer.encode(text, bos=bos)
    if not ids:                                          # empty text, no start token: read one
        ids = [tokenizer.bos_id if tokenizer.bos_id is not None else 0]
    return ids[:limit], len(ids)


@torch.no_grad()
def prompt_attention(model: torch.nn.Module, tokenizer, text: str, device: str = "cpu",
                     limit: int = TOKEN_LIMIT) -> PromptAttention:
    """Run the model once on the start token + ``text`` (cut to ``limit`` tokens) and stack the
    weights it records: (L, H, N, N). With GQA each query head has its own (N, N) weights; its
    keys are those of key/value head h // (H / H_kv).

    Example (SmolLM2): prompt_attention(m, tok, "The cat sat").weights.shape == (30, 9, 4, 4)
    """
    ids, n_ids = prompt_ids(tokenizer, text, limit)
    trace = Trace()
    model(torch.tensor([ids], device=device), trace=trace)              # logits (1, N, V), unused
    weights = torch.stack([trace[f"blocks.{i}.attn.weights"][0]         # (H, N, N) each
                           for i in range(model.config.n_layers)])      # (L, H, N, N)
    return PromptAttention(tokenizer.tokens(ids), weights, n_ids)


@torch.no_grad()
def model_attention_steps(model: torch.nn.Module, tokenizer, text: str, layer: int, head: int,
                          device: str = "cpu", limit: int = 48) -> tuple[toy.AttentionSteps, int]:
    """One layer's and query head's real Q, K, V (after RoPE), put through the lesson's own
    kernel with the causal mask: B1's six panels on any trained model, the text cut to
    ``limit`` tokens (no start token, as B1 reads the course model). Returns the steps and the
    token count before the cut. Query head h reads key/value head h // (H / H_kv) (GQA).

    Example (SmolLM2): steps, n = model_attention_steps(m, tok, "The cat sat", 29, 8)
             -> steps.q.shape == (3, 64); steps.attn.weights equal the model's blocks.29 head 8
    """
    ids, n_ids = prompt_ids(tokenizer, text, limit, bos=False)
    trace = Trace()
    model(torch.tensor([ids], device=device), trace=trace)
    n_rep = model.config.n_heads // model.config.n_kv_heads
    q = trace[f"blocks.{layer}.attn.q"][0, head]                          # (N, d_head)
    k = trace[f"blocks.{layer}.attn.k"][0, head // n_rep]                 # (N, d_head) its KV head
    v = trace[f"blocks.{layer}.attn.v"][0, head // n_rep]                 # (N, d_head)
    steps = toy.AttentionSteps(tokenizer.tokens(ids), q, k, v,
                               scaled_dot_product_attention(q, k, v, causal_mask(len(ids), device=device)))
    return steps, n_ids


def thumbnails(weights: torch.Tensor, size: int = 16) -> torch.Tensor:
    """Every head's (N, N) weights averaged over blocks of cells into at most ``size`` × ``size``
    (a picture of 270 heads small enough to send). Cells past the end of a block row are left out
    of its mean; a block with none (the padding) is NaN.

    Example: thumbnails(torch.eye(4).expand(2, 3, 4, 4), 2)[0, 0] -> [[0.5, 0.0], [0.0, 0.5]]
    """
    n = weights.shape[-1]
    factor = -(-n // size)                                                # ceil(N / size)
    m = -(-n // factor)                                                   # cells a side after pooling
    pad = m * factor - n
    w = torch.nn.functional.pad(weights.float(), (0, pad, 0, pad), value=float("nan"))   # (L, H, mf, mf)
    blocks = w.reshape(*w.shape[:-2], m, factor, m, factor)               # (L, H, m, f, m, f)
    return blocks.nanmean(dim=(-3, -1))                                   # (L, H, m, m)
