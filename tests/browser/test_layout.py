"""Every lesson readable on a laptop (1024x768) and a projector (1440x900), in both languages.

A page fails when it scrolls sideways, when a code panel needs a horizontal scrollbar, when a line
of code of at most 80 columns (a Chinese character is two) wraps at 1440 px, when a chart's text (titles, axis titles, tick
labels, legend, annotations) reaches past the chart's own box, when two of a chart's texts of
different kinds meet (a title line, the legend's box or one of its items, an axis title, an axis'
tick labels, a colour bar's labels, an annotation), when neighbouring tick labels of one axis
overlap, when a title split over two lines cuts a bracketed formula, when a tick label with
Chinese characters is turned sideways, or (at 1024x768) when any chart text is under 11 px.
Full-page screenshots go to tests/screenshots/layout-<lesson>-<lang>-<width>.png.

Each page is loaded once and checked at both sizes (_check_both: a fresh load at 1024x768, then the
window grown to 1440x900; ORDER says why this way round); a lesson's page load also runs
tests/browser/test_pages.py's checks, axe-core's gate and, in one language, test_keyboard.py's walk
(test_lesson_fits_and_reacts).
"""
from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from tests.browser.conftest import SHOOT, SHOTS, WAIT_MS, quiet, settle, shoot, steady
from tests.browser.test_keyboard import by_keyboard, keyboard_lang
from ui.course import existing_lessons

SIZES = [(1024, 768), (1440, 900)]
LESSONS = [(lesson.url_path, lesson.code.lower()) for lesson in existing_lessons()]

