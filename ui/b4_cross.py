"""Lesson B4's controls, and its results computed once for every session per setting.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from core.lab.attention_lab import word_tokens
from core.lab.date_lab import random_cross_attention
from core.text.dates import STYLE_EXAMPLES, parse, unknown_characters
from ui.date_model import reading
from ui.frame import choice, lang, plain, text_box, tr

MAX_TOKENS = 24
D = 32


@st.cache_data(max_entries=64, show_spinner=False)
def trained_view(text: str, dev: str) -> dict:
    """The model's reading of ``text``: cross-attention of every layer, and how well each head
    lines up with the fields of the date when the text is one."""
    import torch

    from core.lab.date_lab import alignment_scores

    r = reading(text, dev)
    n_layers = sum(1 for k in r["tensors"] if k.startswith("decoder.layers.") and k.endswith(".cross_attn.weights"))
    weights = np.stack([r["tensors"][f"decoder.layers.{i}.cross_attn.weights"] for i in range(n_layers)])  # (L, H, N, S)
    parsed = parse(text)
    scores = None
    if parsed is not None and len(r["output"]) == 10:
        scores = alignment_scores(torch.from_numpy(weights), parsed).numpy()                       # (L, H)
    return {"source": r["source"], "fed": r["fed"], "written": r["written"], "output": r["output"], "weights": weights,
            "scores": scores, "iso": None if parsed is None else parsed.iso}


@st.cache_data(max_entries=64, show_spinner=False)
def cross_demo(target: str, source: str, n_heads: int, seed: int, dev: str) -> dict:
    tgt, src = word_tokens(target), word_tokens(source)
    cut = len(tgt) > MAX_TOKENS or len(src) > MAX_TOKENS
    tgt, src = tgt[:MAX_TOKENS] or ["∅"], src[:MAX_TOKENS] or ["∅"]
    trace = random_cross_attention(tgt, src, n_heads, seed, D, dev)
    return {"target": tgt, "source": src, "cut": cut,
            "weights": trace["attn.weights"][0].cpu().numpy(),                  # (H, N_target, N_source)
            "shapes": {name: tuple(t.shape) for name, t in trace.tensors.items()}}


# --- The page's controls (lessons/b4_cross.py lays out the sections that read them) --------------
NS = "b4"
# The example buttons: English (the year moves to the front: a crossing alignment) beside
# Chinese (year, month, day in order: a straight one). The default follows the page's language.
EXAMPLES = {"en": [STYLE_EXAMPLES[k] for k in ("en_weekday", "en_short", "en_us")],
            "zh": [STYLE_EXAMPLES[k] for k in ("zh_digits", "zh_numerals", "zh_month_first")]}
DATE_KEY = f"{NS}.date"
AVERAGE = "avg"              # the head choice that averages the heads: not a number (head 0 is one)
MAX_DATE = 31                 # the model has 32 positions: the text and its <eos>
DEFAULT_TARGET = "The water of the Yellow River comes from the sky"
DEFAULT_SOURCE = "黄河之水天上来"
HEADS = [1, 2, 4, 8]


def default_date() -> str:
    return EXAMPLES["zh" if lang() == "zh" else "en"][0]


def use_example(text: str) -> None:
    # A button's callback runs before the script: the box is then made with this value (and,
    # as text_box is told by "{key}_set", without a default beside it).
    st.session_state[DATE_KEY] = text
    st.session_state[f"{DATE_KEY}_set"] = True


def example_buttons() -> None:
    """Every example date is one click away: English on the left, Chinese on the right."""
    heads = {"en": tr(f"{NS}.examples_en"), "zh": tr(f"{NS}.examples_zh")}
    for col, language in zip(st.columns(2), ("en", "zh"), strict=True):
        with col:
            st.caption(heads[language])
            for i, example in enumerate(EXAMPLES[language]):
                st.button(example, key=f"{NS}.ex_{language}{i}", on_click=use_example, args=(example,))


def date_box() -> str:
    """The date to read: the frame's ``text_box`` (an over-long date is cut in the box and the
    address too, as every other box), the default date when it is empty."""
    cleaned = text_box(DATE_KEY, default_date(), MAX_DATE, tr(f"{NS}.date_label"))
    return default_date() if cleaned.empty else cleaned.text


def date_controls(n_layers: int, n_heads: int):
    """The date, the layer and the head (or the heads' average: None)."""
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        text = date_box()
    with c2:
        layer = st.slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, 0, key=f"{NS}.layer",
                          bind="query-params", help=tr(f"{NS}.layer_help"))
    with c3:
        heads = [AVERAGE] + [str(i) for i in range(n_heads)]
        head = choice(tr(f"{NS}.head_label"), heads, f"{NS}.head", [tr(f"{NS}.average_short")] + heads[1:],
                      widget="segmented")
    return text, int(layer), None if head == AVERAGE else int(head)


def text_controls():
    """The two typed texts (the defaults when empty), the number of heads and the seed."""
    c1, c2 = st.columns(2)
    with c1:
        target = text_box(f"{NS}.target", DEFAULT_TARGET, 80, tr(f"{NS}.target_label"))
    with c2:
        source = text_box(f"{NS}.source", DEFAULT_SOURCE, 40, tr(f"{NS}.source_label"))
    c3, c4 = st.columns([3, 1])
    with c3:
        h = st.select_slider(tr(f"{NS}.heads_label"), HEADS, value=2, key=f"{NS}.heads", bind="query-params")
    with c4:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    return (target.text if not target.empty else DEFAULT_TARGET,
            source.text if not source.empty else DEFAULT_SOURCE, int(h), int(seed))


def quoted(chars: list[str]) -> str:
    """Characters named in a message: each escaped (never markup), spaces made visible."""
    return " ".join(f"「{plain(c) if c != ' ' else '␣'}」" for c in chars)


def verdict(text: str, view: dict) -> None:
    """What the model wrote for ``text``: right, wrong, or (not a date) only what it wrote."""
    unknown = unknown_characters(text)
    if unknown:
        st.warning(tr(f"{NS}.unknown", chars=quoted(unknown), n=len(unknown)))
    elif view["iso"] is None:
        st.warning(tr(f"{NS}.not_a_date"))
    wrote = f"`{view['output']}`" if view["output"] else tr(f"{NS}.nothing")
    if view["iso"] is None:
        st.markdown(tr(f"{NS}.attempt", output=wrote))
    elif view["output"] == view["iso"]:
        st.success(tr(f"{NS}.right", output=wrote))
    else:
        st.error(tr(f"{NS}.wrong", output=wrote, iso=view["iso"]))


def shape(t: tuple) -> str:
    return "(" + ", ".join(str(v) for v in t) + ")"


def cross_shapes(n_t: int, n_s: int, shapes: dict) -> list[tuple[str, str]]:
    """The untrained demo's tensors with their shapes, from the trace's own tensors."""
    return [(tr(f"{NS}.target_x"), shape((1, n_t, D))), (tr(f"{NS}.source_c"), shape((1, n_s, D))),
            ("Q = X W_q", shape(shapes["attn.q"])), ("K = C W_k, V = C W_v", shape(shapes["attn.k"])),
            ("QKᵀ/√d_head, softmax", shape(shapes["attn.weights"])), ("concat", shape(shapes["attn.concat"])),
            (tr(f"{NS}.output"), shape(shapes["attn.out"]))]
