"""Lesson B1's results, computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.lab import toy
from core.lab.attention_lab import course_attention_steps
from core.lab.real_attention import model_attention_steps
from core.parts.attention import entropy_by_width, scaling_experiment
from core.parts.masks import causal_mask
from ui.model import course_model, real_model

WIDTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
HIST_N = 256                 # random queries and keys of the histogram (256 x 256 scores)
ENTROPY_KEYS = 64            # keys per row in the entropy curve (the caption's maximum is ln of it)
REAL_TOKENS = 48             # tokens SmolLM2 reads here at most: every one named on the six panels
TRAINED = ("course", "smollm2")
D = 32                       # width of the random embedding (the course model's is its config's d_model)


@st.cache_data(max_entries=64)
def scale_demo(width: int, seed: int) -> dict:
    qs, ks = toy.unit_vectors(HIST_N, width, seed)
    stats = scaling_experiment(qs, ks)
    curve = entropy_by_width(WIDTHS, n=ENTROPY_KEYS, seed=seed)
    return {name: t.numpy() for name, t in {**stats, **{f"curve_{k}": c for k, c in curve.items()}}.items()}


@st.cache_data(max_entries=64)
def steps_demo(text: str, source: str, d_k: int, d_v: int, layer: int, head: int, seed: int, dev: str) -> dict:
    """Every step of one attention call as numpy: random weights, or a trained model's real Q, K, V
    (the course model's, or SmolLM2's cut to REAL_TOKENS tokens; with the causal mask, ``masked``
    True where a query may not look). ``n_ids``: the tokens of the text before a cut."""
    mask = None
    if source == "course":
        model, tok = course_model(dev)
        steps = course_attention_steps(model, tok, text, layer, head, dev)
    elif source == "smollm2":
        model, tok = real_model(dev)
        steps, n_ids = model_attention_steps(model, tok, text, layer, head, dev, limit=REAL_TOKENS)
    else:
        steps = toy.attention_steps(text, D, d_k, seed, dev, d_v=d_v)
    if source in TRAINED:
        mask = causal_mask(len(steps.tokens))              # (N, N): the mask the kernel was given
    a = steps.attn
    return {"tokens": steps.tokens, "steps": steps, "mask": mask,
            "masked": None if mask is None else ~mask.cpu().numpy(),
            "n_ids": n_ids if source == "smollm2" else len(steps.tokens),
            **{name: t.cpu().numpy() for name, t in {"q": steps.q, "k": steps.k, "v": steps.v, "scores": a.scores,
                                                     "weights": a.weights, "output": a.output}.items()}}