# Runs in the page: a list of human-readable problems (empty when the page is fine).
# Plotly draws SVG: every text element's box is compared with the chart's own <svg> box.
PROBLEMS = r"""(width) => {
  const out = [];
  const SLACK = 1.5;   // px: sub-pixel rounding of text boxes
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return null;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return null;
      if (e.classList && e.classList.contains('js-plotly-plot')) break;
    }
    return r;
  };
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > SLACK
      && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > SLACK;
  const name = (el) => (el.textContent || '').trim().slice(0, 40);

  // 1. The page itself scrolls sideways.
  for (const sel of ['html', 'body', '[data-testid="stMain"]', '[data-testid="stAppViewContainer"]']) {
    const el = document.querySelector(sel);
    if (el && el.scrollWidth > el.clientWidth + 1)
      out.push(`page scrolls sideways: ${sel} ${el.scrollWidth} > ${el.clientWidth}`);
  }
  // 2. A code panel with a horizontal scrollbar.
  document.querySelectorAll('[data-testid="stMain"] [data-testid="stCode"] pre').forEach((pre) => {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const line = (pre.textContent || '').split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
      out.push(`code panel scrolls sideways (${pre.scrollWidth} > ${pre.clientWidth}): ${line.trim().slice(0, 60)}`);
    }
  });
  // 2b. On the projector (1440 px) a line of code up to 80 characters (the course's limit for a
  // shown function) is drawn on one line: each source line is a block <span> of its own.
  if (width >= 1440) document.querySelectorAll('[data-testid="stMain"] [data-testid="stCode"] pre code').forEach((code) => {
    const lh = parseFloat(getComputedStyle(code).lineHeight) || 20;
    code.querySelectorAll(':scope > span').forEach((line) => {
      const text = (line.textContent || '').replace(/\n$/, '');
      const h = line.getBoundingClientRect().height;
      // Columns as a monospace font draws them: a Chinese character takes two.
      const cols = Array.from(text).reduce((n, ch) => n + (ch.codePointAt(0) >= 0x1100 ? 2 : 1), 0);
      if (cols <= 80 && h > 1.5 * lh)
        out.push(`code line of ${cols} columns wraps (${Math.round(h / lh)} lines): ${text.trim().slice(0, 60)}`);
    });
  });
  // 3. Charts.
  document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').forEach((plot, i) => {
    const svg = plot.querySelector('.main-svg');
    if (!svg) return;
    const box = svg.getBoundingClientRect();
    if (box.width === 0) return;
    const title = name(plot.querySelector('.gtitle') || plot) || `chart ${i}`;
    const where = `chart "${title}"`;
    const texts = plot.querySelectorAll(
      '.gtitle, .xtitle, .ytitle, [class*="xtitle"], [class*="ytitle"], .xtick text, .ytick text, '
      + '[class*="xtick"] text, [class*="ytick"] text, .legend text, .annotation-text, .cbtitle text, '
      + '.colorbar .tick text, .textpoint text, text.bartext');
    const seen = new Set();
    texts.forEach((t) => {
      if (seen.has(t)) return; seen.add(t);
      const r = shown(t);
      if (!r || !name(t)) return;
      if (r.left < box.left - SLACK || r.right > box.right + SLACK || r.top < box.top - SLACK
          || r.bottom > box.bottom + SLACK)
        out.push(`${where}: "${name(t)}" outside the chart (text ${Math.round(r.left)}..${Math.round(r.right)} x `
                 + `${Math.round(r.top)}..${Math.round(r.bottom)}, chart ${Math.round(box.left)}..${Math.round(box.right)} x `
                 + `${Math.round(box.top)}..${Math.round(box.bottom)})`);
    });
    // A diagram's label stays inside the box (a shape) its centre sits in: the smallest one.
    const shapes = Array.from(plot.querySelectorAll('.shapelayer path')).map((p) => p.getBoundingClientRect())
      .filter((r) => r.width > 4 && r.height > 4);
    plot.querySelectorAll('.textpoint text').forEach((t) => {
      const r = shown(t);
      if (!r || !name(t)) return;
      const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
      const inside = shapes.filter((s) => s.left <= cx && cx <= s.right && s.top <= cy && cy <= s.bottom)
        .sort((a, b) => a.width * a.height - b.width * b.height)[0];
      if (inside && (r.left < inside.left - SLACK || r.right > inside.right + SLACK
                     || r.top < inside.top - SLACK || r.bottom > inside.bottom + SLACK))
        out.push(`${where}: label "${name(t)}" spills out of its box`);
    });
    // The chart's text, group by group: every line of the title, the legend (its box and its
    // items), each axis title, each axis' tick labels, colour-bar labels, annotations. Two
    // boxes of different groups must not meet (a legend may sit inside the plot area, not on
    // text); inside the legend its items, inside the annotations each one, must not either.
    const parts = [];
    const add = (group, el, r, text) => { if (r && (text || '').trim()) parts.push({ group, r, text: text.trim().slice(0, 40) }); };
    plot.querySelectorAll('.gtitle').forEach((t) => {
      const lines = t.querySelectorAll('tspan.line');
      if (lines.length) lines.forEach((l) => add('title', l, shown(l), l.textContent));
      else add('title', t, shown(t), t.textContent);
    });
    plot.querySelectorAll('.infolayer .legend').forEach((lg, k) => {
      const bg = lg.querySelector('rect.bg');
      if (bg) add(`legend ${k}`, bg, shown(bg), `legend (${name(lg)})`);
      lg.querySelectorAll('text.legendtext, text.legendtitletext').forEach((t) => add(`legend ${k} item`, t, shown(t), t.textContent));
    });
    plot.querySelectorAll('.infolayer [class^="g-x"][class$="title"] text, .infolayer [class^="g-y"][class$="title"] text')
      .forEach((t) => add(`axis title ${t.getAttribute('class')}`, t, shown(t), t.textContent));
    plot.querySelectorAll('.xaxislayer-above, .yaxislayer-above').forEach((layer, k) =>
      layer.querySelectorAll('g[class$="tick"] text').forEach((t) => add(`ticks ${k} ${t.parentNode.getAttribute('class')}`, t, shown(t), t.textContent)));
    plot.querySelectorAll('.infolayer .colorbar').forEach((cb, k) =>
      cb.querySelectorAll('text').forEach((t) => add(`colour bar ${k}`, t, shown(t), t.textContent)));
    plot.querySelectorAll('.annotation-text').forEach((t, k) => add(`annotation ${k}`, t, shown(t), t.textContent));
    const itemGroup = (g) => g.replace(/ item$/, '');
    for (let a = 0; a < parts.length; a++)
      for (let b = a + 1; b < parts.length; b++) {
        const p = parts[a], q = parts[b];
        const same = p.group === q.group;
        // Within one group only legend items are compared (ticks: neighbours, below).
        if (same && !p.group.endsWith(' item')) continue;
        if (!same && itemGroup(p.group) === itemGroup(q.group)) continue;   // a legend item in its own box
        if (overlap(p.r, q.r))
          out.push(`${where}: ${p.group.split(' ')[0]} "${p.text}" meets ${q.group.split(' ')[0]} "${q.text}"`);
      }
    // A title split in two lines keeps a formula whole: no line opens a bracket another closes.
    plot.querySelectorAll('.gtitle').forEach((t) => {
      const lines = Array.from(t.querySelectorAll('tspan.line')).map((l) => l.textContent || '');
      if (lines.length > 1 && lines.some((l) => (l.split('(').length !== l.split(')').length)))
        out.push(`${where}: title splits a formula: ${lines.map((l) => `"${l}"`).join(' / ')}`);
    });
    // Neighbouring tick labels of one axis must not overlap; Chinese tick labels stay upright.
    plot.querySelectorAll('.xaxislayer-above, .yaxislayer-above').forEach((layer) => {
      const ticks = Array.from(layer.querySelectorAll('.xtick text, .ytick text, [class*="tick"] text'))
        .map((t) => [t, shown(t)]).filter(([t, r]) => r && name(t));
      ticks.forEach(([t]) => {
        const tr = t.getAttribute('transform') || '';
        const turn = /rotate\((-?[\d.]+)/.exec(tr);
        if (turn && Math.abs(parseFloat(turn[1])) > 1 && /[\u3400-\u9fff]/.test(t.textContent || ''))
          out.push(`${where}: Chinese tick label "${name(t)}" turned sideways (${turn[1]} deg)`);
      });
      for (let k = 1; k < ticks.length; k++)
        if (overlap(ticks[k - 1][1], ticks[k][1]))
          out.push(`${where}: tick labels "${name(ticks[k - 1][0])}" and "${name(ticks[k][0])}" overlap`);
    });
  });
  return out;
}"""


