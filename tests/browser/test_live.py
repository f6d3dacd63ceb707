"""Live controls in a real Chromium (issue 25): the figure follows its own slider while it is
dragged or stepped with the keys, with no server run; on release the value reaches the URL and the
page parts that depend on it, in exactly one run; a fresh page at ``?key=value`` draws the same
figure; a bad URL value falls back to the default (where others snap: tests/test_live.py)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.conftest import CHANGE_MS, WAIT_MS, settle
from tests.browser.test_pages import _base_path_probe

# (url path, figure key, value key, a dependent text the release changes: a CSS selector and
# where to look, or None)
# Fresh tabs (tests/browser/conftest.py, WatchedBrowser): these tests time the page's own runs and frames.
KEPT_TABS = False
LIVE = [
    ("generation", "d1.bars", "d1.temperature"),
    ("positions", "a3.offsets", "a3.p"),
    ("attention", "b1.hist", "b1.width"),
    ("masks", "b3.leak", "b3.changed"),
    ("rope", "c3.plane", "c3.m"),
    ("rope", "c3.dist", "c3.key_n"),
    ("kv-cache", "d2.fig", "d2.step"),
    ("memory-wall", "d3.roofline", "d3.batch"),
    ("moe", "e1.load", "e1.capacity"),
    ("lora", "e2.counts", "e2.r"),
]

# Counts the server runs the page sees (the app's script state turning "running") and exposes
# what the live chart draws. Installed before the page's own scripts.
PROBE = """() => {
  window.__runs = 0;
  const watch = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) { requestAnimationFrame(watch); return; }
    let last = app.getAttribute('data-test-script-state');
    new MutationObserver(() => {
      const now = app.getAttribute('data-test-script-state');
      if (now === 'running' && last !== 'running') window.__runs += 1;
      last = now;
    }).observe(app, { attributes: true, attributeFilter: ['data-test-script-state'] });
  };
  watch();
}"""

HOST = """(key) => Array.from(document.querySelectorAll('[data-testid^="stBidiComponent"]'))
  .map(el => el.querySelector('.anatomy-chart')).find(h => h && h.__live && h.__exportName === key)"""

# The trace data on screen, as plain numbers and strings (plotly's computed full data).
SCREEN = """(key) => {
  const host = (%s)(key);
  const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(plain) : v;
  return host._fullData.map(t => ({x: plain(t.x), y: plain(t.y), z: plain(t.z),
                                   color: plain(t.marker && t.marker.color)}));
}""" % HOST


def _open(browser, url: str):
    """A page at ``url`` and the list its errors go to: exceptions, console errors, responses >= 400
    (less Streamlit's own two base-path probes of a deep link, tests/browser/test_pages.py)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    slug = urlparse(url).path.strip("/")
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error"
            and not (m.text.startswith("Failed to load resource") and "404" in m.text) else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not _base_path_probe(r.url, slug) else None)
    page.add_init_script(f"({PROBE})()")
    page.goto(url)
    settle(page)
    return page, errors


def _state(page, key: str) -> dict:
    return page.evaluate(f"""(key) => {{ const h = ({HOST})(key);
        return {{index: h.__live.index, draws: h.__live.draws, frame: h.dataset.frame,
                 shown: h.__live.shown.textContent, n: h.__live.values.length, values: h.__live.values}}; }}""", key)


def _query(page) -> dict:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def _holds(query: dict, key: str, value) -> bool:
    got = query.get(key)
    if got is None:
        return False
    return got == value if isinstance(value, str) else float(got) == pytest.approx(value)


