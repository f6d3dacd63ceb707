"""Cached results of lesson F4 (activation patching), computed once per pair and direction for
every session.

A pair's maps (three L × T sweeps and the L × H head map) are ~3,000 patched runs: 1.6-5.7 s of
one core for SmolLM2's built-in pairs (the fact pair the longest: it differs from its second token
on), ~15 s for a pair of 16 tokens that differs at its first (bench/bench_patching.py, on a busy
machine of two cores). A built-in pair is computed when a student first opens it, then served to
everyone; with ANATOMY_PRELOAD_PATCHING=1, ui.model.warm_real computes all three after the first page
loads SmolLM2, while nobody is being served (``warm_builtin``). A student's own pair only when asked (a button and a progress bar in the
page), one computation at a time in this process, as F1's random control (``ui.f1_heads``): a
second student asking for a pair being computed waits for it, and gets the same object. What is
kept for every pair is what the page shows: a few small float32 arrays and the tokens as text (a
few KB a pair). The two plain runs themselves (~12 MB for 14 tokens, ~26 MB for 32) are kept for
the two pairs last asked for only: a click on a cell then costs one patched run, and noising is the
same runs patched the other way (``Runs.flipped``), never two forward passes again.
"""
from __future__ import annotations

import collections
import threading
from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from core.lab import patching as P
from ui.f2_lens import token_texts
from ui.words import tr


@dataclass(frozen=True)
class Side:
    """One plain run, as the page shows it."""
    logit_diff: float
    p_right: float
    p_wrong: float
    top: list[str]                # (K,) likeliest next tokens, best first
    top_probs: list[float]        # (K,)


@dataclass(frozen=True)
class Maps:
    """Everything the page draws for one pair patched in one direction."""
    clean_tokens: list[str]       # (T,) as readable text
    corrupted_tokens: list[str]   # (T,)
    differ: list[int]             # positions where the prompts differ
    right: str                    # the first token of each answer, as text
    wrong: str
    right_pieces: int             # tokens of each answer (only the first is scored)
    wrong_pieces: int
    clean: Side
    corrupted: Side
    noising: bool
    recovered: dict[str, np.ndarray]   # site -> (L, T) float32; "head" -> (L, H) at the last position
    diffs: dict[str, np.ndarray]       # the logit difference of each cell, same shapes

    @property
    def separable(self) -> bool:
        """False when both runs give the same logit difference: nothing can be recovered."""
        return abs(self.clean.logit_diff - self.corrupted.logit_diff) > 1e-6


def map_scale(noising: bool) -> dict:
    """The maps' colour scale for one direction, as keyword arguments of viz.patching's three maps:
    white at the base run (0 denoising, 1 noising), red where a patch moved the answer, 0 and 1
    named on the colour bar. Pass it to every map: ``recovery_map(..., **map_scale(noising))``."""
    return {"noising": bool(noising), "ends": (tr("f4.scale_corrupted"), tr("f4.scale_clean"))}


def pair_key(clean: str, corrupted: str, right: str, wrong: str, noising: bool, dev: str) -> tuple:
    return (clean, corrupted, right, wrong, bool(noising), dev)


@st.cache_resource(max_entries=2, show_spinner=False)
def pair_runs(clean: str, corrupted: str, right: str, wrong: str, dev: str, _loaded) -> P.Runs:
    """Both plain runs of a pair, patched clean into corrupted (``.flipped()`` for noising), shared
    and read only. Raises P.PairError."""
    model, tok = _loaded
    with torch.inference_mode():
        return P.run_pair(model, P.tokenize_pair(tok, clean, corrupted, right, wrong))


def runs_for(key: tuple, loaded) -> P.Runs:
    """The runs of ``key`` (pair_key), patched in its direction."""
    clean, corrupted, right, wrong, noising, dev = key
    runs = pair_runs(clean, corrupted, right, wrong, dev, loaded)
    return runs.flipped() if noising else runs