# On the laptop (1024x768) every chart text is at least SMALL_MIN px (issue 38): tick labels, axis
# and chart titles, legend, annotations, colour bars, data labels and heatmap cell labels. One line
# per chart: how many of its texts are smaller, the smallest.
SMALL_MIN = 11
SMALL_TEXT = r"""(least) => {
  const out = [];
  document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').forEach((plot, i) => {
    const small = [];
    plot.querySelectorAll('.main-svg text').forEach((t) => {
      const r = t.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || !(t.textContent || '').trim()) return;
      if (t.closest('.hoverlayer, .modebar')) return;
      const s = parseFloat(getComputedStyle(t).fontSize);
      if (s < least) small.push([s, t.textContent.trim().slice(0, 20)]);
    });
    if (!small.length) return;
    small.sort((a, b) => a[0] - b[0]);
    const title = ((plot.querySelector('.gtitle') || {}).textContent || `chart ${i}`).trim().slice(0, 40);
    out.push(`chart "${title}": ${small.length} texts under ${least} px, ${small[0][0]} px "${small[0][1]}"`);
  });
  return out;
}"""


def _found(page, width: int, known: tuple[str, ...] = (), least: bool = False) -> list[str]:
    """The page's layout problems at ``width`` (PROBLEMS, and SMALL_TEXT at 1024 px when ``least``),
    less the known ones."""
    found = page.evaluate(PROBLEMS, width) + (page.evaluate(SMALL_TEXT, SMALL_MIN) if least and width <= 1024 else [])
    return [line for line in found if not any(re.search(pattern, line) for pattern in known)]


