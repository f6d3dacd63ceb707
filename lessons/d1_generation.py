"""D1 · Autoregressive generation: predict, pick, append, repeat."""
import functools
import threading
import time

import streamlit as st

from core.lab.real_generation import (
    PROMPT_TOKENS,
    chat_ids,
    printable,
    stop_ids,
    text_ids,
)
from core.lab.real_tokens import dropped_note, special_runs
from core.models.generate import Generation, at_temperature, parting_step, sampling_probs, temperature_sweep
from ui.d1_generation import MAX_NEW, SHARED_MAX, SHOW, STRIP, STRIP_SHOW, shared_runs, trajectory
from ui.d1_real import bar_clicked, fitting_branch, keep_branch, linked_branch, listed, real_step, real_strip
from ui.f3_learning import checkpoint_steps, model_at_step
from ui.frame import (
    bring_into_view,
    built_figure,
    choice,
    code_panel,
    device,
    figure,
    fragment,
    header,
    plain,
    ranged_slider,
    send_now,
    sentences,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.model import REAL, course_model, model_switch, real_model
from ui.prompt import openings
from viz.generation import probability_bars, temperature_strip, visible_token

NS = "d1"
DEFAULT_PROMPT = "君不见，黄河之水"
IDS_SHOWN = 16   # prompt tokens listed with their ids
# The live temperature slider (issue 25): the bars at every one of these, sent with the page.
TEMPERATURES = [round(0.05 * i, 2) for i in range(101)]

header(NS)
# The course model (唐诗) stays the default; SmolLM2-135M-Instruct writes English (?d1.lm=smollm2).
real = real_model(device()) if model_switch(NS) == REAL else None
loaded = course_model(device()) if real is None else None


# Openings to try: one the model learned by heart, and lines it never read (Song poems, a modern
# word), where its next-character distribution is genuinely spread out and sampling shows.
EXAMPLES = ["君不见，黄河之水", "大江东去，", "春风又绿江南岸，", "人工智能"]


def prompt_controls():
    openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
    text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 200, tr(f"{NS}.prompt_label"), empty_key=f"{NS}.empty_prompt")
    bos = st.toggle(tr(f"{NS}.bos_label"), value=False, key=f"{NS}.bos", bind="query-params",
                    help=tr(f"{NS}.bos_help"))
    return ("" if text.empty else text.text), bos


def checkpoint_control() -> int | None:
    """Which course model samples: the final one (None, the default) or an earlier checkpoint,
    whose next-character distribution is still spread out, so temperature and the cuts show."""
    steps = checkpoint_steps()
    if len(steps) < 2:
        return None
    final = steps[-1]
    labels = {s: tr(f"{NS}.ckpt_final", step=f"{s:,}") if s == final else f"{s:,}" for s in steps}
    chosen = choice(tr(f"{NS}.ckpt_label"), steps, f"{NS}.ckpt", labels, widget="segmented", default=final,
                    help=tr(f"{NS}.ckpt_help"))
    if chosen == final:
        return None
    if model_at_step(chosen, device()) is None:          # a file missing or damaged: say so, sample the final
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


def course_branch(run: dict, at: int, args: tuple) -> None:
    """D1's branch on the course model (the list only: the bars are the temperature's live figure).
    Every step's bars are in the run already; the branch is ``trajectory`` with one token forced."""
    steps = run["steps"]
    drawn = [x["chosen"] for x in steps]
    branch, malformed = linked_branch()
    if malformed:
        st.info(tr(f"{NS}.branch_bad_link"))
    numbers = steps[branch[0] - 1] if branch and 1 <= branch[0] <= len(steps) else None
    if branch and not fitting_branch(branch, drawn, numbers and numbers["ids"]):
        st.info(tr(f"{NS}.branch_unfit", step=branch[0], token=branch[1], show=SHOW))
        branch = None
    keep_branch(branch)
    branch_controls(steps[at - 1], at, branch, click=False)
    if branch is None:
        return
    step, token = branch
    forked = trajectory(*args, forced=((step - 1, token),))
    tok = course_model(device())[1]
    slots = branch_columns(tok, branch)[:2]
    branch_shown(tok, slots, drawn, [x["chosen"] for x in forked["steps"]], step, {run["eos"]},
                 len(run["prompt_ids"]), numbers["chosen_model"], numbers["model"][numbers["ids"].index(token)])


