"""Cached results of lesson F1 (heads at work), computed once per distinct input for every session.

Keyed on plain values: which model (``name``, "course" or "smollm2"), the text or the probe's
length and seed, the device. The model itself, shared and read-only, comes in as ``_loaded`` (not
hashed). ``st.cache_resource``: the arrays are handed out as they are (no copy a rerun), so
nothing here may be changed by a caller.
"""
from __future__ import annotations

import collections
import dataclasses
import threading

import numpy as np
import streamlit as st
import torch

from core.lab import head_scores as hs
from core.lab.layer_trace import KeepTrace
from core.lab.real_attention import prompt_ids

TEXT_TOKENS = 128     # tokens of a text read at most (a forward of SmolLM2 on 128 tokens: ~0.3 s here)


@st.cache_resource(max_entries=16, show_spinner=False)
def text_heads(name: str, text: str, dev: str, _loaded) -> dict:
    """The four scores of every head on ``text`` (the start token first), its tokens and every
    head's weights (float16, (L, H, N, N))."""
    model, tok = _loaded
    ids, n_ids = prompt_ids(tok, text, TEXT_TOKENS)
    trace = KeepTrace(lambda n: n.endswith("attn.weights"))
    with torch.inference_mode():
        model(torch.tensor([ids], device=dev), trace=trace)
    weights = torch.stack([trace[f"blocks.{i}.attn.weights"][0] for i in range(model.config.n_layers)])
    scores = hs.head_scores(weights, ids)                                           # each (L, H)
    return {"tokens": tok.tokens(ids), "n_ids": n_ids, "weights": weights.cpu().numpy().astype(np.float16),
            "scores": {k: v.cpu().numpy() for k, v in scores.items()}}


@st.cache_resource(max_entries=16, show_spinner=False)
def probe_heads(name: str, length: int, seed: int, dev: str, _loaded) -> dict:
    """The repeated random probe, one forward pass: its tokens, the four scores, the losses along
    it, and the run itself (for the ablation: every head's mean output). The weights are kept
    once, as float16 on the CPU (5 MB at T = 48), and every score is read from those."""
    model, tok = _loaded
    ids = hs.repeated_probe(tok, length, seed)
    with torch.inference_mode():
        run = hs.run_probe(model, ids, dev)
    run = dataclasses.replace(run, weights=run.weights.to("cpu", torch.float16))
    scores = hs.head_scores(run.weights.float(), ids)
    return {"tokens": tok.tokens(ids), "run": run, "weights": run.weights.numpy(),
            "scores": {k: v.numpy() for k, v in scores.items()}}


@st.cache_resource(max_entries=64, show_spinner=False)
def ablation(name: str, length: int, seed: int, k: int, mode: str, dev: str, _loaded) -> dict:
    """The probe with the top-k induction heads switched off, and with k random others: two more
    forward passes. Returns ``core.lab.head_scores.Outcome`` by condition, and each condition's
    guess for the probe's last token (its top token and probability, and the right one's)."""
    model, tok = _loaded
    run = probe_heads(name, length, seed, dev, _loaded)["run"]
    with torch.inference_mode():
        study = hs.ablation_study(model, run, k, mode, seed, dev)
    answer = run.ids[-1]                      # the last token of the second copy: seen once, in the first
    guesses = {}
    for cond, got in study.items():
        probs = torch.softmax(got.logits_cue, -1)                                  # (V,)
        best = int(probs.argmax())
        guesses[cond] = (tok.tokens([best])[0], float(probs[best]), float(probs[answer]))
    return {"study": study, "guesses": guesses, "answer": tok.tokens([answer])[0]}


# --- the random control: DRAWS forward passes, computed once per setting for every session -------
# At the lesson's default setting it is computed on the first visit; at any other setting only when
# a student asks (a button and a progress bar in the page): DRAWS forward passes of SmolLM2 are
# ~8 s of a core, and in a class of 100 every new setting of F1's sliders cost the whole class that
# (issue 39). One control is computed at a time; a student asking for one being computed waits.
_CONTROLS: collections.OrderedDict = collections.OrderedDict()
_CONTROLS_MAX = 64
_CONTROLS_LOCK = threading.Lock()       # guards _CONTROLS
_COMPUTING = threading.Lock()           # one control computed at a time in this process


def control_key(name: str, length: int, seed: int, k: int, mode: str, dev: str) -> tuple:
    return (name, int(length), int(seed), int(k), mode, dev)


def random_controls_ready(key: tuple):
    """The control computed for ``key`` (control_key), or None when nobody has asked for it yet."""
    with _CONTROLS_LOCK:
        found = _CONTROLS.get(key)
        if found is not None:
            _CONTROLS.move_to_end(key)
        return found


def random_controls(key: tuple, _loaded, progress=None) -> hs.ControlSpread:
    """The random control (core.lab.head_scores.control_study) for ``key``: computed once for every
    session, ``progress(fraction)`` called after each draw. Read only."""
    found = random_controls_ready(key)
    if found is not None:
        return found
    with _COMPUTING:
        found = random_controls_ready(key)            # computed while this one waited
        if found is not None:
            return found
        name, length, seed, k, mode, dev = key
        run = probe_heads(name, length, seed, dev, _loaded)["run"]
        with torch.inference_mode():
            spread = hs.control_study(_loaded[0], run, k, mode, seed, hs.DRAWS, dev, progress=progress)
    with _CONTROLS_LOCK:
        _CONTROLS[key] = spread
        while len(_CONTROLS) > _CONTROLS_MAX:
            _CONTROLS.popitem(last=False)
    return spread
