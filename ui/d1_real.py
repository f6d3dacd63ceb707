"""D1's SmolLM2 results shared by every student: one forward per prefix, the bars of a step.

Defined here, not in the page: a ``st.cache_data`` function written in a page script is built
again on every run of the page, and Streamlit reads its source each time (~0.4 ms a function).
"""
from __future__ import annotations

import streamlit as st

from core.lab.real_generation import next_logits, step_numbers, strip_numbers


@st.cache_data(max_entries=64, show_spinner=False)
def real_logits(ids: tuple[int, ...], dev: str, _model):
    """The logits (V,) of the token after ``ids``: one forward, shared by every student."""
    return next_logits(_model, ids)


@st.cache_data(max_entries=256, show_spinner=False)
def real_step(ids: tuple[int, ...], temperature: float, top_k: int, top_p: float, chosen: int | None,
              show: int, dev: str, _model, _tok) -> dict:
    """The ``show`` bars of the token after ``ids`` at these settings (``chosen``: the token drawn)."""
    return step_numbers(real_logits(ids, dev, _model), _tok, temperature, top_k or None,
                        top_p if top_p < 1 else None, show, chosen)


@st.cache_data(max_entries=256, show_spinner=False)
def real_strip(ids: tuple[int, ...], shown: tuple[int, ...], temperatures: tuple[float, ...], top_k: int,
               top_p: float, dev: str, _model) -> dict:
    """The same step at each of ``temperatures`` (the strip does not depend on the slider's T)."""
    return strip_numbers(real_logits(ids, dev, _model), shown, temperatures, top_k or None,
                         top_p if top_p < 1 else None)