def side(tok, run: P.Run, pair: P.Pair) -> Side:
    got = P.plain(run, pair)
    return Side(got.logit_diff, got.p_right, got.p_wrong, token_texts(tok, got.top_ids), got.top_probs)


# --- the maps: computed once per key for every session ------------------------------------------
_MAPS: collections.OrderedDict = collections.OrderedDict()
_MAPS_MAX = 64                    # ~4 KB each
_MAPS_LOCK = threading.Lock()     # guards _MAPS
_COMPUTING = threading.Lock()     # one pair's sweeps at a time in this process


def maps_ready(key: tuple) -> Maps | None:
    """The maps computed for ``key`` (pair_key), or None when nobody has asked for them yet."""
    with _MAPS_LOCK:
        found = _MAPS.get(key)
        if found is not None:
            _MAPS.move_to_end(key)
        return found


def pair_maps(key: tuple, _loaded, progress=None) -> Maps:
    """Every map of the pair ``key``: computed once for every session. ``progress(fraction)`` is
    called as the sweeps go. Raises P.PairError. Read only."""
    found = maps_ready(key)
    if found is not None:
        return found
    model, tok = _loaded
    P.tokenize_pair(tok, *key[:4])                   # a pair that cannot be patched raises here
    with _COMPUTING:
        found = maps_ready(key)                      # computed while this one waited
        if found is not None:
            return found
        runs = runs_for(key, _loaded)
        pair = runs.pair
        with torch.inference_mode():                 # the three position maps and the heads, one pass
            sweeps = P.sweeps(model, runs, (*P.SITES, "head"), progress=progress)
        found = Maps(token_texts(tok, pair.clean_ids), token_texts(tok, pair.corrupted_ids), pair.differ,
                     token_texts(tok, [pair.right])[0], token_texts(tok, [pair.wrong])[0],
                     len(pair.right_pieces), len(pair.wrong_pieces),
                     side(tok, runs.clean, pair), side(tok, runs.corrupted, pair), runs.noising,
                     {s: m.recovered.numpy().astype(np.float32) for s, m in sweeps.items()},
                     {s: m.diffs.numpy().astype(np.float32) for s, m in sweeps.items()})
    with _MAPS_LOCK:
        _MAPS[key] = found
        while len(_MAPS) > _MAPS_MAX:
            _MAPS.popitem(last=False)
    return found


def warm_builtin(loaded, dev: str = "cpu", ready=lambda: True) -> None:
    """Every built-in pair's maps, denoising (what F4 opens on), computed now in this thread, the
    pair F4 opens on first, each once ``ready()`` says so (False: stop). Called once when the server
    starts (ui.model.warm_real, whose ``ready`` waits until nobody is being served); each pair holds
    the one-computation lock only while it runs, so a student who asks for their own pair meanwhile
    waits for one pair at most (~2-6 s), not for all three."""
    for b in P.PAIRS.values():
        if not ready():
            return
        pair_maps(pair_key(b.clean, b.corrupted, b.right, b.wrong, False, dev), loaded)


@st.cache_data(max_entries=256, show_spinner=False)
def cell_run(key: tuple, site: str, layer: int, position: int, _loaded) -> dict:
    """One cell's patched run to the end (a click on the map): its logit difference, recovered
    fraction and top next tokens. One resume on the pair's shared runs."""
    model, tok = _loaded
    runs = runs_for(key, _loaded)
    with torch.inference_mode():
        got = P.patched_run(model, runs, site, layer, position)
    return {"logit_diff": got.logit_diff, "recovered": got.recovered, "top": token_texts(tok, got.top_ids),
            "top_probs": got.top_probs}


def picked_cell(key: str, layer_key: str, pos_key: str) -> None:
    """A click on the residual map (before the rerun): the clicked cell's customdata, "layer,position",
    moves the two sliders (and so the address). Anything else moves nothing."""
    value = st.session_state.get(key)
    cell = value.get("select") if hasattr(value, "get") else None
    parts = cell.split(",") if isinstance(cell, str) else []
    if len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts):
        st.session_state[layer_key], st.session_state[pos_key] = int(parts[0]), int(parts[1])
