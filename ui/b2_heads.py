"""Lesson B2's controls, its trained layer's grid, and its results computed once for every
session per setting.
"""
from __future__ import annotations

import numpy as np
import streamlit as st
import torch

import ui.model
from core.lab import toy
from core.lab.attention_lab import parameter_counts, run_heads, seeded_mha
from core.lab.real_tokens import dropped_note
from core.parts.mha import merge_heads, split_heads
from ui.explorer import REAL_PROMPT, traced, traced_real
from ui.frame import figure, plain, ranged_slider, text_box, tr
from ui.model import REAL, course_model, model_switch, real_model
from viz.attention import head_grid, weight_top

NS = "b2"
DEFAULT_TEXT = "君不见，黄河之水天上来"
HEADS = [1, 2, 4, 8]
WIDTHS = [16, 32, 64, 128]
REAL_TOKENS = 48           # tokens of SmolLM2's layer shown (the causal rows of a longer text are the same)


@st.cache_data(max_entries=64)
def heads_demo(text: str, d_model: int, n_heads: int, seed: int, dev: str) -> dict:
    tokens, x = toy.embed_text(text, d_model, seed, dev)                    # (N, D)
    x = x.unsqueeze(0)                                                       # (1, N, D): a batch of one
    _, trace = run_heads(x, n_heads, seed)
    q = trace["attn.q"][0]                                                   # (H, N, d_head)
    return {
        "w_q": seeded_mha(d_model, n_heads, seed, dev).w_q.weight.detach().T.cpu().numpy(),   # (D, D): x @ W_q
        "q": q.cpu().numpy(),
        "q_flat": merge_heads(q.unsqueeze(0))[0].cpu().numpy(),             # (N, D) = X W_q, before the cut
        "tokens": tokens,
        "weights": trace["attn.weights"][0].cpu().numpy(),                   # (H, N, N)
        "concat": trace["attn.concat"][0].cpu().numpy(),                     # (N, D)
        "shapes": {"x": tuple(x.shape), **{name: tuple(t.shape) for name, t in trace.tensors.items()}},
        "round_trip": bool(torch.equal(merge_heads(split_heads(x, n_heads)), x)),
        "params": parameter_counts(d_model, n_heads),
    }


# --- The page's controls and its trained layer (lessons/b2_heads.py lays out the sections) -------
def smollm2_chosen() -> bool:
    """Whether the trained layer below reads SmolLM2: the switch is drawn under the text box,
    so its value is read here (the switch's rerun of the fragment redraws the box too)."""
    picked = st.session_state.get(f"{NS}.lm", st.query_params.get(f"{NS}.lm"))
    return picked == REAL and ui.model.real_model_available()   # through the module: tests patch it


def text_controls(dev: str):
    real = smollm2_chosen()
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, 32, tr(f"{NS}.text_label_real" if real else f"{NS}.text_label"))
        if real and (loaded := real_model(dev)) and (note := dropped_note(loaded[1], text.text)):
            st.warning(tr("real.dropped", **note))               # bytes SmolLM2 has no token for
        if real and (text.empty or text.text == DEFAULT_TEXT):
            st.caption(tr(f"{NS}.real_example", text=plain(REAL_PROMPT)))
    with c2:
        h = st.select_slider(tr(f"{NS}.heads_label"), HEADS, value=4, key=f"{NS}.heads", bind="query-params")
    with c3:
        d = st.select_slider(tr(f"{NS}.width_label"), WIDTHS, value=32, key=f"{NS}.d_model", bind="query-params")
    with c4:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    typed = not text.empty and text.text != DEFAULT_TEXT
    return (text.text if not text.empty else DEFAULT_TEXT), typed, int(h), int(d), int(seed)


def shape(t: tuple) -> str:
    return "(" + ", ".join(str(v) for v in t) + ")"


