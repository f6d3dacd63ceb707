"""In class: presenter mode (``?present=1``), a link to what is on screen, one click to copy it.

Presenter mode is the same page, shown for a projector: large type, no sidebar, and the lesson
one slide at a time. A slide starts at each section heading (``st.subheader`` / ``st.header`` in
the page or in a top-level fragment or container, ``section_with_controls``, "Try this") and at
each slide mark a lesson puts inside a long section (``ui.frame.slide``); what comes before the
first (title, introduction, the page's first controls) is step 1. Every section is still run and
sent as usual, so every lesson works in both modes: a style sheet written here from the step
number hides the other slides (a CSS rule, so it holds whatever the browser redraws), and a small
component (ui/classroom.js) numbers the slides, draws the presenter's bar and listens to the keyboard:

- → or Page Down: the next section; after the last one, the next lesson;
- ← or Page Up: the previous section; before the first one, the previous lesson;
- Shift+→ / Shift+←: the next / previous lesson at once, on its first slide;
- O: the overview, a numbered list of the lesson's slides to jump to.

Stepping past the last slide opens the next lesson on its first slide; stepping back past the
first opens the previous lesson on its last.

The state is in the URL (``present=1``, ``step=<n>``, ``lang``), so a link opens the same slide.
Lessons change with ``st.switch_page`` inside this session (its answers and values are kept).
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import room
from ui.chart import loader_js, module_name, publish_module, static_dir
from ui.frame import lang, tr

NAME = "anatomy_classroom"
PRESENT = "present"                 # URL parameter: present=1
STEP = "step"                       # URL parameter: the section shown, 1 = the lesson's opening
_ON = "_classroom.present"          # this session's mode (the URL alone is lost on a page switch); ui.chart.PRESENTING
MAX_STEP = 99
_JS = (Path(__file__).parent / "classroom.js").read_text(encoding="utf-8")
# A static file imported once a page, as the chart's (ui/chart.py): not 15 KB in every run's bar.
MODULE = module_name(_JS, "anatomy-classroom")


def publish_classroom_js(folder: Path) -> Path:
    return publish_module(folder, MODULE, _JS)
# Under 1200 px the bar drops the lesson's name (the title is on the first step), so it stays short.
_CSS = """.anatomy-classroom { font-size: 0.9rem; }
@media (max-width: 1200px) { .anatomy-classroom .anatomy-lesson { display: none; } }
@media (max-width: 640px) {
  .anatomy-classroom[data-present="1"] { max-width: calc(100vw - 0.5rem); overflow-x: auto;
    gap: 0.2rem !important; padding: 0.2rem 0.3rem !important; }
  .anatomy-classroom[data-present="1"] button { padding: 0.2rem 0.4rem !important; }
  .anatomy-classroom[data-present="1"] .anatomy-where { padding: 0 0.15rem !important; }
  [data-testid="stMainBlockContainer"]:has(.anatomy-classroom[data-present="1"]) {
    padding-left: 0.6rem !important; padding-right: 0.6rem !important; }
  .st-key-room-teacher { gap: 0.2rem 0.4rem !important; align-items: center !important; }
  .st-key-room-teacher > :first-child { flex: 1 1 100% !important; width: 100% !important; }
  .st-key-room-teacher > * { width: auto !important; min-width: 0 !important; }
  .st-key-room-teacher [data-testid="stMarkdownContainer"] p { font-size: 0.8rem !important; line-height: 1.3 !important; }
  .st-key-room-teacher button { min-height: 2.2rem; padding: 0.2rem 0.55rem !important; }
  .st-key-room-teacher button [data-testid="stMarkdownContainer"] { position: absolute; width: 1px; height: 1px;
    overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
}"""
# On a phone (a teacher presenting from one) the bar stays one line as wide as the screen, scrolled
# sideways, the page's side margins shrink from 40 to 12 px, and the room's strip above the slide
# (ui/room.py) is two short lines: who is there, then the join switch and icon buttons whose words
# stay for screen readers (it was a column of wide buttons ~350 px tall, 40 % of a 390x844 screen).


def presenting() -> bool:
    return bool(st.session_state.get(_ON))


def step() -> int:
    """The section shown, from the URL: 1 up to MAX_STEP; anything else reads as 1."""
    raw = st.query_params.get(STEP, "1")
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return 1
    return min(max(value, 1), MAX_STEP)


def start() -> None:
    """Read the mode from the URL on a session's first run; keep it in the URL afterwards
    (a page switch keeps only the parameters of bound widgets)."""
    if _ON not in st.session_state:
        st.session_state[_ON] = st.query_params.get(PRESENT) == "1"
    if presenting():
        for name, value in ((PRESENT, "1"), (STEP, str(step()))):
            if st.query_params.get(name) != value:    # each write is a message to the browser
                st.query_params[name] = value
    else:
        for name in (PRESENT, STEP):
            if name in st.query_params:
                del st.query_params[name]


def _noop() -> None:
    """A trigger value needs a callback to be kept for the run that reads it."""


def _params(next_step: int = 1) -> dict[str, str]:
    return {"lang": lang(), PRESENT: "1", STEP: str(next_step)}


def bar(current, order: list) -> None:
    """The classroom controls, after ``st.navigation`` and before the page runs.

    ``current`` is the page ``st.navigation`` chose, ``order`` every page in course order.
    Off: "Copy link" and "Present" in the sidebar. On: the presenter's bar (fixed at the foot
    of the screen), the keyboard, the large type and the step's style sheet."""
    at = next((i for i, p in enumerate(order) if p.url_path == current.url_path), 0)
    on = presenting()
    labels = {
        "copy": tr("classroom.copy"), "copied": tr("classroom.copied"), "copy_failed": tr("classroom.copy_failed"),
        "present": tr("classroom.present"), "exit": tr("classroom.exit"), "prev": tr("classroom.prev"),
        "next": tr("classroom.next"), "prev_lesson": tr("classroom.prev_lesson"),
        "next_lesson": tr("classroom.next_lesson"), "keys": tr("classroom.keys"), "step_of": tr("classroom.step_of"),
        "overview": tr("classroom.overview"), "start_room": tr("room.start"),
    }
    data = {"present": on, "step": step(), "lesson": current.title, "page": current.url_path, "labels": labels,
            "has_prev": at > 0, "has_next": at < len(order) - 1, "can_start_room": on and not room.in_room()}
    publish_classroom_js(static_dir())
    mount = st.components.v2.component(NAME, js=loader_js(MODULE), css=_CSS, isolate_styles=False)
    where = st.container() if on else st.sidebar
    with where:
        # A one-item tuple, not the dict itself: Streamlit would ask each of a dict's values whether
        # it is a dataframe, importing pandas and pyarrow to do so (ui/chart.py, issue 39).
        result = mount(data=(data,), key="_classroom.on" if on else "_classroom.off", on_action_change=_noop)
        room.teacher_bar(current, step() if on else 1)   # issue 42: the class room's strip (ui/room.py)
    action = getattr(result, "action", None)
    if isinstance(action, str):
        _act(action, at, order)
    if presenting():
        st.html(presenter_css(step()))


