"""Lesson A3's controls, and its results computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.lab import toy
from core.lab.first_block import repeated_rows
from core.lab.permutation import equivariance, reverse_order
from core.parts.positional import (
    dimension_waves,
    first_block_input,
    offset_similarities,
    sinusoidal,
    wavelengths,
)
from ui.frame import ranged_slider, text_box, tr
from viz.positions import offsets

NS = "a3"
D_SMALL = 8   # width of the equivariance demo: small enough to read every number
DEFAULT_PAIR = "我和你"
DEFAULT_LINE = "床前明月光，疑是地上霜。举头望明月"   # 明月 twice: the same character at two places


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


# --- The page's controls (lessons/a3_positions.py lays out the sections that read them) ----------
def order_controls():
    c1, c2, c3 = st.columns([3, 2, 1])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_PAIR, 16, tr(f"{NS}.text_label"))
    with c2:
        add_pe = st.toggle(tr(f"{NS}.add_pe"), value=False, key=f"{NS}.add_pe", bind="query-params")
    with c3:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr("common.seed_help"))
    return (text.text if not text.empty else DEFAULT_PAIR), add_pe, int(seed)


def table_controls():
    c1, c2 = st.columns(2)
    with c1:
        n_pos = st.slider(tr(f"{NS}.positions_label"), 4, 128, 64, key=f"{NS}.positions", bind="query-params")
    with c2:
        d = st.slider(tr(f"{NS}.d_label"), 4, 128, 64, step=2, key=f"{NS}.d_model", bind="query-params")
    return n_pos, max(4, d - d % 2)     # a hand-edited URL may ask for an odd width; pairs need even


def wave_controls(d: int):
    lo, hi = ranged_slider(tr(f"{NS}.dims_label"), 0, d - 1, (0, 10), key=f"{NS}.dims",
                           help=tr(f"{NS}.dims_help"))
    return sorted({lo, hi})


def line_controls() -> str:
    line = text_box(f"{NS}.line", DEFAULT_LINE, 32, tr(f"{NS}.line_label"))
    return line.text if not line.empty else DEFAULT_LINE


def offset_frames(n_pos: int, d: int, dev: str, language: str) -> list:
    """The offset figure at every start p = 0 .. n_pos - 2 (the live slider's frames), from one
    Gram matrix."""
    starts = list(range(n_pos - 1))
    pe = sinusoidal(n_pos, d, dev)                                       # (P, D)
    rows = [r.cpu().numpy() for r in offset_similarities(pe, [0, *starts])]
    return [offsets([(tr(f"{NS}.from_p", p=0), rows[0]), (tr(f"{NS}.from_p", p=start), dots)],
                    title=tr(f"{NS}.offset_fig", d=d), x_title=tr(f"{NS}.offset_axis"), y_title="PE(p) · PE(p + k)")
            for start, dots in zip(starts, rows[1:], strict=True)]
