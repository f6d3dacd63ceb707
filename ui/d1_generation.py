"""Lesson D1's generations on the course model, and the register of SmolLM2 generations, each
made once for every session; then the page's parts. Each model's setup (its prompt, sampler
and the text written) gives a ``Run``; the step, branch and strip sections draw from a Run the
same way for either model, the differences being the Run's data (``CourseRun``, ``RealRun``).
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import streamlit as st

from core.lab.real_generation import PROMPT_TOKENS, chat_ids, printable, stop_ids, text_ids
from core.lab.real_tokens import dropped_note, special_runs
from core.models.generate import Generation, at_temperature, parting_step, temperature_sweep
from ui import f3_learning
from ui.d1_real import (
    BOX_KEYS,
    HISTORY,
    MODE_KEYS,
    MODES,
    PART,
    REAL_CHARS,
    REAL_DEFAULT,
    REAL_MAX_NEW,
    REAL_NEW,
    REAL_SHOW,
    RUNS,
    TEMPLATE_SHOWN,
    bar_clicked,
    conversation,
    fitting_branch,
    keep_branch,
    linked_branch,
    listed,
    marked,
    parted,
    real_example,
    real_step,
    real_strip,
    stream,
)
from ui.figures import drawn, figure
from ui.live import live_figure, live_value
from ui.model import course_model
from ui.prompt import openings
from ui.slides import bring_into_view
from ui.url import choice, ranged_slider, text_box
from ui.words import lang, plain, sentences, tr
from viz.generation import probability_bars, temperature_strip, visible_token

NS = "d1"
MAX_NEW = 48
SHOW = 20        # candidates drawn as bars, likeliest first
STRIP = (0.5, 1.0, 2.0)   # the temperature strip: the same step at these temperatures
STRIP_SHOW = 10           # candidates in each of its panels


@functools.lru_cache(maxsize=4)
def _stops(tok) -> frozenset[int]:
    """SmolLM2's stop ids, worked out once per tokenizer (the shared, read-only one): not again on
    every run of every student (tests/test_shared_cache.py)."""
    return frozenset(stop_ids(tok))


# Shared as it is, not copied (st.cache_resource): st.cache_data unpickled the whole run, every
# step's (V,) distribution included, on each rerun of every student. Read-only: the page copies
# what it extends.
@st.cache_resource(max_entries=128, show_spinner=False)
def trajectory(prompt: str, temperature: float, top_k: int, top_p: float, seed: int, bos: bool, dev: str,
               step: int | None = None, forced: tuple = ()) -> dict:
    """The whole generation up to MAX_NEW tokens, as plain data. Sampling is seeded, so the
    first k steps of this run are exactly a run of k steps: Step only reveals one more.
    Each step also keeps its draw distribution at the STRIP temperatures (same top-k, top-p).
    ``step``: an earlier checkpoint of the course model (F3's, after that many training steps)
    instead of the final one. ``forced``: ((step index, token id),), a branch: the same generation
    with that token written there (core.models.generate.Generation(forced=...))."""
    model, tok = course_model(dev)
    if step is not None:                 # checked loadable by checkpoint_control
        model = f3_learning.model_at_step(step, dev)
    cut_k, cut_p = top_k or None, top_p if top_p < 1 else None
    gen = Generation(model, tok, prompt, MAX_NEW, temperature, cut_k, cut_p, seed, use_cache=True, show=SHOW, bos=bos,
                     forced=dict(forced))
    steps = []
    while not gen.done:
        s = gen.step()
        strip = at_temperature(s.model_probs, STRIP, cut_k, cut_p)[:, [c.id for c in s.top[:STRIP_SHOW]]]
        steps.append({
            "strip": dict(zip(STRIP, strip.tolist(), strict=True)),     # T -> the strip's probabilities
            "tokens": [c.token for c in s.top], "ids": [c.id for c in s.top],
            "model": [c.model_prob for c in s.top], "sample": [c.sample_prob for c in s.top],
            "chosen": s.chosen, "chosen_token": s.chosen_token,
            "model_probs": s.model_probs.numpy().astype(np.float32),   # (V,): the live bars' frames
            "chosen_model": float(s.model_probs[s.chosen]), "chosen_sample": float(s.probs[s.chosen]),
            "rank": s.rank, "kept": s.kept, "best_token": tok.tokens([s.best])[0],
            "fed": s.fed, "cache": s.cache_length, "eos": s.chosen == tok.eos_id,
        })
    p = gen.prompt
    return {"steps": steps, "prompt_tokens": tok.tokens(p.ids), "prompt_ids": list(p.ids), "bos": tok.bos_id,
            "eos": tok.eos_id, "eos_token": tok.tokens([tok.eos_id])[0], "dropped": p.dropped, "unknown": p.unknown}


# A class follows the lecturer: many students press Generate with the same prompt, settings and
# seed, and a seeded generation is the same every time. Each distinct one is decoded once for the
# whole server; a student who asks for one already made (or being made) gets its result. Only
# ids, text and timings are kept (a few KB each), the newest SHARED_MAX.
SHARED_MAX = 256


@st.cache_resource(show_spinner=False)
def shared_runs() -> tuple[OrderedDict, dict, threading.Lock]:
    """(finished runs by key, events of the runs in progress, their lock): one per process."""
    return OrderedDict(), {}, threading.Lock()


def shared_stream(model, tok, mode: str, source: str, prompt, settings: tuple, max_new: int, slot, dev: str,
                  forced: tuple = ()) -> dict:
    """``stream``, once per distinct (settings, length, device, forced tokens) for every session;
    later asks get the finished run, marked ``shared``."""
    done, running, lock = shared_runs()
    key = (settings, max_new, dev, forced)
    with lock:
        found = done.get(key)
        mine = found is None and key not in running
        if mine:
            running[key] = threading.Event()
        wait = None if found is not None or mine else running[key]
    if wait is not None:                          # another student is writing this very text
        with st.spinner(tr(f"{NS}.writing", n=0, total=max_new)):
            wait.wait(timeout=300)
        with lock:
            found = done.get(key)
    if found is not None:
        with lock:
            done.move_to_end(key)
        return {**found, "source": source, "shared": True}
    try:
        run = stream(model, tok, mode, source, prompt, settings, max_new, slot, forced)
        with lock:
            done[key] = run
            while len(done) > SHARED_MAX:
                done.popitem(last=False)
        return run
    finally:
        if mine:
            with lock:
                running.pop(key).set()


# --- The page's controls -----------------------------------------------------------------------
DEFAULT_PROMPT = "君不见，黄河之水"
IDS_SHOWN = 16   # prompt tokens listed with their ids
# The live temperature slider (issue 25): the bars at every one of these, sent with the page.
TEMPERATURES = [round(0.05 * i, 2) for i in range(101)]
# Openings to try: one the model learned by heart, and lines it never read (Song poems, a modern
# word), where its next-character distribution is genuinely spread out and sampling shows.
EXAMPLES = ["君不见，黄河之水", "大江东去，", "春风又绿江南岸，", "人工智能"]


def prompt_controls():
    openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
    text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 200, tr(f"{NS}.prompt_label"), empty_key=f"{NS}.empty_prompt")
    bos = st.toggle(tr(f"{NS}.bos_label"), value=False, key=f"{NS}.bos", bind="query-params",
                    help=tr(f"{NS}.bos_help"))
    return ("" if text.empty else text.text), bos


def checkpoint_control(dev: str) -> int | None:
    """Which course model samples: the final one (None, the default) or an earlier checkpoint,
    whose next-character distribution is still spread out, so temperature and the cuts show."""
    steps = f3_learning.checkpoint_steps()
    if len(steps) < 2:
        return None
    final = steps[-1]
    labels = {s: tr(f"{NS}.ckpt_final", step=f"{s:,}") if s == final else f"{s:,}" for s in steps}
    chosen = choice(tr(f"{NS}.ckpt_label"), steps, f"{NS}.ckpt", labels, widget="segmented", default=final,
                    help=tr(f"{NS}.ckpt_help"))
    if chosen == final:
        return None
    if f3_learning.model_at_step(chosen, dev) is None:   # a file missing or damaged: say so, sample the final
        st.warning(tr("common.model_unavailable", reason=tr(f"{NS}.ckpt_missing", step=f"{chosen:,}"),
                      command="python scripts/train_course_model.py"))
        return None
    st.caption(tr(f"{NS}.ckpt_note", step=f"{chosen:,}"))
    return chosen


def step_controls(n_max: int):
    key = f"{NS}.steps"

    def move(to):
        st.session_state[key] = max(0, min(n_max, to(st.session_state.get(key, 0))))
        st.session_state[f"{NS}.presses"] = st.session_state.get(f"{NS}.presses", 0) + 1

    c1, c2, c3, c4 = st.columns([4, 1, 1, 1])
    c2.button(tr(f"{NS}.step"), on_click=move, args=(lambda n: n + 1,), key=f"{NS}.step_btn", type="primary")
    c3.button(tr(f"{NS}.run"), on_click=move, args=(lambda n: n_max,), key=f"{NS}.run_btn")
    c4.button(tr(f"{NS}.reset"), on_click=move, args=(lambda n: 0,), key=f"{NS}.reset_btn")
    with c1:
        # No explicit default: the buttons set this key through session state (default = 0).
        return st.slider(tr(f"{NS}.steps_label"), 0, MAX_NEW, key=key, bind="query-params")


def sampling_controls(live: bool = False):
    """``live``: the temperature is the bars' own slider (ui.live), read here; else a slider here."""
    if live:
        temperature = live_value(f"{NS}.temperature", TEMPERATURES, 0.0)
        c2, c3, c4 = st.columns(3)
    else:
        c1, c2, c3, c4 = st.columns(4)
        temperature = c1.slider(tr(f"{NS}.temperature"), 0.0, 5.0, 0.0, 0.05, key=f"{NS}.temperature",
                                bind="query-params", help=tr(f"{NS}.temperature_help"))
    top_k = c2.slider("top-k", 0, 50, 0, key=f"{NS}.top_k", bind="query-params", help=tr(f"{NS}.top_k_help"))
    top_p = c3.slider("top-p", 0.05, 1.0, 1.0, 0.05, key=f"{NS}.top_p", bind="query-params",
                      help=tr(f"{NS}.top_p_help"))
    seed = c4.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                           help=tr(f"{NS}.seed_help"))
    return temperature, top_k, top_p, int(seed)


