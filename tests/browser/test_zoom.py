"""Every lesson at 200 % zoom (WCAG 2.1 SC 1.4.4, issue 43 §5): a 1440x900 window zoomed to 200 %
is a 720x450 CSS px viewport at two device pixels per CSS pixel. The page never scrolls sideways, no
text is cut off by its box, no two lines of text meet, and each chart's texts keep apart and inside
it (tests/browser/test_layout.py's PROBLEMS, but the code panels, which scroll sideways by design at
this width). One load a lesson, the languages taking turns (Chinese on every other lesson); the
screenshots are tests/screenshots/zoom-200-<lesson>-<lang>.png (the window as tall as the lesson).
"""
from __future__ import annotations

import pytest

from tests.browser.conftest import SHOTS, quiet, settle
from tests.browser.test_layout import PROBLEMS
from ui.course import existing_lessons

ZOOMED = {"viewport": {"width": 720, "height": 450}, "device_scale_factor": 2}

# Runs in the page: problems of the text outside the charts, a line each.
# - cut: an element that hides what overflows it (overflow hidden or clip) holding text wider or taller
#   than its box (a label cut short, an ellipsis);
# - meet: two lines of text of different text nodes (a formula is one) whose boxes overlap (each line's
#   own box, from a Range over the text node), by more than 2 px across and a third of a line's height.
# Left out: charts (PROBLEMS checks their text), tables drawn on a canvas, code panels (they scroll),
# text only for screen readers (.anatomy-sr, clipped to 1 px on purpose) and what is hidden.
TEXT_PROBLEMS = r"""() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const SKIP = '.js-plotly-plot, .anatomy-sr, .anatomy-pick, [data-testid="stDataFrame"], [data-testid="stCode"], '
    + '[aria-hidden="true"], [data-testid="stTooltipIcon"], .katex-mathml';
  const out = [];
  const visible = (el) => { const s = getComputedStyle(el); return s.visibility !== 'hidden' && s.opacity !== '0'; };
  const lines = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || el.closest(SKIP) || !visible(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    // A formula's glyphs (KaTeX) are one text: they stack and touch by design.
    const whole = el.closest('.katex') || node;
    for (const r of range.getClientRects()) if (r.width > 1 && r.height > 1) lines.push({ r, whole, text: text.slice(0, 30) });
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


LESSONS = [(n, lesson.url_path, lesson.code.lower()) for n, lesson in enumerate(existing_lessons())]


@pytest.mark.parametrize("n,slug,name", LESSONS, ids=[c[2] for c in LESSONS])
def test_lesson_at_200_percent_zoom(chromium_browser, server_url, n, slug, name):
    lang = "zh" if n % 2 else "en"
    page = chromium_browser.new_page(**ZOOMED)
    try:
        page.goto(f"{server_url}/{slug}?lang={lang}")
        settle(page)
        quiet(page, 300)                     # charts below the fold draw when idle (ui/chart.js)
        found = _problems(page)
        tall = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        page.set_viewport_size({"width": 720, "height": min(max(tall, 450), 8000)})
        quiet(page, 500)
        page.screenshot(path=str(SHOTS / f"zoom-200-{name}-{lang}.png"))
        assert page.locator('[data-testid="stException"]').count() == 0
        assert not found, f"{name} ({lang}) at 200 %:\n" + "\n".join(found[:30])
    finally:
        page.close()
