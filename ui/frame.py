"""The frame around every lesson: language, device, title, "The code", "Try this".

Pages call these small helpers so that each page reads like a short script. The
language and the device are read from this session's state (bound to the URL by the
widgets in app.py); nothing here is process-global.
"""
from __future__ import annotations

import contextlib
import functools
import html
import inspect
import math
import textwrap
import threading
import time
from collections.abc import Callable, Sequence

import streamlit as st
import torch

import i18n
from core.text.clean import CleanText, clean_text
from ui import streamlit_internals as internals
from ui.chart import PRESENTING, chart

LANG_KEY = "lang"
DEVICE_KEY = "device"


def lang() -> str:
    value = st.session_state.get(LANG_KEY)
    return value if value in i18n.LANGS else i18n.DEFAULT_LANG


def tr(key: str, **fields: object) -> str:
    """The text of ``key`` in this session's language."""
    return i18n.t(lang(), key, **fields)


def sentences(*parts: str) -> str:
    """Sentences of the catalogue put together as the page's language writes them: a space
    between them in English, none in Chinese (after 「。」 a space is a visible gap). Empty parts
    are left out.

    Example: sentences("One.", "", "Two.") -> "One. Two." in English, "一。二。" from 「一。」, 「二。」 in Chinese
    """
    return ("" if lang() == "zh" else " ").join(p for p in parts if p)


def tr_items(key: str) -> list[str]:
    return i18n.items(lang(), key)


def devices() -> list[str]:
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def device() -> str:
    value = st.session_state.get(DEVICE_KEY)
    return value if value in devices() else "cpu"


_DROPPED = "_frame.url_dropped"


def _non_finite(value: str) -> bool:
    """A URL value that reads as a number no widget can hold.

    Example: _non_finite("1e309") -> True; _non_finite("-inf") -> True; _non_finite("12") -> False;
    _non_finite("君") -> False
    """
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def sanitise_url() -> None:
    """Drop URL values that would break a widget before any widget reads them.

    Streamlit already drops a bound value of the wrong type or out of range (the default is
    used), but a non-finite number (``1e309``, ``-inf``, 400 nines) crashes an int widget's
    reader. Such values are removed here, in one place, for every lesson. A text box may hold
    any text, "inf" included: ``text_box`` gets the dropped value back as its default."""
    dropped = {}
    for key in list(st.query_params.keys()):
        values = st.query_params.get_all(key)
        if any(_non_finite(v) for v in values):
            dropped[key] = values[-1]
            del st.query_params[key]
    if dropped:
        st.session_state.setdefault(_DROPPED, {}).update(dropped)


def language_and_device_controls() -> None:
    """The two switches in the sidebar; both live in the URL (?lang=zh&device=cuda).

    The language is synced by hand rather than with ``bind="query-params"``: a bound
    widget writes its *label* to the URL, and "中文" should not be a URL value.
    """
    if LANG_KEY not in st.session_state:
        wanted = st.query_params.get(LANG_KEY)
        st.session_state[LANG_KEY] = wanted if wanted in i18n.LANGS else i18n.DEFAULT_LANG
    names = {"en": "English", "zh": "中文"}
    st.sidebar.segmented_control(
        "Language · 语言", list(i18n.LANGS), format_func=names.__getitem__,
        key=LANG_KEY, required=True,
    )
    # Re-written on every run: a page switch keeps only the parameters of bound widgets.
    in_url = st.query_params.get(LANG_KEY)
    if in_url != lang() and not (in_url is None and lang() == i18n.DEFAULT_LANG):
        st.query_params[LANG_KEY] = lang()
    # The page's language for screen readers and fonts (WCAG 3.1.1, issue 43): Streamlit's page says
    # <html lang="en"> whatever is shown. A new element after each switch, so the script runs again.
    st.sidebar.html(f'<script>document.documentElement.lang = "{html.escape(lang())}";</script>',
                    unsafe_allow_javascript=True)
    # The address holds "cpu"/"cuda" (choice): the same link in both languages.
    with st.sidebar:
        choice(tr("common.device"), devices(), DEVICE_KEY, {"cpu": "CPU", "cuda": "CUDA"},
               help=tr("common.device_help"))


