"""Lesson D2's controls and figures, its results computed once for every session, and its
measurements shared by all.
"""
from __future__ import annotations

import re

import streamlit as st
import torch

from core.calc import configs
from core.calc.flops import decode_flops
from core.calc.kv_cache import DTYPE_BYTES, kv_cache_bytes
from core.lab.cache_steps import CacheStep, cache_histories, watch_cache
from core.lab.d_real_kv import cache_nbytes, measured_cache
from core.models.generate import Generation
from ui.classroom import presenting
from ui.frame import choice, code_panel, model_labels, plain, text_box, tr
from ui.live import live_value
from ui.model import COURSE, REAL, course_model, real_model
from ui.prompt import openings
from viz.common import steady_margins
from viz.kv import cache_step

NEW_TOKENS = 16
REAL_TEXT = "The key and value of a past token never change, so the model keeps them in its cache."
NS = "d2"
DEFAULT_PROMPT = "君不见，黄河之水"
# Openings: the default; the lecture notes' KV-cache walk-through 「将进酒：人生得」 -> 「意」, which the
# course model does not complete so (it read 人生得意 only after the line 朝如青丝暮成雪。); and that
# line in front, where it does.
EXAMPLES = [DEFAULT_PROMPT, "将进酒：人生得", "君不见，高堂明镜悲白发，朝如青丝暮成雪。人生得"]
STEPS = list(range(NEW_TOKENS))   # the live step slider's values (a run that ends early has fewer)
MEASURED = [16, 32, 64, 96, 128, 160, 192, 224, 256]
# SmolLM2 is ~1,000× the course model's work a token: fewer lengths, a shorter window, two repeats
# keep its measurement to seconds (the counted curve still goes to 256 for both).
MEASURED_ON = {COURSE: MEASURED, REAL: [16, 64, 128, 256]}
TIMING = {COURSE: {}, REAL: {"window": 4, "repeats": 2}}
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
DTYPES = list(DTYPE_BYTES)


@st.cache_resource(show_spinner=False)
def shared_timings() -> dict:
    """The live measurements, {(model, device): seconds}: one press serves every student of the
    process (the same machine measured the same model)."""
    return {}


@st.cache_data(max_entries=4, show_spinner=False)
def real_cache(dev: str) -> dict:
    """SmolLM2's KV cache after REAL_TEXT, weighed (core.lab.d_real_kv.measured_cache)."""
    model, tok = real_model(dev)
    return measured_cache(model, tok.encode(REAL_TEXT))


@st.cache_data(max_entries=64, show_spinner=False)
def replay(prompt: str, dev: str) -> dict:
    """Greedy decoding of NEW_TOKENS tokens with the cache, every step's q, k, v and weights kept."""
    model, tok = course_model(dev)
    gen = Generation(model, tok, prompt, NEW_TOKENS)
    steps = watch_cache(gen)
    return {"steps": [{"fed": s.fed, "chosen": s.chosen, "q": s.q.numpy(), "k": s.k.numpy(), "v": s.v.numpy(),
                       "weights": s.weights.numpy()} for s in steps],
            "prompt": tok.tokens(gen.prompt.ids), "chosen": tok.tokens([s.chosen for s in steps]),
            "dropped": gen.prompt.dropped, "unknown": gen.prompt.unknown}


@st.cache_data(max_entries=4, show_spinner=False)
def flop_curves(name: str, max_len: int) -> dict:
    cfg = configs.get(name)
    lengths = list(range(8, max_len + 1, 8))
    return {"x": lengths, "cached": [decode_flops(cfg, n) for n in lengths],
            "recomputed": [decode_flops(cfg, n, cache=False) for n in lengths]}


# --- The page's controls and figures (lessons/d2_kv_cache.py lays out the sections) --------------
def gib_text(gib: float) -> str:
    """Example: 2560.3 -> "2,560"; 2.0 -> "2"; 0.0625 -> "0.0625" """
    return f"{gib:,.0f}" if gib >= 100 else f"{gib:.3g}"