def _shoot(page, width: int, height: int, shot: str) -> None:
    """Streamlit scrolls its main column, not the page: a "full page" screenshot is the
    viewport. Make the window as tall as the lesson (same width, so the same layout). None when
    conftest.SHOOT is off."""
    if not SHOOT:
        return
    tall = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": width, "height": min(max(tall, height), 16000)})
    quiet(page, 500)
    shoot(page, SHOTS / f"layout-{shot}.png")


def _raised(page) -> list[str]:
    """A page that raised fits trivially: a traceback in place of a chart is a failure here too
    (B3's long text once laid a panel at y = -5.6e-17 and plotly's validator refused it)."""
    return [e[:500] for e in page.locator('[data-testid="stException"]').all_inner_texts()]


def _sized(page, width: int, height: int, shot: str, known: tuple[str, ...] = (), least: bool = False) -> list[str]:
    """The checks of one size on the page shown (its charts drawn at this size): what fails."""
    # Charts below the fold are drawn in a task of their own (ui/chart.js): let them finish.
    quiet(page, 300)
    problems = _found(page, width, known, least)
    _shoot(page, width, height, shot)
    errors = _raised(page)
    return [f"{width}x{height}: exception: {errors[0]}"] if errors else [f"{width}x{height}: {p}" for p in problems]


# Every chart on the page has been fitted again to its box after a change of the window's size
# (ui/chart/plot.js: watchResize): plotly's width is the chart's own (a figure that sets its own
# width keeps it), and no presenter-mode fitting is under way.
REFITTED = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .anatomy-chart.js-plotly-plot'))
    .filter(c => c.clientWidth > 0)
    .every(c => c._fullLayout && !c.dataset.fitting
        && ((c.__figure && c.__figure.layout && c.__figure.layout.width)
            || Math.abs(c._fullLayout.width - c.clientWidth) <= 1))"""


def resize(page, width: int, height: int) -> None:
    """Give the page shown a window of ``width`` x ``height`` and wait until it is laid out again:
    every chart refitted to its new width (REFITTED), then conftest's settle (no script run, every
    chart drawn). Growing the window from 1024 to 1440 px gives the problems a fresh load at 1440
    gives; shrinking it does not always (ORDER)."""
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(150)
    page.wait_for_function(REFITTED, timeout=WAIT_MS)
    settle(page)


def _check(page, url: str, width: int, height: int, shot: str, known: tuple[str, ...] = (),
           least: bool = False) -> None:
    """``least``: also fail on chart text under SMALL_MIN px at 1024 px wide. On for every lesson at
    its defaults (the page views the review measured); the long-text, explorer and real-model views
    still draw some heatmap ticks at 9-10 px (B1-B2 explorer grids, B1/B2/C2/F2 long texts, F2's
    real-model lens at 1024): the next step of issue 38's 1024 px rule, not yet checked here."""
    page.goto(url)
    settle(page)
    failures = _sized(page, width, height, shot, known, least)
    assert not failures, "\n".join(failures)


# The order of the sizes on one page load (_check_both): opened at 1024x768, resized to 1440x900.
# Measured when the loads were merged (2026-12-06), comparing PROBLEMS (and chart text positions)
# after a resize with a fresh load at the new size:
# - growing 1024 -> 1440 px found the same problems as a fresh load at 1440 px for every page tried
#   (B2 explorer, B3, D3, E1 en and zh, F2, F3; real model: B2 explorer, F2 IOI, D1 chat). Text
#   positions matched to 1 px, but for E1's legends: up to 12 px lower than on a fresh load.
# - shrinking 1440 -> 1024 px did so for A1 B1 B3 C2 D1 D3 F2 but not for E1: its legends, one row
#   at 1440 px, kept too small a margin when they wrapped to two rows and met the tick labels
#   (plotly's automargin after a resize); a fresh load at 1024 px lays them out clear.
# So the laptop size, where the stricter checks run (text under 11 px), is always a fresh load.
ORDER = [SIZES[0], SIZES[1]]


