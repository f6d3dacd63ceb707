"""Lesson A2's results, computed once for every session: the course model's embedding table, a
prompt's rows, nearest neighbours and the table's map.
"""
from __future__ import annotations

import streamlit as st

from core.lab import toy
from core.lab.embedding import (
    frequent_ids,
    kept_on_map,
    lookup,
    nearest,
    pca_2d,
)
from ui.model import course_model_or_reason

FALLBACK_D = 64


def course_model():
    """(model, tokenizer, None) or (None, None, why not): ui.model's copy, shared by every student and
    every lesson (this page once loaded a second copy of its own, 5.4 MB)."""
    return course_model_or_reason("cpu")


def weight_table(name: str):
    model = course_model()[0]
    layer = model.output if name == "output" else model.embed
    return layer.weight.detach()                                   # (V, D)


@st.cache_data(max_entries=64)
def prompt_rows(name: str, text: str, dev: str) -> dict:
    """X = E[ids] for the prompt, from the trained table ``name``."""
    model, tok, _ = course_model()
    ids = tok.encode(text)                                          # (N,)
    x = lookup(weight_table(name).to(dev), ids)                     # (N, D)
    return {"ids": ids, "tokens": tok.tokens(ids), "x": x.cpu().numpy()}


@st.cache_data(max_entries=64)
def random_rows(text: str, seed: int, dev: str) -> dict:
    tokens, x = toy.embed_text(text, FALLBACK_D, seed, dev)        # (N, D)
    return {"tokens": tokens, "x": x.cpu().numpy()}


@st.cache_data(max_entries=256)
def neighbours_of(name: str, row: int, k: int, top: int, dev: str) -> tuple[list[int], list[str], list[float]]:
    table = weight_table(name).to(dev)                              # (V, D)
    found, sims = nearest(table, row, k, frequent_ids(len(table), top).to(dev))
    return found.tolist(), course_model()[1].tokens(found.tolist()), sims.cpu().tolist()


@st.cache_data(max_entries=16)
def table_map(name: str, top: int) -> dict:
    """The 2-D PCA of the ``top`` most frequent characters' rows (fitted once per choice)."""
    table = weight_table(name)                                      # (V, D)
    ids = frequent_ids(len(table), top)                             # (C,)
    pca = pca_2d(table[ids])
    return {"tokens": course_model()[1].tokens(ids.tolist()), "pca": pca}


@st.cache_data(max_entries=256)
def map_points(name: str, top: int, ids: tuple[int, ...], near: tuple[int, ...]) -> dict:
    """The map of the frequent rows, with the rows ``ids`` (prompt, then the chosen character)
    and the chosen one's nearest rows ``near`` placed on it, and how many of those the map kept."""
    tmap = table_map(name, top)
    pca = tmap["pca"]
    placed = pca.project(lookup(weight_table(name), list(ids)))                     # (n, 2)
    nearby = pca.project(lookup(weight_table(name), list(near)))                    # (k, 2)
    return {"tokens": tmap["tokens"], "coords": pca.coords.numpy(), "explained": pca.explained.tolist(),
            "placed": placed.numpy(), "near": nearby.numpy(), "kept": kept_on_map(pca.coords, placed[-1], nearby)}
