"""Cached results of lesson F3 (a model learning), shared by every session.

The checkpoints are read once per process and device (``st.cache_resource``, read-only); each
result is computed once per distinct opening and setting for the whole server
(``st.cache_data``, keyed on plain strings and numbers) and kept as plain lists and arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from core.lab.learning import (
    CORPUS_FILE,
    Checkpoints,
    Counts,
    continuations,
    count_models,
    draw_batch,
    encode_corpus,
    head_at_checkpoints,
    load_checkpoints,
    next_char_at,
    read_manifest,
    resemblance,
    window_means,
)
from core.models.model import ASSETS, CourseModelUnavailable
from ui.frame import plain, text_box, tr
from ui.prompt import openings
from viz.learning import by_checkpoint, loss_curve

WINDOWS, WINDOW_LEN, WINDOW_SEED = 8, 128, 0    # the corpus sample the resemblance is measured on
LOG_EVERY = 25                                  # the training script's logging interval


@dataclass(frozen=True)
class Learned:
    checkpoints: Checkpoints
    counts: Counts
    resemblance: dict[str, list[float]]     # one value a checkpoint (core.lab.learning.resemblance)
    logged: list[tuple[int, float]]         # the 25-step means of every step's loss


@st.cache_resource(show_spinner=False, max_entries=2)
def checkpoint_models(dev: str) -> Checkpoints | CourseModelUnavailable:
    """The seven checkpoints alone (read-only, one copy per process and device), or why not:
    for a lesson that wants an earlier, less certain course model (D1's sampling, C1's decoding)
    without the measurements below."""
    try:
        return load_checkpoints(dev)
    except CourseModelUnavailable as err:
        return err


@st.cache_resource(show_spinner=False)
def checkpoint_steps() -> tuple[int, ...]:
    """The training steps of the shipped checkpoints, the last one the final model (read from the
    manifest once per process); () when the manifest cannot be read."""
    try:
        return tuple(int(e["step"]) for e in read_manifest()["checkpoints"])
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def model_at_step(step: int, dev: str):
    """The course model as it was after ``step`` training steps (one of ``checkpoint_steps()``),
    shared and read-only, or None when the checkpoints cannot be loaded."""
    ck = checkpoint_models(dev)
    if isinstance(ck, CourseModelUnavailable) or step not in ck.steps:
        return None
    return ck.models[ck.steps.index(step)]


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(dev: str):
    ck = checkpoint_models(dev)
    if isinstance(ck, CourseModelUnavailable):
        return ck
    try:
        data = encode_corpus((ASSETS / CORPUS_FILE).read_text(encoding="utf-8"), ck.tokenizer)
    except OSError as err:
        return err
    counts = count_models(data, len(ck.tokenizer))
    gen = torch.Generator().manual_seed(WINDOW_SEED)
    windows = draw_batch(data, WINDOW_LEN, WINDOWS, gen)                     # (W, T+1)
    return Learned(ck, counts, resemblance(ck.models, counts, windows), window_means(ck.step_loss, LOG_EVERY))


def learned(dev: str) -> Learned | None:
    """The checkpoints and what was measured on them, or None after saying why they are missing."""
    with st.spinner(tr("f3.loading")):          # once per process: ~1-4 s of measuring, then cached
        loaded = _load(dev)
    if isinstance(loaded, Exception):
        st.error(tr("common.model_unavailable", reason=str(loaded), command="python scripts/train_course_model.py"))
        return None
    return loaded


def opening_ids(text: str, dev: str) -> list[int]:
    """The opening's character ids (no BOS: a typed line starts mid-stream, as training windows do)."""
    return _load(dev).checkpoints.tokenizer.encode(text)


@st.cache_data(max_entries=256, show_spinner=False)
def next_char_view(text: str, read: int, dev: str) -> dict:
    """Each checkpoint's next-character distribution after the first ``read`` characters."""
    got = _load(dev)
    ids = opening_ids(text, dev)
    nc = next_char_at(got.checkpoints.models, got.checkpoints.tokenizer, got.counts, ids, read)
    return {"chars": nc.chars, "probs": nc.probs.numpy(), "entropy": nc.entropy_bits, "top_char": nc.top_char,
            "top_prob": nc.top_prob, "target": nc.target, "unigram": nc.unigram.numpy(),
            "bigram": nc.bigram.numpy(), "read": tokens(ids[:read], dev)}


@st.cache_data(max_entries=256, show_spinner=False)
def head_view(text: str, chars: int, layer: int, head: int, dev: str) -> dict:
    """One head's weights on the first ``chars`` characters at every checkpoint, float32."""
    got = _load(dev)
    ids = opening_ids(text, dev)[:chars]
    weights = head_at_checkpoints(got.checkpoints.models, ids, layer, head)   # (C, N, N)
    return {"tokens": tokens(ids, dev), "weights": weights.numpy().astype(np.float32)}


NEW_MAX = 48          # the most characters the lesson's slider asks each checkpoint to write


@st.cache_resource(max_entries=64, show_spinner=False)
def _longest(text: str, seed: int, dev: str) -> tuple[dict[str, str], ...]:
    got = _load(dev)
    return tuple(continuations(got.checkpoints.models, got.checkpoints.tokenizer, text, NEW_MAX, seed))