def _wait_for_url(page, key: str, value) -> None:
    """Until the page's URL holds ``key=value``: only the server's run writes it (ui/live.py), so this
    is the proof that the value reached the server and was run. The run counter alone can miss a
    run on a busy machine: when the start and the end of a quick run reach the page in one task, the
    app's script state never shows "running" (1 of 10 under two workers, twice, and once in a whole
    run: a release whose run never came in 60 s)."""
    for _ in range(CHANGE_MS // 100):
        if _holds(_query(page), key, value):
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the URL never held {key}={value}: {_query(page)}")


def _same_screen(a: list, b: list) -> None:
    assert len(a) == len(b)
    for ta, tb in zip(a, b, strict=True):
        for k in ("x", "y", "z", "color"):
            va, vb = ta.get(k), tb.get(k)
            if isinstance(va, list) and va and isinstance(va[0], (int, float)):
                assert va == pytest.approx(vb, rel=1e-6, abs=1e-9, nan_ok=True), k
            else:
                assert json.dumps(va) == json.dumps(vb), k


@pytest.mark.parametrize("path,fig_key,key", LIVE)
def test_keys_and_drag_move_the_figure_without_a_run(chromium_browser, server_url, path, fig_key, key):
    page, errors = _open(chromium_browser, f"{server_url}/{path}?lang=en")
    start = _state(page, fig_key)
    runs = page.evaluate("() => window.__runs")
    slider = page.locator(f'.anatomy-live[data-key="{fig_key}"] input[type=range]')
    slider.scroll_into_view_if_needed()
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"(k) => ({HOST})(k).dataset.frame === String({start['index'] + 2})", arg=fig_key,
                           timeout=CHANGE_MS)
    assert page.evaluate("() => window.__runs") == runs                # drawn in the browser alone
    # The burst goes to the server once, 600 ms after its last key (ui/chart/live.js: KEY_WAIT). Waited
    # for before the drag: on a busy machine the drag could otherwise begin after the keys' run was
    # sent, and the runs counted below would be two.
    _wait_for_url(page, key, start["values"][start["index"] + 2])
    settle(page)
    assert page.evaluate("() => window.__runs") - runs <= 1            # one run for the two keys
    runs = page.evaluate("() => window.__runs")
    assert _state(page, fig_key)["index"] == start["index"] + 2        # and the slider stays there
    # A drag across the slider: frames change, no run until the mouse is let go. To 30 % or 70 % of its
    # length, whichever lies farther from the keys' value (a drag ending there would send nothing).
    n = start["n"]
    frac = max((0.3, 0.7), key=lambda f: abs(round(f * (n - 1)) - (start["index"] + 2)))
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 4, y)
    page.mouse.down()
    draws = _state(page, fig_key)["draws"]
    for i in range(1, 31):
        page.mouse.move(box["x"] + 4 + (box["width"] - 8) * i / 30 * frac, y)
    page.wait_for_timeout(100)
    moved = _state(page, fig_key)
    # Within a value, or 3% of the grid where a value is narrower than the thumb's inset (C3's 257 keys)
    assert moved["draws"] >= draws + 2
    assert abs(moved["index"] - round(frac * (n - 1))) <= max(1, round(0.03 * (n - 1)))
    assert page.evaluate("() => window.__runs") == runs
    page.mouse.up()
    _wait_for_url(page, key, moved["values"][moved["index"]])           # a run on release (the URL)
    settle(page)
    page.wait_for_timeout(800)
    assert page.evaluate("() => window.__runs") - runs <= 1              # and only one
    after = _state(page, fig_key)
    assert after["index"] == moved["index"]
    value = after["values"][after["index"]]
    query = _query(page)
    if isinstance(value, str):                                         # the URL holds it
        assert query[key] == value
    else:
        assert float(query[key]) == pytest.approx(value)
    screen = page.evaluate(SCREEN, fig_key)
    assert not errors, errors
    page.close()
    # A fresh page at that address draws the same figure.
    fresh, errors = _open(chromium_browser, f"{server_url}/{path}?lang=en&{key}={query[key]}")
    assert _state(fresh, fig_key)["index"] == after["index"]
    _same_screen(fresh.evaluate(SCREEN, fig_key), screen)
    assert not errors, errors
    fresh.close()


