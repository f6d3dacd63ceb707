"""The course model, loaded once per process and device and shared by every student.

``st.cache_resource`` hands the same module to every session, so nothing per-request may
live on it: callers create their own KV cache, trace recorder and random generator.
"""
from __future__ import annotations

import streamlit as st

from core.models.model import REBUILD, CourseModelUnavailable, load_course_model
from ui.frame import tr


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(device: str):
    try:
        return load_course_model(device)
    except CourseModelUnavailable as err:
        return err


def course_model(device: str):
    """(model, tokenizer), or None after showing why the model is unavailable."""
    loaded = _load(device)
    if isinstance(loaded, CourseModelUnavailable):
        st.error(tr("common.model_unavailable", reason=str(loaded), command=REBUILD))
        return None
    return loaded
