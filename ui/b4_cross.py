"""Lesson B4's results, computed once for every session per setting.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from core.lab.attention_lab import word_tokens
from core.lab.date_lab import random_cross_attention
from core.text.dates import parse
from ui.date_model import reading

MAX_TOKENS = 24
D = 32


@st.cache_data(max_entries=64, show_spinner=False)
def trained_view(text: str, dev: str) -> dict:
    """The model's reading of ``text``: cross-attention of every layer, and how well each head
    lines up with the fields of the date when the text is one."""
    import torch

    from core.lab.date_lab import alignment_scores

    r = reading(text, dev)
    n_layers = sum(1 for k in r["tensors"] if k.startswith("decoder.layers.") and k.endswith(".cross_attn.weights"))
    weights = np.stack([r["tensors"][f"decoder.layers.{i}.cross_attn.weights"] for i in range(n_layers)])  # (L, H, N, S)
    parsed = parse(text)
    scores = None
    if parsed is not None and len(r["output"]) == 10:
        scores = alignment_scores(torch.from_numpy(weights), parsed).numpy()                       # (L, H)
    return {"source": r["source"], "fed": r["fed"], "written": r["written"], "output": r["output"], "weights": weights,
            "scores": scores, "iso": None if parsed is None else parsed.iso}


@st.cache_data(max_entries=64, show_spinner=False)
def cross_demo(target: str, source: str, n_heads: int, seed: int, dev: str) -> dict:
    tgt, src = word_tokens(target), word_tokens(source)
    cut = len(tgt) > MAX_TOKENS or len(src) > MAX_TOKENS
    tgt, src = tgt[:MAX_TOKENS] or ["∅"], src[:MAX_TOKENS] or ["∅"]
    trace = random_cross_attention(tgt, src, n_heads, seed, D, dev)
    return {"target": tgt, "source": src, "cut": cut,
            "weights": trace["attn.weights"][0].cpu().numpy(),                  # (H, N_target, N_source)
            "shapes": {name: tuple(t.shape) for name, t in trace.tensors.items()}}