# --- A generation on the page, from either model ------------------------------------------------
@dataclass
class Run:
    """What the step, branch and strip sections read of the generation on the page. ``ids``: every
    token the run drew (the course model's whole trajectory, of which Step shows the first ``at``);
    ``at``: the step looked at (0: none yet, the first token's distribution)."""
    tok: object
    ids: list[int]
    n_prompt: int
    stop: set[int]
    temperature: float
    top_k: int
    top_p: float
    at: int = 0

    next_title = f"{NS}.bars_next"          # the bars' title before a token is drawn
    show = SHOW                             # candidates drawn as bars
    click = False                           # a click on a bar branches (else the list alone)
    strip_key, horizontal = f"{NS}.strip", False

    def label(self, token: str) -> str:     # a token as the bars and the texts name it
        return token

    def look(self) -> int:
        return self.at

    def view(self, at: int) -> dict:
        """The bars' numbers of the step looked at, with the strip's (its draw at STRIP)."""
        return self.numbers(at)

    def numbers(self, step: int) -> dict:
        """The bars' numbers of ``step`` (from 1; 0: the first new token's, before it is drawn)."""
        raise NotImplementedError

    def fork(self, step: int, token: int, slot) -> list[int]:
        """The tokens of the branch: the same generation with ``token`` forced at ``step``."""
        raise NotImplementedError

    def more(self, d: dict, at: int) -> list[str]:
        """The model's own sentences after the why of a step."""
        return []

    def bars(self, d: dict, at: int, pos: int, title: str, log: bool, branch) -> None:
        raise NotImplementedError