def header(ns: str) -> None:
    layout_css()
    st.title(tr(f"{ns}.title"))
    st.markdown(tr(f"{ns}.intro"))


# inspect.getsource of a class parses its whole module with the ast module, and CPython 3.11's
# conversion to ast objects keeps its recursion depth in a per-process counter: two sessions'
# first runs parsing at once (a class opening C1 together) raised "SystemError: AST constructor
# recursion depth mismatch" in one of them. One parse at a time; each source is read once.
_SOURCE_LOCK = threading.Lock()


@functools.cache
def _source(obj: Callable | type) -> str:
    # Dedented: a method's class indentation would cost 4 characters of every line.
    with _SOURCE_LOCK:
        return textwrap.dedent(inspect.getsource(obj))


def code_panel(*objs: Callable | type, height: int | None = 520) -> None:
    """The real source of the ``core/`` functions that drew the figure next to it."""
    st.markdown(f"**{tr('common.the_code')}**")
    # One code block for all of them, each headed by its module path as a comment: every element
    # on the page costs the browser on every press (docs/LESSONS.md), and a caption plus a block
    # per function made a panel of three functions six elements.
    text = "\n\n".join(f"# {obj.__module__}.{obj.__qualname__}\n{_source(obj)}".rstrip() for obj in objs)
    box = st.container(height=height, border=False) if height else st.container()
    box.code(text, language="python", wrap_lines=True)


def beside_code(*objs: Callable | type, height: int | None = 520, widths: tuple[int, int] = (1, 1)):
    """A row laid out once: "The code" of ``objs`` on the right, and on the left an empty slot
    (returned) that a fragment fills with the figure those functions compute."""
    # Half and half by default: at 1440 px "The code" is ~63 characters wide at 13 px (at
    # [3, 2] it was ~45, and every line wrapped); a figure of several panels side by side can
    # ask for more (widths=(3, 2)). Under a 920 px main column the two stack (LAYOUT_CSS).
    left, right = st.columns(list(widths))
    with right:
        code_panel(*objs, height=height)
    return left.container()


def section_with_controls(ns: str, name: str, *objs: Callable | type, height: int | None = 520):
    """A section laid out once: its title and prose (``{ns}.{name}_title``, ``_text``), an empty
    slot for its controls, then ``beside_code(*objs)``. Returns (controls slot, figure slot).
    In presenter mode the prose is one slide, the controls with their figure the next (slide())."""
    st.subheader(tr(f"{ns}.{name}_title"))
    st.markdown(tr(f"{ns}.{name}_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{ns}.{name}_title")))
    controls = st.container()
    return controls, beside_code(*objs, height=height)


