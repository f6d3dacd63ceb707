"""Cached results of lesson F1 (heads at work), computed once per distinct input for every session.

Keyed on plain values: which model (``name``, "course" or "smollm2"), the text or the probe's
length and seed, the device. The model itself, shared and read-only, comes in as ``_loaded`` (not
hashed). ``st.cache_resource``: the arrays are handed out as they are (no copy a rerun), so
nothing here may be changed by a caller.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import threading

import numpy as np
import streamlit as st
import torch

from core.lab import head_scores as hs
from core.lab.layer_trace import KeepTrace
from core.lab.real_attention import prompt_ids
from core.lab.real_tokens import dropped_note
from ui.frame import choice, drawn, figure, plain, ranged_slider, text_box, tr
from ui.model import REAL
from viz.attention import heatmap, weight_top
from viz.heads_at_work import score_panels

TEXT_TOKENS = 128     # tokens of a text read at most (a forward of SmolLM2 on 128 tokens: ~0.3 s here)


@st.cache_resource(max_entries=16, show_spinner=False)
def text_heads(name: str, text: str, dev: str, _loaded) -> dict:
    """The four scores of every head on ``text`` (the start token first), its tokens and every
    head's weights (float16, (L, H, N, N))."""
    model, tok = _loaded
    ids, n_ids = prompt_ids(tok, text, TEXT_TOKENS)
    trace = KeepTrace(lambda n: n.endswith("attn.weights"))
    with torch.inference_mode():
        model(torch.tensor([ids], device=dev), trace=trace)
    weights = torch.stack([trace[f"blocks.{i}.attn.weights"][0] for i in range(model.config.n_layers)])
    scores = hs.head_scores(weights, ids)                                           # each (L, H)
    return {"tokens": tok.tokens(ids), "n_ids": n_ids, "weights": weights.cpu().numpy().astype(np.float16),
            "scores": {k: v.cpu().numpy() for k, v in scores.items()}}


@st.cache_resource(max_entries=16, show_spinner=False)
def probe_heads(name: str, length: int, seed: int, dev: str, _loaded) -> dict:
    """The repeated random probe, one forward pass: its tokens, the four scores, the losses along
    it, and the run itself (for the ablation: every head's mean output). The weights are kept
    once, as float16 on the CPU (5 MB at T = 48), and every score is read from those."""
    model, tok = _loaded
    ids = hs.repeated_probe(tok, length, seed)
    with torch.inference_mode():
        run = hs.run_probe(model, ids, dev)
    run = dataclasses.replace(run, weights=run.weights.to("cpu", torch.float16))
    scores = hs.head_scores(run.weights.float(), ids)
    return {"tokens": tok.tokens(ids), "run": run, "weights": run.weights.numpy(),
            "scores": {k: v.numpy() for k, v in scores.items()}}


@st.cache_resource(max_entries=64, show_spinner=False)
def ablation(name: str, length: int, seed: int, k: int, mode: str, dev: str, _loaded) -> dict:
    """The probe with the top-k induction heads switched off, and with k random others: two more
    forward passes. Returns ``core.lab.head_scores.Outcome`` by condition, and each condition's
    guess for the probe's last token (its top token and probability, and the right one's)."""
    model, tok = _loaded
    run = probe_heads(name, length, seed, dev, _loaded)["run"]
    with torch.inference_mode():
        study = hs.ablation_study(model, run, k, mode, seed, dev)
    answer = run.ids[-1]                      # the last token of the second copy: seen once, in the first
    guesses = {}
    for cond, got in study.items():
        probs = torch.softmax(got.logits_cue, -1)                                  # (V,)
        best = int(probs.argmax())
        guesses[cond] = (tok.tokens([best])[0], float(probs[best]), float(probs[answer]))
    return {"study": study, "guesses": guesses, "answer": tok.tokens([answer])[0]}


# --- the random control: DRAWS forward passes, computed once per setting for every session -------
# At the lesson's default setting it is computed on the first visit; at any other setting only when
# a student asks (a button and a progress bar in the page): DRAWS forward passes of SmolLM2 are
# ~8 s of a core, and in a class of 100 every new setting of F1's sliders cost the whole class that
# (issue 39). One control is computed at a time; a student asking for one being computed waits.
_CONTROLS: collections.OrderedDict = collections.OrderedDict()
_CONTROLS_MAX = 64
_CONTROLS_LOCK = threading.Lock()       # guards _CONTROLS
_COMPUTING = threading.Lock()           # one control computed at a time in this process


