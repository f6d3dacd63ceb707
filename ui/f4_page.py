"""Lesson F4's controls, tables and text (lessons/f4_patching.py lays out the sections that use
them); its cached patching runs are ui/f4_patching.py's."""
from __future__ import annotations

import numpy as np
import streamlit as st

from core.lab.head_scores import SCORES
from core.lab.patching import MAX_TOKENS, PAIRS, PairError
from ui.f1_heads import probe_heads, text_heads
from ui.f4_patching import maps_ready, pair_maps
from ui.frame import choice, drawn, figure, plain, text_box, tr
from ui.model import REAL
from viz.attention import bars
from viz.common import label

NS = "f4"
OWN = "own"
PAIR_IDS = [*PAIRS, OWN]                 # ioi, fact, agreement, the student's own
DIRECTIONS = ("denoise", "noise")
PROMPT_CHARS = 200                       # a prompt box keeps this many characters (MAX_TOKENS tokens are read)
ANSWER_CHARS = 40
TOP_HEADS = 5                            # heads listed beside the head map
F1_MARKED = 3                            # of each F1 score, the top heads marked on the map
F1_PROBE = (20, 0)                       # F1's default probe (T, seed): its scores are cached for F1 already
# Every id's catalogue key, written out (tests/test_i18n.py finds a key by its literal name).
PAIR_KEYS = {"ioi": f"{NS}.pair_ioi", "fact": f"{NS}.pair_fact", "agreement": f"{NS}.pair_agreement",
             OWN: f"{NS}.pair_own"}
# direction -> (its control's label, why, the residual map's caption, its name in a figure's title)
DIR_KEYS = {"denoise": (f"{NS}.dir_denoise", f"{NS}.dir_why_denoise", f"{NS}.resid_caption_denoise",
                        f"{NS}.dir_short_denoise"),
            "noise": (f"{NS}.dir_noise", f"{NS}.dir_why_noise", f"{NS}.resid_caption_noise", f"{NS}.dir_short_noise")}
ERROR_KEYS = {"empty": f"{NS}.error_empty", "lengths": f"{NS}.error_lengths", "too_long": f"{NS}.error_too_long",
              "same_answer": f"{NS}.error_same_answer"}
ANSWER_KEYS = {"right": f"{NS}.right_word", "wrong": f"{NS}.wrong_word"}
RUN_KEYS = {"clean": f"{NS}.run_clean", "corrupted": f"{NS}.run_corrupted"}
F1_KEYS = {"previous": f"{NS}.f1_previous", "sink": f"{NS}.f1_sink", "induction": f"{NS}.f1_induction",
           "duplicate": f"{NS}.f1_duplicate"}


def pair_controls():
    """Which pair, and which way the activations are copied. Returns (pair id, noising)."""
    # One control a row: side by side at 1024 px, both cut their last option short.
    picked = choice(tr(f"{NS}.pair_label"), PAIR_IDS, f"{NS}.pair", {p: tr(PAIR_KEYS[p]) for p in PAIR_IDS},
                    widget="segmented")
    direction = choice(tr(f"{NS}.dir_label"), DIRECTIONS, f"{NS}.dir", {d: tr(DIR_KEYS[d][0]) for d in DIRECTIONS},
                       widget="segmented", help=tr(f"{NS}.dir_help"))
    st.caption(tr(DIR_KEYS[direction][1]))
    return picked, direction == "noise"


def own_controls():
    """The student's pair: two prompts and two answers (the IOI pair until they type)."""
    ioi = PAIRS["ioi"]
    c1, c2 = st.columns(2)
    with c1:
        clean = text_box(f"{NS}.clean", ioi.clean, PROMPT_CHARS, tr(f"{NS}.clean_label", limit=MAX_TOKENS))
        right = text_box(f"{NS}.right", ioi.right, ANSWER_CHARS, tr(f"{NS}.right_label"))
    with c2:
        corrupted = text_box(f"{NS}.corrupted", ioi.corrupted, PROMPT_CHARS,
                             tr(f"{NS}.corrupted_label", limit=MAX_TOKENS))
        wrong = text_box(f"{NS}.wrong", ioi.wrong, ANSWER_CHARS, tr(f"{NS}.wrong_label"))
    st.caption(tr(f"{NS}.own_help"))
    return tuple(ioi_default if box.empty else box.text
                 for box, ioi_default in ((clean, ioi.clean), (corrupted, ioi.corrupted),
                                          (right, ioi.right), (wrong, ioi.wrong)))


