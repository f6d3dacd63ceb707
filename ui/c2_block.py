"""Cached results of lesson C2 (the block walkthrough), shared by every session.

Here rather than in the page: a ``st.cache_data`` decorator written in the page is made again
on every run of it (docs/LESSONS.md). Results are keyed on plain strings and numbers; the
model, shared and read-only, is passed as ``_loaded`` (not hashed).
"""
from __future__ import annotations

import streamlit as st
import torch

from core.calc import configs
from core.lab import toy
from core.lab.block_anatomy import BLOCK_PARTS, compare_norms, residual_sizes, trace_block, trace_prompt
from core.parts.activations import activation_curves
from ui.model import COURSE, REAL

REAL_TOKENS = 256           # SmolLM2 reads at most this many tokens of a text here


@st.cache_data(max_entries=64, show_spinner=False)
def traced(text: str, dev: str, _loaded) -> dict:
    """Every part of every block of one forward pass of the course model, as numpy."""
    model, tok = _loaded
    tokens, trace = trace_prompt(model, tok, text, dev)
    sizes = residual_sizes(trace, model.config.n_layers)
    tensors = {name: t.cpu().numpy() for name, t in trace.tensors.items()
               if name.split(".", 2)[-1] in BLOCK_PARTS}
    return {"tokens": tokens, "n_all": len(tokens), "tensors": tensors,
            **{k: v.cpu().numpy() for k, v in sizes.items()}}


@st.cache_data(max_entries=16, show_spinner=False)
def traced_real(text: str, layer: int, dev: str, _loaded) -> dict:
    """One forward pass of SmolLM2 on ``text``: every part of block ``layer``, and the residual
    stream's size after every sub-layer of all 30 blocks (a full trace would be ~60 MB a text;
    this is at most ~11 MB, ~0.4 MB for the default text)."""
    model, tok = _loaded
    tokens, n_all, trace = trace_block(model, tok, text, layer, REAL_TOKENS, dev)
    sizes = residual_sizes(trace, model.config.n_layers)
    tensors = {f"blocks.{layer}.{p}": trace[f"blocks.{layer}.{p}"].cpu().numpy() for p in BLOCK_PARTS}
    return {"tokens": tokens, "n_all": n_all, "tensors": tensors, **{k: v.cpu().numpy() for k, v in sizes.items()}}


@st.cache_data(max_entries=128, show_spinner=False)
def norm_demo(text: str, layer: int, shift: float, source: str, dev: str, _loaded=None) -> dict:
    """LayerNorm and RMSNorm of the residual stream entering ``layer`` of the course model or
    SmolLM2 (``source`` COURSE / REAL, the model in ``_loaded``), or of random vectors ("toy")."""
    if source != "toy":
        data = traced_real(text, layer, dev, _loaded) if source == REAL else traced(text, dev, _loaded)
        vectors = torch.from_numpy(data["tensors"][f"blocks.{layer}.resid_pre"][0])             # (N, D)
    else:
        vectors = toy.embed_text(text, configs.get(COURSE).d_model, 0, dev)[1].cpu()            # (N, D)
    return {k: v.cpu().numpy() for k, v in compare_norms(vectors, shift).items()}


@st.cache_data(show_spinner=False)
def curves_demo() -> dict:
    return {k: v.numpy() for k, v in activation_curves().items()}