@fragment
def course_body():
    """The whole lesson reruns alone (st.fragment) when a control moves: the questions below
    are neither sent nor drawn again."""
    if loaded is not None:
        slide(tr("classroom.slide.d1_setup"))       # presenter mode: the fragment's slides
        st.markdown(tr(f"{NS}.course_intro"))
        prompt, bos = prompt_controls()
        ckpt = checkpoint_control()
        step_row, sampling_row = st.container(), st.container()
        with sampling_row:
            temperature, top_k, top_p, seed = sampling_controls(live=True)
        run = trajectory(prompt, temperature, top_k, top_p, seed, bos, device(), ckpt)
        with step_row:  # drawn above the sampling controls, computed after them
            n_steps = min(step_controls(len(run["steps"])), len(run["steps"]))

        if run["unknown"]:
            st.warning(tr(f"{NS}.unknown_note", n=run["unknown"]))
        if run["dropped"]:
            st.warning(tr(f"{NS}.dropped_note", n=run["dropped"]))

        shown = run["steps"][:n_steps]
        new_text = "".join(s["chosen_token"] for s in shown if not s["eos"])
        prompt_text = "".join(t for t in run["prompt_tokens"] if t != "<bos>")
        written = f":red[**{plain(new_text)}**]" if new_text else ""
        ended = f" `{run['eos_token']}`" if shown and shown[-1]["eos"] else ""
        st.markdown(f"### {plain(prompt_text) or '∅'}{written}{ended}")
        st.caption(tr(f"{NS}.count", n=n_steps, prompt=len(run["prompt_tokens"])))
        pairs = [f"{plain(t)} → {i}" for t, i in zip(run["prompt_tokens"], run["prompt_ids"], strict=True)]
        st.caption(tr(f"{NS}.ids_line", pairs=" · ".join(pairs[:IDS_SHOWN]) + (" · …" if len(pairs) > IDS_SHOWN else ""),
                      bos=run["bos"], eos=run["eos"], max=MAX_NEW))

        # The bars take the page's whole width: at half of it, plotly named only every other candidate.
        n_prompt = len(run["prompt_ids"])
        if n_steps == 0:
            s, chosen, pos = run["steps"][0], None, n_prompt
            title = tr(f"{NS}.bars_next", pos=pos)
        else:
            s, pos = run["steps"][n_steps - 1], n_prompt + n_steps - 1      # positions count from 0
            title = tr(f"{NS}.bars_title", pos=pos)
            chosen = s["ids"].index(s["chosen"]) if s["chosen"] in s["ids"] else SHOW
        tokens, model_p, ids = list(s["tokens"]), list(s["model"]), list(s["ids"])
        if chosen == SHOW:  # drawn from outside the top list: add it at the end
            tokens.append(s["chosen_token"])
            model_p.append(s["chosen_model"])
            ids.append(s["chosen"])
        names = (tr(f"{NS}.model_prob"), tr(f"{NS}.sample_prob"))
        slide(tr("classroom.slide.d1_step"))
        log = st.toggle(tr(f"{NS}.log_label"), value=True, key=f"{NS}.log", bind="query-params",
                        help=tr(f"{NS}.log_help"))
        legend = (tr(f"{NS}.legend_chosen"), tr(f"{NS}.legend_kept"), tr(f"{NS}.legend_cut"), names[1])
        # The bars at every temperature from one batched call (the same step, the same cut): the
        # slider above them switches frames in the browser; the generation follows on release.
        inputs = (prompt, top_k, top_p, seed, bos, device(), n_steps, temperature if n_steps else None, ckpt)
        sweep = built_figure(("d1.sweep", *inputs), lambda: temperature_sweep(
            s["model_probs"], TEMPERATURES, ids, top_k or None, top_p if top_p < 1 else None))
        entropies = sweep[1].tolist()

        def frame_title(t: float, h: float) -> str:
            """After a step the text so far was drawn at ``temperature``: a frame at another T shows
            that same text's next distribution at T, and says so (the text follows on release)."""
            if n_steps and t != temperature:
                return (tr(f"{NS}.live.so_far_title", pos=pos, drawn=temperature, t=t) + "<br>"
                        + tr(f"{NS}.live.so_far_entropy", t=t, h=h))
            return title + "<br>" + tr(f"{NS}.live.bars_entropy", t=t, h=h)

        def bars_frames():
            return [probability_bars(tokens, model_p, row, chosen, hover_names=(tr(f"{NS}.token"), *names),
                                     title=frame_title(t, h), names=names, legend=legend, log=log)
                    for t, row, h in zip(TEMPERATURES, sweep[0].tolist(), entropies, strict=True)]

        live_figure(bars_frames, ("d1.bars", *inputs, log, title, tr(f"{NS}.token")),
                    f"{NS}.bars", f"{NS}.temperature", TEMPERATURES, 0.0, tr(f"{NS}.temperature"),
                    texts=[f"{t:.2f}" for t in TEMPERATURES], help=tr(f"{NS}.temperature_help"))
        st.caption(sentences(tr(f"{NS}.live.entropy_caption", t=temperature, h=entropies[TEMPERATURES.index(temperature)],
                                h1=entropies[TEMPERATURES.index(1.0)]),
                             tr(f"{NS}.live.so_far_caption", t=temperature, n=n_steps) if n_steps else ""))
        presses = st.session_state.get(f"{NS}.presses", 0)
        if presses != st.session_state.get(f"{NS}.presses_shown", 0):   # a button moved the figure
            st.session_state[f"{NS}.presses_shown"] = presses
            bring_into_view(f"{NS}.bars", presses)
        if n_steps:
            if temperature <= 0:
                why = tr(f"{NS}.why_greedy", token=plain(s["chosen_token"]), p=s["chosen_model"])
            else:
                why = tr(f"{NS}.why_sampled", token=plain(s["chosen_token"]), p=s["chosen_sample"],
                         rank=s["rank"], kept=s["kept"], best=plain(s["best_token"]))
            st.markdown(sentences(why, tr(f"{NS}.cache_note", fed=s["fed"], cache=s["cache"])))
            course_branch(run, n_steps, (prompt, temperature, top_k, top_p, seed, bos, device(), ckpt))
        # The same step at three temperatures, side by side (also the page's width: 3 x 10 names).
        slide(tr("classroom.slide.d1_strip"))
        strip = {tr(f"{NS}.strip_panel", t=t): s["strip"][t] for t in STRIP}
        figure(temperature_strip(s["tokens"][:STRIP_SHOW], strip, title=tr(f"{NS}.strip_title", pos=pos),
                                 y_title=names[1], hover_names=(tr(f"{NS}.token"), names[1]), log=log),
               key=f"{NS}.strip")
        st.caption(tr(f"{NS}.strip_caption"))
        code_panel(sampling_probs, at_temperature, temperature_sweep, Generation.step)