def step_controls(n_layers: int, n_heads: int):
    key = f"{NS}.step"

    def move(to):
        st.session_state[key] = max(0, min(NEW_TOKENS - 1, to(st.session_state.get(key, 0))))
        st.session_state[f"{NS}.presses"] = st.session_state.get(f"{NS}.presses", 0) + 1

    # The step is the figure's own live slider (ui.live): read here, the buttons beside it set it.
    step = int(live_value(key, STEPS, 0))
    # One row: the figure's slide keeps the screen's height for the figure (presenter mode).
    c4, c5, c2, c3 = st.columns([3, 3, 1.7 if presenting() else 1.2, 1.2], vertical_alignment="bottom")
    layer = c4.slider(tr(f"{NS}.layer"), 0, n_layers - 1, 0, key=f"{NS}.layer", bind="query-params")
    head = c5.slider(tr(f"{NS}.head"), 0, n_heads - 1, 0, key=f"{NS}.head", bind="query-params")
    c2.button(tr(f"{NS}.next"), on_click=move, args=(lambda n: n + 1,), key=f"{NS}.next_btn", type="primary",
              width="stretch", help=tr(f"{NS}.step_help"))
    c3.button(tr(f"{NS}.reset"), on_click=move, args=(lambda n: 0,), key=f"{NS}.reset_btn", width="stretch")
    if not presenting():
        st.caption(tr(f"{NS}.step_help"))
    return step, layer, head


def prompt_and_step(n_layers: int, n_heads: int):
    """The prompt box (with its openings) and the step's row. Presenter mode: the box beside the
    step's controls, one row above the figure, on the section's one slide (a slide of the box and
    the openings alone was mostly blank)."""
    if presenting():
        where_text, where_step = st.columns([1, 4], vertical_alignment="bottom")
    else:
        openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
        where_text = where_step = st.container()
    label = tr(f"{NS}.prompt_label")
    if presenting():   # the label's first words, before its bracket: five lines in a narrow column
        label = re.split(r"[(（]", label, maxsplit=1)[0].strip()
    with where_text:
        text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 48, label, empty_key=f"{NS}.empty_prompt")
    with where_step:
        step, layer, head = step_controls(n_layers, n_heads)
    return "" if text.empty else text.text, step, layer, head


def cache_steps(run: dict) -> list[CacheStep]:
    """``replay``'s steps as the CacheSteps core.lab.cache_steps reads."""
    return [CacheStep(s["fed"], s["chosen"], *(torch.from_numpy(s[n]) for n in ("q", "k", "v", "weights")))
            for s in run["steps"]]


def cache_frames(prompt: str, layer: int, head: int, dev: str, language: str) -> list:
    """The figure after every step (the live slider's frames), from one core call."""
    run = replay(prompt, dev)
    steps = cache_steps(run)
    shown_steps = list(range(len(steps)))
    histories = cache_histories(steps, layer, head, shown_steps)
    last = histories[-1]   # every step drawn in the last step's frame, in one colour range
    g = last["kv_head"]
    titles = (tr(f"{NS}.panel_q"), tr(f"{NS}.panel_k", g=g), tr(f"{NS}.panel_v", g=g), tr(f"{NS}.panel_w"))
    rows = last["k"].shape[0]
    limit = max(1e-6, *(float(last[n].abs().max()) for n in ("q", "k", "v")))
    return steady_margins([cache_step(h["q"], h["k"], h["v"], h["weights"], steps[t].fed,
                                      run["prompt"] + run["chosen"][:t], titles=titles, rows=rows, limit=limit,
                                      value_names=(tr(f"{NS}.position"), tr(f"{NS}.dim"), tr(f"{NS}.value")),
                                      hover_names=(tr("common.query"), tr("common.key"), tr("common.weight")))
                           for t, h in zip(shown_steps, histories, strict=True)])


