"""Text contrast the theme's options cannot set (WCAG 2.1 SC 1.4.3, issue 43).

Streamlit's light theme draws captions (its text at 60 % opacity) and code tokens in greys and light
hues of 2.2-3.9:1 against their ground (its palette's gray70, blue70, green70, ...), and no theme
option reaches them. This style sheet draws them in the same hues a step or two darker, each
>= 4.5:1 on white, on the sidebar and on the code block's ground (tests/test_contrast.py checks every colour in it). The
accent (primary) colour is a theme option: .streamlit/config.toml. Two more rules every page needs
and no option sets (issue 43 §2, §5): a focus ring on every button (Streamlit's segmented control, the
language switch among them, a table's toolbar and a code panel's copy button draw none) and on a
table's grid, and on a select box at once (its own border's change comes a render later); a chart's toolbar (plotly's
modebar) shown at once while the keyboard is in its chart (plotly fades it in from nothing over 0.3 s,
and draws its icons at 30 % opacity, 1.7:1) with its icons >= 4.5:1 and a ring on the focused button; and no
animation or transition for a reader who asked the system for reduced motion.
A metric's label wraps (Streamlit cuts it short with an ellipsis, which 200 % zoom showed on C2).
And a tab stop for a formula wider than the column (it scrolls in its own box, and only the
keyboard's focus lets a keyboard scroll it).
"""
from __future__ import annotations

import streamlit as st

from ui.navigation import NAV_CSS, NAV_JS

# A fixed style sheet (no user text); each selector is more specific than Streamlit's own
# (`.<its class>`, `.<its class> .token.comment`), whatever order the sheets load in.
CONTRAST_CSS = """<style>
[data-testid="stMarkdown"] [data-testid="stCaptionContainer"] { color: #62605d; opacity: 1; }
[data-testid="stCode"] code :is(.token.comment, .token.prolog, .token.doctype, .token.cdata, .token.punctuation,
  .token.unchanged) { color: #555867; }
[data-testid="stCode"] code :is(.token.keyword, .token.tag, .token.function, .token.class-name,
  .token.selector) { color: #0068c9; }
[data-testid="stCode"] code :is(.token.attr-name, .token.property, .token.variable) { color: #15799e; }
[data-testid="stCode"] code :is(.token.boolean, .token.constant, .token.symbol) { color: #158237; }
[data-testid="stCode"] code :is(.token.number, .token.regex) { color: #246e69; }
[data-testid="stCode"] code :is(.token.string, .token.char, .token.attr-value, .token.inserted) { color: #177233; }
[data-testid="stCode"] code :is(.token.operator, .token.entity, .token.decorator, .token.atrule,
  .token.url) { color: #a84500; }
[data-testid="stCode"] code :is(.token.important, .token.deleted) { color: #bd4043; }
button:focus-visible, [role="radio"]:focus-visible, [role="option"]:focus-visible {
  outline: 2px solid #2f2d2b; outline-offset: 2px; }
[data-testid="stElementToolbar"] button:focus-visible, [data-testid="stCode"] button:focus-visible {
  outline: 2px solid #2f2d2b !important; outline-offset: 1px; opacity: 1 !important; }
.js-plotly-plot:focus-within .modebar-group { opacity: 1 !important; transition: none !important; }
.js-plotly-plot .modebar-btn:focus-visible { outline: 2px solid #2f2d2b !important; outline-offset: 1px; }
.js-plotly-plot:focus-within .modebar-btn .icon path { fill: #62605d !important; }
.js-plotly-plot .modebar-btn:focus-visible .icon path { fill: #2f2d2b !important; }
[data-testid="stSelectbox"] :has(> input:focus-visible),
[data-testid="stMultiSelect"] :has(> input:focus-visible) {
  outline: 2px solid #2f2d2b; outline-offset: 2px; border-radius: 0.5rem; }
[data-testid="stDataFrame"] canvas:focus-visible { outline: 2px solid #2f2d2b !important; outline-offset: -2px; }
[data-testid="stMetricLabel"] :is([data-testid="stMarkdownContainer"], p) { white-space: normal; overflow: visible;
  text-overflow: clip; }
.katex-display[tabindex]:focus-visible, [class*="st-key-anatomy-scroll-"]:focus-visible {
  outline: 2px solid #2f2d2b; outline-offset: 2px; }
@media (prefers-reduced-motion: reduce) {
  *, *::before, *::after { animation-duration: 0.01ms !important; animation-iteration-count: 1 !important;
    transition-duration: 0.01ms !important; scroll-behavior: auto !important; }
}
</style>"""


# A container keyed f"{SCROLL_BOX}-..." (a table in a box of fixed height: ui/a1_tokens.py) is a box
# whose rows scroll, marked by the script below like a wide formula.
SCROLL_BOX = "anatomy-scroll"

# A displayed formula wider than the column scrolls sideways in its own box (a phone, 200 % zoom),
# and so does a table in a box of fixed height: the keyboard must reach them to scroll them (axe-core:
# scrollable-region-focusable, serious), so such a box takes a tab stop, and gives it back when its
# content fits again (a wider window). Boxes that fit take none. A fixed script (no user text),
# started once per browser tab.
WIDE_FORMULA_JS = """<script>
(() => {
  if (window.__anatomyWideFormulas) return;
  window.__anatomyWideFormulas = true;
  const mark = () => {
    const boxes = document.querySelectorAll('[data-testid="stMain"] :is(.katex-display, [class*="st-key-SCROLL_BOX-"])');
    for (const el of boxes) {
      const wide = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
      if (wide && !el.hasAttribute('tabindex')) el.tabIndex = 0;
      else if (!wide && el.getAttribute('tabindex') === '0') el.removeAttribute('tabindex');
    }
  };
  let queued = false;
  const soon = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; mark(); });
  };
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});
  window.addEventListener('resize', soon);
  soon();
})();
</script>""".replace("SCROLL_BOX", SCROLL_BOX)


def theme_css() -> None:
    """On every page, in the sidebar: a style sheet applies to the whole page from wherever it is,
    and there it takes no place among a lesson's elements (nor a presenter's slides). With it the
    script that gives a formula too wide for the column a tab stop."""
    st.sidebar.html(CONTRAST_CSS + NAV_CSS)
    st.sidebar.html(WIDE_FORMULA_JS + NAV_JS, unsafe_allow_javascript=True)   # and the navigation's (ui/navigation.py)