# --- SmolLM2-135M-Instruct: real generation, streamed (issue 24 §4) ----------------------------
REAL_SHOW = 20                # candidates drawn as bars
REAL_MAX_NEW, REAL_NEW = 128, 48
REAL_CHARS = 4000             # what the box keeps; the model reads the last PROMPT_TOKENS tokens of it
MODES = ("text", "chat")
REAL_EXAMPLES = {   # id: (its name's key, the text); English: SmolLM2 knows English, not Chinese
    "text": {"story": (f"{NS}.example_text_story", "Once upon a time, in a small village by the sea,"),
             "fact": (f"{NS}.example_text_fact", "The capital of France is"),
             "code": (f"{NS}.example_text_code", "def fibonacci(n):")},
    "chat": {"fact": (f"{NS}.example_chat_fact", "What is the capital of France?"),
             "explain": (f"{NS}.example_chat_explain", "Explain in two sentences why the sky is blue."),
             "haiku": (f"{NS}.example_chat_haiku", "Write a haiku about the sea.")},
}
REAL_DEFAULT = {mode: next(iter(REAL_EXAMPLES[mode].values()))[1] for mode in MODES}
MODE_KEYS = {"text": f"{NS}.mode_text", "chat": f"{NS}.mode_chat"}
BOX_KEYS = {"text": (f"{NS}.text_label", f"{NS}.text_empty"), "chat": (f"{NS}.chat_label", f"{NS}.chat_empty")}
RUNS = f"{NS}.real_runs"      # this session's generations, latest last (session state: never shared)
HISTORY = 4                   # earlier generations listed under the latest
TEMPLATE_SHOWN = 400          # characters of the chat prompt shown in its caption