@pytest.mark.parametrize("path,fig_key,key", LIVE)
def test_bad_url_value_opens_on_the_default_frame(chromium_browser, server_url, path, fig_key, key):
    """A value that is no number: the live chart opens on the frame of the control's default, with no
    exception and no console error. Where values between and beyond the grid land is the index the
    server sends (ui.live): tests/test_live.py::test_url_values_snap_to_the_grid checks it in an
    AppTest for these same controls (issue 40: two page loads each fewer; the chart showing the index
    it is sent is this file's other tests)."""
    page, errors = _open(chromium_browser, f"{server_url}/{path}?lang=zh&{key}=abc")
    st = _state(page, fig_key)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()
    values = st["values"]
    if isinstance(values[0], str):       # options (E1's capacity factors, "∞"): by the numbers they name
        values = [float("inf") if v == "∞" else float(v) for v in values[:-1]]
    default_index = st["index"]
    assert default_index == values.index(min(values, key=lambda v: abs(v - values[default_index])))
    assert not errors


def test_dependent_text_follows_the_release(chromium_browser, server_url):
    """D1: the caption under the bars names the temperature; it changes only after release."""
    page, errors = _open(chromium_browser, f"{server_url}/generation?lang=en")
    caption = page.locator('[data-testid="stCaptionContainer"]', has_text="Drag the temperature").first
    before = caption.inner_text()
    slider = page.locator('.anatomy-live[data-key="d1.bars"] input[type=range]')
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function(f"(k) => ({HOST})(k).__live.index === ({HOST})(k).__live.values.length - 1",
                           arg="d1.bars", timeout=CHANGE_MS)
    assert caption.inner_text() == before and "T = 0.00" in before    # not before the release
    page.wait_for_function("() => document.body.innerText.includes('At T = 5.00')", timeout=WAIT_MS)
    settle(page)
    assert not errors, errors
    page.close()


def test_export_is_the_frame_on_screen(chromium_browser, server_url):
    """CSV of the live chart right after arrow keys (before any run): the frame shown, not the
    server's last figure."""
    import csv
    import io

    import i18n
    from tests.browser.test_classroom import _download
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page.add_init_script(f"({PROBE})()")
    page.goto(f"{server_url}/generation?lang=en")
    settle(page)
    slider = page.locator('.anatomy-live[data-key="d1.bars"] input[type=range]')
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function(f"(k) => ({HOST})(k).dataset.frame === '100'", arg="d1.bars", timeout=CHANGE_MS)
    chart = page.locator('.anatomy-live[data-key="d1.bars"] + .anatomy-chart')
    got = _download(page, chart, i18n.t("en", "classroom.csv"))
    rows = [r for r in csv.DictReader(io.StringIO(open(got.path(), encoding="utf-8-sig").read())) if r["trace"] == "1"]
    shown = page.evaluate(SCREEN, "d1.bars")[1]["y"]
    assert [float(r["y"]) for r in rows] == pytest.approx(shown, rel=1e-6)
    page.close()


def test_presenter_mode_and_no_plotly(chromium_browser, server_url):
    """Presenter mode draws the frames with the larger type; without plotly.js the chart says so,
    the slider stays, and the page still follows the value on release."""
    page, errors = _open(chromium_browser, f"{server_url}/generation?lang=zh&present=1&step=2")
    assert page.evaluate(f"(k) => ({HOST})(k)._fullLayout.font.size", "d1.bars") >= 18
    assert page.locator(".anatomy-live.anatomy-live-present").count() >= 1
    page.evaluate("""(k) => { const s = document.querySelector('.anatomy-live[data-key="' + k + '"] input');
        s.value = '40'; s.dispatchEvent(new Event('input', {bubbles: true})); }""", "d1.bars")
    page.wait_for_function(f"(k) => ({HOST})(k).dataset.frame === '40'", arg="d1.bars", timeout=CHANGE_MS)
    assert page.evaluate(f"(k) => ({HOST})(k)._fullLayout.font.size", "d1.bars") >= 18   # still presenter type
    assert not errors, errors
    page.close()

    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route("**/app/static/plotly.min.js*", lambda route: route.abort())
    page = context.new_page()
    page.add_init_script(f"({PROBE})()")
    page.goto(f"{server_url}/generation?lang=zh")
    page.wait_for_function("() => { const b = document.querySelector('.anatomy-live[data-key=\"d1.bars\"]');"
                           " return b && b.nextElementSibling.textContent.includes('plotly.js'); }", timeout=WAIT_MS)
    slider = page.locator('.anatomy-live[data-key="d1.bars"] input[type=range]')
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function("() => new URL(location.href).searchParams.get('d1.temperature') === '5'", timeout=WAIT_MS)
    page.wait_for_function("() => document.body.innerText.includes('T = 5.00')", timeout=WAIT_MS)
    assert page.locator('[data-testid="stException"]').count() == 0
    context.close()