@dataclass
class CourseRun(Run):
    """The course model: the whole trajectory made at once (``trajectory``), Step reveals it; its
    bars are the temperature's live figure, a branch is chosen from the list."""
    run: dict = None
    args: tuple = ()

    def numbers(self, step: int) -> dict:
        return self.run["steps"][max(step, 1) - 1]

    def fork(self, step: int, token: int, slot) -> list[int]:
        return [x["chosen"] for x in trajectory(*self.args, forced=((step - 1, token),))["steps"]]

    def more(self, d: dict, at: int) -> list[str]:
        return [tr(f"{NS}.cache_note", fed=d["fed"], cache=d["cache"])] if at else []

    def bars(self, d: dict, at: int, pos: int, title: str, log: bool, branch) -> None:
        """The bars at every temperature from one batched call (the same step, the same cut): the
        slider above them switches frames in the browser; the generation follows on release."""
        tokens, model_p, _, ids, chosen = bar_rows(d, at, self.label)
        cut = (self.top_k or None, self.top_p if self.top_p < 1 else None)
        drawn_at = self.temperature if at else None
        live_figure(bars_frames, (d["model_probs"], ids, cut, tokens, model_p, chosen, title, pos, drawn_at, log, lang()),
                    f"{NS}.bars", f"{NS}.temperature", TEMPERATURES, 0.0, tr(f"{NS}.temperature"),
                    texts=[f"{t:.2f}" for t in TEMPERATURES], help=tr(f"{NS}.temperature_help"))
        entropies = drawn(temperature_sweep, d["model_probs"], TEMPERATURES, ids, *cut)[1].tolist()
        st.caption(sentences(tr(f"{NS}.live.entropy_caption", t=self.temperature,
                                h=entropies[TEMPERATURES.index(self.temperature)], h1=entropies[TEMPERATURES.index(1.0)]),
                             tr(f"{NS}.live.so_far_caption", t=self.temperature, n=at) if at else ""))
        presses = st.session_state.get(f"{NS}.presses", 0)
        if presses != st.session_state.get(f"{NS}.presses_shown", 0):   # a button moved the figure
            st.session_state[f"{NS}.presses_shown"] = presses
            bring_into_view(f"{NS}.bars", presses)


