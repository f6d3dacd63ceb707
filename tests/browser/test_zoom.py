"""Every page on a phone, at 200 % zoom and at 320 px wide, on one page load (issue 40: three
loads were one each), in both languages as test_axe.PHONE_PAGES gives them (issue 43: a Chinese
label wraps and cuts where its English one does not; the languages took turns until 2026-12):

1. At 200 % zoom (WCAG 2.1 SC 1.4.4, issue 43 §5): a 1440x900 window zoomed to 200 % is a 720x450
   CSS px viewport at two device pixels per CSS pixel, the page loaded at that size. The page never
   scrolls sideways, no text is cut off by its box, no two lines of text meet, and each chart's texts
   keep apart and inside it (tests/browser/test_layout.py's PROBLEMS, but the code panels, which
   scroll sideways by design at this width); the screenshots are
   tests/screenshots/zoom-200-<page>-<lang>.png (the window as tall as the lesson). Was
   test_lesson_at_200_percent_zoom (lessons only; the home page now too).
2. The window shrunk to a phone's 390x844 (held upright, the sidebar folded away as at 720 px):
   axe-core's gate, no serious or critical violation (issue 43; was
   tests/browser/test_axe.py::test_page_on_a_phone_has_no_serious_violation, a load at 390x844).
   axe reads the page's markup, colours and names, which a resize leaves as they are; the chart
   layout checks, which a shrink does not always leave as a fresh load would (test_layout.ORDER),
   are not run after it.
3. At 320 CSS px wide (WCAG 2.1 SC 1.4.10, issue 43 §5) the page reflows: it never scrolls sideways.
   Was tests/browser/test_reflow.py, a load of each lesson at 320x640.
"""
from __future__ import annotations

import pytest

from tests.browser import axe
from tests.browser.conftest import SHOOT, SHOTS, quiet, settle, shoot
from tests.browser.test_axe import PHONE, PHONE_PAGES
from tests.browser.test_layout import PROBLEMS, resize

ZOOMED = {"width": 720, "height": 450}       # CSS px, at device_scale_factor 2
NARROW = {"width": 320, "height": 640}       # WCAG's reflow width
WIDTH = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"

# Runs in the page: problems of the text outside the charts, a line each.
# - cut: an element that hides what overflows it (overflow hidden or clip) holding text wider or taller
#   than its box (a label cut short, an ellipsis);
# - meet: two lines of text of different text nodes (a formula is one) whose boxes overlap (each line's
#   own box, from a Range over the text node), by more than 2 px across and a third of a line's height.
# Left out: charts (PROBLEMS checks their text), tables drawn on a canvas, code panels (they scroll),
# text only for screen readers (.anatomy-sr, clipped to 1 px on purpose) and what is hidden; of text
# inside a box that scrolls (a table in a box of fixed height), only the part the box shows.
TEXT_PROBLEMS = r"""() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const SKIP = '.js-plotly-plot, .anatomy-sr, .anatomy-pick, [data-testid="stDataFrame"], [data-testid="stCode"], '
    + '[aria-hidden="true"], [data-testid="stTooltipIcon"], .katex-mathml';
  const out = [];
  const visible = (el) => { const s = getComputedStyle(el); return s.visibility !== 'hidden' && s.opacity !== '0'; };
  const lines = [];
  const shows = (el, r) => {   // the part of r that the boxes around el which clip or scroll show
    let [left, top, right, bottom] = [r.left, r.top, r.right, r.bottom];
    for (let a = el.parentElement; a && a !== main; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
      const b = a.getBoundingClientRect();
      [left, top, right, bottom] = [Math.max(left, b.left), Math.max(top, b.top), Math.min(right, b.right), Math.min(bottom, b.bottom)];
    }
    return { left, top, right, bottom, width: right - left, height: bottom - top };
  };
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || el.closest(SKIP) || !visible(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    // A formula's glyphs (KaTeX) are one text: they stack and touch by design.
    const whole = el.closest('.katex') || node;
    for (const line of range.getClientRects()) {
      const r = shows(el, line);
      if (r.width > 1 && r.height > 1) lines.push({ r, whole, text: text.slice(0, 30) });
    }
  }
  for (let a = 0; a < lines.length; a++)
    for (let b = a + 1; b < lines.length; b++) {
      const p = lines[a], q = lines[b];
      if (p.whole === q.whole) continue;
      const x = Math.min(p.r.right, q.r.right) - Math.max(p.r.left, q.r.left);
      const y = Math.min(p.r.bottom, q.r.bottom) - Math.max(p.r.top, q.r.top);
      // A line's box is taller than its letters (a formula's most of all): lines meet when they
      // share more than a third of the lower one's height.
      if (x > 2 && y > Math.max(2, Math.min(p.r.height, q.r.height) / 3)) out.push(`text "${p.text}" meets "${q.text}"`);
    }
  main.querySelectorAll('*').forEach((el) => {
    if (el.closest(SKIP) || !(el.textContent || '').trim() || !visible(el)) return;
    const s = getComputedStyle(el);
    const hidesX = s.overflowX === 'hidden' || s.overflowX === 'clip';
    const hidesY = s.overflowY === 'hidden' || s.overflowY === 'clip';
    if ((hidesX && el.scrollWidth > el.clientWidth + 1) || (hidesY && el.scrollHeight > el.clientHeight + 1)) {
      const inner = (el.innerText || '').trim();
      if (inner) out.push(`text cut by its box (${el.scrollWidth}x${el.scrollHeight} in ${el.clientWidth}x${el.clientHeight}): "${inner.slice(0, 40)}"`);
    }
  });
  return [...new Set(out)];
}"""


def _problems(page) -> list[str]:
    charts = [p for p in page.evaluate(PROBLEMS, 720) if not p.startswith("code panel scrolls sideways")]
    return charts + page.evaluate(TEXT_PROBLEMS)


@pytest.mark.parametrize("slug,name,lang", PHONE_PAGES, ids=[f"{name}-{lang}" for _, name, lang in PHONE_PAGES])
def test_page_on_a_phone_zoomed_and_at_320_px(chromium_browser, server_url, slug, name, lang):
    page = chromium_browser.new_page(viewport=ZOOMED, device_scale_factor=2)
    failures: list[str] = []
    try:
        page.goto(f"{server_url}/{slug}?lang={lang}")
        settle(page)
        quiet(page, 300)                     # charts below the fold draw when idle (ui/chart.js)
        failures += [f"{name} ({lang}) at 200 %: {p}" for p in _problems(page)[:30]]
        if SHOOT:
            tall = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
            page.set_viewport_size({"width": ZOOMED["width"], "height": min(max(tall, ZOOMED["height"]), 8000)})
            quiet(page, 500)
            shoot(page, SHOTS / f"zoom-200-{name}-{lang}.png")

        resize(page, **PHONE)
        found = axe.describe(axe.grave(axe.violations(page)))
        if found:
            failures.append(f"axe-core {axe.AXE_VERSION} on {name} ({lang}) at 390x844:\n{found}")

        resize(page, **NARROW)
        scroll, client = page.evaluate(WIDTH)
        if scroll > client:
            failures.append(f"{name} ({lang}) at 320 px: the page is {scroll} px wide")
        if name == "f4":
            shoot(page, SHOTS / "reflow-320-f4.png")
        if page.locator('[data-testid="stException"]').count():
            failures.append(f"{name} ({lang}): an exception box")
    finally:
        page.close()
    assert not failures, "\n".join(failures)
