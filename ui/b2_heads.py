"""Lesson B2's results, computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st
import torch

from core.lab import toy
from core.lab.attention_lab import parameter_counts, run_heads, seeded_mha
from core.parts.mha import merge_heads, split_heads


@st.cache_data(max_entries=64)
def heads_demo(text: str, d_model: int, n_heads: int, seed: int, dev: str) -> dict:
    tokens, x = toy.embed_text(text, d_model, seed, dev)                    # (N, D)
    x = x.unsqueeze(0)                                                       # (1, N, D): a batch of one
    _, trace = run_heads(x, n_heads, seed)
    q = trace["attn.q"][0]                                                   # (H, N, d_head)
    return {
        "w_q": seeded_mha(d_model, n_heads, seed, dev).w_q.weight.detach().T.cpu().numpy(),   # (D, D): x @ W_q
        "q": q.cpu().numpy(),
        "q_flat": merge_heads(q.unsqueeze(0))[0].cpu().numpy(),             # (N, D) = X W_q, before the cut
        "tokens": tokens,
        "weights": trace["attn.weights"][0].cpu().numpy(),                   # (H, N, N)
        "concat": trace["attn.concat"][0].cpu().numpy(),                     # (N, D)
        "shapes": {"x": tuple(x.shape), **{name: tuple(t.shape) for name, t in trace.tensors.items()}},
        "round_trip": bool(torch.equal(merge_heads(split_heads(x, n_heads)), x)),
        "params": parameter_counts(d_model, n_heads),
    }