@dataclass
class RealRun(Run):
    """SmolLM2: a generation streamed when Generate is pressed, each step's bars computed when it
    is looked at; a click on a bar branches, and the branch streams beside the run."""
    model: object = None
    mode: str = "text"
    source: str = ""
    prompt: object = None
    settings: tuple = ()
    max_new: int = REAL_NEW
    dev: str = "cpu"

    next_title = f"{NS}.real_bars_next"
    show = REAL_SHOW
    click = True
    strip_key, horizontal = f"{NS}.real_strip", True

    def label(self, token: str) -> str:
        return visible_token(token)

    def look(self) -> int:
        if not self.ids:
            return 0
        return ranged_slider(tr(f"{NS}.inspect"), 1, len(self.ids), 1, key=f"{NS}.real_step") if len(self.ids) > 1 else 1

    def numbers(self, step: int) -> dict:
        """What the model had read before ``step``: one forward, shared by every student."""
        before = self.settings[1] + tuple(self.ids[: max(step, 1) - 1])
        return real_step(before, self.temperature, self.top_k, self.top_p, self.ids[step - 1] if step else None,
                         REAL_SHOW, self.dev, self.model, self.tok)

    def view(self, at: int) -> dict:
        with st.spinner(tr(f"{NS}.reading")):        # a new prefix: one forward of the model (<= 1 s)
            d = self.numbers(at)
            before = self.settings[1] + tuple(self.ids[: max(at, 1) - 1])
            return {**d, "strip": real_strip(before, tuple(d["ids"][:STRIP_SHOW]), STRIP, self.top_k, self.top_p,
                                             self.dev, self.model)}

    def fork(self, step: int, token: int, slot) -> list[int]:
        return shared_stream(self.model, self.tok, self.mode, self.source, self.prompt, self.settings, self.max_new,
                             slot, self.dev, forced=((step - 1, token),))["new_ids"]

    def more(self, d: dict, at: int) -> list[str]:
        if at and self.temperature > 0:
            return []
        return [tr(f"{NS}.real_kept", kept=d["kept"], vocab=d["vocab"]),
                tr(f"{NS}.greedy_note") if self.temperature <= 0 else ""]

    def bars(self, d: dict, at: int, pos: int, title: str, log: bool, branch) -> None:
        """The bars of the step (the drawn token red); a click on one forces its token there
        (on_select), the token of a branch at this step named with PART."""
        forced = branch[1] if branch and branch[0] == at else None
        tokens, model_p, sample_p, ids, chosen = bar_rows(d, at, self.label, forced)
        names = (tr(f"{NS}.model_prob"), tr(f"{NS}.sample_prob"))
        key = f"{NS}.real_bars"
        figure(drawn(probability_bars, tokens, model_p, sample_p, chosen, title=title, names=names,
                     hover_names=(tr(f"{NS}.token"), *names), legend=legend(), log=log, horizontal=True,
                     ids=ids if at else None), key,
               on_select=functools.partial(bar_clicked, key, at, d["chosen"], tuple(d["ids"])) if at else None)


def legend() -> tuple[str, str, str, str]:
    return (tr(f"{NS}.legend_chosen"), tr(f"{NS}.legend_kept"), tr(f"{NS}.legend_cut"), tr(f"{NS}.sample_prob"))