def continuation_view(text: str, n_new: int, seed: int, dev: str) -> list[dict[str, str]]:
    """What each checkpoint writes in ``n_new`` characters (at most NEW_MAX). A model writes left to
    right and draws one character a step from its seeded generator, so the first n characters of
    its longest continuation are its n-character one, draw for draw (a character a token, as our
    tokenizer has it; tests/test_f3_learning.py checks it): one run per opening and seed serves
    every value of the slider (issue 39: each value cost ~1 s of the server, for each new value a
    student chose)."""
    return [{kind: written[:n_new] for kind, written in run.items()} for run in _longest(text, seed, dev)]


def tokens(ids: list[int], dev: str) -> list[str]:
    return _load(dev).checkpoints.tokenizer.tokens(ids)


# --- the page's controls, figures and text (lessons/f3_learning.py lays out the sections) ------
NS = "f3"
DEFAULT_OPENING = "床前明月光，疑是地上霜。"
OPENING_CHARS = 48           # what the box keeps
# A poem the model read 100 times over, one it read once, and lines it never read (Song poems).
EXAMPLES = ["床前明月光，疑是地上霜。", "君不见，黄河之水", "千山鸟飞绝，", "大江东去，浪淘尽，"]


def step_names(got: Learned) -> list[str]:
    """Each checkpoint by name ("step 400"), as the figures' rows and panels say it."""
    return [tr(f"{NS}.step_name", step=s) for s in got.checkpoints.steps]


def curve_figure(dev: str, language: str):
    """The loss of every training step with its logged means, the checkpoints marked and the
    counting models' losses as references (built once per device and language: ui.frame.drawn)."""
    got = _load(dev)
    ck = got.checkpoints
    refs = {tr(f"{NS}.ref_unigram"): got.counts.unigram_loss, tr(f"{NS}.ref_bigram"): got.counts.bigram_loss}
    return loss_curve(ck.step_loss, got.logged, [(e.step, e.loss) for e in ck.entries], refs,
                      names=(tr(f"{NS}.curve_every"), tr(f"{NS}.curve_logged"), tr(f"{NS}.curve_marks")),
                      title=tr(f"{NS}.curve_fig"), x_title=tr(f"{NS}.step_axis"), y_title=tr(f"{NS}.loss_axis"),
                      mark_labels=[str(s) for s in ck.steps])


def order_figure(dev: str, language: str):
    """How much each checkpoint resembles the unigram model, the bigram model and the text itself
    (built once per device and language: ui.frame.drawn)."""
    got = _load(dev)
    res = got.resemblance
    return by_checkpoint([str(x) for x in got.checkpoints.steps], {
        tr(f"{NS}.order_unigram"): res["unigram"], tr(f"{NS}.order_bigram"): res["bigram"],
        tr(f"{NS}.order_truth"): res["truth"]}, title=tr(f"{NS}.order_fig"), x_title=tr(f"{NS}.checkpoint_axis"),
        y_title=tr(f"{NS}.order_axis"))


def order_caption(got: Learned) -> str:
    """The checkpoints where each counting model is resembled most, and the last one's truth."""
    steps, res = got.checkpoints.steps, got.resemblance
    peak = {name: steps[max(range(len(steps)), key=res[name].__getitem__)] for name in ("unigram", "bigram")}
    return tr(f"{NS}.order_caption", uni=peak["unigram"], bi=peak["bigram"], truth=res["truth"][-1])


def opening_controls(pills_at) -> str:
    """The openings to try (in ``pills_at``) and the box they fill; the opening (the default when empty)."""
    with pills_at:
        openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
    text = text_box(f"{NS}.prompt", DEFAULT_OPENING, OPENING_CHARS, tr(f"{NS}.prompt_label"),
                    empty_key=f"{NS}.empty_prompt")
    return DEFAULT_OPENING if text.empty else text.text


def next_caption(v: dict, steps) -> str:
    """Under the next-character grid: the true next character, each checkpoint's guess and certainty."""
    truth = tr(f"{NS}.next_truth", char=plain(v["target"])) if v["target"] else tr(f"{NS}.next_end")
    certainty = " · ".join(tr(f"{NS}.certainty_item", step=s, char=plain(c), p=p, bits=b)
                           for s, c, p, b in zip(steps, v["top_char"], v["top_prob"], v["entropy"], strict=True))
    return tr(f"{NS}.next_caption", truth=truth, items=certainty)


def continuation_table(text: str, entries, runs: list[dict[str, str]]) -> str:
    """The opening, then a markdown table: each checkpoint's step, loss and what it wrote."""
    head = f"| {tr(f'{NS}.col_step')} | {tr(f'{NS}.col_loss')} | {tr(f'{NS}.col_greedy')} | {tr(f'{NS}.col_sampled')} |"
    lines = [head, "|---:|---:|---|---|"]
    for e, run in zip(entries, runs, strict=True):
        lines.append(f"| {e.step} | {e.loss:.2f} | {plain(run['greedy']) or '∅'} | {plain(run['sampled']) or '∅'} |")
    return tr(f"{NS}.write_opening", text=plain(text)) + "\n\n" + "\n".join(lines)
