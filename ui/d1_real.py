"""D1's SmolLM2 results shared by every student: one forward per prefix, the bars of a step;
where a branch of a generation is kept (this session and the address); the examples, a
generation written as it streams, and how its text is shown (ui/d1_generation.py lays them out).

Defined here, not in the page: a ``st.cache_data`` function written in a page script is built
again on every run of the page, and Streamlit reads its source each time (~0.4 ms a function).
"""
from __future__ import annotations

import re
import time

import streamlit as st

from core.lab.real_generation import next_logits, printable, step_numbers, stop_ids, strip_numbers
from core.models.generate import Generation
from ui import streamlit_internals as internals
from ui.batching import send_now
from ui.words import plain, tr
from viz.generation import visible_token

NS = "d1"
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
PART = "▶"      # marks the step where a run and its branch part (more than a colour)


@st.cache_data(max_entries=64, show_spinner=False)
def real_logits(ids: tuple[int, ...], dev: str, _model):
    """The logits (V,) of the token after ``ids``: one forward, shared by every student."""
    return next_logits(_model, ids)


@st.cache_data(max_entries=256, show_spinner=False)
def real_step(ids: tuple[int, ...], temperature: float, top_k: int, top_p: float, chosen: int | None,
              show: int, dev: str, _model, _tok) -> dict:
    """The ``show`` bars of the token after ``ids`` at these settings (``chosen``: the token drawn)."""
    return step_numbers(real_logits(ids, dev, _model), _tok, temperature, top_k or None,
                        top_p if top_p < 1 else None, show, chosen)


@st.cache_data(max_entries=256, show_spinner=False)
def real_strip(ids: tuple[int, ...], shown: tuple[int, ...], temperatures: tuple[float, ...], top_k: int,
               top_p: float, dev: str, _model) -> dict:
    """The same step at each of ``temperatures`` (the strip does not depend on the slider's T)."""
    return strip_numbers(real_logits(ids, dev, _model), shown, temperatures, top_k or None,
                         top_p if top_p < 1 else None)


# --- A branch (issue 44 §2): "what if it had written *this*?" ------------------------------------
# The branch point is (step, token id): step counts the new tokens from 1, as the page's "step to
# look at" slider. It lives in this session's state and in the address as two whole numbers.
BRANCH = "d1.branch"
BRANCH_URL = ("d1.branch_step", "d1.branch_token")
_WHOLE = re.compile(r"[0-9]{1,7}")          # ASCII digits only: int("²") fails, "²".isdigit() does not


def linked_branch() -> tuple[tuple[int, int] | None, bool]:
    """This session's branch point, or on a first visit (and back and forward) the address's:
    ((step, token id) or None, whether the address held one that is not two whole numbers).
    Whether it fits the generation on the page is the page's check (``fitting_branch``).

    Example: ?d1.branch_step=3&d1.branch_token=17 -> ((3, 17), False); ?d1.branch_step=x -> (None, True)"""
    malformed = False
    if BRANCH not in st.session_state or internals.is_history_navigation():
        values = [st.query_params.get(key) for key in BRANCH_URL]
        whole = all(isinstance(v, str) and _WHOLE.fullmatch(v) for v in values)
        st.session_state[BRANCH] = (int(values[0]), int(values[1])) if whole else None
        malformed = not whole and any(v is not None for v in values)
    return st.session_state[BRANCH], malformed


def fitting_branch(branch: tuple[int, int] | None, drawn: list[int], candidates: list[int] | None) -> bool:
    """Whether a branch point fits a generation: its step is one of the ``drawn`` tokens', and its
    token is one of that step's ``candidates`` (the bars' tokens) other than the one drawn there.

    Example: fitting_branch((2, 7), [5, 6], [6, 7]) -> True; (3, 7) -> False (2 steps); (2, 6) -> False"""
    if branch is None:
        return False
    step, token = branch
    return 1 <= step <= len(drawn) and candidates is not None and token in candidates and token != drawn[step - 1]


def keep_branch(branch: tuple[int, int] | None) -> None:
    """The branch point in this session and in the address (None: neither)."""
    st.session_state[BRANCH] = branch
    values = [None, None] if branch is None else [str(v) for v in branch]
    for key, value in zip(BRANCH_URL, values, strict=True):
        if value is None:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value


def branch_at(step: int, token: int | None, drawn: int, candidates: tuple[int, ...]) -> None:
    """Branch at ``step`` with ``token`` (a bar's or the list's); the token the run drew there, or
    none, goes back to the run as drawn. A token that is not one of the step's is ignored."""
    if token is None or token == drawn:
        keep_branch(None)
    elif token in candidates:
        keep_branch((step, token))


def bar_clicked(key: str, step: int, drawn: int, candidates: tuple[int, ...]) -> None:
    """A click on the bars (before the rerun): the bar's token id is its customdata."""
    value = st.session_state.get(key)
    picked = value.get("select") if hasattr(value, "get") else None
    if isinstance(picked, str) and _WHOLE.fullmatch(picked):
        branch_at(step, int(picked), drawn, candidates)