def bar_rows(d: dict, at: int, label, forced: int | None = None):
    """The bars of one step: its candidates' tokens, model and draw probabilities and ids, and the
    drawn token's index (None before it is drawn; appended when drawn from outside them)."""
    tokens = [(f"{PART} " if i == forced else "") + label(t) for i, t in zip(d["ids"], d["tokens"], strict=True)]
    model_p, sample_p, ids = list(d["model"]), list(d["sample"]), list(d["ids"])
    if not at:
        return tokens, model_p, sample_p, ids, None
    if d["chosen"] not in ids:                   # drawn from outside the top list: add it at the end
        tokens.append(label(d["chosen_token"]))
        model_p.append(d["chosen_model"])
        sample_p.append(d["chosen_sample"])
        ids.append(d["chosen"])
    return tokens, model_p, sample_p, ids, ids.index(d["chosen"])


def bars_frames(model_probs, ids: list[int], cut: tuple, tokens: list[str], model_p: list[float],
                chosen: int | None, title: str, pos: int, drawn_at: float | None, log: bool, language: str) -> list:
    """The course model's bars at every temperature (the live slider's frames). After a step the
    text so far was drawn at ``drawn_at``: a frame at another T shows that same text's next
    distribution at T, and says so (the text follows on release)."""
    rows, entropies = drawn(temperature_sweep, model_probs, TEMPERATURES, ids, *cut)
    names = (tr(f"{NS}.model_prob"), tr(f"{NS}.sample_prob"))

    def frame_title(t: float, h: float) -> str:
        if drawn_at is not None and t != drawn_at:
            return (tr(f"{NS}.live.so_far_title", pos=pos, drawn=drawn_at, t=t) + "<br>"
                    + tr(f"{NS}.live.so_far_entropy", t=t, h=h))
        return title + "<br>" + tr(f"{NS}.live.bars_entropy", t=t, h=h)

    return [probability_bars(tokens, model_p, row, chosen, hover_names=(tr(f"{NS}.token"), *names),
                             title=frame_title(t, h), names=names, legend=legend(), log=log)
            for t, row, h in zip(TEMPERATURES, rows.tolist(), entropies.tolist(), strict=True)]


def why(run: Run, d: dict) -> str:
    """Why the step's token was written: the likeliest (greedy), or drawn with its chance."""
    token = plain(run.label(d["chosen_token"]))
    if run.temperature <= 0:
        return tr(f"{NS}.why_greedy", token=token, p=d["chosen_model"])
    return tr(f"{NS}.why_sampled", token=token, p=d["chosen_sample"], rank=d["rank"], kept=d["kept"],
              best=plain(run.label(d["best_token"])))


def strip(run: Run, d: dict, pos: int, log: bool) -> None:
    """The same step at three temperatures, side by side (the page's width: 3 x 10 names)."""
    panels = {tr(f"{NS}.strip_panel", t=t): d["strip"][t] for t in STRIP}
    figure(drawn(temperature_strip, [run.label(t) for t in d["tokens"][:STRIP_SHOW]], panels,
                 title=tr(f"{NS}.strip_title", pos=pos), y_title=tr(f"{NS}.sample_prob"),
                 hover_names=(tr(f"{NS}.token"), tr(f"{NS}.sample_prob")), log=log, horizontal=run.horizontal),
           key=run.strip_key)
    st.caption(tr(f"{NS}.strip_caption"))


# --- A branch (issue 44 §2): "what if it had written *this*?" ------------------------------------
BRANCH_NONE = -1    # the list's "no branch" (token ids are >= 0)


def branch_point(run: Run, d: dict, at: int) -> tuple[int, int] | None:
    """The branch (step, token id) this session or its link asks for, if it fits the generation on
    the page; a link's branch waits for a generation; one that does not fit is dropped, and said so."""
    branch, malformed = linked_branch()
    if malformed:
        st.info(tr(f"{NS}.branch_bad_link"))
    if branch is None or not run.ids:
        keep_branch(branch)                           # a link's branch waits for its generation
        if branch is not None:
            st.caption(tr(f"{NS}.branch_pending", step=branch[0]))
        return branch if run.ids else None
    step, token = branch
    numbers = d if step == at else (run.numbers(step) if 1 <= step <= len(run.ids) else None)
    if not fitting_branch(branch, run.ids, numbers and numbers["ids"]):
        st.info(tr(f"{NS}.branch_unfit", step=step, token=token, show=run.show))
        keep_branch(None)
        return None
    keep_branch(branch)
    return branch


