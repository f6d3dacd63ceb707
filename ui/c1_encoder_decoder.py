"""Lesson C1's results, computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st
import torch

from core.lab.date_lab import (
    max_difference,
    norm_stats,
    relu_off,
    right_answer,
    softmax_rows,
)
from ui.date_model import forced, reading
from viz.encdec import sublayers


@st.cache_data(max_entries=64, show_spinner=False)
def sublayer_view(text: str, stack: str, layer: int, sub: str, dev: str) -> dict:
    """The tensors going into and out of one sub-layer, and the numbers its section shows."""
    r = reading(text, dev)
    t = r["tensors"]
    base = f"{stack}.layers.{layer}"
    rows = r["source"] if stack == "encoder" else r["fed"]
    parts = sublayers(stack)
    attn = sub if not sub.endswith("norm") else sub.removesuffix("_norm")
    before_attn = f"{base}.input" if parts.index(attn) == 0 else f"{base}.{parts[parts.index(attn) - 1]}"
    if sub.endswith("norm"):
        inp, out = f"{base}.{attn}_add", f"{base}.{sub}"
    else:
        inp, out = before_attn, f"{base}.{sub}.out" if sub != "ffn" else f"{base}.ffn_out"
    view = {"rows": rows, "in_name": inp, "out_name": out, "in": t[inp], "out": t[out]}
    if sub in ("self_attn", "cross_attn"):
        view["weights"] = t[f"{base}.{sub}.weights"].mean(0)                       # (N, S) head average
        view["cols"] = r["source"] if sub == "cross_attn" or stack == "encoder" else r["fed"]
    return view


@st.cache_data(max_entries=64, show_spinner=False)
def norm_view(text: str, name: str, dev: str) -> dict:
    """One Add & Norm ("decoder.layers.0.cross_attn_norm"): each token's mean and variance."""
    r = reading(text, dev)
    t = r["tensors"]
    stats = norm_stats(torch.from_numpy(t[name.removesuffix("_norm") + "_add"]), torch.from_numpy(t[name]))
    return {"rows": r["source"] if name.startswith("encoder") else r["fed"],
            "stats": {k: v.numpy() for k, v in stats.items()}}


@st.cache_data(max_entries=64, show_spinner=False)
def ffn_view(text: str, name: str, dev: str) -> dict:
    """One feed-forward ("decoder.layers.0.ffn"): its ReLU output and the units it switched off."""
    r = reading(text, dev)
    hidden = r["tensors"][f"{name}.hidden"]                                      # (N, F)
    off = relu_off(torch.from_numpy(hidden))
    return {"rows": r["source"] if name.startswith("encoder") else r["fed"], "hidden": hidden,
            "off": off["per_token"].numpy(), "off_all": float(off["overall"])}


@st.cache_data(max_entries=64, show_spinner=False)
def decoding_view(text: str, feed: str, dev: str, ckpt: int | None = None) -> dict:
    """Step-by-step decoding (greedy, with the cache) against one teacher-forced pass, fed the
    model's own output or (``feed == "answer"``) the right answer; by the model after ``ckpt``
    training steps (None: the shipped model)."""
    r = reading(text, dev, ckpt)
    answer = right_answer(text) if feed == "answer" else None
    if answer is None:
        probs = softmax_rows(torch.from_numpy(r["tensors"]["logits"]))          # (N, V)
        fed = r["fed"]
    else:
        probs = torch.from_numpy(forced(text, answer, dev, ckpt))               # (N, V)
        fed = ["<bos>", *answer]
    n = min(probs.shape[0], len(r["fed"]))
    stepped = torch.from_numpy(r["probs"][:n])                                   # (n, V)
    # The first position whose fed prefix is not the model's own: from there the two differ.
    own = r["fed"][1:] + [None]
    first = next((t for t in range(1, len(fed)) if t < len(own) and fed[t] != r["fed"][t]), None)
    return {"forced": probs.numpy(), "stepped": stepped.numpy(), "fed": fed, "answer": answer,
            "vocab": r["vocab"], "ids": r["ids"], "output": r["output"], "first": first,
            "diff": max_difference(probs[:n], stepped)}