# --- Readable on a laptop (1024x768) and a projector (1440x900) -------------------------------
# A fixed style sheet (no user text), sent once per page by header(). Streamlit 1.67 stacks
# columns only below 640 px; at 1024 px with the sidebar open the main column is ~720 px wide,
# and a [3, 2] row there left "The code" 218 px (~25 characters) and two charts side by side
# ~320 px each (titles cut, tick labels on top of each other). So:
# - less padding beside the main column (5rem each side is 160 px: 1.5rem up to 1600 px, which
#   leaves a chart ~460 px beside an 80-character code column at 1440 px, 2rem up to 1280 px);
# - a row of columns that holds a code panel or a chart stacks (one column under the other,
#   each full width) when the main column is under 920 px: a container query, so it follows
#   the sidebar too. At 1440 px (main column ~1040 px) rows stay side by side;
# - code at 13 px: 80 characters fit the full-width panel at 1024 px;
# - code lines wrap (st.code(wrap_lines=True), and pre-wrap here) rather than scroll sideways:
#   the safety net under functions whose lines are kept short in the source. Each source line
#   is a <span> of its own: a wrapped line continues 8 characters in (a hanging indent), so
#   it does not read as a new line of code.
# - beside a chart (a main column of 920 px and more: 1440 px) the code column is as wide as 80
#   characters at 12 px (7.2 px each) with its padding and scroll bar, at most 56 % of the row:
#   at half the row (~500 px) the shape comments and docstrings of every shown function wrapped;
# - a display formula is never broken across lines, and scrolls inside its own block if it is
#   wider than the column (inline math in prose may still wrap: kept whole, a long one pushed
#   A3's page sideways at 1024 px; C3's rotation formula is split in two instead).
_CODE_W = "min(620px, 56%)"
# A slide mark (slide()): shown in presenter mode only (ui/classroom.py: presenter_css).
_SLIDE_MARK = '[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] .anatomy-slide)'
_STACKS = ':is([data-testid="stCode"], .anatomy-chart, [data-testid^="stBidiComponent"])'
LAYOUT_CSS = f"""<style>
@media (max-width: 1600px) {{
  [data-testid="stMainBlockContainer"] {{ padding-left: 1.5rem; padding-right: 1.5rem; }}
}}
@media (max-width: 1280px) {{
  [data-testid="stMainBlockContainer"] {{ padding-left: 2rem; padding-right: 2rem; }}
}}
[data-testid="stMainBlockContainer"] {{ container-type: inline-size; container-name: anatomy-main; }}
@container anatomy-main (max-width: 920px) {{
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] {_STACKS}) {{
    flex-direction: column; flex-wrap: nowrap;
  }}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] {_STACKS}) > [data-testid="stColumn"] {{
    width: 100% !important; flex: 1 1 auto !important; min-width: 0;
  }}
}}
[data-testid="stCode"] pre code {{
  white-space: pre-wrap !important; overflow-wrap: anywhere; font-size: 13px;
}}
[data-testid="stCode"] pre code > span {{ display: block; padding-left: 8ch; text-indent: -8ch; }}
@container anatomy-main (min-width: 921px) {{
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stCode"])
      > [data-testid="stColumn"]:has([data-testid="stCode"]) {{
    flex: 0 0 {_CODE_W} !important; width: {_CODE_W} !important; min-width: 0;
  }}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stCode"])
      > [data-testid="stColumn"]:not(:has([data-testid="stCode"])) {{
    flex: 1 1 0 !important; width: auto !important; min-width: 0;
  }}
  [data-testid="stColumn"] [data-testid="stCode"] pre {{ padding-left: 10px !important; padding-right: 10px !important; }}
  [data-testid="stColumn"] [data-testid="stCode"] pre code {{ font-size: 12px; }}
}}
{_SLIDE_MARK} {{ display: none; }}
.katex-display > .katex {{ white-space: nowrap; }}
.katex-display {{ overflow-x: auto; overflow-y: hidden; }}
</style>"""


def layout_css() -> None:
    st.html(LAYOUT_CSS)


def _copy_back(copy: str, key: str) -> None:
    """The repeated control moved: the control itself takes its value (a callback, before the run)."""
    st.session_state[key] = st.session_state[copy]


def repeat_control(widget: Callable, label: str, *args, key: str, copy: str = "again", **kwargs) -> None:
    """In presenter mode, a copy of the URL-bound control ``key`` on the slide of another figure it
    drives (E1: the capacity above the load chart, two slides after the router's controls); nothing
    in normal mode, where the control itself is on the same page. The copy shows the control's
    value, and moving it moves the control, so the address (``key``) and every figure follow.
    ``widget`` and its arguments as for the control itself (``st.slider``, ``st.select_slider``),
    without ``key``, ``value`` or ``bind``. Draw it after the control, in the same run; a second
    copy on a third slide takes its own ``copy`` name (B1's row and column on both its slides)."""
    if not st.session_state.get(PRESENTING):
        return
    copy = f"{key}.{copy}"
    if key in st.session_state:
        st.session_state[copy] = st.session_state[key]
    widget(label, *args, key=copy, on_change=_copy_back, args=(copy, key), **kwargs)