# What a heatmap chart shows: each heatmap's image (its cells and place; ui/chart.js's own where
# plotly drew none), each shape's path, each tick label's text.
PAINTED = """(key) => Array.from((%s)(key).querySelectorAll(
    'g.hm image, g.anatomy-cells image, .shapelayer path, g.ytick text, g.x4tick text'))
  .filter((el) => el.style.display !== 'none').map((el) => el.tagName === 'image'
    ? ['x', 'y', 'width', 'height'].map((a) => el.getAttribute(a)).join(' ') + ' ' + el.getAttribute('href')
    : el.tagName + ' ' + (el.getAttribute('d') || el.textContent))""" % HOST


def test_painted_heatmap_frames_are_what_plotly_draws(chromium_browser, server_url):
    """D2's six heatmaps are painted by ui/chart.js while the step moves (drawCells, no Plotly.react):
    every image, the red frame's path and the row labels equal what plotly draws for that step at
    rest (after the release), byte for byte, in both directions, with no run before the release."""
    page, errors = _open(chromium_browser, f"{server_url}/kv-cache?lang=zh&d2.step=1")
    slider = page.locator('.anatomy-live[data-key="d2.fig"] input[type=range]')
    slider.scroll_into_view_if_needed()
    # 1 -> 2 -> 1 -> 0 -> 1: at step 0 the past rows are empty (plotly draws no image for them)
    for key in ("ArrowRight", "ArrowLeft", "ArrowLeft", "ArrowRight"):
        runs = page.evaluate("() => window.__runs")
        draws = _state(page, "d2.fig")["draws"]
        slider.focus()
        page.keyboard.press(key)
        page.wait_for_function(f"([k, n]) => ({HOST})(k).__live.draws > n", arg=["d2.fig", draws], timeout=CHANGE_MS)
        painted = page.evaluate(PAINTED, "d2.fig")
        assert page.evaluate(f"(k) => ({HOST})(k).__live.fastDrawn", "d2.fig"), "drawn by the painter"
        assert page.evaluate("() => window.__runs") == runs
        # The release's run: the server answers with the value on screen (its own state; a run too
        # quick for the script-state probe to see as "running" is still waited for).
        page.wait_for_function(f"(k) => {{ const s = ({HOST})(k).__live; return s.server === s.index"
                               " && s.awaiting === null && !s.fastDrawn && !s.timer; }", arg="d2.fig", timeout=CHANGE_MS)
        settle(page)
        page.wait_for_timeout(300)
        assert page.evaluate(PAINTED, "d2.fig") == painted
    assert not errors, errors
    page.close()


# What a scatter chart shows: each marker's place and fill, each line's vertices, each label's place
# and text, the legend's names and the title.
POINTS = """(key) => { const host = (%s)(key);
  const num = (s) => (s.match(/-?[\\d.]+(e-?\\d+)?/g) || []).map(Number);
  return {traces: Array.from(host.querySelectorAll('.scatterlayer > g.trace')).map((g) => ({
      points: Array.from(g.querySelectorAll('.points path.point')).map((p) => [...num(p.getAttribute('transform')),
        getComputedStyle(p).fill, getComputedStyle(p).fillOpacity, p.getAttribute('d')]),
      lines: Array.from(g.querySelectorAll('.lines path.js-line')).map((p) => {
        const v = num(p.getAttribute('d')); return v.flatMap((_, j) => j %% 2 ? [] : [[v[j], v[j + 1]]]); }),
      texts: Array.from(g.querySelectorAll('.text text')).map((t) => [Number(t.getAttribute('x')),
        Number(t.getAttribute('y')), t.textContent])})),
    legend: Array.from(host.querySelectorAll('.legend text.legendtext')).map((t) => t.textContent),
    title: host.querySelector('.g-gtitle text').textContent}; }""" % HOST


