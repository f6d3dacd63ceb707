"""Lesson C2's controls and figure builders, and its cached results (the block walkthrough), shared
by every session.

Here rather than in the page: a ``st.cache_data`` decorator written in the page is made again
on every run of it (docs/LESSONS.md). Results are keyed on plain strings and numbers; the
model, shared and read-only, is passed as ``_loaded`` (not hashed).
"""
from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from core.calc import configs
from core.calc.params import count_params, model_stages, numel
from core.calc.timing import time_norms
from core.lab import toy
from core.lab.block_anatomy import (
    BLOCK_PARTS,
    HEAD_PARTS,
    compare_norms,
    part_matrix,
    residual_sizes,
    strip_stages,
    trace_block,
    trace_prompt,
)
from core.models.model import Block
from core.parts.activations import activation_curves
from core.parts.ffn import SwiGLU, silu
from core.parts.mha import MultiHeadAttention
from core.parts.norms import rms_norm
from core.parts.trace import Trace
from ui.frame import choice, figure, model_labels, ranged_slider, send_now, shapes_table, tr
from ui.model import COURSE, REAL, layer_and_head, model_text
from viz.attention import heatmap, lines
from viz.block import block_diagram, tensor_heatmap
from viz.strip import compact, model_strip

REAL_TOKENS = 256           # SmolLM2 reads at most this many tokens of a text here


@st.cache_data(max_entries=64, show_spinner=False)
def traced(text: str, dev: str, _loaded) -> dict:
    """Every part of every block of one forward pass of the course model, as numpy."""
    model, tok = _loaded
    tokens, trace = trace_prompt(model, tok, text, dev)
    sizes = residual_sizes(trace, model.config.n_layers)
    tensors = {name: t.cpu().numpy() for name, t in trace.tensors.items()
               if name.split(".", 2)[-1] in BLOCK_PARTS}
    return {"tokens": tokens, "n_all": len(tokens), "tensors": tensors,
            **{k: v.cpu().numpy() for k, v in sizes.items()}}


@st.cache_data(max_entries=16, show_spinner=False)
def traced_real(text: str, layer: int, dev: str, _loaded) -> dict:
    """One forward pass of SmolLM2 on ``text``: every part of block ``layer``, and the residual
    stream's size after every sub-layer of all 30 blocks (a full trace would be ~60 MB a text;
    this is at most ~11 MB, ~0.4 MB for the default text)."""
    model, tok = _loaded
    tokens, n_all, trace = trace_block(model, tok, text, layer, REAL_TOKENS, dev)
    sizes = residual_sizes(trace, model.config.n_layers)
    tensors = {f"blocks.{layer}.{p}": trace[f"blocks.{layer}.{p}"].cpu().numpy() for p in BLOCK_PARTS}
    return {"tokens": tokens, "n_all": n_all, "tensors": tensors, **{k: v.cpu().numpy() for k, v in sizes.items()}}


@st.cache_data(max_entries=128, show_spinner=False)
def norm_demo(text: str, layer: int, shift: float, source: str, dev: str, _loaded=None) -> dict:
    """LayerNorm and RMSNorm of the residual stream entering ``layer`` of the course model or
    SmolLM2 (``source`` COURSE / REAL, the model in ``_loaded``), or of random vectors ("toy")."""
    if source != "toy":
        data = traced_real(text, layer, dev, _loaded) if source == REAL else traced(text, dev, _loaded)
        vectors = torch.from_numpy(data["tensors"][f"blocks.{layer}.resid_pre"][0])             # (N, D)
    else:
        vectors = toy.embed_text(text, configs.get(COURSE).d_model, 0, dev)[1].cpu()            # (N, D)
    return {k: v.cpu().numpy() for k, v in compare_norms(vectors, shift).items()}


@st.cache_data(show_spinner=False)
def curves_demo() -> dict:
    return {k: v.numpy() for k, v in activation_curves().items()}


# --- The page's controls and figures (lessons/c2_llama_block.py lays out the sections) -----------
NS = "c2"
DEFAULT_TEXT = "君不见，黄河之水天上来"
MAX_CHARS = 48
REAL_TEXT = "The quick brown fox jumps over the lazy dog."
CJK_LINE = "君不见，黄河之水天上来"      # A1's line: what a Chinese character costs SmolLM2, counted
REAL_CHARS = 1200     # SmolLM2 reads byte-level BPE tokens: a text is cut at REAL_TOKENS (256) of them
PART_TEXT = f"{NS}.part"          # c2.part.<trace name>: what each part of the block is
STAGES = {"ids": f"{NS}.stage_ids", "embed": f"{NS}.stage_embed", "block": f"{NS}.stage_block",
          "final_norm": f"{NS}.stage_final_norm", "output": f"{NS}.stage_output", "softmax": f"{NS}.stage_softmax"}