def slide(title: str) -> None:
    """Start a new slide here in presenter mode (ui/classroom.py), titled ``title`` (our own text,
    already translated) on the slide and in the overview (key O). Nothing shows in normal mode.
    For a long section: its prose on one slide, then its controls with the figure they drive on
    the next. At the top level of the page or directly inside a top-level fragment or container."""
    st.html(f'<div class="anatomy-slide">{html.escape(title)}</div>')


def bring_into_view(key: str, press: int) -> None:
    """Scroll the element with ``key`` (a chart) into view unless it is wholly on screen: after
    a button press changed it, the student sees the change (D1's Step sat above the fold of the
    figure it moves). ``press`` counts the presses, so that each one is a new element and runs
    again. A fixed script: only the key, turned into Streamlit's class name, is put into it."""
    name = "st-key-" + "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else "-" for ch in key.strip())
    st.html(f"""<script>/* press {int(press)} */
(() => {{
  let tries = 0;
  const look = () => {{
    const el = document.querySelector('[class~="{name}"]');
    if (!el || !el.querySelector('.main-svg')) {{ if (++tries < 40) setTimeout(look, 50); return; }}
    const r = el.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight) el.scrollIntoView({{block: "nearest", behavior: "smooth"}});
  }};
  look();
}})();
</script>""", unsafe_allow_javascript=True)


class _Held:
    """Stands in for a script run's message sender while ``at_once`` holds its messages."""

    def __init__(self, send: Callable, limit_s: float):
        self.send, self.until = send, time.perf_counter() + limit_s
        self.msgs: list = []
        self.lock = threading.Lock()
        self.released = False

    def __call__(self, msg) -> None:
        with self.lock:
            self.msgs.append(msg)
            if not self.released and time.perf_counter() < self.until:
                return
        self.release()   # past the limit: what is held goes now, and from here on as it comes

    def release(self) -> None:
        with self.lock:   # held while sending: a spinner's timer thread sends too, in order
            self.released = True
            msgs, self.msgs = self.msgs, []
            for msg in msgs:
                self.send(msg)


@contextlib.contextmanager
def at_once(limit_s: float = 0.1):
    """Send the elements made inside this block together, when it ends.

    The browser draws the page again each time new elements arrive (it gathers what arrives
    within ~10 ms, then re-renders the whole page: 10-20 ms on a lesson). A fragment that made
    a figure, computed the next, then made that one sent its elements in three or four waves,
    and the student waited for three or four re-renders before the figure changed. Held here
    and sent in one go, they are drawn in one. Slow work is not hidden: a block still running
    after ``limit_s`` sends what it holds and then sends as usual (a spinner or a progress bar
    shows), and ``send_now()`` lets go at once. Messages are held on this script run's own
    context (one per session and run): no other student's page is touched. A stop or rerun
    request (Streamlit checks for one on each message) is honoured when they are sent."""
    ctx = internals.script_context()
    if ctx is None or isinstance(internals.message_sender(ctx), _Held):
        yield
        return
    held = _Held(internals.message_sender(ctx), limit_s)
    internals.hold_messages(ctx, held)
    try:
        yield
    finally:
        internals.hold_messages(ctx, held.send)
        held.release()


def send_now() -> None:
    """Inside ``at_once``: send what is held, and send the rest as usual (before a progress bar)."""
    ctx = internals.script_context()
    if ctx is not None and isinstance(internals.message_sender(ctx), _Held):
        held = internals.message_sender(ctx)
        internals.hold_messages(ctx, held.send)
        held.release()