def real_example(mode: str, box: str):
    """Pills (translated names) that copy an example into the prompt box ``box``."""
    def use():
        picked = st.session_state.get(f"{NS}.real_example")
        if picked in REAL_EXAMPLES[mode]:
            st.session_state[box] = REAL_EXAMPLES[mode][picked][1]
            st.session_state[f"{box}_set"] = True   # ui.frame.text_box passes no default then
    st.pills(tr(f"{NS}.real_examples"), list(REAL_EXAMPLES[mode]), key=f"{NS}.real_example", on_change=use,
             format_func=lambda i: tr(REAL_EXAMPLES[mode][i][0]), help=tr(f"{NS}.real_examples_help"))


def shown(text: str, red: bool = False) -> str:
    """Typed or generated text for st.markdown: control characters drawn, markup escaped
    (ui.frame.plain), each line its own line; ``red``: what the model wrote."""
    out = []
    for line in printable(text).split("\n"):
        core = line.strip(" ")
        if red and core:
            lead, trail = line[: len(line) - len(line.lstrip(" "))], line[len(line.rstrip(" ")):]
            out.append(f"{lead}:red[{plain(core)}]{trail}")
        else:
            out.append(plain(line))
    return "  \n".join(out)


def conversation(mode: str, source: str, answer: str, ended: str | None) -> str:
    """The prompt and what the model wrote after it, as one markdown text."""
    end = f" `{ended}`" if ended else ""
    if mode == "chat":
        return (f"**{tr(f'{NS}.you')}** {shown(source) or '∅'}  \n"
                f"**{tr(f'{NS}.assistant')}** {shown(answer, red=True)}{end}")
    return f"{shown(source)}{shown(answer, red=True)}{end}"


PART = "▶"      # marks the step where a run and its branch part (more than a colour)


def parted(tok, ids: list[int], at: int, stop: set[int]) -> tuple[str, str | None]:
    """What the model wrote, as markdown, with the token at step index ``at`` marked (bold, on a
    background, after PART), and the stop token it ended with (None if none or the marked one)."""
    def text(part):
        return shown(tok.decode([i for i in part if i not in stop]), red=True)
    token = plain(visible_token(tok.tokens([ids[at]])[0]))
    ended = tok.tokens([ids[-1]])[0] if ids[-1] in stop and len(ids) - 1 > at else None
    return f"{text(ids[:at])}:orange-background[**{PART} {token}**]{text(ids[at + 1:])}", ended