def _act(action: str, at: int, order: list) -> None:
    """What the bar or the keyboard asked for: "on", "off", "step:<n>", "lesson:<+1|-1>"."""
    if action == "room" and presenting():        # "Start a class" on the presenter's bar (ui/room.py)
        room.create()
        st.rerun()
    elif action == "join" and presenting():      # key J: the class room's join card (ui/room.py)
        if room.flip_join_card():
            st.rerun()
    elif action == "on":
        st.session_state[_ON] = True
        st.query_params[PRESENT] = "1"
        st.query_params[STEP] = "1"
        st.rerun()
    elif action == "off":
        st.session_state[_ON] = False
        start()
        st.rerun()
    elif action.startswith("clamp:") and presenting():
        # A step past the last slide, brought back to the last by the bar once the page has run:
        # only for the page it was measured on (a bar still showing the lesson before a switch
        # once moved the new lesson to the old one's last slide).
        wanted, _, page = action[6:].partition("@")
        if page == order[at].url_path and wanted.isdigit() and step() > int(wanted):
            st.query_params[STEP] = str(min(max(int(wanted), 1), MAX_STEP))
            st.rerun()
    elif action.startswith("step:") and presenting():
        try:
            wanted = int(action[5:])
        except ValueError:
            return
        st.query_params[STEP] = str(min(max(wanted, 1), MAX_STEP))
        st.rerun()   # before the page runs: the bar drawn above holds the old step
    elif action in ("lesson:1", "lesson:-1", "lesson:-1:last") and presenting():
        target = at + (1 if action == "lesson:1" else -1)
        if 0 <= target < len(order):
            # Back past the first slide: the previous lesson's last slide (the bar brings a step
            # past the end back to the last one once the page has run).
            st.switch_page(order[target], query_params=_params(MAX_STEP if action.endswith(":last") else 1))