def fragment(fn: Callable) -> Callable:
    """``st.fragment`` whose elements reach the browser together (``at_once``)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with at_once():
            return fn(*args, **kwargs)

    return st.fragment(run)


@st.cache_resource(max_entries=256, show_spinner=False)
def built_figure(key: tuple | str, _build: Callable[[], object]):
    """The figure ``_build`` draws, built once per ``key`` for every session. ``key`` holds plain
    values only: the figure's name, every setting it shows, the language. A rerun with nothing
    changed (another control moved, the next student at the same defaults) does not rebuild it,
    and its JSON is written once too (ui.chart.figure_json). Shared: only ever read."""
    return _build()


# plotly.js's own words (its toolbar's buttons, its notices), in English in plotly.js: each one's
# key under PLOTLY_KEYS in the catalogues. Given to the chart as a plotly.js locale.
PLOTLY_KEYS = "classroom.plotly"
PLOTLY_WORDS = {
    "Zoom": "zoom", "Pan": "pan", "Box Select": "box_select", "Lasso Select": "lasso_select",
    "Zoom in": "zoom_in", "Zoom out": "zoom_out", "Autoscale": "autoscale", "Reset axes": "reset_axes",
    "Reset view": "reset_view", "Toggle Spike Lines": "spikes", "Show closest data on hover": "closest",
    "Compare data on hover": "compare", "Double-click to zoom back out": "zoom_back",
    "Double-click on legend to isolate one trace": "isolate",
}


@functools.cache
def _plotly_words(language: str) -> dict[str, str]:
    return {english: i18n.t(language, f"{PLOTLY_KEYS}.{key}") for english, key in PLOTLY_WORDS.items()}


# Presenter mode (ui/classroom.py) draws every chart a quarter larger, type and height
# (ui/chart.js). A taller chart is given this height first, so that at 1280x720, the common
# projector size, it fits with a slide's title and controls above the presenter's bar
# (1.25 x 340 = 425 px of the ~670 px above the bar).
PRESENT_MAX_HEIGHT = 340


def presenter_figure(fig, most: int = PRESENT_MAX_HEIGHT):
    """``fig`` as presenter mode draws it: no taller than ``most`` (PRESENT_MAX_HEIGHT unless a
    figure alone on its slide asks for more; ui/chart.js still fits it to the room above the bar).
    A new outer dict with the same data: the figure itself is shared by every session and never changed.

    Example: presenter_figure(Figure(data=[], layout={"height": 600}))["layout"]["height"] -> 340
    """
    layout = fig.get("layout") if isinstance(fig, dict) else None
    if not isinstance(layout, dict) or (layout.get("height") or 420) <= most:
        return fig
    return type(fig)(data=fig["data"], layout={**layout, "height": most})


def figure(fig, key: str, live: dict | None = None, on_commit: Callable[[], None] | None = None,
           present_height: int = PRESENT_MAX_HEIGHT) -> None:
    """A chart with a stable key: the next run with the same key updates the same plot in
    the browser (ui/chart.py). The figure carries its own look (viz.common.LOOK). ``live`` and
    ``on_commit``: a slider that redraws the chart from frames (ui.live.live_figure).
    ``present_height``: the most a figure with a slide to itself may take in presenter mode."""
    if st.session_state.get(PRESENTING):
        fig = presenter_figure(fig, present_height)
    chart(fig, key, tr("common.chart_failed"),
          export={"png": tr("classroom.png"), "svg": tr("classroom.svg"), "csv": tr("classroom.csv"), "file": key,
                  "locale": lang(), "words": _plotly_words(lang()) if lang() != "en" else None},
          live=live, on_commit=on_commit)


SCORES = "_frame.first_answers"   # this session's first answer to each question: {"b1.try1": True}
ANSWERS = "_frame.answers"        # its latest answer to each: {"b1.try1": 2}, shown again on return


def first_answers() -> dict[str, bool]:
    """Whether this session's first answer to each question was right (per session, never shared)."""
    return st.session_state.setdefault(SCORES, {})