def reshape_rows(s: dict, n: int, h: int, d_head: int) -> list[tuple[str, str]]:
    """Every step from X to the output with its shape (``s``: the traced shapes of heads_demo)."""
    b = s["x"][0]
    return [
        ("X", shape(s["x"])),
        ("X W_q", shape((b, n, h * d_head))),
        (".view(B, N, H, d_head)", shape((b, n, h, d_head))),
        (".transpose(1, 2) → Q", shape(s["attn.q"])),
        ("K, V", shape(s["attn.k"])),
        ("QKᵀ/√d_head, softmax", shape(s["attn.weights"])),
        (tr(f"{NS}.per_head_out"), shape(s["attn.q"])),
        (".transpose(1, 2)", shape((b, n, h, d_head))),
        (".reshape(B, N, H·d_head) → concat", shape(s["attn.concat"])),
        ("concat · W_o", shape(s["attn.out"])),
    ]


def real_heads(text: str, typed: bool, dev: str, loaded) -> None:
    """The 9 query heads of one layer of SmolLM2 on the same text (or, on the page's Chinese
    example, on an English one): three groups of three heads, each group reading one key/value head."""
    cfg = loaded[0].config
    group = cfg.n_heads // cfg.n_kv_heads
    # The range follows the model switch: ranged_slider clamps a value beyond it. Layer 16 has a
    # previous-token head (head 0).
    layer = ranged_slider(tr(f"{NS}.real_layer"), 0, cfg.n_layers - 1, 16, key=f"{NS}.trained_layer")
    with st.spinner(tr(f"{NS}.real_running")):
        data = traced_real(text if typed else REAL_PROMPT, dev, loaded)
    n = min(len(data["tokens"]), REAL_TOKENS)
    if data["n_ids"] > n:
        st.warning(tr(f"{NS}.real_cut", n=data["n_ids"], limit=n))
    # Causal: the first n rows of a longer text's weights are those of its first n tokens alone.
    weights = data["weights"][layer, :, :n, :n].astype(np.float32)        # (H, n, n)
    top = weight_top(weights)
    tokens = ["bos" if i == 0 else t for i, t in enumerate(data["tokens"][:n])]   # <|im_start|>, short
    # A row a group of heads sharing a key/value head: three columns, up to 9 tokens; beyond,
    # two (at 1024 px a third of the chart is narrower than a column of turned word labels).
    figure(head_grid(weights, tokens, titles=[tr(f"{NS}.head_kv", i=i, kv=i // group) for i in range(cfg.n_heads)],
                     cols=group if n <= 9 else 2, hover_names=(tr("common.query"), tr("common.key"), tr("common.weight")),
                     height_per_row=300, zmax=top, colorbar_title=tr("common.weight"), key_labels=True),
           key=f"{NS}.trained", name=tr(f"{NS}.trained_title"))
    st.caption(tr(f"{NS}.read_trained_real", layer=layer, heads=cfg.n_heads, kv=cfg.n_kv_heads, group=group,
                  d_head=cfg.d_head, top=top))


def trained_heads(text: str, typed: bool, dev: str) -> None:
    """Every head of one layer of a trained model on the same text, on one colour scale:
    beside the random heads above, these do differ (some look back one character, some at the
    punctuation). The course model by default; SmolLM2 on the switch (b2.lm)."""
    if model_switch(NS) == REAL:
        loaded = real_model(dev)        # None: ui.model has said why; the course model follows
        if loaded is not None:
            real_heads(text, typed, dev, loaded)
            return
    loaded = course_model(dev)          # None: ui.model has said why
    if loaded is None:
        return
    cfg = loaded[0].config
    layer = ranged_slider(tr(f"{NS}.trained_layer"), 0, cfg.n_layers - 1, 1, key=f"{NS}.trained_layer")
    data = traced(text, dev)
    weights = data["weights"][layer]                                         # (H, N, N)
    top = weight_top(weights)
    tokens = ["bos" if t == "<bos>" else t for t in data["tokens"]]     # short: fits a column at 1024 px
    figure(head_grid(weights, tokens, titles=[tr(f"{NS}.head_short", i=i) for i in range(cfg.n_heads)],
                     cols=2, hover_names=(tr("common.query"), tr("common.key"), tr("common.weight")),
                     height_per_row=300, zmax=top, colorbar_title=tr("common.weight"), key_labels=True),
           key=f"{NS}.trained", name=tr(f"{NS}.trained_title"))
    st.caption(tr(f"{NS}.read_trained", layer=layer, heads=cfg.n_heads, d_head=cfg.d_head, top=top))
