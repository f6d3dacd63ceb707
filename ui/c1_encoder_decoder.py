"""Lesson C1's controls, and its results computed once for every session per setting.
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
from core.text.dates import parse, unknown_characters
from ui.date_model import checkpoint_available, forced, reading
from ui.frame import choice, lang, plain, ranged_slider, text_box, tr
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


# --- The page's controls (lessons/c1_encoder_decoder.py lays out the sections that read them) ----
NS = "c1"
# Out of style on purpose: capital letters the model never saw in training. It hesitates (81 %
# at the month's second digit) and gets the month wrong, so the decoding figures show real
# distributions and teacher forcing on the right answer differs from the model's own steps.
DEFAULT_DATE = "MONDAY, 30 NOVEMBER 2026"
DEFAULT_PART, DEFAULT_NORM = "decoder.cross_attn", "encoder.layers.0.self_attn_norm"
FEEDS = ["answer", "own"]      # what teacher forcing feeds the decoder (language-neutral: the URL)
# The decoding section opens on the model saved after 150 of its 1,200 training steps: the shipped
# one is sure of every character of the default date (every step's largest probability 1.00 but
# one), so its bars show nothing of a choice. At 150 it makes the same mistake (2026-10-30),
# unsure: its chosen characters' probabilities run from 0.58 to 1.00.
DEFAULT_CKPT = 150
# And on step 5 of its decoding, the month's first digit of a YYYY-MM-DD date: at 150 steps it
# writes the right "1" with 58 %, against 39 % for "0" (step 0, the year's "2", is certain).
DEFAULT_STEP = 5
MAX_DATE = 31                  # the model has 32 positions: the text and its <eos>
# Language-neutral choices (they go into the URL): stack and sub-layer, as in the trace names.
PARTS = [f"{stack}.{part}" for stack in ("encoder", "decoder") for part in sublayers(stack)]
BOX = f"{NS}.box"              # c1.box.<part>: the diagram's labels
DIAGRAM_LABELS = ("self_attn", "self_attn_norm", "cross_attn", "ffn", "masked", "embed_src", "embed_tgt",
                  "linear", "encoder", "decoder")


def example_section(dev: str) -> str:
    """The example, for every section below, and what the model writes for it: a new text
    reruns the whole page."""
    text = text_box(f"{NS}.date", DEFAULT_DATE, MAX_DATE, tr(f"{NS}.date_label"))
    text = DEFAULT_DATE if text.empty else text.text
    unknown = unknown_characters(text)
    answer = right_answer(text)
    if unknown:
        st.warning(tr(f"{NS}.unknown", chars=" ".join(f"「{plain(c)}」" for c in unknown)))
    if answer is None:
        st.warning(tr(f"{NS}.not_a_date"))
    elif parse(text) is None:
        st.info(tr(f"{NS}.out_of_style"))
    output = reading(text, dev)["output"]
    wrote = f"`{output}`" if output else tr(f"{NS}.nothing")
    if answer is None:
        st.markdown(tr(f"{NS}.attempt", output=wrote))
    elif output == answer:
        st.success(tr(f"{NS}.right", output=wrote))
    else:
        st.info(tr(f"{NS}.wrong", output=wrote, iso=answer))   # the example is wrong on purpose
    return text


def clicked_sublayer() -> None:
    """The diagram's click (before the rerun): the box's dotted name sets the layer and the
    sub-layer controls, as if they had been moved ("decoder.layers.1.cross_attn")."""
    value = st.session_state.get(f"{NS}.diagram")
    name = value.get("select") if hasattr(value, "get") else None
    parts = name.split(".") if isinstance(name, str) else []
    if len(parts) == 4 and parts[1] == "layers" and parts[2].isdigit() and f"{parts[0]}.{parts[3]}" in PARTS:
        st.session_state[f"{NS}.layer"] = int(parts[2])
        st.session_state[f"{NS}.part"] = f"{parts[0]}.{parts[3]}"


def sublayer_controls(n_layers: int):
    # Set by a click on the diagram too: the defaults go into the session's state once, not as
    # arguments (a widget given a default and also set through st.session_state makes Streamlit warn).
    st.session_state.setdefault(f"{NS}.layer", 0)
    st.session_state.setdefault(f"{NS}.part", DEFAULT_PART)
    c1, c2 = st.columns([1, 2])
    with c1:
        layer = st.slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, key=f"{NS}.layer", bind="query-params")
    with c2:
        part = st.selectbox(tr(f"{NS}.part_label"), PARTS, key=f"{NS}.part", bind="query-params",
                            help=tr(f"{NS}.part_help"))
    stack, sub = (part or DEFAULT_PART).split(".")
    return stack, int(layer), sub


def diagram_labels() -> dict[str, str]:
    """The diagram's box labels in the page's language (every Add & Norm labelled alike)."""
    labels = {k: tr(f"{BOX}.{k}") for k in DIAGRAM_LABELS}
    labels.update(cross_attn_norm=labels["self_attn_norm"], ffn_norm=labels["self_attn_norm"])
    return labels


def pick(key: str, label: str, options: list[str], default: str) -> str:
    value = st.selectbox(label, options, index=options.index(default), key=key, bind="query-params")
    return value or default


def norm_names(n_layers: int) -> list[str]:
    return [f"{stack}.layers.{i}.{p}" for stack in ("encoder", "decoder") for i in range(n_layers)
            for p in sublayers(stack) if p.endswith("norm")]


def ffn_names(n_layers: int) -> list[str]:
    return [f"{stack}.layers.{i}.ffn" for stack in ("encoder", "decoder") for i in range(n_layers)]


def num(x: float, digits: int = 3) -> str:
    """``digits`` decimals, without the "-0.000" of a tiny negative rounding error."""
    text = f"{float(x):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def shape(a) -> str:
    return "(" + ", ".join(str(v) for v in a.shape) + ")"


def norm_caption(name: str, s: dict) -> str:
    """The ranges of every token's mean and variance before and after the Add & Norm."""
    return tr(f"{NS}.norm_caption", name=name,
              m0=num(s["mean_before"].min(), 2), m1=num(s["mean_before"].max(), 2),
              v0=num(s["var_before"].min(), 2), v1=num(s["var_before"].max(), 2),
              a0=num(s["mean_after"].min(), 2), a1=num(s["mean_after"].max(), 2),
              b0=num(s["var_after"].min(), 2), b1=num(s["var_after"].max(), 2))