def stream(model, tok, mode: str, source: str, prompt, settings: tuple, max_new: int, slot,
           forced: tuple = ()) -> dict:
    """One generation, each token shown as it is drawn; returns what the page keeps of it (the
    ids, not the distributions: a step's bars are computed again when it is looked at).
    ``forced``: ((step index, token id),): a branch, the same generation with that token written there."""
    temperature, top_k, top_p, seed = settings[2:]
    stop = stop_ids(tok)
    gen = Generation(model, tok, "", max_new, temperature, top_k or None, top_p if top_p < 1 else None, seed,
                     use_cache=True, show=1, ids=prompt.ids, stop=stop, forced=dict(forced))
    send_now()                                   # what the fragment held goes now: the bar shows
    total = gen.prompt.max_new_tokens
    bar = st.progress(0.0, text=tr(f"{NS}.writing", n=0, total=total))
    times = []
    while not gen.done:
        start = time.perf_counter()
        gen.step()                               # the model, the cut, the draw (KV cache: one token fed)
        times.append(time.perf_counter() - start)
        text = tok.decode([i for i in gen.new_ids if i not in stop])
        slot.markdown(shown(text, red=True) if forced else conversation(mode, source, text, None))   # a branch: its answer
        rate = (len(times) - 1) / sum(times[1:]) if len(times) > 1 else 0.0
        bar.progress(len(times) / total, text=tr(f"{NS}.writing", n=len(times), total=total) + f" · {rate:.1f} tok/s")
    bar.empty()
    last = gen.new_ids[-1] if gen.new_ids else None
    return {"settings": settings, "mode": mode, "source": source, "new_ids": list(gen.new_ids),
            "text": tok.decode([i for i in gen.new_ids if i not in stop]),
            "ended": tok.tokens([last])[0] if last in stop else None,
            "prefill_s": times[0] if times else 0.0, "prompt_tokens": len(prompt.ids),
            "decode_tps": (len(times) - 1) / sum(times[1:]) if len(times) > 1 else None}


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


def real_bars(d: dict, drawn: bool, title: str, log: bool, step: int | None = None, forced: int | None = None):
    """The bars of one step (``d`` from core.lab.real_generation), the drawn token red. With
    ``step`` (a generation on the page), a click on a bar branches there (``ui.d1_real``); the
    ``forced`` token of a branch at this step is named with PART."""
    tokens = [(f"{PART} " if i == forced else "") + visible_token(t) for i, t in zip(d["ids"], d["tokens"], strict=True)]
    model_p, sample_p, ids = list(d["model"]), list(d["sample"]), list(d["ids"])
    chosen = None
    if drawn:
        if d["chosen"] in d["ids"]:
            chosen = d["ids"].index(d["chosen"])
        else:                                    # drawn from outside the top list: add it at the end
            tokens.append(visible_token(d["chosen_token"]))
            model_p.append(d["chosen_model"])
            sample_p.append(d["chosen_sample"])
            ids.append(d["chosen"])
            chosen = len(tokens) - 1
    names = (tr(f"{NS}.model_prob"), tr(f"{NS}.sample_prob"))
    legend = (tr(f"{NS}.legend_chosen"), tr(f"{NS}.legend_kept"), tr(f"{NS}.legend_cut"), names[1])
    fig = probability_bars(tokens, model_p, sample_p, chosen, title=title, names=names,
                           hover_names=(tr(f"{NS}.token"), *names), legend=legend, log=log, horizontal=True,
                           ids=ids if step is not None else None)
    if step is None:
        figure(fig, key=f"{NS}.real_bars")
        return
    # A click on a bar forces that token at this step (on_select).
    key = f"{NS}.real_bars"
    figure(fig, key, on_select=functools.partial(bar_clicked, key, step, d["chosen"], tuple(d["ids"])))


def step_at(step: int, drawn: list[int], settings: tuple, model, tok) -> dict:
    """The bars' numbers of a generation's ``step`` (from 1): what the model had read, one forward."""
    temperature, top_k, top_p = settings[2:5]
    return real_step(settings[1] + tuple(drawn[: step - 1]), temperature, top_k, top_p, drawn[step - 1], REAL_SHOW,
                     device(), model, tok)