def listed(key: str, step: int, drawn: int, candidates: tuple[int, ...], none) -> None:
    """The list's choice (the keyboard's way to the same branch): ``none`` is "no branch"."""
    picked = st.session_state.get(key)
    branch_at(step, None if picked == none else picked, drawn, candidates)


# --- The text: examples, what was typed and written, a generation as it streams ------------------
def real_example(mode: str, box: str):
    """Pills (translated names) that copy an example into the prompt box ``box``."""
    def use():
        picked = st.session_state.get(f"{NS}.real_example")
        if picked in REAL_EXAMPLES[mode]:
            st.session_state[box] = REAL_EXAMPLES[mode][picked][1]
            st.session_state[f"{box}_set"] = True   # ui.frame.text_box passes no default then
    st.pills(tr(f"{NS}.real_examples"), list(REAL_EXAMPLES[mode]), key=f"{NS}.real_example", on_change=use,
             format_func=lambda i: tr(REAL_EXAMPLES[mode][i][0]), help=tr(f"{NS}.real_examples_help"))


# What the model wrote, never by colour alone (issue 43 §4): dark red on a pale red ground and
# underlined, after words only a screen reader reads ("what the model wrote:"). HTML spans for
# st.markdown(..., unsafe_allow_html=True), as E1's marked tokens: the text inside is escaped by
# ``plain`` (markdown's backslash escapes hold inside a span, so a typed <b> shows as typed).
# Text 6.7:1 on its ground (tests/test_lesson_d1.py checks it).
WRITTEN_COLOURS = ("#fdeaea", "#a3191d")        # (ground, text)
WRITTEN = ('<span class="anatomy-written" style="background:{};color:{};text-decoration:underline;'
           'text-decoration-thickness:2px;text-underline-offset:0.18em;border-radius:2px">').format(*WRITTEN_COLOURS)
HIDDEN = ('<span style="position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;'
          'clip:rect(0 0 0 0);white-space:nowrap;border:0">{} </span>')


def marked(md: str, label: bool = True) -> str:
    """Escaped markdown ``md`` marked as what the model wrote; ``label``: said first to a screen reader.

    Example: marked("sea") -> '<span class="anatomy-written" ...><span style="position:absolute;...">what
             the model wrote: </span>sea</span>'"""
    return f"{WRITTEN}{HIDDEN.format(tr(f'{NS}.written_sr')) if label else ''}{md}</span>"


def shown(text: str, written: bool = False, label: bool = True) -> str:
    """Typed or generated text for st.markdown: control characters drawn, markup escaped
    (ui.frame.plain), each line its own line; ``written``: what the model wrote (``marked``, the
    screen reader's words before its first line when ``label``)."""
    out = []
    for line in printable(text).split("\n"):
        core = line.strip(" ")
        if written and core:
            lead, trail = line[: len(line) - len(line.lstrip(" "))], line[len(line.rstrip(" ")):]
            out.append(f"{lead}{marked(plain(core), label)}{trail}")
            label = False
        else:
            out.append(plain(line))
    return "  \n".join(out)


def conversation(mode: str, source: str, answer: str, ended: str | None) -> str:
    """The prompt and what the model wrote after it, as one markdown text (HTML spans in it:
    st.markdown(..., unsafe_allow_html=True))."""
    end = f" `{ended}`" if ended else ""
    if mode == "chat":
        return (f"**{tr(f'{NS}.you')}** {shown(source) or '∅'}  \n"
                f"**{tr(f'{NS}.assistant')}** {shown(answer, written=True)}{end}")
    return f"{shown(source)}{shown(answer, written=True)}{end}"


def parted(tok, ids: list[int], at: int, stop: set[int]) -> tuple[str, str | None]:
    """What the model wrote, as markdown, with the token at step index ``at`` marked (bold, on a
    background, after PART), and the stop token it ended with (None if none or the marked one)."""
    def text(part, label):
        return shown(tok.decode([i for i in part if i not in stop]), written=True, label=label)
    token = plain(visible_token(tok.tokens([ids[at]])[0]))
    ended = tok.tokens([ids[-1]])[0] if ids[-1] in stop and len(ids) - 1 > at else None
    before = text(ids[:at], True)
    return f"{before}:orange-background[**{PART} {token}**]{text(ids[at + 1:], not before)}", ended


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
        slot.markdown(shown(text, written=True) if forced else conversation(mode, source, text, None),
                      unsafe_allow_html=True)   # a branch: its answer
        rate = (len(times) - 1) / sum(times[1:]) if len(times) > 1 else 0.0
        bar.progress(len(times) / total, text=tr(f"{NS}.writing", n=len(times), total=total) + f" · {rate:.1f} tok/s")
    bar.empty()
    last = gen.new_ids[-1] if gen.new_ids else None
    return {"settings": settings, "mode": mode, "source": source, "new_ids": list(gen.new_ids),
            "text": tok.decode([i for i in gen.new_ids if i not in stop]),
            "ended": tok.tokens([last])[0] if last in stop else None,
            "prefill_s": times[0] if times else 0.0, "prompt_tokens": len(prompt.ids),
            "decode_tps": (len(times) - 1) / sum(times[1:]) if len(times) > 1 else None}
