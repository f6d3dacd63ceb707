"""D1's SmolLM2 results shared by every student: one forward per prefix, the bars of a step;
and where a branch of a generation is kept (this session and the address).

Defined here, not in the page: a ``st.cache_data`` function written in a page script is built
again on every run of the page, and Streamlit reads its source each time (~0.4 ms a function).
"""
from __future__ import annotations

import re

import streamlit as st

from core.lab.real_generation import next_logits, step_numbers, strip_numbers
from ui import streamlit_internals as internals


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


# --- A branch (issue 44 §2): "what if it had written *this*?" ------------------------------------
# The branch point is (step, token id): step counts the new tokens from 1, as the page's "step to
# look at" slider. It lives in this session's state and in the address as two whole numbers.
BRANCH = "d1.branch"
BRANCH_URL = ("d1.branch_step", "d1.branch_token")
_WHOLE = re.compile(r"[0-9]{1,7}")          # ASCII digits only: int("²") fails, "²".isdigit() does not


def linked_branch() -> tuple[tuple[int, int] | None, bool]:
    """This session's branch point, or on a first visit (and back and forward) the address's:
    ((step, token id) or None, whether the address held one that is not two whole numbers).
    Whether it fits the generation on the page is the page's check (``fitting_branch``).

    Example: ?d1.branch_step=3&d1.branch_token=17 -> ((3, 17), False); ?d1.branch_step=x -> (None, True)"""
    malformed = False
    if BRANCH not in st.session_state or internals.is_history_navigation():
        values = [st.query_params.get(key) for key in BRANCH_URL]
        whole = all(isinstance(v, str) and _WHOLE.fullmatch(v) for v in values)
        st.session_state[BRANCH] = (int(values[0]), int(values[1])) if whole else None
        malformed = not whole and any(v is not None for v in values)
    return st.session_state[BRANCH], malformed


def fitting_branch(branch: tuple[int, int] | None, drawn: list[int], candidates: list[int] | None) -> bool:
    """Whether a branch point fits a generation: its step is one of the ``drawn`` tokens', and its
    token is one of that step's ``candidates`` (the bars' tokens) other than the one drawn there.

    Example: fitting_branch((2, 7), [5, 6], [6, 7]) -> True; (3, 7) -> False (2 steps); (2, 6) -> False"""
    if branch is None:
        return False
    step, token = branch
    return 1 <= step <= len(drawn) and candidates is not None and token in candidates and token != drawn[step - 1]


def keep_branch(branch: tuple[int, int] | None) -> None:
    """The branch point in this session and in the address (None: neither)."""
    st.session_state[BRANCH] = branch
    values = [None, None] if branch is None else [str(v) for v in branch]
    for key, value in zip(BRANCH_URL, values, strict=True):
        if value is None:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value


def branch_at(step: int, token: int | None, drawn: int, candidates: tuple[int, ...]) -> None:
    """Branch at ``step`` with ``token`` (a bar's or the list's); the token the run drew there, or
    none, goes back to the run as drawn. A token that is not one of the step's is ignored."""
    if token is None or token == drawn:
        keep_branch(None)
    elif token in candidates:
        keep_branch((step, token))


def bar_clicked(key: str, step: int, drawn: int, candidates: tuple[int, ...]) -> None:
    """A click on the bars (before the rerun): the bar's token id is its customdata."""
    value = st.session_state.get(key)
    picked = value.get("select") if hasattr(value, "get") else None
    if isinstance(picked, str) and _WHOLE.fullmatch(picked):
        branch_at(step, int(picked), drawn, candidates)


def listed(key: str, step: int, drawn: int, candidates: tuple[int, ...], none) -> None:
    """The list's choice (the keyboard's way to the same branch): ``none`` is "no branch"."""
    picked = st.session_state.get(key)
    branch_at(step, None if picked == none else picked, drawn, candidates)