COUNT_TEXT = f"{NS}.parts"        # c2.parts.<part of core.calc.params.PARTS>: rows of the counter
TIMING_WIDTHS = [256, 1024, 4096]
# Language-neutral labels of the diagram: the formulas are the same in every language.
# Two short lines a box: the diagram is ~620 px wide on a laptop, a box ~40 px.
LABELS = {
    "resid_pre": "x", "attn_norm": "RMS<br>Norm", "attn.q": "q<br>RoPE", "attn.k": "k<br>RoPE", "attn.v": "v",
    "attn.weights": "softmax<br>qkᵀ/√d", "attn.out": "W_o", "resid_mid": "x +<br>attn", "ffn_norm": "RMS<br>Norm",
    "ffn.gate": "SiLU<br>(W₁h)", "ffn.up": "W₃h", "ffn_out": "W₂<br>(g⊙u)", "resid_post": "x +<br>ffn",
}
# "The code" beside the tensor view: the core functions that computed the chosen part.
CODE = {"resid_pre": (Block.forward,), "attn_norm": (rms_norm,), "attn.out": (MultiHeadAttention.attend,),
        "resid_mid": (Block.forward, Block.feed_forward), "ffn_norm": (rms_norm,), "ffn_out": (Block.ffn_out, SwiGLU.forward),
        "resid_post": (Block.feed_forward,), "ffn.gate": (SwiGLU.forward, silu), "ffn.up": (SwiGLU.forward,)}


def block_intro(real) -> None:
    """What the block section reads: SmolLM2 (with what a Chinese character costs it, counted, and
    its parameters counted against the formula) or the course model."""
    if real:
        arch = configs.get(configs.SMOLLM2)
        n_cjk = len(real[1].encode(CJK_LINE))                                # counted, not typed
        st.markdown(tr(f"{NS}.real_text") + "\n" + tr(f"{NS}.real_cjk", line=CJK_LINE, n=n_cjk, chars=len(CJK_LINE),
                                                       per=n_cjk / len(CJK_LINE)))
        counted, tied = numel(real[0]), arch.vocab_size * arch.d_model    # the tied (V, D) matrix once
        st.caption(tr(f"{NS}.real_check", counted=counted, formula=count_params(arch), output=tied,
                      twice=counted + tied))
    else:                                   # the shapes of the model the tensors below come from
        st.markdown(tr(f"{NS}.course_text"))


def block_controls(arch, real):
    """Text, block, head and part; the block's and head's ranges follow the model (the course
    model's 4 blocks and 4 heads, SmolLM2's 30 and 9), each model keeps its own text."""
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        text = model_text(NS, real, (DEFAULT_TEXT, MAX_CHARS), (REAL_TEXT, REAL_CHARS, REAL_TOKENS))
    layer, head = layer_and_head(NS, arch, c2, c3, head_help=tr(f"{NS}.head_help"))
    part = st.segmented_control(tr(f"{NS}.part_label"), BLOCK_PARTS, default="attn_norm", key=f"{NS}.part",
                                bind="query-params", required=True)
    default = REAL_TEXT if real else DEFAULT_TEXT
    return (text.text if not text.empty else default), layer, head, part or "attn_norm"


def norm_controls():
    return st.slider(tr(f"{NS}.shift_label"), -3.0, 3.0, 0.0, 0.5, key=f"{NS}.shift", bind="query-params",
                     help=tr(f"{NS}.shift_help"))


def gate_controls(n: int):
    """The token whose gate is drawn: its range follows the text (0 … N − 1)."""
    return ranged_slider(tr(f"{NS}.token_label"), 0, n - 1, 7, key=f"{NS}.token")


def timing_controls():
    c1, c2 = st.columns([2, 1])
    with c1:
        width = st.select_slider(tr(f"{NS}.timing_width"), TIMING_WIDTHS, value=1024, key=f"{NS}.twidth",
                                 bind="query-params")
    with c2:
        st.write("")
        pressed = st.button(tr(f"{NS}.timing_button"), key=f"{NS}.time", type="primary")
    return width, pressed


def timing_section(dev: str) -> None:
    """Times the two norms on a button (a live benchmark is too slow for every run)."""
    width, pressed = timing_controls()
    if pressed:
        send_now()   # the progress bar shows as it moves
        bar = st.progress(0.0, text=tr(f"{NS}.timing_running"))
        st.session_state[f"{NS}.timing"] = {"width": width, "dev": dev, **time_norms(
            1024, width, 30, dev, on_step=lambda f: bar.progress(f, text=tr(f"{NS}.timing_running")))}
        bar.empty()
    result = st.session_state.get(f"{NS}.timing")
    if result:
        c1, c2, c3 = st.columns(3)
        c1.metric("LayerNorm", f"{result['layer_ms']:.3f} ms")
        c2.metric("RMSNorm", f"{result['rms_ms']:.3f} ms")
        c3.metric(tr(f"{NS}.ratio"), f"{result['ratio']:.2f}×")
        saving = 100 * result["saving"]
        outcome = (tr(f"{NS}.timing_faster", pct=saving) if saving >= 0 else tr(f"{NS}.timing_slower", pct=-saving))
        st.caption(tr(f"{NS}.timing_caption", width=result["width"], dev=result["dev"], outcome=outcome))
    else:
        st.caption(tr(f"{NS}.timing_hint"))


