"""Cached results of lesson C3 (RoPE), shared by every session.

Here rather than in the page: a ``st.cache_data`` decorator written in the page is made again
on every run of it (docs/LESSONS.md). Results are keyed on plain strings and numbers; a trained
model, shared and read-only, is passed as ``_loaded`` (not hashed).
"""
from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from core.lab.rope_analysis import (
    fixed_query_key,
    pair_angle,
    pair_angles,
    pair_angles_by_key,
    pair_path,
    real_query_key,
    rope_both_forms,
    rope_score_bound,
    rope_score_matrix,
    score_by_distance,
    toeplitz_error,
)
from core.parts.positional import frequencies
from ui.model import REAL

COMPARE = (10000, 500000)                    # LLaMA-2 and Llama-3
DISTANCES = np.unique(np.round(np.geomspace(1, 65536, 200))).astype(np.int64)
REAL_BASES = (10000, 100000)                 # LLaMA-2 and SmolLM2, on a trained model's own q and k
REAL_TOKENS, COURSE_CHARS = 256, 64          # the most tokens each model reads of a text here


@st.cache_data(max_entries=64)
def rotation(d: int, base: float, m: int, n: int, pair: int, seed: int, dev: str) -> dict:
    q, k = fixed_query_key(d, seed, dev)
    forms = rope_both_forms(q, torch.arange(m + 1, device=dev), base)
    hands = pair_angle(q, k, m, n, pair, base)
    return {"path": pair_path(forms["real"], pair).cpu().numpy(), "theta": float(hands["theta"]),
            "key": hands["k"].cpu().numpy(), "angle": float(hands["angle"]), "offset": float(hands["offset"]),
            "score": float(hands["score"]), "max_abs_diff": float(forms["max_abs_diff"])}


def rotation_frames(d: int, base: float, ms: list[int], n: int, pair: int, seed: int, dev: str) -> list[dict]:
    """``rotation`` at every query position in ``ms`` (C3's live slider), from one path of all the
    positions and one batched ``pair_angles``; only what the plane draws. Run inside
    ``ui.live.built_frames``: once per distinct input for every session."""
    q, k = fixed_query_key(d, seed, dev)
    path = pair_path(rope_both_forms(q, torch.arange(max(ms) + 1, device=dev), base)["real"], pair).cpu().numpy()
    hands = pair_angles(q, k, ms, n, pair, base)
    key = hands["k"].cpu().numpy()
    return [{"path": path[: m + 1], "key": key, "angle": float(a)} for m, a in zip(ms, hands["angle"].tolist(), strict=True)]


@st.cache_data(max_entries=64)
def by_key(d: int, base: float, m: int, ns: tuple | list, pair: int, seed: int, dev: str) -> dict:
    """The score of q at ``m`` against k at every position in ``ns`` (C3's live key slider), from
    one batched ``pair_angles_by_key``: this pair's share, the whole q.k, and the angle."""
    q, k = fixed_query_key(d, seed, dev)
    out = pair_angles_by_key(q, k, m, list(ns), pair, base)
    return {name: out[name].cpu().numpy() for name in ("score", "total", "angle")}


@st.cache_data(max_entries=64)
def speeds(d: int, base: int) -> dict:
    """θ_i and the decay factor for the two reference bases and the Base slider's."""
    out = {}
    for b in dict.fromkeys((*COMPARE, base)):
        out[f"theta_{b}"] = frequencies(d, float(b)).float().numpy()
        out[f"bound_{b}"] = rope_score_bound(torch.from_numpy(DISTANCES), d, float(b)).float().numpy()
    return out


@st.cache_data(max_entries=16, show_spinner=False)
def real_qk(lm: str, text: str, layer: int, dev: str, _loaded) -> dict:
    """q and k of block ``layer`` before and after RoPE, for the model ``lm`` (its weights in
    ``_loaded``, not hashed); numpy, at most 256 tokens (~1.5 MB for SmolLM2)."""
    model, tok = _loaded
    out = real_query_key(model, tok, text, layer, REAL_TOKENS if lm == REAL else COURSE_CHARS, dev)
    return {k: v.cpu().numpy() if isinstance(v, torch.Tensor) else v for k, v in out.items()}


@st.cache_data(max_entries=64, show_spinner=False)
def real_curves(lm: str, text: str, layer: int, head: int, query: int, key: int, context: int, dev: str,
                _loaded) -> dict:
    """The chosen query and key tokens' score at every distance 1 … context − 1, re-rotated with
    each base of REAL_BASES, and the score the model itself computed at their true distance."""
    qk = real_qk(lm, text, layer, dev, _loaded)
    n_rep = qk["q_pre"].shape[0] // qk["k_pre"].shape[0]
    q, k = torch.from_numpy(qk["q_pre"][head, query]), torch.from_numpy(qk["k_pre"][head // n_rep, key])
    distances = torch.arange(1, context)                                    # (R,)
    out = {f"score_{b}": score_by_distance(q, k, distances, float(b)).numpy() for b in REAL_BASES}
    d = q.shape[-1]
    out["traced"] = float(qk["q"][head, query] @ qk["k"][head // n_rep, key]) / d ** 0.5
    out["own"] = {b: float(score_by_distance(q, k, torch.tensor([query - key]), float(b))[0]) for b in REAL_BASES}
    for b in REAL_BASES:
        far = out[f"score_{b}"][context // 8 - 1:]                        # distances context/8 … context − 1
        out[f"far_{b}"] = float(np.abs(far).mean())
    out["distances"] = distances.numpy()
    return out


@st.cache_data(max_entries=64)
def score_matrix(d: int, base: float, n: int, seed: int, dev: str) -> dict:
    q, k = fixed_query_key(d, seed, dev)
    scores = rope_score_matrix(q, k, n, base)["scores"]
    return {"scores": scores.cpu().numpy(), "error": toeplitz_error(scores)}