def branch_point(drawn: list[int], settings: tuple, d: dict, at: int, model, tok) -> tuple[int, int] | None:
    """The branch (step, token id) this session or its link asks for, if it fits the generation on
    the page; a link's branch waits for Generate; one that does not fit is dropped, and said so."""
    branch, malformed = linked_branch()
    if malformed:
        st.info(tr(f"{NS}.branch_bad_link"))
    if branch is None or not drawn:
        keep_branch(branch)                           # a link's branch waits for its generation
        if branch is not None:
            st.caption(tr(f"{NS}.branch_pending", step=branch[0]))
        return branch if drawn else None
    step, token = branch
    numbers = d if step == at else (step_at(step, drawn, settings, model, tok) if 1 <= step <= len(drawn) else None)
    if not fitting_branch(branch, drawn, numbers and numbers["ids"]):
        st.info(tr(f"{NS}.branch_unfit", step=step, token=token, show=REAL_SHOW))
        keep_branch(None)
        return None
    keep_branch(branch)
    return branch


BRANCH_NONE = -1    # the list's "no branch" (token ids are >= 0)


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


def branch_columns(tok, branch: tuple[int, int]):
    """Two columns, the run as drawn and its branch, each named; returns their empty slots."""
    step, token = branch
    left, right = st.columns(2)
    left.markdown(f"**{tr(f'{NS}.branch_original')}**")
    right.markdown(f"**{tr(f'{NS}.branch_forced', step=step, token=plain(visible_token(tok.tokens([token])[0])))}**")
    return left.empty(), right.empty(), right


def branch_shown(tok, slots, original: list[int], forked: list[int], step: int, stop: set[int], n_prompt: int,
                 drawn_p: float, forced_p: float) -> None:
    """Both texts in their slots, the step where they part marked in each, and what happened there."""
    part = parting_step(original, forked)
    part = step - 1 if part is None else part             # the forced token differs: they part there
    for slot, ids in zip(slots, (original, forked), strict=True):
        text, ended = parted(tok, ids, part, stop)
        slot.markdown(text + (f" `{ended}`" if ended else ""))
    st.caption(tr(f"{NS}.branch_caption", step=part + 1, pos=n_prompt + part, mark=PART,
                  drawn=plain(visible_token(tok.tokens([original[part]])[0])), p_drawn=drawn_p,
                  forced=plain(visible_token(tok.tokens([forked[part]])[0])), p_forced=forced_p,
                  n=len(original), m=len(forked)))


def branch_view(model, tok, mode: str, source: str, prompt, settings: tuple, max_new: int, dev: str,
                current: dict, branch: tuple[int, int]) -> None:
    """The run as drawn and its branch side by side, the step where they part marked. The branch
    is the same generation with one token forced (core.models.generate.Generation(forced=...)),
    written once for every student who asks for it."""
    step, token = branch
    slot_left, slot_right, right = branch_columns(tok, branch)
    with right:
        run = shared_stream(model, tok, mode, source, prompt, settings, max_new, slot_right, dev,
                            forced=((step - 1, token),))
    numbers = step_at(step, current["new_ids"], settings, model, tok)
    by_id = dict(zip(numbers["ids"], numbers["model"], strict=True))
    branch_shown(tok, (slot_left, slot_right), current["new_ids"], run["new_ids"], step, stop_ids(tok),
                 len(settings[1]), numbers["chosen_model"], by_id.get(token, 0.0))


