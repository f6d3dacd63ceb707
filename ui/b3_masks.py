"""Lesson B3's controls and live frames, and its results computed once for every session per setting.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from core.lab.attention_lab import (
    change_token,
    future_leak,
    future_leaks,
    mask_check,
    masked_attention,
    padded_attention,
    phrases,
    with_mask,
)
from ui.frame import text_box, tr
from viz.common import label
from viz.masks import change_bars

NS = "b3"
D = 32
LEAK_HEADS = 2
DEFAULT_TEXT = "君不见，黄河之水天上来"
PAD_EXAMPLE = ["君不见", "黄河之水天上来", "奔流到海"]
LIMIT = 24


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


# --- The page's controls and live frames (lessons/b3_masks.py lays out the sections) -------------
def text_controls():
    # The toggle's column wide enough for its label beside the switch and the help mark down to a
    # 720 px window (200 % zoom): at 1 of 5 parts "Causal mask" was cut to "Causal m…".
    c1, c2, c3 = st.columns([3, 1, 1.4])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, LIMIT, tr(f"{NS}.text_label"))
    with c2:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    with c3:
        causal = st.toggle(tr(f"{NS}.causal_label"), value=True, key=f"{NS}.causal", bind="query-params",
                           help=tr(f"{NS}.causal_help"))
    return (text.text if not text.empty else DEFAULT_TEXT), int(seed), causal


def width_controls():
    return st.slider("d_k", 1, 64, 8, key=f"{NS}.d_k", bind="query-params")


def padded_texts(text: str) -> list[str]:
    """The phrases of the text as a batch, or a fixed example (with a note) when they can't show padding."""
    texts = phrases(text)
    if len(texts) < 2:
        st.info(tr(f"{NS}.pad_fallback"))
        return PAD_EXAMPLE
    if len({len(t) for t in texts}) == 1:
        st.info(tr(f"{NS}.pad_equal", n=len(texts[0])))
        return PAD_EXAMPLE
    return texts


def leak_frames(text: str, seed: int, causal: bool, dev: str, language: str) -> list:
    """The change figure at every changed position 1 .. N - 1 (the live slider's frames), on one
    scale, from one batched core call."""
    tokens = single(text, 8, seed, causal, dev)["tokens"]      # the characters; d_k plays no part here
    positions = list(range(1, len(tokens)))
    setting = "causal" if causal else "none"
    leaks = [m[setting].cpu().numpy() for m in future_leaks(text, positions, LEAK_HEADS, seed, D, dev)]
    top = max(float(np.nanmax(c)) for c in leaks)    # one scale for every frame
    return [change_bars(tokens, c, q, names=(tr(f"{NS}.before", p=q), tr(f"{NS}.after", p=q)),
                        title=tr(f"{NS}.leak_fig", p=q, old=label(tokens[q]), new=change_token(text, q)[q],
                                 mask=tr(f"{NS}.with_mask" if causal else f"{NS}.without_mask")),
                        x_title=tr(f"{NS}.position"), y_title=tr(f"{NS}.change_axis"), y_max=top)
            for q, c in zip(positions, leaks, strict=True)]
