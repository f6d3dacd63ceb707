"""Lesson B5's results, computed once for every session per setting, and its timings measured once.
"""
from __future__ import annotations

import streamlit as st
import torch

from core.lab.sparse_lab import gallery, layers_to_connect_all, layers_to_reach, measure_one, receptive_field
from core.parts.attention import scaled_dot_product_attention
from core.parts.sparse import (
    PatternConfig,
    banded_attention,
    dense_weights,
    gather_attention,
    index_sets,
    pattern_mask,
    window,
)


@st.cache_data(max_entries=64, show_spinner=False)
def source_token(cfg: PatternConfig) -> int:
    """The token whose reach the table counts: the first one that is not global (a global token
    reaches every query in one layer, which would make Longformer look like one hop)."""
    return min(cfg.n_global, cfg.n - 1)


@st.cache_data(max_entries=64, show_spinner=False)
def patterns_demo(cfg: PatternConfig) -> dict:
    table = gallery(cfg)
    for row in table.values():
        mask = row["mask"]
        row["first_to_last"] = layers_to_reach(mask, cfg.n - 1, source_token(cfg))
        row["all"] = layers_to_connect_all(mask)
        row["mask"] = mask.numpy()
    return table


@st.cache_data(max_entries=256, show_spinner=False)
def reach_demo(cfg: PatternConfig, name: str, query: int, layers: int) -> tuple:
    """The receptive field of ``query`` (L, N) and the layers the table's source token needs."""
    mask = pattern_mask(name, cfg)
    return receptive_field(mask, query, layers).numpy(), layers_to_reach(mask, query, source_token(cfg))


@st.cache_data(max_entries=64, show_spinner=False)
def kernels_demo(n: int, w: int, seed: int) -> dict:
    """Both kernels and the dense one on the same window, on seeded random q, k, v."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, 16, generator=g) for _ in range(3))         # (N, 16) each
    mask = window(n, w)                                                   # (N, N)
    dense = scaled_dot_product_attention(q, k, v, mask)
    band = banded_attention(q, k, v, w)
    gathered = gather_attention(q, k, v, *index_sets(mask))
    return {"band_weights": band.weights.numpy(), "dense": dense.weights.numpy(),
            "err_band": float((band.output - dense.output).abs().max()),
            "err_band_w": float((dense_weights(band, n) - dense.weights).abs().max()),
            "err_gather": float((gathered.output - dense.output).abs().max()),
            "chunks": -(-n // w), "keys": band.weights.shape[-1]}


@st.cache_data(max_entries=256, show_spinner=False)
def measured(kernel: str, n: int, w: int) -> dict | None:
    """One kernel at one size: cached, so the second press (by anyone) is instant."""
    return measure_one(kernel, n, w)
