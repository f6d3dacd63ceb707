"""A prompt for the course model with "openings to try" above it (D1, D2).

A pill copies its opening into the prompt box through session state. ``ui.frame.text_box`` passes
its default as ``value`` on every run, and Streamlit logs "widget ... was created with a default
value but also had its value set via the Session State API" on the run after a pill set it
(review D1 #6). Here the run right after a pill passes no default; every other run passes it, so
the box, its URL value and a shared link behave as ``text_box``'s do.
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from core.text.clean import CleanText, clean_text
from ui.frame import _DROPPED, tr


def openings(ns: str, examples: Sequence[str], label: str, help: str | None = None) -> None:
    """Pills that copy an opening into the prompt box ``{ns}.prompt``."""
    def use_example():
        chosen = st.session_state.get(f"{ns}.example")
        if chosen:
            st.session_state[f"{ns}.prompt"] = chosen
            st.session_state[f"{ns}.prompt_set"] = True

    st.pills(label, list(examples), key=f"{ns}.example", on_change=use_example, help=help)


def prompt_box(key: str, default: str, limit: int, label: str, empty_key: str) -> CleanText:
    """``ui.frame.text_box`` with the lesson's own notice for an empty box (``empty_key``: D1 and
    D2 start from ``<bos>``, they do not fall back to an example text).

    TODO(frame.text_box): once ``text_box(..., empty_key=)`` is merged and skips its default on
    the run after a pill set the key (as here), call it instead."""
    just_set = st.session_state.pop(f"{key}_set", False)
    value = "" if just_set else st.session_state.get(_DROPPED, {}).get(key, default)
    raw = st.text_input(label, value=value, key=key, bind="query-params", max_chars=None)
    cleaned = clean_text(raw, limit)
    if cleaned.empty:
        st.info(tr(empty_key))
    elif cleaned.truncated:
        st.warning(tr("common.truncated", limit=limit, n=cleaned.original_len))
    return cleaned
