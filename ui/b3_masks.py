"""Lesson B3's results, computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.lab.attention_lab import (
    future_leak,
    mask_check,
    masked_attention,
    padded_attention,
    with_mask,
)

D = 32
LEAK_HEADS = 2


@st.cache_data(max_entries=64)
def single(text: str, d_k: int, seed: int, causal: bool, dev: str) -> dict:
    tokens, mask, att = masked_attention(text, d_k, seed, causal, D, dev)
    return {"tokens": tokens, "mask": mask.cpu().numpy(), "seen": with_mask(att.scores, mask).cpu().numpy(),
            "weights": att.weights.cpu().numpy(), "check": mask_check(att.weights, mask)}


@st.cache_data(max_entries=64)
def batch(texts: tuple[str, ...], d_k: int, seed: int, causal: bool, dev: str) -> dict:
    tokens, mask, att = padded_attention(list(texts), d_k, seed, causal, D, dev)
    return {"tokens": tokens, "mask": mask.cpu().numpy(), "weights": att.weights.cpu().numpy(),
            "check": mask_check(att.weights, mask)}


@st.cache_data(max_entries=64)
def leak(text: str, position: int, seed: int, dev: str) -> dict:
    return {k: v.cpu().numpy() for k, v in future_leak(text, position, LEAK_HEADS, seed, D, dev).items()}
