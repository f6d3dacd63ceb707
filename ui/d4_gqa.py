"""Lesson D4's results, computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.lab.d_real_kv import group_attention
from core.lab.head_analysis import model_attention
from ui.model import course_model, real_model

REAL_TOKENS = 256


@st.cache_data(max_entries=64, show_spinner=False)
def course_attention(prompt: str, dev: str) -> dict:
    """Every layer's attention weights (L, H, N, N) on ``prompt``, as the model computed them."""
    model, tok = course_model(dev)
    tokens, weights = model_attention(model, tok, prompt, dev, bos=False)                # (L, H, N, N)
    return {"weights": weights.float().cpu().numpy(), "tokens": tokens}


@st.cache_data(max_entries=32, show_spinner=False)
def real_attention(prompt: str, layer: int, dev: str) -> dict:
    """SmolLM2's attention in ``layer`` on ``prompt`` (at most REAL_TOKENS tokens), grouped by the
    KV head each query head reads: {kv_head: (heads, (3, N, N) weights)}. Only this layer is kept."""
    model, tok = real_model(dev)
    ids = tok.encode(prompt)
    cut = len(ids) > REAL_TOKENS
    ids = ids[:REAL_TOKENS]
    groups = group_attention(model, ids, layer) if ids else []
    return {"tokens": tok.tokens(ids), "cut": cut, "n": len(ids),
            "groups": [{"heads": g["heads"], "weights": g["weights"].numpy()} for g in groups]}
