"""The date model of C1 and B4, loaded once per process and device and shared by every student.

Like ui/model.py: ``st.cache_resource`` hands the same module to every session, so traces and
decoding caches are made per call, never stored on it. ``reading`` caches one date's run,
keyed on the plain text (and the checkpoint's step), as numpy.

The checkpoints of assets/date_model_checkpoints.json (C1's decoding at earlier steps of training)
are read the same way, one read-only copy per step and device; ``step=None`` is the shipped model.
"""
from __future__ import annotations

import streamlit as st

from core.models.dates import read_date
from core.models.encdec import (
    REBUILD,
    DateCheckpoint,
    DateModelUnavailable,
    date_checkpoints,
    load_date_checkpoint,
    load_date_model,
)
from ui.frame import tr


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(device: str):
    try:
        return load_date_model(device)
    except DateModelUnavailable as err:
        return err


def date_model(device: str):
    """(model, source tokenizer, target tokenizer), or None after showing why it is unavailable."""
    loaded = _load(device)
    if isinstance(loaded, DateModelUnavailable):
        st.error(tr("common.date_model_unavailable", reason=str(loaded), command=REBUILD))
        return None
    return loaded


@st.cache_resource(show_spinner=False)
def checkpoints() -> list[DateCheckpoint]:
    """The manifest's checkpoints, the shipped model last; [] where the manifest cannot be read
    (the lessons then offer the shipped model alone)."""
    try:
        return date_checkpoints()
    except DateModelUnavailable:
        return []


@st.cache_resource(show_spinner=False, max_entries=8)
def _load_step(device: str, step: int):
    try:
        return load_date_checkpoint(step, device)
    except DateModelUnavailable as err:
        return err


def _model(device: str, step: int | None):
    """(model, source tokenizer, target tokenizer) at ``step`` (None: the shipped model)."""
    model, src_tok, tgt_tok = _load(device)
    if step is not None:
        model = _load_step(device, step)
        if isinstance(model, DateModelUnavailable):
            raise model
    return model, src_tok, tgt_tok


def checkpoint_available(device: str, step: int) -> bool:
    """Whether the checkpoint at ``step`` loads (checksum included); shows why not when it does not."""
    loaded = _load_step(device, step)
    if isinstance(loaded, DateModelUnavailable):
        st.warning(tr("common.date_model_unavailable", reason=str(loaded), command=REBUILD))
        return False
    return True


@st.cache_data(max_entries=64, show_spinner=False)
def reading(text: str, device: str, step: int | None = None) -> dict:
    """One date read by the model (at training step ``step``; None: the shipped model): its
    output, the rows and columns of every figure, and every traced tensor (batch axis dropped)
    as numpy."""
    model, src_tok, tgt_tok = _model(device, step)
    r = read_date(model, text, src_tok, tgt_tok)
    return {"source": r.source, "output": r.output, "fed": r.target,
            "written": r.written,
            "ids": r.decoded.ids[0].tolist(), "probs": r.decoded.probs[0].cpu().numpy(),
            "vocab": tgt_tok.tokens(range(len(tgt_tok))),
            "tensors": {name: t[0].cpu().numpy() for name, t in r.trace.tensors.items()}}


@st.cache_data(max_entries=64, show_spinner=False)
def forced(text: str, answer: str, device: str, step: int | None = None):
    """(N, V) softmax of one teacher-forced pass on ``text`` fed <bos> + ``answer``, as numpy."""
    from core.lab.date_lab import teacher_forced

    model, src_tok, tgt_tok = _model(device, step)
    return teacher_forced(model, text, answer, src_tok, tgt_tok).cpu().numpy()