def try_this(ns: str, questions: Sequence[tuple[str, int]]) -> None:
    """Predict, then reveal. Each question is (name, index of the right option); its
    text, options and explanation are ``{ns}.{name}.q``, ``.options`` and ``.why``.
    The first answer to each question counts (it is the prediction; the next ones come after
    the reveal): the score under the questions says how many were right. Nothing is revealed
    before an answer is chosen (a student could skip the prediction); after a wrong one, the
    right answer is one click away. The answers stay for this session: back from another lesson,
    or in the other language, the question shows the answer given and its explanation."""
    st.subheader(tr("common.try_this"))
    st.caption(tr("common.try_this_help"))
    record = first_answers()
    answers = st.session_state.setdefault(ANSWERS, {})
    from ui.room import class_question  # noqa: PLC0415 (issue 42; ui.room imports this module)

    for name, answer in questions:
        if class_question(ns, name, answer):          # in a class room: the class votes (ui/room.py)
            continue
        base = f"{ns}.{name}"
        key = f"{base}.{lang()}"
        if key not in st.session_state and base in answers:
            st.session_state[key] = answers[base]     # the radio left the page: its state went with it
        with st.container(border=True):
            options = tr_items(f"{base}.options")
            picked = st.radio(tr(f"{base}.q"), range(len(options)), format_func=options.__getitem__,
                              index=None, key=key)
            if picked is None:
                continue
            answers[base] = picked
            record.setdefault(base, picked == answer)
            if picked == answer:
                st.markdown(f"**{tr('common.right')}** {tr(f'{base}.why')}")
            else:
                st.markdown(f"**{tr('common.not_quite')}**")
                with st.expander(tr("common.reveal")):
                    st.markdown(f"**{options[answer]}** — {tr(f'{base}.why')}")
    quiz_score(ns, [name for name, _ in questions])


def quiz_score(ns: str, names: Sequence[str]) -> None:
    """The lesson's small score: first answers right, of its questions, and how many are left."""
    record = first_answers()
    done = [record[f"{ns}.{name}"] for name in names if f"{ns}.{name}" in record]
    if not done:
        st.caption(tr("classroom.score_none"))
        return
    text = tr("classroom.score", right=sum(done), total=len(names))
    left = len(names) - len(done)
    if left:
        text = sentences(text, tr("classroom.score_left", left=left))
    st.markdown(f":material/scoreboard: **{text}**")


def common_mistake(key: str) -> None:
    """A widely repeated statement that is wrong, next to the figure that shows the right one
    (``key`` in the catalogue: the statement in quotes, then what is true)."""
    st.warning(f"**{tr('common.mistake')}** {tr(key)}", icon=":material/report:")


_CUT = "_frame.cut"    # {key: length before the cut}: the text box says so once, in the next run


def _cut(key: str, limit: int) -> None:
    """An over-long text goes back into its box cut to ``limit`` (an on_change callback: it runs
    before the script, when the box's state may still be set)."""
    cleaned = clean_text(st.session_state.get(key), limit)
    if cleaned.truncated:
        st.session_state.setdefault(_CUT, {})[key] = cleaned.original_len
        st.session_state[key] = cleaned.text


def _address_holds(key: str, value: str) -> None:
    """Put ``value`` in the address under the bound widget ``key`` (Streamlit's own correction of a
    bound value: ``st.query_params`` refuses a bound key)."""
    internals.correct_url_value(key, value)