def whole_model(arch_name: str, layer: int, language: str):
    """The whole model as a strip, the shown block framed. 30 blocks do not fit a strip: the
    first, the chosen and the last, the runs between as one box. In ``language``."""
    arch = configs.get(arch_name)
    stages = strip_stages(model_stages(arch), layer)
    names = [tr(f"{NS}.stage_gap", a=s["first"], b=s["last"]) if s["name"] == "gap"
             else tr(STAGES[s["name"]], i=s["layer"]) for s in stages]
    chosen = next(i for i, s in enumerate(stages) if s["name"] == "block" and s["layer"] == layer)
    # The output is (N, V); the softmax the model samples from is its last row, the next token's.
    shapes = [s["shape"] if s["name"] != "softmax" else f"(N, {arch.vocab_size})" for s in stages]
    notes = [tr(f"{NS}.strip_params", n=compact(s["params"])) if s["params"]
             else tr(f"{NS}.strip_last") if s["name"] == "softmax"
             else tr(f"{NS}.strip_tied") if s["name"] == "output" and arch.tied_embeddings else ""
             for s in stages]
    return model_strip([s["name"] for s in stages], names, shapes, notes, selected=chosen,
                       title=tr(f"{NS}.strip_fig", n=count_params(arch)))


def diagram(part: str, roomy: bool, attn: str, ffn: str):
    """The block's diagram, ``part`` lit; ``roomy``: taller boxes for presenter mode's 18 px labels."""
    return block_diagram(part, LABELS, regions={"attn": attn, "ffn": ffn}, roomy=roomy)


def activations(title: str):
    """ReLU, GELU and SiLU on one axis."""
    curves = curves_demo()
    return lines(curves["x"], {"ReLU": curves["relu"], "GELU": curves["gelu"], "SiLU": curves["silu"]},
                 title=title, x_title="x", markers=False)


def tensor_view(data: dict, arch, layer: int, part: str, head: int) -> None:
    """The chosen part of block ``layer`` as a heatmap (the weights masked above the diagonal),
    which key/value head a query head shares, and every part's shape."""
    trace = Trace({k: torch.from_numpy(v) for k, v in data["tensors"].items()})
    tokens, n = data["tokens"], len(data["tokens"])
    n_rep = arch.n_heads // arch.n_kv_heads
    matrix = part_matrix(trace, layer, part, head, n_rep)
    title = tr(f"{NS}.tensor_fig", name=f"blocks.{layer}.{part}", shape=tuple(matrix.shape))
    if part == "attn.weights":
        hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
        future = np.triu(np.ones((n, n), dtype=bool), 1)      # keys after the query: masked
        fig = heatmap(matrix, tokens, tokens, title=title, hover_names=hover, height=420, masked=future)
    else:
        hover = (tr(f"{NS}.token"), tr(f"{NS}.column"), tr(f"{NS}.value"))
        fig = tensor_heatmap(matrix, tokens, title=title, hover_names=hover)
    figure(fig, key=f"{NS}.tensor")
    if part in HEAD_PARTS:
        st.caption(tr(f"{NS}.gqa_caption", head=head, kv=head // n_rep, n_rep=n_rep, h=arch.n_heads,
                      h_kv=arch.n_kv_heads))
    shapes_table([(f"blocks.{layer}.{p}", str(tuple(data["tensors"][f"blocks.{layer}.{p}"].shape)))
                  for p in BLOCK_PARTS])


def params_controls():
    return choice(tr(f"{NS}.config_label"), configs.names(), f"{NS}.config", model_labels(configs.names()))


def config_row(arch) -> str:
    """A config's numbers in one line, its choices as code."""
    return (tr(f"{NS}.config_row", v=arch.vocab_size, d=arch.d_model, l=arch.n_layers, h=arch.n_heads,
               h_kv=arch.n_kv_heads, d_head=arch.head_dim, f=arch.ffn_hidden, e=arch.n_experts,
               k=arch.experts_per_token)
            + f" `norm={arch.norm}` `ffn={arch.ffn}` `tied={arch.tied_embeddings}` `bias={arch.bias}`"
              f" `rope_base={arch.rope_base}`")