def calculator_controls(default: str):
    """The calculator's controls; its model opens on ``default`` (the lesson's model where the
    registry has it) and follows a switch of the lesson's model unless the student chose another."""
    followed = f"{NS}.model_followed"            # the default the calculator last opened on
    last = st.session_state.get(followed)
    if last is not None and last != default and st.session_state.get(f"{NS}.model") == last:
        st.session_state[f"{NS}.model"] = default
    st.session_state[followed] = default
    c1, c2 = st.columns([2, 3])
    with c1:
        name = choice(tr(f"{NS}.model"), configs.names(), f"{NS}.model", model_labels(configs.names()),
                      default=default)
    with c2:
        dtype = st.segmented_control(tr(f"{NS}.dtype"), DTYPES, default="fp16", key=f"{NS}.dtype",
                                     bind="query-params", required=True, help=tr(f"{NS}.dtype_help"))
    c3, c4 = st.columns(2)
    batch = c3.select_slider(tr(f"{NS}.batch"), BATCHES, value=1, key=f"{NS}.batch", bind="query-params")
    context = c4.select_slider(tr(f"{NS}.context"), CONTEXTS, value=4096, key=f"{NS}.context",
                               bind="query-params")
    return configs.get(name), dtype or "fp16", batch, context


def real_weighing(cfg, dev: str) -> None:
    """SmolLM2's cache per token: counted from its config, weighed on a real KVCache."""
    with st.spinner(tr(f"{NS}.weighing")):
        weighed = real_cache(dev)
    per_fp16 = kv_cache_bytes(cfg, 1, 1, DTYPE_BYTES["fp16"])
    per_fp32 = kv_cache_bytes(cfg, 1, 1, DTYPE_BYTES["fp32"])
    left, right = st.columns([3, 2])
    with left:
        st.latex(rf"""\begin{{aligned}} 2 \times \underbrace{{{cfg.n_layers}}}_{{L}}
                 \times \underbrace{{{cfg.n_kv_heads}}}_{{H_{{kv}}}}
                 \times \underbrace{{{cfg.head_dim}}}_{{d_{{head}}}} \times b
                 &= {per_fp16:,}\ \text{{B}} \quad (b = 2,\ \text{{fp16}}) \\
                 &= {per_fp32:,}\ \text{{B}} \quad (b = 4,\ \text{{fp32}}) \end{{aligned}}""".replace(",", "{,}"))
        st.markdown(tr(f"{NS}.weighed", n=weighed["tokens"], bytes=weighed["bytes"],
                       per=weighed["bytes"] / weighed["tokens"], half=weighed["bytes_fp16"],
                       per_half=weighed["bytes_fp16"] / weighed["tokens"], fp16=per_fp16, fp32=per_fp32,
                       text=plain(REAL_TEXT), layers=cfg.n_layers, kv=cfg.n_kv_heads,
                       d=cfg.head_dim, h=cfg.n_heads))
    with right:
        code_panel(measured_cache, cache_nbytes, height=360)


def memory_formula(cfg, context: int, batch: int, per_value: float, dtype: str) -> str:
    """M_KV as the product of its factors, then its value in bytes and GiB (LaTeX)."""
    total = kv_cache_bytes(cfg, context, batch, per_value)
    return rf"""\begin{{aligned}} M_{{KV}} &= \underbrace{{2}}_{{K,V}} \times \underbrace{{{cfg.n_layers}}}_{{L}}
                 \times \underbrace{{{cfg.n_kv_heads}}}_{{H_{{kv}}}} \times \underbrace{{{cfg.head_dim}}}_{{d_{{head}}}}
                 \times \underbrace{{{context:,}}}_{{T}} \times \underbrace{{{batch}}}_{{B}}
                 \times \underbrace{{{per_value:g}}}_{{b:\ \text{{{dtype}}}}} \\
                 &= {total:,}\ \text{{B}} \approx {gib_text(total / 2**30)}\ \text{{GiB}} \end{{aligned}}""".replace(",", "{,}")
