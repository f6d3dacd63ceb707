"""The frame around every lesson, and the one module a page imports its helpers from.

Pages call these small helpers so that each page reads like a short script. The language and the
device are read from this session's state (bound to the URL by the widgets in app.py); nothing
here is process-global. Each job has its module, and this one gathers them for the pages:
    ui/words.py     the catalogue in this session's language (tr, sentences), user text made safe (plain)
    ui/url.py       the URL cleaned, and controls whose state is in the address (text_box, choice,
                    ranged_slider)
    ui/code.py      "The code" beside a figure, and the sections laid out around it
    ui/slides.py    presenter mode's marks in a page (slide, repeat_control, bring_into_view)
    ui/batching.py  a fragment's elements sent together (at_once, fragment)
    ui/figures.py   charts built once for every session and drawn (built_figure, figure)
    ui/quiz.py      "Try this" and the score
    ui/streamlit_internals.py  every use of Streamlit's private API
and keeps the sidebar's language and device switches, the page header and the layout style sheet.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st
import torch

import i18n
from ui.batching import at_once, fragment, send_now  # noqa: F401 (the pages' helpers, gathered here)
from ui.code import _source, beside_code, code_panel, section_with_controls  # noqa: F401
from ui.figures import (  # noqa: F401
    PLOTLY_WORDS,
    PRESENT_MAX_HEIGHT,
    _plotly_words,
    built_figure,
    drawn,
    figure,
    figure_key,
)
from ui.quiz import common_mistake, first_answers, quiz_score, try_this  # noqa: F401
from ui.slides import bring_into_view, repeat_control, slide  # noqa: F401
from ui.url import CAPTION, _non_finite, choice, ranged_slider, sanitise_url, text_box  # noqa: F401
from ui.words import LANG_KEY, lang, model_labels, plain, sentences, tr, tr_items  # noqa: F401

DEVICE_KEY = "device"


def devices() -> list[str]:
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def device() -> str:
    value = st.session_state.get(DEVICE_KEY)
    return value if value in devices() else "cpu"


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


def shapes_table(rows: Sequence[tuple[str, str]]) -> None:
    """A two-column 'tensor -> shape' table in markdown (values are ours, not user text)."""
    head = f"| {tr('common.tensor')} | {tr('common.shape')} |\n|---|---|\n"
    st.markdown(head + "\n".join(f"| {name} | `{shape}` |" for name, shape in rows))
