"""Lesson C3's controls, figure builders, and its results computed once for every session.

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
    rope_wavelengths,
    score_by_distance,
    toeplitz_error,
)
from core.parts.positional import frequencies
from ui.frame import ranged_slider, tr
from ui.live import live_value
from ui.model import REAL, course_model, layer_and_head, model_text, real_model
from viz.common import label
from viz.rope import pair_plane, per_pair, score_by_offset, score_curves

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


# --- The page's controls and figures (lessons/c3_rope.py lays out the sections that show them) ----
NS = "c3"
WIDTHS = [8, 16, 32, 64, 128]
BASES = [100, 1000, 10000, 500000, 1000000]
REFERENCE = {10000: f"{NS}.base_llama2", 500000: f"{NS}.base_llama3"}
# The real-model section: SmolLM2's base against LLaMA-2's, on a trained model's own q and k.
OWN = {10000: f"{NS}.base_llama2", 100000: f"{NS}.base_smollm2"}
COURSE_TEXT = "君不见，黄河之水天上来，奔流到海不复回。"
REAL_TEXT = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog again."
REAL_CHARS = 1200
# The query's positions on the live slider: every other one, so that the frames stay near 150 KB
# (the trail is sent once; the hand, the arc and the title are each frame's own).
M_VALUES = list(range(0, 257, 2))
# The key's positions on its live slider (the score against m − n): every one; a frame is two
# points and a title, ~0.2 KB.
N_VALUES = list(range(0, 257))


def rotation_controls():
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 2])     # room for 「随机种子」 on one line at 1024 px
    with c3:
        d = st.select_slider(tr(f"{NS}.d_label"), WIDTHS, value=64, key=f"{NS}.d", bind="query-params")
    with c4:
        base = st.select_slider(tr(f"{NS}.base_label"), BASES, value=10000, key=f"{NS}.base",
                                bind="query-params")
    with c5:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr("common.seed_help"))
    with c1:
        m = int(live_value(f"{NS}.m", M_VALUES, 12))   # the plane's own live slider (ui.live)
        n = int(live_value(f"{NS}.key_n", N_VALUES, 4))  # the distance figure's live slider
    with c2:
        # The pairs of this width, 0 … d/2 − 1; a narrower d clamps the chosen pair to the last one.
        pair = ranged_slider(tr(f"{NS}.pair_label"), 0, d // 2 - 1, 3, key=f"{NS}.pair", help=tr(f"{NS}.pair_help"))
    return m, n, pair, d, float(base), int(seed)


def plane_frames(d: int, base: float, n_key: int, pair: int, seed: int, dev: str, language: str) -> list:
    """The plane at every position m (the live slider's frames), from one batched core call."""
    return [pair_plane(f["path"], title=tr(f"{NS}.plane_fig", pair=pair, m=mm, n=n_key),
                       trail_name=tr(f"{NS}.trail"), hand_name=tr(f"{NS}.hand", m=mm),
                       key_point=f["key"], key_name=tr(f"{NS}.key_hand", n=n_key),
                       angle_text=f"φ + (m − n)θ = {f['angle']:.2f}",
                       x_title=f"x[{2 * pair}]", y_title=f"x[{2 * pair + 1}]")
            for mm, f in zip(M_VALUES, rotation_frames(d, base, M_VALUES, n_key, pair, seed, dev), strict=True)]


def dist_frames(d: int, base: float, m: int, pair: int, seed: int, dev: str, language: str) -> list:
    """The score at every key position n, the query at m (the live slider's frames)."""
    names = (tr(f"{NS}.dist_total"), tr(f"{NS}.dist_pair", pair=pair))
    curve = by_key(d, base, m, N_VALUES, pair, seed, dev)
    offsets = [m - nn for nn in N_VALUES]
    return [score_by_offset(offsets, {names[0]: curve["total"], names[1]: curve["score"]}, i,
                            title=tr(f"{NS}.dist_fig", m=m, n=nn, mn=m - nn, angle=curve["angle"][i]),
                            x_title=tr(f"{NS}.dist_axis"), y_title=tr(f"{NS}.dist_score_axis"))
            for i, nn in enumerate(N_VALUES)]


def loaded_model(lm: str, dev: str):
    """The (model, tokenizer) of the real-model section: SmolLM2's or the course model's."""
    return real_model(dev) if lm == REAL else course_model(dev)


def real_controls(cfg, real: bool):
    """Text, block, head, and the query and key tokens whose score is drawn (the key at or before
    the query: what a causal model compares); the ranges follow the model and the text."""
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        text = model_text(NS, real, (COURSE_TEXT, COURSE_CHARS), (REAL_TEXT, REAL_CHARS, REAL_TOKENS))
    layer, head = layer_and_head(NS, cfg, c2, c3, head_help=tr(f"{NS}.head_help"))
    return text.text if not text.empty else (REAL_TEXT if real else COURSE_TEXT), layer, head


def token_controls(n: int):
    """The query token and a key at or before it."""
    c1, c2 = st.columns(2)
    with c1:
        query = ranged_slider(tr(f"{NS}.query_label"), 0, n - 1, 10_000, key=f"{NS}.query")
    with c2:
        key = ranged_slider(tr(f"{NS}.rkey_label"), 0, query, 0, key=f"{NS}.rkey")
    return query, key


def base_names() -> dict[int, str]:
    return {b: tr(OWN[b], base=f"{b:,}") for b in REAL_BASES}


def distance_view(lm: str, text: str, layer: int, head: int, query: int, key: int, dev: str, language: str):
    """The score-against-distance figure of one query and key token, and its caption."""
    loaded = loaded_model(lm, dev)
    cfg = loaded[0].config
    tokens = real_qk(lm, text, layer, dev, loaded)["tokens"]
    curves = real_curves(lm, text, layer, head, query, key, cfg.max_seq_len, dev, loaded)
    own, names, r = int(cfg.rope_base), base_names(), query - key
    fig = score_curves(curves["distances"], {names[b]: curves[f"score_{b}"] for b in REAL_BASES},
                       title=tr(f"{NS}.real_fig", layer=layer, head=head, q=label(tokens[query]),
                                k=label(tokens[key])),
                       x_title=tr(f"{NS}.distance_axis_real"), y_title=tr(f"{NS}.score_axis"),
                       mark=(r, curves["traced"], tr(f"{NS}.traced_name", r=r)) if r >= 1 else None,
                       chosen=names[own])
    other = next(b for b in REAL_BASES if b != own)
    caption = tr(f"{NS}.real_caption", r=r, own=f"{own:,}", again=curves["own"][own], traced=curves["traced"],
                 other=f"{other:,}", at_other=curves["own"][other], far_a=curves[f"far_{REAL_BASES[0]}"],
                 far_b=curves[f"far_{REAL_BASES[1]}"], start=cfg.max_seq_len // 8, end=cfg.max_seq_len - 1)
    return fig, caption


def wave_view(lm: str, dev: str, language: str):
    """The wavelength of every pair under both bases, the model's context as a line, and its caption."""
    cfg = loaded_model(lm, dev)[0].config
    waves = {b: rope_wavelengths(cfg.d_head, float(b)).numpy() for b in REAL_BASES}
    names, n = base_names(), cfg.max_seq_len
    fig = per_pair({names[b]: waves[b] for b in REAL_BASES}, title=tr(f"{NS}.wave_fig", d=cfg.d_head),
                   x_title=tr(f"{NS}.pair_axis"), y_title=tr(f"{NS}.wave_axis"), chosen=names[int(cfg.rope_base)],
                   level=(n, tr(f"{NS}.context_name", n=f"{n:,}")))
    never = {b: int((waves[b] > n).sum()) for b in REAL_BASES}
    caption = tr(f"{NS}.wave_caption", p=cfg.d_head // 2, n=f"{n:,}", a=never[REAL_BASES[0]], b=never[REAL_BASES[1]],
                 slow_a=float(waves[REAL_BASES[0]][-1]), slow_b=float(waves[REAL_BASES[1]][-1]))
    return fig, caption