# --- The presenter's page ---------------------------------------------------------------------
# The page's top-level block, and which of its elements make step n. Slides are found in the
# browser (ui/classroom.js: slides): a slide starts at a section heading (an element holding an
# h2/h3: st.header / st.subheader) or a slide mark (ui.frame.slide), at the top level of the page
# or one level in, inside a top-level container or fragment; a container that opens with its only
# heading is one section (the explorer, "Try this"). The bar numbers each element with its slide
# (data-anatomy-slide="n"; a container cut in several slides holds each of their numbers and
# data-anatomy-split), and this style sheet shows the elements of step n. An element not numbered
# yet (it has just arrived) stays hidden until the next frame.
_BLOCK = '[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]'
_KEEP = ':has(.anatomy-classroom)'
_MARK = '[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] .anatomy-slide)'


def section_selector(n: int) -> str:
    """The elements of step ``n``, as numbered by the bar.

    Example: section_selector(3) -> '[data-anatomy-slide~="3"]'"""
    return f'[data-anatomy-slide~="{int(n)}"]'


def presenter_css(n: int) -> str:
    """Large type, no sidebar, and only step ``n`` of the page. A fixed sheet but for ``n``.
    Prose 24 px (1.2 rem of 20), code 18 px, a code panel under its figure rather than beside it
    (at 18 px, 80 columns need the whole width); charts draw their own type larger (ui/chart.js).
    Little room above a slide's title and between its elements, and a bar in smaller type (15 px,
    for the lecturer), so that a title, a row of controls and a chart fit a 1280x720 screen."""
    return f"""<style>
html {{ font-size: 20px; }}
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"] {{ display: none !important; }}
[data-testid="stMainBlockContainer"] {{ padding-top: 0.6rem; padding-bottom: 5rem; max-width: 100%; }}
{_BLOCK}, {_BLOCK} [data-testid="stVerticalBlock"] {{ gap: 0.7rem; }}
{_BLOCK} [data-testid="stHeading"] :is(h2, h3) {{ padding-top: 0.2rem; padding-bottom: 0.2rem; }}
.anatomy-classroom[data-present="1"] {{ font-size: 0.75rem; }}
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li {{ font-size: 1.2rem; }}
[data-testid="stCaptionContainer"] {{ font-size: 0.95rem; }}
[data-testid="stCode"] pre code, [data-testid="stColumn"] [data-testid="stCode"] pre code {{ font-size: 18px !important; }}
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stCode"]) {{
  flex-direction: column !important; flex-wrap: nowrap !important; }}
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stCode"]) > [data-testid="stColumn"] {{
  width: 100% !important; flex: 1 1 auto !important; min-width: 0; }}
{_BLOCK} > :not({section_selector(n)}, {_KEEP}) {{ display: none !important; }}
{_BLOCK} > [data-anatomy-split] > [data-testid="stVerticalBlock"] > :not({section_selector(n)}) {{ display: none !important; }}
{_MARK}[data-anatomy-slide] {{ display: flex; }}
.anatomy-slide {{ font-size: 1.3rem; font-weight: 600; line-height: 1.3; color: rgb(49, 51, 63); }}
</style>"""