def text_box(key: str, default: str, limit: int, label: str, area: bool = False,
             empty_key: str = "common.empty_input") -> CleanText:
    """A text box bound to the URL. Shows a notice for empty input (``empty_key``: what the
    lesson does then) or over-long input; the returned text is cut to ``limit`` characters and
    safe to show (never as HTML). An over-long text is put back cut, box and address both: 2,000
    characters pasted into A1 made an 18,090-character link, of which the lesson used 64."""
    widget = st.text_area if area else st.text_input
    default = st.session_state.get(_DROPPED, {}).get(key, default)   # "inf" is text too
    cuts = st.session_state.setdefault(_CUT, {})
    if key not in st.session_state:               # a link's text: cut before the box takes it
        linked = clean_text(st.query_params.get(key, default), limit)
        if linked.truncated:
            cuts[key] = linked.original_len
            st.session_state[key] = linked.text
            _forget_url_value(key)
    # Its text was just set through session state (cut here, or an example pill's on_change set
    # it and ``{key}_set``): then no default value, or Streamlit warns (review D1 #6).
    just_set = st.session_state.pop(f"{key}_set", False)
    value = {} if key in cuts or just_set else {"value": default}
    raw = widget(label, key=key, bind="query-params", max_chars=None, on_change=_cut, args=(key, limit), **value)
    cleaned = clean_text(raw, limit)
    was = cuts.pop(key, None)
    if was is not None:
        _address_holds(key, raw)
        cleaned = CleanText(cleaned.text, cleaned.empty, True, was)
    if cleaned.empty:
        st.info(tr(empty_key))
    elif cleaned.truncated:
        st.warning(tr("common.truncated", limit=limit, n=cleaned.original_len))
    return cleaned


def model_labels(names: Sequence[str]) -> dict[str, str]:
    """The shown names of the model registry's ids: real models by their own names, ours translated.

    Example: model_labels(["course", "llama-2-7b"]) -> {"course": "course model", "llama-2-7b": "llama-2-7b"}
    """
    return {name: tr("common.course_model") if name == "course" else name for name in names}


WIDGETS = {"selectbox": st.selectbox, "radio": st.radio, "segmented": st.segmented_control}


def choice(label: str, options: Sequence, key: str, labels: dict, widget: str = "selectbox",
           default=None, **kwargs):
    """A selectbox, radio or segmented control whose options are language-neutral ids shown with
    translated ``labels`` (id -> label, or a list in the options' order); the address holds the id under ``key``.

    A widget bound with ``bind="query-params"`` writes its *shown label* to the address, so a
    translated one put "因果窗口" in a link that then failed in English (and English ids showed on
    Chinese pages). This one is not bound: its value is read from the address when the widget
    first appears (a shared link, an old link with the id, back and forward), and written back on
    every run where it is not the default (a page switch keeps only bound parameters). A value
    that is not one of the ids falls back to ``default`` (the first option if None), and leaves
    the address. Returns the chosen id."""
    options = list(options)
    if not isinstance(labels, dict):                  # labels given in the options' order
        labels = dict(zip(options, labels, strict=True))
    default = options[0] if default is None else default
    by_text = {str(option): option for option in options}
    history = internals.is_history_navigation()
    if key not in st.session_state or history:
        st.session_state[key] = by_text.get(st.query_params.get(key), default)
    elif st.session_state[key] not in options:       # the options changed under it
        st.session_state[key] = default
    extra = {"required": True} if widget == "segmented" else {}
    value = WIDGETS[widget](label, options, format_func=lambda o: labels.get(o, str(o)), key=key,
                            **extra, **kwargs)
    value = default if value is None else value
    in_url = st.query_params.get_all(key)
    if value == default:
        if in_url:
            del st.query_params[key]
    elif in_url != [str(value)]:
        st.query_params[key] = str(value)
    return value


# Each ranged slider's bounds and values in the last run that drew it: {key: (lo, hi, shown, wanted)}.
# ``shown`` is the value the slider held (CAPTION when there was one value and no slider),
# ``wanted`` the value the student (or a link) chose, which a shrunken range clamps for a while.
_RANGED = "_frame.ranged"
CAPTION = "caption"


def _forget_url_value(key: str) -> None:
    """This run's widget with ``key`` is not seeded from the address.

    A slider whose bounds changed is a new widget to Streamlit (its id holds min and max), and a
    new bound widget takes its value from the address the browser sent, before any value set in
    ``st.session_state``: the clamp lost to the URL (B5: the address still said 40 when the range
    had shrunk to 0-31). The address is not changed; Streamlit rewrites it from the value the
    widget ends up with. Back and forward (history navigation) still follow the address."""
    internals.forget_url_value(key)