@fragment
def real_body(model, tok):
    """The lesson on SmolLM2: a text to continue or a question to answer, Generate streams the
    answer, then every step's distribution can be looked at."""
    dev = device()
    slide(tr("classroom.slide.d1_setup"))           # presenter mode: the fragment's slides
    st.markdown(tr(f"{NS}.real_intro"))
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
        slot.markdown(conversation(mode, source, current["text"], current["ended"]))
        st.caption(sentences(tr(f"{NS}.speed", n=len(current["new_ids"]), prompt=current["prompt_tokens"],
                                prefill=current["prefill_s"] * 1000, tps=current["decode_tps"] or 0.0),
                             tr(f"{NS}.shared_run") if current.get("shared") else ""))
    else:
        slot.markdown(conversation(mode, source, "", None))
        st.caption(tr(f"{NS}.press_generate"))
    earlier = [r for r in reversed(runs) if r is not current]
    if earlier:
        st.markdown(f"**{tr(f'{NS}.earlier')}**  \n" + "  \n".join(
            tr(f"{NS}.earlier_item", t=r["settings"][2], k=r["settings"][3], p=r["settings"][4], seed=r["settings"][5],
               source=plain(printable(r["source"][:40])) + ("…" if len(r["source"]) > 40 else ""),
               text=plain(printable(r["text"][:160])) + ("…" if len(r["text"]) > 160 else ""))
            for r in earlier))

    drawn = current["new_ids"] if current else []
    slide(tr("classroom.slide.d1_step"))
    at = ranged_slider(tr(f"{NS}.inspect"), 1, len(drawn), 1, key=f"{NS}.real_step") if len(drawn) > 1 else 1
    log = st.toggle(tr(f"{NS}.log_label"), value=True, key=f"{NS}.log", bind="query-params",
                    help=tr(f"{NS}.log_help"))
    before = settings[1] + tuple(drawn[: at - 1])            # what the model had read at this step
    pos = len(before)                                        # positions count from 0
    with st.spinner(tr(f"{NS}.reading")):        # a new prefix: one forward of the model (<= 1 s)
        d = real_step(before, temperature, top_k, top_p, drawn[at - 1] if drawn else None, REAL_SHOW, dev, model, tok)
        strip_p = real_strip(before, tuple(d["ids"][:STRIP_SHOW]), STRIP, top_k, top_p, dev, model)
    branch = branch_point(drawn, settings, d, at, model, tok)
    if drawn:
        real_bars(d, True, tr(f"{NS}.bars_title", pos=pos), log, at, branch[1] if branch and branch[0] == at else None)
        if temperature <= 0:
            why = tr(f"{NS}.why_greedy", token=plain(visible_token(d["chosen_token"])), p=d["chosen_model"])
        else:
            why = tr(f"{NS}.why_sampled", token=plain(visible_token(d["chosen_token"])), p=d["chosen_sample"],
                     rank=d["rank"], kept=d["kept"], best=plain(visible_token(d["best_token"])))
        st.markdown(why if temperature > 0 else sentences(why, tr(f"{NS}.real_kept", kept=d["kept"], vocab=d["vocab"]),
                                                          tr(f"{NS}.greedy_note")))
        branch_controls(d, at, branch)
        if branch:
            branch_view(model, tok, mode, source, prompt, settings, max_new, dev, current, branch)
    else:
        real_bars(d, False, tr(f"{NS}.real_bars_next", pos=pos), log)
        st.markdown(sentences(tr(f"{NS}.real_kept", kept=d["kept"], vocab=d["vocab"]),
                              tr(f"{NS}.greedy_note") if temperature <= 0 else ""))
    strip = {tr(f"{NS}.strip_panel", t=t): strip_p[t] for t in STRIP}
    slide(tr("classroom.slide.d1_strip"))
    figure(temperature_strip([visible_token(t) for t in d["tokens"][:STRIP_SHOW]], strip,
                             title=tr(f"{NS}.strip_title", pos=pos), y_title=tr(f"{NS}.sample_prob"),
                             hover_names=(tr(f"{NS}.token"), tr(f"{NS}.sample_prob")), log=log, horizontal=True),
           key=f"{NS}.real_strip")
    st.caption(tr(f"{NS}.strip_caption"))
    code_panel(chat_ids, sampling_probs, Generation.step)


if real is not None:
    real_body(*real)
elif loaded is not None:
    course_body()

try_this(NS, [("try1", 0), ("try2", 1), ("try3", 2)])