def _check_both(page, url: str, shot: str, known: tuple[str, ...] = (), least: bool = False,
                loaded=None, then=None) -> None:
    """_check at both SIZES on one page load: opened at ORDER[0], checked, then resized to ORDER[1]
    (resize) and checked again; the screenshots are layout-<shot>-<width>.png as before. ``loaded``
    (page -> list of failures) runs just after the first run, ``then`` last, on the page resized.
    Every failure is reported together."""
    (w, h) = ORDER[0]
    page.set_viewport_size({"width": w, "height": h})
    page.goto(url)
    settle(page)
    failures = loaded(page) if loaded is not None else []
    failures += _sized(page, w, h, f"{shot}-{w}", known, least)
    for w, h in ORDER[1:]:
        resize(page, w, h)
        failures += _sized(page, w, h, f"{shot}-{w}", known, least)
    if then is not None:
        failures += then(page)
    assert not failures, "\n".join(failures)


def axe_at_1440(page, what: str) -> list[str]:
    """axe-core's gate (tests/browser/test_axe.py, issue 43) on the page as the layout checks left it
    at 1440x900: no serious or critical violation. Run here, on this test's page load, in place of a
    load of its own for each lesson, language and SmolLM2 setting (issue 40)."""
    from tests.browser import axe
    assert ORDER[-1] == (axe.VIEWPORT["width"], axe.VIEWPORT["height"])
    found = axe.describe(axe.grave(axe.violations(page)))
    return [f"axe-core {axe.AXE_VERSION} on {what}:\n{found}"] if found else []


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slug,name", LESSONS, ids=[p[1] for p in LESSONS])
def test_lesson_fits_and_reacts(chromium_browser, server_url, slug, name, lang):
    """One page load per lesson and language for what were three tests, each opening the lesson:
    test_lesson_fits[<lesson>-<lang>-1024x768], test_lesson_fits[<lesson>-<lang>-1440x900] (this
    file's checks at each size, chart text under 11 px at 1024; _check_both, ORDER) and
    tests/browser/test_pages.py::test_page_opens_clean_and_reacts[<lesson>-<slug>-<lang>] (no
    exception box and its screenshot just after the first run: test_pages.opened_clean; a slider
    changes a figure, no failed request, no console error: test_pages.reacts and served_clean, run
    last, after the layout checks of the lesson at its defaults). The test_pages checks ran at
    1400x1000 before; now at 1024x768 (the first run) and 1440 px (the slider). And axe-core's gate at
    1440x900 (axe_at_1440), which was tests/browser/test_axe.py::test_page_has_no_serious_violation's
    load of each lesson. And, in the language tests/browser/test_keyboard.py's turns give the lesson
    (keyboard_lang), its keyboard walk (keyboard_at_1440, after reacts), which was
    test_keyboard.py::test_every_control_by_keyboard[<lesson>]'s load."""
    from tests.browser.test_pages import failed_requests, opened_clean, reacts, served_clean

    def then(p) -> list[str]:
        out = axe_at_1440(p, f"{name} ({lang})") + reacts(p, name)
        if lang == keyboard_lang(slug):
            out += keyboard_at_1440(p, name, lang)
        return out + served_clean(failed)

    page = chromium_browser.new_page(viewport={"width": ORDER[0][0], "height": ORDER[0][1]})
    failed = failed_requests(page)
    try:
        _check_both(page, f"{server_url}/{slug}?lang={lang}", f"{name}-{lang}", least=True,
                    known=KNOWN_OPEN.get(name, ()), loaded=lambda p: opened_clean(p, name, lang), then=then)
    finally:
        page.close()


# A live slider (ui/chart/live.js) sends its value KEY_WAIT (600 ms) after the last key: the rerun
# that follows reacts' press of one.
LIVE_COMMIT_MS = 700