def norm_table(rows: list[str], s: dict) -> str:
    """The first four tokens' mean and variance before and after standardising (markdown)."""
    head = f"| {tr(f'{NS}.token')} | {tr(f'{NS}.mean')} ↦ | {tr(f'{NS}.variance')} ↦ |\n|---|---|---|\n"
    return head + "\n".join(
        f"| {plain(tok) if tok.strip() else '␣'} | {num(s['mean_before'][i])} → {num(s['mean_standard'][i])} "
        f"| {num(s['var_before'][i])} → {num(s['var_standard'][i])} |" for i, tok in enumerate(rows[:4]))


def checkpoint_controls(steps: list[int]) -> int:
    """Which model the decoding section reads: the shipped one (the last step) or one saved earlier
    in its training (assets/date_model_checkpoints.json), when it was unsure; DEFAULT_CKPT first."""
    default = DEFAULT_CKPT if DEFAULT_CKPT in steps else steps[-1]
    return st.select_slider(tr(f"{NS}.ckpt_label"), steps, value=default, key=f"{NS}.ckpt",
                            bind="query-params", help=tr(f"{NS}.ckpt_help"))


def decode_controls(saved: list, dev: str):
    """The checkpoint (when there are several) and what teacher forcing feeds, on one row: in
    presenter mode the decoding figure must stay on the slide under them. Returns the checkpoint's
    entry (None without a list), its step for ``reading`` (None: the shipped model) and the feed."""
    left, right = st.columns(2) if len(saved) > 1 else (None, st.container())
    at = None
    if left is not None:
        with left:
            at = checkpoint_controls([e.step for e in saved])
    with right:
        feed = choice(tr(f"{NS}.feed_label"), FEEDS, f"{NS}.feed",
                      [tr(f"{NS}.feed_answer"), tr(f"{NS}.feed_own")], widget="segmented")
    entry = next((e for e in saved if e.step == at), None)
    if entry is not None and entry is not saved[-1] and not checkpoint_available(dev, entry.step):
        entry = saved[-1]                  # a damaged file: said above, and the shipped model decodes
    return entry, None if entry is None or entry is saved[-1] else entry.step, feed


def step_controls(n: int):
    # Its range follows the model: an early checkpoint may write <eos> sooner or never.
    return ranged_slider(tr(f"{NS}.step_label"), 0, n - 1, min(DEFAULT_STEP, n - 1), key=f"{NS}.step",
                         help=tr(f"{NS}.step_help"))


def checkpoint_notes(d: dict, entry, ckpt: int | None, saved: list) -> None:
    """What the chosen checkpoint wrote, with each chosen character's probability, and why an
    early one is shown."""
    written = " · ".join(f"`{d['vocab'][i]}` {100 * float(p[i]):.0f} %"
                         for i, p in zip(d["ids"], d["stepped"], strict=False))
    st.caption(tr(f"{NS}.ckpt_caption", step=entry.step, total=saved[-1].step, loss=entry.loss,
                  acc=100 * entry.exact_match, output=f"`{d['output']}`" if d["output"] else tr(f"{NS}.nothing"),
                  line=written))
    if ckpt is not None:
        st.caption(tr(f"{NS}.ckpt_why"))
    if ckpt == DEFAULT_CKPT:
        st.caption(tr(f"{NS}.ckpt_default", step=DEFAULT_CKPT, total=saved[-1].step))


def forcing_caption(d: dict, own_fed: list[str]) -> str:
    """How far teacher forcing's distributions are from the model's own steps, and where the fed
    text first differs from what the model wrote."""
    if d["answer"] is None:
        return tr(f"{NS}.forcing_caption", diff=d["diff"])
    if d["first"] is None:
        return tr(f"{NS}.forcing_same", answer=d["answer"], diff=d["diff"])
    t = d["first"]
    return tr(f"{NS}.forcing_answer", answer=d["answer"], output=d["output"], t=t, fed=d["fed"][t],
              own=own_fed[t] if t < len(own_fed) else "<eos>", diff=d["diff"])


def compare_table() -> None:
    st.markdown(tr(f"{NS}.compare_table", language=lang()))