def ranged_slider(label: str, lo: int, hi: int, default: int | tuple[int, int], key: str, **kwargs):
    """A URL-bound slider whose range follows another control (a text's length, a width).

    It survives the smallest input: with ``hi <= lo`` there is one possible value, said in a
    caption, and no slider (Streamlit refuses equal bounds). It survives a range that shrinks:
    a value beyond the new bounds, from the last input or a shared link, is clamped, and the
    clamp wins over the address. The student's own choice is remembered: when the range grows
    again, the slider goes back to it (A3: the pair of dimensions clamped to 0-3 at D = 4 is
    0-10 again at D = 128), until the student moves the slider. Returns an int, or a sorted
    (low, high) pair when ``default`` is one."""
    pair = isinstance(default, tuple)
    top = max(lo, hi)

    def clamp(v):
        if pair:
            return tuple(sorted(min(max(int(x), lo), top) for x in v))
        return min(max(int(v), lo), top)

    memory = st.session_state.setdefault(_RANGED, {})
    last = memory.get(key)
    held = st.session_state.get(key)
    if held is not None:
        held = tuple(held) if pair else held
    if last is not None and last[2] == CAPTION:
        # Back from a single value: the slider was not drawn, and what its state still holds is
        # the value from before (Streamlit keeps an undrawn widget's last value under its key).
        wanted = last[3]
    elif held is not None:
        moved = last is None or held != last[2]
        wanted = held if moved else last[3]
    else:
        wanted = None                         # a first visit: the address or the default
    if hi <= lo:
        memory[key] = (lo, hi, CAPTION, default if wanted is None else wanted)
        st.caption(tr("common.one_value", label=label, value=lo))
        return (lo, lo) if pair else lo
    if wanted is None:
        value = st.slider(label, lo, hi, clamp(default), key=key, bind="query-params", **kwargs)
        value = clamp(value)
        memory[key] = (lo, hi, value, default if value == clamp(default) else value)
        return value
    value = clamp(wanted)
    if last is None or last[:2] != (lo, hi) or value != held:
        # New bounds are a new widget (see _forget_url_value): it gets its value from here.
        st.session_state[key] = value
        _forget_url_value(key)
    value = clamp(st.slider(label, lo, hi, key=key, bind="query-params", **kwargs))
    if not pair and value == lo != clamp(default):
        # Drawn without a value of its own, the slider's default is lo, and a bound widget at its
        # default is left out of the address: a link would open at ``default`` (F1: head 0 chosen
        # by a click, the link opened at head 6). Put it there.
        _address_holds(key, str(value))
    memory[key] = (lo, hi, value, wanted)
    return value


def shapes_table(rows: Sequence[tuple[str, str]]) -> None:
    """A two-column 'tensor -> shape' table in markdown (values are ours, not user text)."""
    head = f"| {tr('common.tensor')} | {tr('common.shape')} |\n|---|---|\n"
    st.markdown(head + "\n".join(f"| {name} | `{shape}` |" for name, shape in rows))


_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|$~&")


_BREAKS = {"\n": "↵", "\r": "", "\t": " ", "\u2028": "↵", "\u2029": "↵"}


def plain(text: str) -> str:
    """User or generated text made safe to put inside one line of st.markdown: every markdown,
    HTML and LaTeX character is backslash-escaped, so `<b>`, `**x**` and `$x$` show as typed,
    and a line break is drawn as ↵ (a real break would end the bold or coloured span around it).

    Example: plain("<b>$x$</b>") -> "\\<b\\>\\$x\\$\\</b\\>"; plain("a\nb") -> "a↵b"
    """
    return "".join("\\" + ch if ch in _MD_SPECIAL else _BREAKS.get(ch, ch) for ch in text)