def token_row(tokens: list[str]) -> str:
    """A tokenization as one markdown line: each token in brackets, markup shown as typed."""
    return " ".join(f"[{plain(t)}]" for t in tokens) or "—"


def pair_problem(err: PairError) -> None:
    """Why the pair cannot be patched, with both tokenizations."""
    st.error(tr(ERROR_KEYS.get(err.reason, f"{NS}.error_empty"), clean=len(err.clean_tokens), corrupted=len(err.corrupted_tokens),
                limit=MAX_TOKENS))
    st.markdown(tr(f"{NS}.tokens_clean", n=len(err.clean_tokens), tokens=token_row(err.clean_tokens)) + "\n\n"
                + tr(f"{NS}.tokens_corrupted", n=len(err.corrupted_tokens), tokens=token_row(err.corrupted_tokens)))


def answer_notes(tok, right: str, wrong: str) -> None:
    """An answer of several tokens is scored by its first: say so (``tok``: SmolLM2's tokenizer)."""
    for which, text in (("right", right), ("wrong", wrong)):
        pieces = tok.tokens(tok.encode(text))
        if len(pieces) > 1:
            st.info(tr(f"{NS}.several_tokens", answer=plain(text), n=len(pieces), tokens=token_row(pieces),
                       first=plain(pieces[0]), which=tr(ANSWER_KEYS[which])))


def selected_maps(key: tuple, builtin: bool, loaded):
    """The pair's maps: a built-in pair's are computed on a visit (once, for everyone); a
    student's own only when asked, behind a progress bar."""
    maps = maps_ready(key)
    if maps is not None:
        return maps
    if builtin:
        with st.spinner(tr(f"{NS}.running")):
            return pair_maps(key, loaded)
    ask = st.empty()
    with ask.container():
        pressed = st.button(tr(f"{NS}.run_button"), key=f"{NS}.run", type="primary", help=tr(f"{NS}.run_help"))
    if not pressed:
        return None
    bar = st.progress(0.0, text=tr(f"{NS}.patching"))
    maps = pair_maps(key, loaded, progress=lambda f: bar.progress(min(max(f, 0.0), 1.0), text=tr(f"{NS}.patching")))
    bar.empty()
    ask.empty()
    return maps


def runs_section(maps, texts: tuple[str, str, str, str]) -> None:
    """The two plain runs side by side: the answer's probability and the logit difference."""
    clean_text, corrupted_text, _, _ = texts
    left, right = st.columns(2)
    for col, name, run, text in ((left, "clean", maps.clean, clean_text), (right, "corrupted", maps.corrupted,
                                                                            corrupted_text)):
        with col:
            st.markdown(f"**{tr(RUN_KEYS[name])}** · {plain(text)}")
            # Two numbers a side: three cut "92.3 %" to "92.…" at 1024 px.
            a, b = st.columns(2)
            a.metric(tr(f"{NS}.metric_diff"), f"{run.logit_diff:+.2f}")
            b.metric(tr(f"{NS}.metric_p", token=plain(maps.right)), f"{100 * run.p_right:.1f} %")
            st.caption(tr(f"{NS}.top_caption", wrong=plain(maps.wrong), p_wrong=100 * run.p_wrong,
                          tokens=tr(f"{NS}.sep").join(
                f"“{plain(t)}” {100 * p:.0f} %" for t, p in zip(run.top[:3], run.top_probs[:3], strict=True))))


