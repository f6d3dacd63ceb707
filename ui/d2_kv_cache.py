"""Lesson D2's results, computed once for every session, and its measurements shared by all.
"""
from __future__ import annotations

import streamlit as st

from core.calc import configs
from core.calc.flops import decode_flops
from core.lab.cache_steps import watch_cache
from core.lab.d_real_kv import measured_cache
from core.models.generate import Generation
from ui.model import course_model, real_model

NEW_TOKENS = 16
REAL_TEXT = "The key and value of a past token never change, so the model keeps them in its cache."


@st.cache_resource(show_spinner=False)
def shared_timings() -> dict:
    """The live measurements, {(model, device): seconds}: one press serves every student of the
    process (the same machine measured the same model)."""
    return {}


@st.cache_data(max_entries=4, show_spinner=False)
def real_cache(dev: str) -> dict:
    """SmolLM2's KV cache after REAL_TEXT, weighed (core.lab.d_real_kv.measured_cache)."""
    model, tok = real_model(dev)
    return measured_cache(model, tok.encode(REAL_TEXT))


@st.cache_data(max_entries=64, show_spinner=False)
def replay(prompt: str, dev: str) -> dict:
    """Greedy decoding of NEW_TOKENS tokens with the cache, every step's q, k, v and weights kept."""
    model, tok = course_model(dev)
    gen = Generation(model, tok, prompt, NEW_TOKENS)
    steps = watch_cache(gen)
    return {"steps": [{"fed": s.fed, "chosen": s.chosen, "q": s.q.numpy(), "k": s.k.numpy(), "v": s.v.numpy(),
                       "weights": s.weights.numpy()} for s in steps],
            "prompt": tok.tokens(gen.prompt.ids), "chosen": tok.tokens([s.chosen for s in steps]),
            "dropped": gen.prompt.dropped, "unknown": gen.prompt.unknown}


@st.cache_data(max_entries=4, show_spinner=False)
def flop_curves(name: str, max_len: int) -> dict:
    cfg = configs.get(name)
    lengths = list(range(8, max_len + 1, 8))
    return {"x": lengths, "cached": [decode_flops(cfg, n) for n in lengths],
            "recomputed": [decode_flops(cfg, n, cache=False) for n in lengths]}