def keyboard_at_1440(page, name: str, lang: str) -> list[str]:
    """tests/browser/test_keyboard.py's walk of the lesson (by_keyboard: Tab reaches every control,
    each shows its focus, the first of each kind answers keys), which was
    test_keyboard.py::test_every_control_by_keyboard[<lesson>]'s own page load at 1440x900 in the
    language keyboard_lang picks. Here after reacts: reacts presses a slider to its end and waits for
    a figure to change, which a slider _operate had already left at its end would not do (nor,
    perhaps, a figure a toggle or a choice of _operate had hidden); _operate moves a slider at its
    end down instead. The page is first let finish the live slider's rerun and given its 1440x900
    window back (the screenshot made it as tall as the lesson), so the walk scrolls as it did."""
    if page.locator('[data-testid="stMain"] .anatomy-live input[type="range"]').count():
        page.wait_for_timeout(LIVE_COMMIT_MS)
    resize(page, *ORDER[-1])
    assert ORDER[-1] == (1440, 900)
    return by_keyboard(page, name, lang)


# Overlaps found and not yet mended, by lesson: each pattern matches one problem line, with why it
# is still open. An entry here is a defect, listed in the issue; it is not a rule.
KNOWN_OPEN: dict[str, tuple[str, ...]] = {}


# The trained-model explorer starts closed: open it, with its grid of every head, in a lesson that
# shows it (B2; the same section is on B1 and B3). Its row labels ("L1 · H1") were cut on the left.
EXPLORER = [c for c in [("heads", "b2")] if c[0] in {slug for slug, _ in LESSONS}]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slug,name", EXPLORER, ids=[c[1] for c in EXPLORER])
def test_explorer_fits(chromium_browser, server_url, slug, name, lang):
    """Both SIZES on one page load (_check_both): replaces test_explorer_fits[<lesson>-<lang>-1024x768]
    and [<lesson>-<lang>-1440x900], one load each."""
    page = chromium_browser.new_page(viewport={"width": ORDER[0][0], "height": ORDER[0][1]})
    try:
        _check_both(page, f"{server_url}/{slug}?lang={lang}&{name}.ex_open=true&{name}.ex_grid=true",
                    f"{name}-explorer-{lang}")
    finally:
        page.close()


# The longest text each token-labelled lesson takes (its box cuts the rest): every token is
# still named, upright, without overlap, on the laptop screen (issue 11: labels up to 48 tokens).
LONG = "君不见黄河之水天上来奔流到海不复回君不见高堂明镜悲白发朝如青丝暮成雪人生得意须尽欢莫使金樽空对月天生我材必有用千金散尽还复来"
LONG_INPUT = [c for c in [("tokens", "a1", "a1.text"), ("embeddings", "a2", "a2.text"),
                          ("attention", "b1", "b1.text"), ("heads", "b2", "b2.text"), ("masks", "b3", "b3.text"),
                          ("llama-block", "c2", "c2.text"), ("logit-lens", "f2", "f2.ctext")]
              if c[0] in {slug for slug, _ in LESSONS}]


@pytest.mark.parametrize("slug,name,param", LONG_INPUT, ids=[c[1] for c in LONG_INPUT])
def test_long_text_fits(chromium_browser, server_url, slug, name, param):
    width, height = SIZES[0]
    page = chromium_browser.new_page(viewport={"width": width, "height": height})
    try:
        _check(page, f"{server_url}/{slug}?lang=zh&{param}={quote(LONG)}", width, height, f"{name}-long-{width}")
    finally:
        page.close()


IOI = "When Mary and John went to the store, John gave a drink to"   # F2: " Mary" against " John" (no. 7)