def branch_controls(d: dict, at: int, branch: tuple[int, int] | None, click: bool = True) -> None:
    """"What if it had written this?": a click on a bar, or this list (the keyboard's way), makes
    the step's token another one; the list shows the branch when it is at this step."""
    st.markdown(f"**{tr(f'{NS}.branch_heading')}**")
    options = [BRANCH_NONE] + [i for i in d["ids"] if i != d["chosen"]]
    labels = {BRANCH_NONE: tr(f"{NS}.branch_none")} | {
        i: visible_token(t) for i, t in zip(d["ids"], d["tokens"], strict=True)}
    key = f"{NS}.branch_pick"
    st.session_state[key] = branch[1] if branch and branch[0] == at else BRANCH_NONE
    st.selectbox(tr(f"{NS}.branch_label"), options, format_func=labels.__getitem__, key=key,
                 on_change=listed, args=(key, at, d["chosen"], tuple(d["ids"]), BRANCH_NONE),
                 help=tr(f"{NS}.branch_help"))
    elsewhere = tr(f"{NS}.branch_elsewhere", step=branch[0]) if branch and branch[0] != at else ""
    st.caption(sentences(tr(f"{NS}.branch_how" if click else f"{NS}.branch_how_list", step=at), elsewhere))


def branch_view(run: Run, branch: tuple[int, int]) -> None:
    """The run as drawn and its branch side by side, the step where they part marked in each, and
    what happened there. The branch is the same generation with one token forced
    (core.models.generate.Generation(forced=...)), written once for every student who asks for it."""
    step, token = branch
    tok = run.tok
    left, right = st.columns(2)
    left.markdown(f"**{tr(f'{NS}.branch_original')}**")
    right.markdown(f"**{tr(f'{NS}.branch_forced', step=step, token=plain(visible_token(tok.tokens([token])[0])))}**")
    slots = left.empty(), right.empty()
    with right:
        forked = run.fork(step, token, slots[1])
    numbers = run.numbers(step)
    part = parting_step(run.ids, forked)
    part = step - 1 if part is None else part             # the forced token differs: they part there
    for slot, ids in zip(slots, (run.ids, forked), strict=True):
        text, ended = parted(tok, ids, part, run.stop)
        slot.markdown(text + (f" `{ended}`" if ended else ""), unsafe_allow_html=True)   # d1_real.marked
    st.caption(tr(f"{NS}.branch_caption", step=part + 1, pos=run.n_prompt + part, mark=PART,
                  drawn=plain(visible_token(tok.tokens([run.ids[part]])[0])), p_drawn=numbers["chosen_model"],
                  forced=plain(visible_token(tok.tokens([forked[part]])[0])),
                  p_forced=dict(zip(numbers["ids"], numbers["model"], strict=True)).get(token, 0.0),
                  n=len(run.ids), m=len(forked)))


# --- Each model's setup: its prompt, its sampler, the text written; a Run ------------------------
def course_setup(dev: str) -> CourseRun:
    prompt, bos = prompt_controls()
    ckpt = checkpoint_control(dev)
    step_row, sampling_row = st.container(), st.container()
    with sampling_row:
        temperature, top_k, top_p, seed = sampling_controls(live=True)
    args = (prompt, temperature, top_k, top_p, seed, bos, dev, ckpt)
    run = trajectory(*args)
    with step_row:  # drawn above the sampling controls, computed after them
        n_steps = min(step_controls(len(run["steps"])), len(run["steps"]))
    if run["unknown"]:
        st.warning(tr(f"{NS}.unknown_note", n=run["unknown"]))
    if run["dropped"]:
        st.warning(tr(f"{NS}.dropped_note", n=run["dropped"]))
    shown = run["steps"][:n_steps]
    new_text = "".join(s["chosen_token"] for s in shown if not s["eos"])
    prompt_text = "".join(t for t in run["prompt_tokens"] if t != "<bos>")
    written = marked(plain(new_text)) if new_text else ""
    ended = f" `{run['eos_token']}`" if shown and shown[-1]["eos"] else ""
    st.markdown(f"### {plain(prompt_text) or '∅'}{written}{ended}", unsafe_allow_html=True)
    st.caption(sentences(tr(f"{NS}.count", n=n_steps, prompt=len(run["prompt_tokens"])),
                         tr(f"{NS}.written_legend") if new_text else ""))
    pairs = [f"{plain(t)} → {i}" for t, i in zip(run["prompt_tokens"], run["prompt_ids"], strict=True)]
    st.caption(tr(f"{NS}.ids_line", pairs=" · ".join(pairs[:IDS_SHOWN]) + (" · …" if len(pairs) > IDS_SHOWN else ""),
                  bos=run["bos"], eos=run["eos"], max=MAX_NEW))
    return CourseRun(course_model(dev)[1], [x["chosen"] for x in run["steps"]], len(run["prompt_ids"]),
                     {run["eos"]}, temperature, top_k, top_p, n_steps, run=run, args=args)


