"""Lesson D1's generations on the course model, and the register of SmolLM2 generations, each
made once for every session.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import streamlit as st

from core.models.generate import Generation, at_temperature
from ui.f3_learning import model_at_step
from ui.model import course_model

MAX_NEW = 48
SHOW = 20        # candidates drawn as bars, likeliest first
STRIP = (0.5, 1.0, 2.0)   # the temperature strip: the same step at these temperatures
STRIP_SHOW = 10           # candidates in each of its panels


# Shared as it is, not copied (st.cache_resource): st.cache_data unpickled the whole run, every
# step's (V,) distribution included, on each rerun of every student. Read-only: the page copies
# what it extends.
@st.cache_resource(max_entries=128, show_spinner=False)
def trajectory(prompt: str, temperature: float, top_k: int, top_p: float, seed: int, bos: bool, dev: str,
               step: int | None = None, forced: tuple = ()) -> dict:
    """The whole generation up to MAX_NEW tokens, as plain data. Sampling is seeded, so the
    first k steps of this run are exactly a run of k steps: Step only reveals one more.
    Each step also keeps its draw distribution at the STRIP temperatures (same top-k, top-p).
    ``step``: an earlier checkpoint of the course model (F3's, after that many training steps)
    instead of the final one. ``forced``: ((step index, token id),), a branch: the same generation
    with that token written there (core.models.generate.Generation(forced=...))."""
    model, tok = course_model(dev)
    if step is not None:                 # checked loadable by checkpoint_control
        model = model_at_step(step, dev)
    cut_k, cut_p = top_k or None, top_p if top_p < 1 else None
    gen = Generation(model, tok, prompt, MAX_NEW, temperature, cut_k, cut_p, seed, use_cache=True, show=SHOW, bos=bos,
                     forced=dict(forced))
    steps = []
    while not gen.done:
        s = gen.step()
        strip = at_temperature(s.model_probs, STRIP, cut_k, cut_p)[:, [c.id for c in s.top[:STRIP_SHOW]]]
        steps.append({
            "strip": dict(zip(STRIP, strip.tolist(), strict=True)),     # T -> the strip's probabilities
            "tokens": [c.token for c in s.top], "ids": [c.id for c in s.top],
            "model": [c.model_prob for c in s.top], "sample": [c.sample_prob for c in s.top],
            "chosen": s.chosen, "chosen_token": s.chosen_token,
            "model_probs": s.model_probs.numpy().astype(np.float32),   # (V,): the live bars' frames
            "chosen_model": float(s.model_probs[s.chosen]), "chosen_sample": float(s.probs[s.chosen]),
            "rank": s.rank, "kept": s.kept, "best_token": tok.tokens([s.best])[0],
            "fed": s.fed, "cache": s.cache_length, "eos": s.chosen == tok.eos_id,
        })
    p = gen.prompt
    return {"steps": steps, "prompt_tokens": tok.tokens(p.ids), "prompt_ids": list(p.ids), "bos": tok.bos_id,
            "eos": tok.eos_id, "eos_token": tok.tokens([tok.eos_id])[0], "dropped": p.dropped, "unknown": p.unknown}


# A class follows the lecturer: many students press Generate with the same prompt, settings and
# seed, and a seeded generation is the same every time. Each distinct one is decoded once for the
# whole server; a student who asks for one already made (or being made) gets its result. Only
# ids, text and timings are kept (a few KB each), the newest SHARED_MAX.
SHARED_MAX = 256


@st.cache_resource(show_spinner=False)
def shared_runs() -> tuple[OrderedDict, dict, threading.Lock]:
    """(finished runs by key, events of the runs in progress, their lock): one per process."""
    return OrderedDict(), {}, threading.Lock()
