"""Every text colour our code sets reads against its ground: WCAG 2.1 AA (issue 43 §4).

SC 1.4.3 asks 4.5:1 for text, 3:1 for large text (>= 24 px, or >= 18.66 px bold). Chart text here is
12-22 px and often not bold, so every chart text is held to 4.5:1; chart marks' 3:1 (SC 1.4.11) is
tests/test_colour_vision.py's. Streamlit's captions, code tokens and accent colour are ours too
(ui/theme.py, .streamlit/config.toml); the rest of its theme is checked in the browser by axe-core
(tests/browser/test_axe.py).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.colour import contrast, over, parse
from ui.theme import CONTRAST_CSS
from viz import attention, block, encdec, learning, moe, strip, tokens

ROOT = Path(__file__).resolve().parents[1]
TEXT = 4.5
LARGE = 3.0

# Every colour literal given to a font in viz/ ("font": {... "color": …} and "textfont"), drawn on the
# white plot (common.LOOK) unless listed in ON_GROUNDS below.
_FONT = re.compile(r'"(?:text)?font": \{[^{}]*?"color": (\[[^\]]*\]|"[^"]*")')
_COLOUR = re.compile(r'#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b|"white"|rgba?\([^)]*\)')


def viz_font_colours() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "viz").glob("*.py")):
        for match in _FONT.finditer(path.read_text(encoding="utf-8")):
            found += [(path.name, c.strip('"')) for c in _COLOUR.findall(match.group(1))]
    return found


# (where, text colour, ground colour): text on something other than the white plot.
ON_GROUNDS = [
    *[("tokens: a token on its chip", "#111", chip) for chip in tokens.CHIP_COLOURS],
    *[("block: a part's name on its box", "#222", box) for box in block.COLORS.values()],
    ("block: the chosen part's name", block.SELECTED_TEXT, block.SELECTED),
    *[("encdec: a part's name on its box", "#222", box) for box in encdec.COLORS.values()],
    ("encdec: the chosen part's name", encdec.SELECTED_TEXT, encdec.SELECTED),
    *[("strip: a stage's shape on its box", "#555", box) for box in strip._FILL.values()],
    ("attention: −∞ in a masked cell", "white", attention.MASKED_COLOUR),
    ("moe: a token every expert lost", moe.LOST_ALL_COLOURS[1], moe.LOST_ALL_COLOURS[0]),
    ("moe: a token one expert lost", moe.LOST_ONE_COLOURS[1], moe.LOST_ONE_COLOURS[0]),
]
# Named text colours drawn on white: a checkpoint's label, a special token's glyph.
ON_WHITE = [("learning: a checkpoint's label", learning.CHECKPOINT_COLOUR),
            ("encdec: a special token's glyph", encdec.MARK_COLOR)]
# (file, the CSS as written there, text, ground, minimum): the frame's own CSS and the presenter's overview.
CSS = [
    ("ui/classroom.py", "color: rgb(49, 51, 63)", "rgb(49, 51, 63)", "#ffffff", LARGE),   # a slide's title, 1.3rem bold
    ("ui/classroom.js", "color:#31333f", "#31333f", "#ffffff", TEXT),                     # the overview's list
    ("ui/classroom.js", "color:#5f6270", "#5f6270", "#ffffff", TEXT),                     # its heading
    ("ui/classroom.js", "background:#fde7e9", "#31333f", "#fde7e9", TEXT),                # the current slide's row
    ("ui/classroom.js", "color:#31333f", "#31333f", "rgba(255,255,255,0.94)", TEXT),      # the bar's "where"
]


def test_the_font_scan_finds_the_chart_texts():
    colours = {c for _, c in viz_font_colours()}
    assert {"#555", "#333", "#111"} <= colours   # strip's and kv's notes, rope's angle, a chip's token


@pytest.mark.parametrize("where,colour", viz_font_colours(), ids=lambda v: str(v))
def test_chart_text_on_white(where, colour):
    grounded = {fg for _, fg, _ in ON_GROUNDS}
    if colour in grounded and where in ("tokens.py", "block.py", "encdec.py", "moe.py", "attention.py"):
        pytest.skip("drawn on a box or chip: test_text_on_its_ground")
    assert contrast(colour, "#ffffff") >= TEXT, f"{where}: {colour} on white is {contrast(colour):.2f}:1"


@pytest.mark.parametrize("where,colour", ON_WHITE, ids=[w for w, _ in ON_WHITE])
def test_named_text_on_white(where, colour):
    assert contrast(colour, "#ffffff") >= TEXT, f"{where}: {colour} is {contrast(colour):.2f}:1"


@pytest.mark.parametrize("where,fg,bg", ON_GROUNDS, ids=[f"{w} {bg}" for w, _, bg in ON_GROUNDS])
def test_text_on_its_ground(where, fg, bg):
    assert contrast(fg, bg) >= TEXT, f"{where}: {fg} on {bg} is {contrast(fg, bg):.2f}:1"


@pytest.mark.parametrize("path,written,fg,bg,minimum", CSS, ids=[f"{p}:{w}" for p, w, *_ in CSS])
def test_css_text(path, written, fg, bg, minimum):
    assert written in (ROOT / path).read_text(encoding="utf-8"), f"{path} no longer says {written!r}: update CSS"
    assert contrast(fg, bg) >= minimum, f"{path}: {fg} on {bg} is {contrast(fg, bg):.2f}:1"


# Streamlit's text made darker (ui/theme.py: captions, code tokens) and its accent colour
# (.streamlit/config.toml), on the grounds it draws them on: the page, the sidebar, a code block.
GROUNDS = {"page": "#ffffff", "sidebar": "#f8f8f7", "code block": "#f7f7f6"}
THEME_TEXT = sorted(set(re.findall(r"color: (#[0-9a-f]{6})", CONTRAST_CSS)))
ACCENT = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))["theme"]["primaryColor"]


def _tint(colour: str, alpha: float, ground: str) -> str:
    """``colour`` at ``alpha`` on ``ground``, as a hex colour.

    Example: _tint("#000000", 0.5, "#ffffff") -> "#808080"
    """
    (r, g, b), _ = parse(colour)
    return "#" + "".join(f"{round(c * 255):02x}" for c in over(f"rgba({r * 255},{g * 255},{b * 255},{alpha})", ground))


@pytest.mark.parametrize("colour", THEME_TEXT)
@pytest.mark.parametrize("ground", GROUNDS, ids=list(GROUNDS))
def test_theme_text(colour, ground):
    assert len(THEME_TEXT) >= 9       # the caption's grey and eight kinds of code token
    assert contrast(colour, GROUNDS[ground]) >= TEXT, f"{colour} on {ground}: {contrast(colour, GROUNDS[ground]):.2f}:1"


@pytest.mark.parametrize("ground", ["page", "sidebar"])
def test_accent_on_its_tint(ground):
    """A selected pill or segment: the accent on itself at 10 % (axe-core measured Streamlit's default
    #c53948 there at 4.47:1 on the page and 4.23:1 in the sidebar)."""
    tint = _tint(ACCENT, 0.1, GROUNDS[ground])
    assert contrast(ACCENT, tint) >= TEXT, f"{ACCENT} on {tint}: {contrast(ACCENT, tint):.2f}:1"
    assert contrast("#c53948", _tint("#c53948", 0.1, GROUNDS[ground])) < TEXT    # what it replaced


def test_contrast_matches_wcag_examples():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676") == pytest.approx(4.54, abs=0.01)    # the lightest grey that passes on white
    assert contrast("#777777") < 4.5
    assert contrast("rgba(0,0,0,0.5)") == pytest.approx(contrast("#808080"), abs=0.03)