def control_key(name: str, length: int, seed: int, k: int, mode: str, dev: str) -> tuple:
    return (name, int(length), int(seed), int(k), mode, dev)


def random_controls_ready(key: tuple):
    """The control computed for ``key`` (control_key), or None when nobody has asked for it yet."""
    with _CONTROLS_LOCK:
        found = _CONTROLS.get(key)
        if found is not None:
            _CONTROLS.move_to_end(key)
        return found


def random_controls(key: tuple, _loaded, progress=None) -> hs.ControlSpread:
    """The random control (core.lab.head_scores.control_study) for ``key``: computed once for every
    session, ``progress(fraction)`` called after each draw. Read only."""
    found = random_controls_ready(key)
    if found is not None:
        return found
    with _COMPUTING:
        found = random_controls_ready(key)            # computed while this one waited
        if found is not None:
            return found
        name, length, seed, k, mode, dev = key
        run = probe_heads(name, length, seed, dev, _loaded)["run"]
        with torch.inference_mode():
            spread = hs.control_study(_loaded[0], run, k, mode, seed, hs.DRAWS, dev, progress=progress)
    with _CONTROLS_LOCK:
        _CONTROLS[key] = spread
        while len(_CONTROLS) > _CONTROLS_MAX:
            _CONTROLS.popitem(last=False)
    return spread


# --- the page's controls, figures and text (lessons/f1_heads.py lays out the sections) ----------
NS = "f1"
REAL_TEXT = "The cat sat on the mat. The dog sat on the log. The cat saw the dog."
COURSE_TEXT = "君不见，黄河之水天上来，奔流到海不复回。君不见，高堂明镜悲白发，朝如青丝暮成雪。"
REAL_CHARS = 1000          # characters the box keeps; the model reads the first TEXT_TOKENS tokens
COURSE_CHARS = 128
DEFAULT_CELL = (18, 6)     # SmolLM2's strongest induction head on the default probes
LENGTHS = (4, 48)          # tokens in one copy of the probe: 9 .. 97 positions
DEFAULT_LENGTH = 20
K_MAX = 20                 # heads switched off at most (of 270)
# Score -> (its grid's title, its short name); mode -> its label.
SCORE_KEYS = {"previous": (f"{NS}.grid_previous", f"{NS}.short_previous"),
              "sink": (f"{NS}.grid_sink", f"{NS}.short_sink"),
              "induction": (f"{NS}.grid_induction", f"{NS}.short_induction"),
              "duplicate": (f"{NS}.grid_duplicate", f"{NS}.short_duplicate")}
MODE_KEYS = {"zero": f"{NS}.mode_zero", "mean": f"{NS}.mode_mean"}


def text_controls(name: str, loaded, n_layers: int, n_heads: int):
    """The text, and the cell chooser: the head whose pattern is shown large (its ranges follow
    the model, 30 × 9 or 4 × 4)."""
    c1, c2, c3 = st.columns([3, 1.2, 1.2])
    with c1:
        if name == REAL:
            text = text_box(f"{NS}.rtext", REAL_TEXT, REAL_CHARS, tr(f"{NS}.rtext_label", limit=TEXT_TOKENS))
            if note := dropped_note(loaded[1], text.text):       # bytes SmolLM2 has no token for
                st.warning(tr("real.dropped", **note))
            default = REAL_TEXT
        else:
            text = text_box(f"{NS}.text", COURSE_TEXT, COURSE_CHARS, tr(f"{NS}.text_label"))
            default = COURSE_TEXT
    with c2:
        layer = ranged_slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, DEFAULT_CELL[0], key=f"{NS}.layer")
    with c3:
        head = ranged_slider(tr(f"{NS}.head_label"), 0, n_heads - 1, DEFAULT_CELL[1], key=f"{NS}.head")
    return (default if text.empty else text.text), layer, head


