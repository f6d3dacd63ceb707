"""Lesson A3's results, computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.lab import toy
from core.lab.first_block import repeated_rows
from core.lab.permutation import equivariance, reverse_order
from core.parts.positional import (
    dimension_waves,
    first_block_input,
    sinusoidal,
    wavelengths,
)

D_SMALL = 8   # width of the equivariance demo: small enough to read every number


@st.cache_data(max_entries=64)
def order_demo(text: str, add_pe: bool, seed: int, dev: str) -> dict:
    """Attention over the text and over its reverse, with the same seeded weights."""
    tokens, x = toy.embed_text(text, D_SMALL, seed, dev)                 # (N, D)
    perm = reverse_order(len(tokens))
    w_q, w_k, w_v = toy.projections(D_SMALL, D_SMALL, D_SMALL, seed, dev)
    pe = sinusoidal(len(tokens), D_SMALL, dev) if add_pe else None      # (N, D)
    check = equivariance(x, perm, w_q, w_k, w_v, positions=pe)
    return {"tokens": tokens, "reversed": [tokens[i] for i in perm], "error": check.error,
            **{name: getattr(check, name).cpu().numpy() for name in ("output", "output_permuted", "difference")}}


@st.cache_data(max_entries=64)
def table_demo(n_pos: int, d: int, dev: str) -> dict:
    pe = sinusoidal(n_pos, d, dev)                                       # (P, D)
    return {"pe": pe.cpu().numpy(), "wavelengths": wavelengths(d).numpy()}


@st.cache_data(max_entries=64)
def wave_demo(n_pos: int, d: int, dims: tuple[int, ...]) -> tuple:
    return tuple(t.numpy() for t in dimension_waves(n_pos, d, list(dims)))


@st.cache_data(max_entries=64)
def input_demo(line: str, d: int, seed: int, dev: str) -> dict:
    tokens, emb = toy.embed_text(line, d, seed, dev)                     # (N, D)
    pe, x0 = first_block_input(emb)                                      # (N, D) each
    twice = repeated_rows(tokens, emb, pe, x0)
    repeat = None if twice is None else {
        "token": twice.token, "positions": twice.positions, "rows": twice.rows.cpu().numpy(),
        "difference": twice.difference.cpu().numpy(), "embedding_gap": twice.embedding_gap,
        "pe_gap": twice.pe_gap, "largest": float(twice.difference.abs().max())}
    return {"tokens": tokens, "emb": emb.cpu().numpy(), "pe": pe.cpu().numpy(), "x0": x0.cpu().numpy(),
            "repeat": repeat}