def _same_points(painted: dict, drawn: dict) -> None:
    """The written frame is the one plotly draws: markers, labels, names and title alike (places to
    0.01 px); plotly's line leaves out points on a straight run, so its vertices are ours, in order."""
    assert painted["title"] == drawn["title"] and painted["legend"] == drawn["legend"]
    assert len(painted["traces"]) == len(drawn["traces"])
    for ours, theirs in zip(painted["traces"], drawn["traces"], strict=True):
        assert len(ours["points"]) == len(theirs["points"])
        for a, b in zip(ours["points"], theirs["points"], strict=True):
            assert a[:2] == pytest.approx(b[:2], abs=0.011) and a[2:] == b[2:]
        assert len(ours["texts"]) == len(theirs["texts"])
        for a, b in zip(ours["texts"], theirs["texts"], strict=True):
            assert a[:2] == pytest.approx(b[:2], abs=0.011) and a[2] == b[2]
        assert len(ours["lines"]) == len(theirs["lines"])
        for line, simple in zip(ours["lines"], theirs["lines"], strict=True):
            assert line[0] == pytest.approx(simple[0], abs=0.011) and line[-1] == pytest.approx(simple[-1], abs=0.011)
            j = 0
            for vertex in simple:
                while j < len(line) and line[j] != pytest.approx(vertex, abs=0.011):
                    j += 1
                assert j < len(line), f"plotly's vertex {vertex} is not on the written line"


@pytest.mark.parametrize("path,fig_key,query", [("rope", "c3.plane", "c3.m=4"), ("memory-wall", "d3.roofline", "d3.batch=4")])
def test_written_scatter_frames_are_what_plotly_draws(chromium_browser, server_url, path, fig_key, query):
    """C3's plane (m) and D3's roofline (the batch, log axes) are written into plotly's SVG by
    ui/chart.js while the slider moves (drawPoints, no plotly call): C3's trail markers and their
    colours, the hand, the arc, the angle's label, D3's two points, the legend names and the title
    equal what plotly draws for that value after the release, with no run before the release; the
    first value (C3: m = 0, one marker, one colour value) included."""
    page, errors = _open(chromium_browser, f"{server_url}/{path}?lang=zh&{query}")
    slider = page.locator(f'.anatomy-live[data-key="{fig_key}"] input[type=range]')
    slider.scroll_into_view_if_needed()
    for key in ("ArrowRight", "ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowRight"):   # the 3rd, 4th, 3rd, 2nd, 1st, 2nd value
        runs = page.evaluate("() => window.__runs")
        draws = _state(page, fig_key)["draws"]
        slider.focus()
        page.keyboard.press(key)
        page.wait_for_function(f"([k, n]) => ({HOST})(k).__live.draws > n", arg=[fig_key, draws], timeout=CHANGE_MS)
        painted = page.evaluate(POINTS, fig_key)
        assert page.evaluate(f"(k) => ({HOST})(k).__live.pointsDrawn", fig_key), "written by drawPoints"
        assert page.evaluate("() => window.__runs") == runs
        page.wait_for_function(f"(k) => {{ const s = ({HOST})(k).__live; return s.server === s.index"
                               " && s.awaiting === null && !s.fastDrawn && !s.timer; }", arg=fig_key, timeout=CHANGE_MS)
        settle(page)
        page.wait_for_timeout(300)
        _same_points(painted, page.evaluate(POINTS, fig_key))
    assert not errors, errors
    page.close()