def runs_figure(maps) -> None:
    """Both answers' probabilities in the two runs, and what the maps' 0 and 1 will mean."""
    right_word, wrong_word = f"“{label(maps.right)}”", f"“{label(maps.wrong)}”"
    fig = drawn(bars, [tr(f"{NS}.p_of", token=right_word), tr(f"{NS}.p_of", token=wrong_word)],
                {tr(f"{NS}.run_clean"): [maps.clean.p_right, maps.clean.p_wrong],
                 tr(f"{NS}.run_corrupted"): [maps.corrupted.p_right, maps.corrupted.p_wrong]},
                title=tr(f"{NS}.runs_fig"), y_title=tr(f"{NS}.prob_word"), fmt=".3f", height=260)
    figure(fig, key=f"{NS}.runs", present_height=260)
    st.caption(tr(f"{NS}.runs_caption", clean=maps.clean.logit_diff, corrupted=maps.corrupted.logit_diff,
                  right=plain(maps.right), wrong=plain(maps.wrong)))


def words(*keys: str) -> tuple[str, ...]:
    return tuple(tr(k) for k in keys)


def effect(values: np.ndarray, noising: bool) -> np.ndarray:
    """How much each patch moved the answer: denoising brings it up from 0, noising takes it
    down from 1 (NaN counts as nothing)."""
    values = np.nan_to_num(values, nan=1.0 if noising else 0.0)
    return 1.0 - values if noising else values


def strongest(values: np.ndarray, noising: bool) -> tuple[int, int, float]:
    """The cell whose patch moved the answer most: (row, column, its recovered fraction)."""
    i, j = np.unravel_index(int(np.argmax(effect(values, noising))), values.shape)
    return int(i), int(j), float(values[i, j])


def f1_heads_marked(clean_text: str, dev: str, loaded) -> tuple[dict[str, list[tuple[int, int]]], dict[str, np.ndarray]]:
    """F1's four head scores (previous and sink on the clean prompt, induction and duplicate on
    F1's default probe: the same cached results F1 shows) and the top heads of each."""
    on_text = text_heads(REAL, clean_text, dev, loaded)["scores"]
    on_probe = probe_heads(REAL, *F1_PROBE, dev, loaded)["scores"]
    scores = {s: (on_probe if s in ("induction", "duplicate") else on_text)[s] for s in SCORES}
    marks = {}
    for s, v in scores.items():
        flat = np.nan_to_num(v, nan=-1.0).ravel()
        best = np.argsort(-flat, kind="stable")[:F1_MARKED]
        marks[tr(F1_KEYS[s])] = [(int(i) // v.shape[1], int(i) % v.shape[1]) for i in best]
    return marks, scores


def top_heads(values: np.ndarray, noising: bool) -> list[int]:
    """The TOP_HEADS heads whose patch moved the answer most, as flat indices, strongest first."""
    return [int(i) for i in np.argsort(-effect(values, noising).ravel(), kind="stable")[:TOP_HEADS]]


def heads_table(values: np.ndarray, scores: dict[str, np.ndarray], noising: bool) -> str:
    """The patch's top heads with F1's four scores of each (its rank of 270 in brackets)."""
    flat = values.ravel()
    best = top_heads(values, noising)
    ranks = {s: np.argsort(np.argsort(-np.nan_to_num(v, nan=-1.0).ravel(), kind="stable"), kind="stable")
             for s, v in scores.items()}
    cols = " | ".join(tr(F1_KEYS[s]) for s in SCORES)
    rows = [f"| {tr(f'{NS}.col_head')} | {tr(f'{NS}.col_recovered')} | {cols} |", "|---|---:|" + "---:|" * len(SCORES)]
    n_heads = values.shape[1]
    for i in best:
        layer, head = int(i) // n_heads, int(i) % n_heads
        cells = " | ".join(f"{float(scores[s][layer, head]):.2f} (#{int(ranks[s][i]) + 1})" for s in SCORES)
        rows.append(f"| L{layer}·H{head} | {float(flat[i]):+.2f} | {cells} |")
    return "\n".join(rows)