def probe_controls():
    """The probe's length T and seed: beside the losses along it (the induction grids above follow)."""
    c1, c2 = st.columns([3, 1])
    with c1:
        length = st.slider(tr(f"{NS}.length_label"), *LENGTHS, DEFAULT_LENGTH, key=f"{NS}.length",
                           bind="query-params", help=tr(f"{NS}.length_help"))
    with c2:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr(f"{NS}.seed_help"))
    return int(length), int(seed)


def ablation_controls(n_heads_all: int):
    """k and what a switched-off head writes. At most half the heads go (the random control
    group is drawn from the other half): 20 of SmolLM2's 270, 8 of the course model's 16."""
    c1, c2 = st.columns([3, 2])
    with c1:
        k = ranged_slider(tr(f"{NS}.k_label"), 1, min(K_MAX, n_heads_all // 2), 5, key=f"{NS}.k")
    with c2:
        mode = choice(tr(f"{NS}.mode_label"), hs.MODES, f"{NS}.mode",
                      {m: tr(MODE_KEYS[m]) for m in hs.MODES}, widget="segmented")
    return int(k), mode


def picked(key: str) -> None:
    """A click on a grid (before the rerun): that cell's layer and head move the sliders."""
    value = st.session_state.get(key)
    cell = value.get("select") if hasattr(value, "get") else None
    parts = cell.split(",") if isinstance(cell, str) else []
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        st.session_state[f"{NS}.layer"], st.session_state[f"{NS}.head"] = int(parts[0]), int(parts[1])


def grid_values(scores: dict, probe_scores: dict) -> list:
    """The four scores the grids show: two on the text, two on the probe."""
    return [scores["previous"], scores["sink"], probe_scores["induction"], probe_scores["duplicate"]]


def short_tokens(tokens) -> tuple[str, ...]:
    """The start token named short, so that a column of labels fits."""
    return tuple("bos" if i == 0 else t for i, t in enumerate(tokens))


def pattern(w, tokens: tuple[str, ...], title: str, hover: tuple[str, str, str], bar_title: str):
    """One head's weights ``w`` (N, N), large, a token on every row and column, the masked future grey."""
    w = w.astype(np.float32)
    n = len(tokens)
    return heatmap(w, list(tokens), list(tokens), title=title, hover_names=hover, zmax=weight_top(w),
                   colorbar_title=bar_title, height=460, least_font=11, masked=np.triu(np.ones((n, n), dtype=bool), 1))


def top_lines(scores: dict, probe_scores: dict) -> str:
    """The three heads of highest score, per score, as a list."""
    rows = []
    for s in hs.SCORES:
        values = (probe_scores if s in ("induction", "duplicate") else scores)[s]
        flat = np.nan_to_num(values, nan=-1.0).ravel()
        best = np.argsort(-flat, kind="stable")[:3]
        heads = tr(f"{NS}.sep").join(tr(f"{NS}.head_at", layer=int(i) // values.shape[1],
                                        head=int(i) % values.shape[1], score=float(flat[i]))
                                     for i in best if flat[i] >= 0)
        rows.append("- " + tr(f"{NS}.top_row", name=tr(SCORE_KEYS[s][1]), heads=heads or tr(f"{NS}.none")))
    return "\n".join(rows)


def condition_names(k: int) -> dict[str, str]:
    """The ablation's conditions by name: nothing off, the top k, k random others."""
    return {"none": tr(f"{NS}.cond_none"), "top": tr(f"{NS}.cond_top", k=k),
            "random": tr(f"{NS}.cond_random", k=k, draws=hs.DRAWS)}


def ablation_table(result: dict, names: dict[str, str]) -> list[str]:
    """The ablation's table as markdown rows: each condition's heads, loss, accuracy and guess."""
    study, guesses = result["study"], result["guesses"]
    head_list = {c: tr(f"{NS}.sep").join(f"{i}.{j}" for i, j in study[c].heads) or "—" for c in study}
    table = [f"| {tr(f'{NS}.col_cond')} | {tr(f'{NS}.col_heads')} | {tr(f'{NS}.col_second')} | "
             f"{tr(f'{NS}.col_acc')} | {tr(f'{NS}.col_guess')} | "
             f"{tr(f'{NS}.col_answer', answer=plain(result['answer']))} |",
             "|---|---|---:|---:|---|---:|"]
    for c in study:
        token, p, p_answer = guesses[c]
        table.append(f"| {names[c]} | {head_list[c]} | {study[c].second:.2f} | {100 * study[c].accuracy:.0f} % | "
                     f"“{plain(token)}” ({100 * p:.0f} %) | {100 * p_answer:.1f} % |")
    return table


def spread_row(spread: hs.ControlSpread, k: int, second: float) -> str:
    """The random draws' row of the table: their loss's median and range, their accuracy's range."""
    acc = sorted(spread.accuracy)
    return (f"| {tr(f'{NS}.cond_draws', k=k, draws=len(spread.rises))} | {tr(f'{NS}.draws_heads', n=spread.kept_out)} | "
            f"{tr(f'{NS}.draws_loss', median=second + spread.median, low=second + spread.low, high=second + spread.high)} | "
            f"{tr(f'{NS}.draws_acc', low=100 * acc[0], high=100 * acc[-1])} | — | — |")


def spread_caption(spread: hs.ControlSpread, k: int, mode: str, top: float) -> str:
    """Under the table: the top k's rise beside the draws' median, range and worst group."""
    worst = spread.rises.index(spread.high)
    return tr(f"{NS}.ablate_caption", k=k, mode=tr(MODE_KEYS[mode]), top=top, median=spread.median,
              low=spread.low, high=spread.high, draws=len(spread.rises), first=spread.rises[0],
              kept=spread.kept_out, worst=tr(f"{NS}.sep").join(f"{i}.{j}" for i, j in spread.groups[worst]))


def grids(values: list, selected, cols: int, key: str, titles: list[str], name: str) -> None:
    """The four scores as four layer × head grids: two on the text, two on the probe, built once
    per scores and chosen cell for every session. With a chosen cell, a click on any cell
    chooses that head (the sliders follow: on_select). No title over the panels (the section's
    heading stands above them, and the grid fills its presenter slide): ``name`` is what a screen
    reader calls the chart."""
    words = (tr(f"{NS}.layer_word"), tr(f"{NS}.head_word"))
    fig = drawn(score_panels, values, titles=titles, selected=selected, cols=cols, axis_titles=words,
                value_name=tr(f"{NS}.score_word"), colorbar_title=tr(f"{NS}.score_word"), cell_px=15 if cols == 2 else 22)
    if selected is None:
        figure(fig, key=key, name=name)
    else:
        figure(fig, key, present_height=None, on_select=functools.partial(picked, key), name=name)


def ablation_rows(result: dict, names: dict[str, str], key: tuple, at_default: bool, loaded, second: float) -> None:
    """The ablation's table and caption. The random control's DRAWS draws (control_key ``key``)
    join it when they exist: computed on a visit only at the lesson's default (``at_default``),
    elsewhere behind a button with a progress bar (issue 39); until then one draw is shown."""
    _, _, _, k, mode, _ = key
    study = result["study"]
    table = ablation_table(result, names)
    spread = random_controls_ready(key)
    if spread is None and at_default:
        with st.spinner(tr(f"{NS}.running")):           # the default: computed once, for everyone
            spread = random_controls(key, loaded)
    if spread is None:
        ask = st.empty()           # one draw and a button, until the draws exist
        with ask.container():
            st.markdown("\n".join(table))
            st.caption(tr(f"{NS}.ablate_caption_top", k=k, mode=tr(MODE_KEYS[mode]),
                          top=study["top"].second - second, first=study["random"].second - second))
            pressed = st.button(tr(f"{NS}.draw_button", draws=hs.DRAWS, k=k), key=f"{NS}.draw_btn",
                                help=tr(f"{NS}.draw_help", draws=hs.DRAWS))
        if pressed:
            bar = st.progress(0.0, text=tr(f"{NS}.drawing", draws=hs.DRAWS))
            spread = random_controls(key, loaded, progress=lambda f: bar.progress(
                min(f, 1.0), text=tr(f"{NS}.drawing", draws=hs.DRAWS)))
            bar.empty()
            ask.empty()
    if spread is not None:
        st.markdown("\n".join([*table, spread_row(spread, k, second)]))
        st.caption(spread_caption(spread, k, mode, study["top"].second - second))