def real_setup(model, tok, dev: str) -> RealRun:
    """A text to continue or a question to answer; Generate streams the answer."""
    mode = choice(tr(f"{NS}.mode"), MODES, f"{NS}.mode", {m: tr(MODE_KEYS[m]) for m in MODES},
                  widget="segmented")
    box = f"{NS}.{mode}"
    real_example(mode, box)
    label, empty = BOX_KEYS[mode]
    typed = text_box(box, REAL_DEFAULT[mode], REAL_CHARS, tr(label), area=True, empty_key=empty)
    source = "" if typed.empty else typed.text
    if note := dropped_note(tok, source):          # bytes SmolLM2 has no token for
        st.warning(tr("real.dropped", **note))
    prompt = chat_ids(tok, source) if mode == "chat" else text_ids(tok, source)
    if prompt.cut:
        st.warning(tr(f"{NS}.real_cut", n=prompt.own, limit=PROMPT_TOKENS))
    if mode == "chat":
        # The template's control tokens as code; the student's text (a typed <|im_end|> too) as text.
        seen = "".join(f"`{t}`" if special else plain(printable(t))
                       for t, special in special_runs(tok, prompt.ids, TEMPLATE_SHOWN))
        st.caption(sentences(tr(f"{NS}.chat_template", n=len(prompt.ids), text=seen), tr(f"{NS}.chat_legend")))
    else:
        st.caption(tr(f"{NS}.text_tokens", n=len(prompt.ids)))
    temperature, top_k, top_p, seed = sampling_controls()
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    max_new = c1.slider(tr(f"{NS}.max_new"), 1, REAL_MAX_NEW, REAL_NEW, key=f"{NS}.max_new", bind="query-params",
                        help=tr(f"{NS}.max_new_help"))
    go = c2.button(tr(f"{NS}.generate"), type="primary", key=f"{NS}.generate_btn", use_container_width=True)
    settings = (mode, tuple(prompt.ids), float(temperature), int(top_k), float(top_p), int(seed))
    slot = st.empty()
    runs = st.session_state.setdefault(RUNS, [])
    if go:
        runs.append(shared_stream(model, tok, mode, source, prompt, settings, max_new, slot, dev))
        del runs[: -(HISTORY + 1)]
    current = runs[-1] if runs and runs[-1]["settings"] == settings else None
    if current:
        slot.markdown(conversation(mode, source, current["text"], current["ended"]), unsafe_allow_html=True)
        st.caption(sentences(tr(f"{NS}.speed", n=len(current["new_ids"]), prompt=current["prompt_tokens"],
                                prefill=current["prefill_s"] * 1000, tps=current["decode_tps"] or 0.0),
                             tr(f"{NS}.written_legend") if current["text"] else "",
                             tr(f"{NS}.shared_run") if current.get("shared") else ""))
    else:
        slot.markdown(conversation(mode, source, "", None), unsafe_allow_html=True)
        st.caption(tr(f"{NS}.press_generate"))
    earlier = [r for r in reversed(runs) if r is not current]
    if earlier:
        st.markdown(f"**{tr(f'{NS}.earlier')}**  \n" + "  \n".join(
            tr(f"{NS}.earlier_item", t=r["settings"][2], k=r["settings"][3], p=r["settings"][4], seed=r["settings"][5],
               source=plain(printable(r["source"][:40])) + ("…" if len(r["source"]) > 40 else ""),
               text=plain(printable(r["text"][:160])) + ("…" if len(r["text"]) > 160 else ""))
            for r in earlier))
    return RealRun(tok, current["new_ids"] if current else [], len(prompt.ids), _stops(tok), temperature, top_k,
                   top_p, model=model, mode=mode, source=source, prompt=prompt, settings=settings, max_new=max_new,
                   dev=dev)