# What any live chart shows, as plotly draws it or a painter writes it: every bar's box and fill, every
# marker's place and fill, every line's vertices, every text (bar and point labels, title, axis
# titles, annotations, tick labels, each with its place), the legend's entries with their places and
# whether the legend stays inside the chart, each axis' range, each heatmap image and shape path.
# Places are in px to 0.01 (plotly writes two decimals); colours as the browser computes them.
PRINT = """(key) => { const host = (%s)(key);
  const num = (s) => ((s || '').match(/-?[\\d.]+(e-?\\d+)?/g) || []).map(Number);
  const fill = (el) => { const s = getComputedStyle(el); return s.fill + ' ' + s.fillOpacity; };
  const shown = (el) => el.style.display !== 'none' && getComputedStyle(el).display !== 'none';
  const text = (el) => [el.textContent, ...num(el.getAttribute('x')), ...num(el.getAttribute('y')),
                        ...num(el.getAttribute('transform'))];
  const all = (sel, f) => Array.from(host.querySelectorAll(sel)).filter(shown).map(f);
  const fl = host._fullLayout, svg = host.querySelector('svg.main-svg').getBoundingClientRect();
  const legend = host.querySelector('.legend');
  const box = legend && legend.getBoundingClientRect();
  const s = host.__live;
  return {
    state: {committed: s.awaiting !== null || !s.timer, index: s.index},
    bars: Array.from(host.querySelectorAll('.barlayer > g.trace')).map((g) =>
      Array.from(g.querySelectorAll('g.point > path')).map((p) => [num(p.getAttribute('d')), fill(p)])),
    barTexts: all('.barlayer text.bartext', text),
    points: Array.from(host.querySelectorAll('.scatterlayer > g.trace')).map((g) =>
      Array.from(g.querySelectorAll('.points path.point')).map((p) => [...num(p.getAttribute('transform')), fill(p),
        p.getAttribute('d')])),
    lines: Array.from(host.querySelectorAll('.scatterlayer > g.trace')).map((g) =>
      Array.from(g.querySelectorAll('.lines path.js-line')).map((p) => {
        const v = num(p.getAttribute('d')); return v.flatMap((_, j) => j %% 2 ? [] : [[v[j], v[j + 1]]]); })),
    texts: all('.scatterlayer .text text, .g-gtitle text, .g-xtitle text, .g-ytitle text, .annotation-text', text),
    ticks: all('.xaxislayer-above text, .yaxislayer-above text, .xtick text, .ytick text', text),
    legend: all('.legend .traces', (g) => [g.querySelector('text.legendtext').textContent,
                                          ...num(g.getAttribute('transform'))]),
    legendInside: !box || (box.left >= svg.left - 0.5 && box.right <= svg.right + 0.5),
    ranges: Object.keys(fl).filter((k) => /^[xy]axis\\d*$/.test(k)).sort()
      .map((k) => [k, fl[k].type, ...(fl[k].range || []).map((v) => typeof v === 'number' ? Number(v.toPrecision(6)) : v)]),
    images: all('g.hm image, g.anatomy-cells image', (el) => ['x', 'y', 'width', 'height']
      .map((a) => el.getAttribute(a)).join(' ') + ' ' + el.getAttribute('href')),
    shapes: all('.shapelayer path', (el) => el.getAttribute('d')),
  }; }""" % HOST


def _close(a, b) -> bool:
    """Two lists of numbers and strings alike, numbers to 0.011 (px written to two decimals)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == pytest.approx(b, abs=0.011)
    return a == b


def _first_difference(a, b, at=()):
    """Where two fingerprints first part, and what each holds there."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for j, (x, y) in enumerate(zip(a, b, strict=True)):
            if not _close(x, y):
                return _first_difference(x, y, (*at, j))
    return f"at {list(at)}: painted {a!r:.300}, plotly {b!r:.300}"