# Lessons on the real model (issue 24 §4): the same checks with the switch on SmolLM2 (skipped
# without its package). Each lesson adds its own rows. Screenshots: layout-real-<id>-<lang>-<width>.png.
REAL_MODEL = [c for c in [("tokens", "a1", "a1.lm=smollm2"), ("embeddings", "a2", "a2.lm=smollm2"),
                          ("attention", "b1", "b1.source=smollm2&b1.ex_open=true&b1.ex.lm=smollm2&b1.ex_grid=true"),
                          ("heads", "b2", "b2.lm=smollm2&b2.ex_open=true&b2.ex.lm=smollm2&b2.ex_grid=true"),
                          ("llama-block", "c2", "c2.lm=smollm2"), ("rope", "c3", "c3.lm=smollm2"),
                          ("generation", "d1", "d1.lm=smollm2"), ("generation", "d1-chat", "d1.lm=smollm2&d1.mode=chat"),
                          ("kv-cache", "d2", "d2.lm=smollm2"), ("memory-wall", "d3", "d3.model=smollm2-135m&d3.dtype=q4_1"),
                          ("gqa", "d4", "d4.lm=smollm2"),
                          ("logit-lens", "f2-ioi", "f2.prompt=" + quote(IOI) + "&f2.target=6"),
                          ("logit-lens", "f2-zh", "f2.prompt=" + quote(LONG[:40])),
                          ("heads-at-work", "f1", "f1.lm=smollm2")]
              if c[0] in {slug for slug, _ in LESSONS}]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slug,name,query", REAL_MODEL, ids=[c[1] for c in REAL_MODEL])
def test_real_model_fits(chromium_browser, server_url, slug, name, query, lang):
    """Both SIZES on one page load (_check_both): replaces test_real_model_fits[<id>-<lang>-1024x768]
    and [<id>-<lang>-1440x900], one load each."""
    from tests.real_util import need_package

    need_package()
    page = chromium_browser.new_page(viewport={"width": ORDER[0][0], "height": ORDER[0][1]})
    try:
        _check_both(page, f"{server_url}/{slug}?lang={lang}&{query}", f"real-{name}-{lang}",
                    known=KNOWN_OPEN.get(name, ()),
                    then=lambda p: axe_at_1440(p, f"{name} ({lang}) with SmolLM2"))   # both languages (issue 43)
    finally:
        page.close()


# After a button press the figure it changed is on screen (issue 11: D1's Step left it below
# the fold). The button is brought to the bottom of the window, as a lecturer scrolling down
# to it would see it; after the press the whole chart must be in the window.
BUTTON_MOVES = [("generation", "d1", "d1.step_btn", "d1.bars")]


@pytest.mark.parametrize("slug,name,button,chart", [c for c in BUTTON_MOVES if c[0] in {s for s, _ in LESSONS}],
                         ids=[c[1] for c in BUTTON_MOVES if c[0] in {s for s, _ in LESSONS}])
@pytest.mark.parametrize("width,height", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_button_brings_its_figure_into_view(chromium_browser, server_url, slug, name, button, chart,
                                            width, height):
    page = chromium_browser.new_page(viewport={"width": width, "height": height})
    css = lambda key: f'[class~="st-key-{key.replace(".", "-")}"]'   # noqa: E731  Streamlit's class for a key
    try:
        page.goto(f"{server_url}/{slug}")
        settle(page)
        press = page.locator(f"{css(button)} button")
        press.evaluate("el => el.scrollIntoView({block: 'end'})")
        page.wait_for_timeout(300)
        before = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop")
        press.click()
        settle(page)
        # the smooth scroll, begun by the page once the figure is drawn: its position still for 0.6 s
        steady(page, "() => document.querySelector('[data-testid=\"stMain\"]').scrollTop", quiet_ms=600)
        box = page.evaluate(f"""() => {{
            const el = document.querySelector('{css(chart)}');
            const r = el.getBoundingClientRect();
            return [r.top, r.bottom, window.innerHeight];
        }}""")
        shoot(page, SHOTS / f"layout-{name}-pressed-{width}.png")
        top, bottom, window_height = box
        assert top >= -1 and bottom <= window_height + 1, (before, box)
    finally:
        page.close()
