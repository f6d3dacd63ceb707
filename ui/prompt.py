"""The "openings to try" above a prompt box (D1, D2).

A pill copies its opening into the box ``{ns}.prompt`` through session state and marks
``{ns}.prompt_set``: ``ui.frame.text_box`` then passes no default on the next run, or Streamlit
logs "widget ... was created with a default value but also had its value set via the Session
State API" (review D1 #6).
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def openings(ns: str, examples: Sequence[str], label: str, help: str | None = None) -> None:
    """Pills that copy an opening into the prompt box ``{ns}.prompt``."""
    def use_example():
        chosen = st.session_state.get(f"{ns}.example")
        if chosen:
            st.session_state[f"{ns}.prompt"] = chosen
            st.session_state[f"{ns}.prompt_set"] = True

    st.pills(label, list(examples), key=f"{ns}.example", on_change=use_example, help=help)