def _same_print(painted: dict, drawn: dict, where: str) -> None:
    """The frame drawn while the slider moved is plotly's at rest, but for lines: plotly's path
    leaves out points on a straight run, so its vertices must be on the painted one, in order."""
    for part in ("bars", "barTexts", "points", "texts", "ticks", "legend", "legendInside", "ranges", "images",
                 "shapes"):
        assert _close(painted[part], drawn[part]), f"{where}: {part} differ:\n{_first_difference(painted[part], drawn[part])}"
    assert len(painted["lines"]) == len(drawn["lines"]), where
    for ours, theirs in zip(painted["lines"], drawn["lines"], strict=True):
        assert len(ours) == len(theirs), where
        for line, simple in zip(ours, theirs, strict=True):
            assert _close(line[:1] + line[-1:], simple[:1] + simple[-1:]), f"{where}: a line's ends differ"
            j = 0
            for vertex in simple:
                while j < len(line) and not _close(line[j], vertex):
                    j += 1
                assert j < len(line), f"{where}: plotly's vertex {vertex} is not on the painted line"


# Every live figure, a start (query) and the keys pressed from there: each press's frame is compared
# with the settled one. Chosen where the frames once differed: E2's frozen bars, D1's colours at
# T = 0 and above (and Home from T = 5), C3's legend from m = 98 to 100 and the key's marker at
# either end of the distance axis.
EVERY = [
    ("generation", "d1.bars", "en", "", ("ArrowRight", "End", "Home")),
    ("positions", "a3.offsets", "zh", "", ("ArrowRight", "End")),
    ("attention", "b1.hist", "en", "", ("ArrowRight", "End")),
    ("masks", "b3.leak", "zh", "", ("ArrowLeft", "ArrowRight")),
    ("rope", "c3.plane", "en", "c3.m=98", ("ArrowRight", "ArrowLeft")),
    ("rope", "c3.dist", "zh", "", ("End", "Home")),
    ("kv-cache", "d2.fig", "en", "", ("ArrowRight", "End")),
    ("memory-wall", "d3.roofline", "zh", "", ("ArrowRight", "End")),
    ("moe", "e1.load", "en", "", ("ArrowRight", "End")),
    ("lora", "e2.counts", "zh", "", ("ArrowRight", "End", "Home")),
]


@pytest.mark.parametrize("path,fig_key,lang,query,keys", EVERY, ids=[e[1] for e in EVERY])
def test_live_frames_are_what_plotly_draws(chromium_browser, server_url, path, fig_key, lang, query, keys):
    """Each live figure, moved by keys: the frame on screen before the server's answer (painted,
    animated or redrawn: whatever the browser chose) equals what plotly draws at rest for that value
    after the release, in every bar, marker, line, text, tick, legend entry, range and image."""
    page, errors = _open(chromium_browser, f"{server_url}/{path}?lang={lang}&{query}")
    slider = page.locator(f'.anatomy-live[data-key="{fig_key}"] input[type=range]')
    slider.scroll_into_view_if_needed()
    for key in keys:
        runs = page.evaluate("() => window.__runs")
        draws = _state(page, fig_key)["draws"]
        slider.focus()
        page.keyboard.press(key)
        page.wait_for_function(f"([k, n]) => ({HOST})(k).__live.draws > n", arg=[fig_key, draws], timeout=CHANGE_MS)
        # An animation lands on a later animation frame: read after it and one more frame.
        page.wait_for_function(f"(k) => !({HOST})(k).__live.animating", arg=fig_key, timeout=CHANGE_MS)
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        painted = page.evaluate(PRINT, fig_key)
        assert not painted["state"]["committed"], "read before the release"
        assert page.evaluate("() => window.__runs") == runs
        page.wait_for_function(f"(k) => {{ const s = ({HOST})(k).__live; return s.server === s.index"
                               " && s.awaiting === null && !s.fastDrawn && !s.timer; }", arg=fig_key, timeout=CHANGE_MS)
        settle(page)
        page.wait_for_timeout(300)
        drawn = page.evaluate(PRINT, fig_key)
        assert drawn["state"]["index"] == painted["state"]["index"]
        _same_print(painted, drawn, f"{fig_key} {key} -> frame {painted['state']['index']}")
    assert not errors, errors
    page.close()
