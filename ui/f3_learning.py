"""Cached results of lesson F3 (a model learning), shared by every session.

The checkpoints are read once per process and device (``st.cache_resource``, read-only); each
result is computed once per distinct opening and setting for the whole server
(``st.cache_data``, keyed on plain strings and numbers) and kept as plain lists and arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from core.lab.learning import (
    CORPUS_FILE,
    Checkpoints,
    Counts,
    continuations,
    count_models,
    draw_batch,
    encode_corpus,
    head_at_checkpoints,
    load_checkpoints,
    next_char_at,
    read_manifest,
    resemblance,
    window_means,
)
from core.models.model import ASSETS, CourseModelUnavailable
from ui.frame import tr

WINDOWS, WINDOW_LEN, WINDOW_SEED = 8, 128, 0    # the corpus sample the resemblance is measured on
LOG_EVERY = 25                                  # the training script's logging interval


@dataclass(frozen=True)
class Learned:
    checkpoints: Checkpoints
    counts: Counts
    resemblance: dict[str, list[float]]     # one value a checkpoint (core.lab.learning.resemblance)
    logged: list[tuple[int, float]]         # the 25-step means of every step's loss


@st.cache_resource(show_spinner=False, max_entries=2)
def checkpoint_models(dev: str) -> Checkpoints | CourseModelUnavailable:
    """The seven checkpoints alone (read-only, one copy per process and device), or why not:
    for a lesson that wants an earlier, less certain course model (D1's sampling, C1's decoding)
    without the measurements below."""
    try:
        return load_checkpoints(dev)
    except CourseModelUnavailable as err:
        return err


@st.cache_resource(show_spinner=False)
def checkpoint_steps() -> tuple[int, ...]:
    """The training steps of the shipped checkpoints, the last one the final model (read from the
    manifest once per process); () when the manifest cannot be read."""
    try:
        return tuple(int(e["step"]) for e in read_manifest()["checkpoints"])
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def model_at_step(step: int, dev: str):
    """The course model as it was after ``step`` training steps (one of ``checkpoint_steps()``),
    shared and read-only, or None when the checkpoints cannot be loaded."""
    ck = checkpoint_models(dev)
    if isinstance(ck, CourseModelUnavailable) or step not in ck.steps:
        return None
    return ck.models[ck.steps.index(step)]


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(dev: str):
    ck = checkpoint_models(dev)
    if isinstance(ck, CourseModelUnavailable):
        return ck
    try:
        data = encode_corpus((ASSETS / CORPUS_FILE).read_text(encoding="utf-8"), ck.tokenizer)
    except OSError as err:
        return err
    counts = count_models(data, len(ck.tokenizer))
    gen = torch.Generator().manual_seed(WINDOW_SEED)
    windows = draw_batch(data, WINDOW_LEN, WINDOWS, gen)                     # (W, T+1)
    return Learned(ck, counts, resemblance(ck.models, counts, windows), window_means(ck.step_loss, LOG_EVERY))


def learned(dev: str) -> Learned | None:
    """The checkpoints and what was measured on them, or None after saying why they are missing."""
    with st.spinner(tr("f3.loading")):          # once per process: ~1-4 s of measuring, then cached
        loaded = _load(dev)
    if isinstance(loaded, Exception):
        st.error(tr("common.model_unavailable", reason=str(loaded), command="python scripts/train_course_model.py"))
        return None
    return loaded


def opening_ids(text: str, dev: str) -> list[int]:
    """The opening's character ids (no BOS: a typed line starts mid-stream, as training windows do)."""
    return _load(dev).checkpoints.tokenizer.encode(text)


@st.cache_data(max_entries=256, show_spinner=False)
def next_char_view(text: str, read: int, dev: str) -> dict:
    """Each checkpoint's next-character distribution after the first ``read`` characters."""
    got = _load(dev)
    ids = opening_ids(text, dev)
    nc = next_char_at(got.checkpoints.models, got.checkpoints.tokenizer, got.counts, ids, read)
    return {"chars": nc.chars, "probs": nc.probs.numpy(), "entropy": nc.entropy_bits, "top_char": nc.top_char,
            "top_prob": nc.top_prob, "target": nc.target, "unigram": nc.unigram.numpy(),
            "bigram": nc.bigram.numpy(), "read": tokens(ids[:read], dev)}


@st.cache_data(max_entries=256, show_spinner=False)
def head_view(text: str, chars: int, layer: int, head: int, dev: str) -> dict:
    """One head's weights on the first ``chars`` characters at every checkpoint, float32."""
    got = _load(dev)
    ids = opening_ids(text, dev)[:chars]
    weights = head_at_checkpoints(got.checkpoints.models, ids, layer, head)   # (C, N, N)
    return {"tokens": tokens(ids, dev), "weights": weights.numpy().astype(np.float32)}


NEW_MAX = 48          # the most characters the lesson's slider asks each checkpoint to write


@st.cache_resource(max_entries=64, show_spinner=False)
def _longest(text: str, seed: int, dev: str) -> tuple[dict[str, str], ...]:
    got = _load(dev)
    return tuple(continuations(got.checkpoints.models, got.checkpoints.tokenizer, text, NEW_MAX, seed))


def continuation_view(text: str, n_new: int, seed: int, dev: str) -> list[dict[str, str]]:
    """What each checkpoint writes in ``n_new`` characters (at most NEW_MAX). A model writes left to
    right and draws one character a step from its seeded generator, so the first n characters of
    its longest continuation are its n-character one, draw for draw (a character a token, as our
    tokenizer has it; tests/test_f3_learning.py checks it): one run per opening and seed serves
    every value of the slider (issue 39: each value cost ~1 s of the server, for each new value a
    student chose)."""
    return [{kind: written[:n_new] for kind, written in run.items()} for run in _longest(text, seed, dev)]


def tokens(ids: list[int], dev: str) -> list[str]:
    return _load(dev).checkpoints.tokenizer.tokens(ids)
