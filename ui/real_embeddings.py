"""A2 on SmolLM2: its embedding table read for every student of the process.

The rows' lengths of the (49,152, 576) table (192 KB: no unit-length copy of the 113 MB table)
are measured once per process and device (``st.cache_resource``), never per session; the results a page draws are small and cached on
the plain inputs (``st.cache_data``). The model and tokenizer come in as ``_model``/``_tok``:
Streamlit does not hash them (there is one shared copy per device), the device string is the key.
"""
from __future__ import annotations

import streamlit as st
import torch

from core.lab.embedding import lookup, nearest_to, pca_2d, row_lengths, word_vectors
from core.lab.real_tokens import readable

MAX_ROWS = 64          # tokens of the prompt drawn as X (64 x 576 float32 = 147 KB)


def shown(tok, ids: list[int]) -> list[str]:
    """Tokens as readable text: a byte that is only part of a character as \\xNN."""
    return [readable(tok.token_bytes(i)) for i in ids]


def table(model) -> torch.Tensor:
    """SmolLM2's E (V, D); tied: its output layer is the same matrix."""
    return model.embed.weight.detach()


@st.cache_resource(show_spinner=False, max_entries=2)
def lengths(device: str, _model) -> torch.Tensor:
    """The length of every row of E, shared by all sessions: read only."""
    with torch.no_grad():
        return row_lengths(table(_model))                         # (V,)


@st.cache_data(max_entries=64)
def prompt_rows(text: str, device: str, _model, _tok) -> dict:
    """X = E[ids] for the prompt's SmolLM2 tokens (the first MAX_ROWS of them)."""
    ids = _tok.encode(text)                                       # (N,)
    rows = ids[:MAX_ROWS]
    x = lookup(table(_model), rows)                              # (N, D)
    return {"ids": ids, "tokens": shown(_tok, rows), "x": x.cpu().numpy()}


@st.cache_data(max_entries=256)
def neighbours(word: str, space: bool, k: int, device: str, _model, _tok) -> dict:
    """The k tokens of the whole vocabulary nearest to ``word`` (with a leading space when
    ``space``: the form a word has inside a sentence) by cosine, its own tokens left out."""
    ids = _tok.encode((" " + word) if space else word)            # (n,) one token or several
    query = word_vectors(table(_model), [ids])[0]                 # (D,)
    found, sims = nearest_to(table(_model), lengths(device, _model), query, k, ids)
    return {"ids": ids, "tokens": shown(_tok, ids), "found": found.tolist(),
            "labels": shown(_tok, found.tolist()), "sims": sims.cpu().numpy()}


@st.cache_data(max_entries=128)
def word_map(words: tuple[str, ...], device: str, _model, _tok) -> dict:
    """A 2-D PCA of the words' vectors (each written with a leading space, as inside a sentence;
    a word of several tokens is the mean of their rows)."""
    pieces = [_tok.encode(" " + w) for w in words]                # W lists of ids
    x = word_vectors(table(_model), pieces)                       # (W, D)
    pca = pca_2d(x)
    return {"coords": pca.coords.cpu().numpy(), "explained": pca.explained.tolist(), "ids": pieces,
            "tokens": [shown(_tok, p) for p in pieces]}
