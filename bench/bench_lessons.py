"""Speed of every lesson, one row each:
  script  median wall time of one script run at default settings (AppTest, >= 20 reruns)
  redraw  median time from a slider key press in Chromium to the changed figure on screen,
          against a live server (which, unlike AppTest, pays the post-run GC if it is on)
  live    median time from a key press on the page's live slider (ui/live.py) to the next painted
          frame with the changed figure: no server round trip (goal <= 1.0x the floor's redraw)
  drag    the mouse across the live slider in 60 steps over 2 s: figure changes per second (goal
          >= 30 where the slider has that many values: "crossed" says how many it passed), and the
          server runs during the drag (goal 0) and after the release (goal exactly 1)

    python -m bench.bench_lessons [--runs 20] [--presses 10] [--only b1,c3] [--no-browser] [--real]
    python -m bench.bench_lessons --drag 3 [--presses 5] [--only a3,c3,d1]   (the live sliders alone)
--real opens each lesson that offers SmolLM2 on it (REAL_QUERY), its results cached by the warm-up runs.
Budgets: script <= 50 ms, redraw <= 150 ms. Numbers on these shared 2-core machines are noisy:
compare rows measured in the same run. The last row, "floor", is a page with one slider and
one small heatmap (bench/floor_app.py): what Streamlit and plotly.js cost on this machine now.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from ui.course import existing_lessons  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# The address that opens a lesson on SmolLM2 (ui.model.model_switch's key, or the lesson's own).
REAL_QUERY = {"b1": {"b1.source": "smollm2", "b1.ex_open": "true", "b1.ex.lm": "smollm2"},
              "b2": {"b2.lm": "smollm2", "b2.ex_open": "true", "b2.ex.lm": "smollm2"},
              "d3": {"d3.model": "smollm2-135m", "d3.dtype": "q4_1"}}
REAL_LESSONS = ("a1", "a2", "b1", "b2", "c2", "c3", "d1", "d2", "d3", "d4", "f1", "f2")


def script_median_ms(page_file: str, runs: int, query: dict[str, str] | None = None) -> float:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()  # app.py first, so the page then runs inside the frame (see tests/apptest_util.py)
    # A server loads SmolLM2 in a thread before its class arrives (ui/preload.py): measure the
    # lessons after it, not while it reads 0.5 GB beside them (A1 and A2 read 1.4-1.7x slower).
    from ui.preload import wait_for_real_model
    wait_for_real_model()
    at.switch_page(f"lessons/{page_file}")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for _ in range(3):  # warm caches, as a student's second look would
        at.run()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


# What each plot on the page is showing: plotly.js replaces a plot's data and layout objects
# whenever it draws a new figure, so comparing the objects themselves (not their contents,
# which would cost the page a JSON dump of every array on every frame) finds the change.
SIGNATURE = """() => { window.__shown = Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(el => [el, el.data, el.layout]); return window.__shown.length; }"""
WAIT_FOR_CHANGE = """async () => {
  const changed = () => {
    const now = Array.from(document.querySelectorAll('.js-plotly-plot'));
    if (now.length !== window.__shown.length) return true;
    return now.some((el, i) => { const [was, data, layout] = window.__shown[i];
                                 return el !== was || el.data !== data || el.layout !== layout; });
  };
  const limit = performance.now() + 10000;
  while (!changed()) {
    if (performance.now() > limit) throw new Error('figure did not change');
    await new Promise(r => requestAnimationFrame(r));
  }
  return performance.now() - window.__t0;
}"""
SLIDER = '[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]'
LIVE = ".anatomy-live input[type=range]"

# Counts the server runs the tab sees (the app's script state turning "running"), from the start.
RUN_PROBE = """() => {
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
# The live chart of the first live slider, and what it has drawn (ui/chart.js: host.__live).
LIVE_HOST = """(key) => { const box = document.querySelector(key ? '.anatomy-live[data-key="' + key + '"]' : '.anatomy-live');
  return box && box.nextElementSibling; }"""
# After a key press: frames until the chart has drawn a new frame, then the frame that paints it.
WAIT_FOR_LIVE = """async ([draws, key]) => {
  const host = (%s)(key);
  const limit = performance.now() + 10000;
  while (host.__live.draws === draws) {
    if (performance.now() > limit) throw new Error('live figure did not change');
    await new Promise(r => requestAnimationFrame(r));
  }
  await new Promise(r => requestAnimationFrame(r));   // the frame drawn is painted before this one runs
  return performance.now() - window.__t0;
}""" % LIVE_HOST
# During a drag: the time of every new frame the chart draws.
DRAW_LOG = """(key) => { const host = (%s)(key); window.__drawTimes = [];
  let seen = host.__live.draws;
  const tick = () => { if (!window.__drawTimes) return;
    if (host.__live.draws !== seen) { seen = host.__live.draws; window.__drawTimes.push(performance.now()); }
    requestAnimationFrame(tick); };
  requestAnimationFrame(tick); }""" % LIVE_HOST


def press_times(page, presses: int) -> list[float]:
    """Key press on the first slider -> first animation frame with changed figure data."""
    slider = page.locator(SLIDER).first
    times = []
    for i in range(presses):
        slider.focus()
        page.evaluate(SIGNATURE)   # what each plot shows now
        page.evaluate("() => { window.__t0 = performance.now(); }")
        page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        times.append(page.evaluate(WAIT_FOR_CHANGE))
        page.wait_for_timeout(300)
    return times


def _live_slider(page, key: str | None):
    return page.locator(f'.anatomy-live[data-key="{key}"] input[type=range]' if key else LIVE).first


def live_times(page, presses: int, key: str | None = None) -> list[float]:
    """Key press on the live slider (the first, or the chart ``key``'s) -> the next painted frame
    with the changed figure (no run)."""
    slider = _live_slider(page, key)
    slider.scroll_into_view_if_needed()
    times = []
    # At the right end (after a drag) the first press goes left: a press at an end changes nothing.
    at_end = page.evaluate(f"(key) => {{ const s = ({LIVE_HOST})(key).__live; return s.index === s.values.length - 1; }}", key)
    for i in range(presses):
        slider.focus()
        draws = page.evaluate(f"(key) => ({LIVE_HOST})(key).__live.draws", key)
        page.evaluate("() => { window.__t0 = performance.now(); }")
        page.keyboard.press("ArrowRight" if (i % 2 == 0) != at_end else "ArrowLeft")
        times.append(page.evaluate(WAIT_FOR_LIVE, [draws, key]))
        page.wait_for_timeout(1200)   # the value is sent 600 ms after the last key: let that run end
    return times


def drag(page, key: str | None = None) -> dict:
    """The mouse across the live slider, 60 steps in 2 s, from its left end to its right end:
    figure changes a second, how many values it crossed, server runs during and after."""
    slider = _live_slider(page, key)
    slider.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = slider.bounding_box()
    n = int(page.evaluate(f"(key) => ({LIVE_HOST})(key).__live.values.length", key))
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 2, y)
    page.mouse.down()
    page.wait_for_timeout(200)
    runs = page.evaluate("() => window.__runs")
    page.evaluate(DRAW_LOG, key)
    start = time.perf_counter()
    for i in range(1, 61):
        page.mouse.move(box["x"] + 2 + (box["width"] - 4) * i / 60, y)
        wait = start + 2.0 * i / 60 - time.perf_counter()
        if wait > 0:
            page.wait_for_timeout(wait * 1000)
    stamps = page.evaluate("() => { const t = window.__drawTimes; window.__drawTimes = null; return t; }")
    during = page.evaluate("() => window.__runs") - runs
    page.mouse.up()
    page.wait_for_timeout(2500)
    after = page.evaluate("() => window.__runs") - runs - during
    span = (stamps[-1] - stamps[0]) / 1000 if len(stamps) > 1 else 0.0
    return {"fps": (len(stamps) - 1) / span if span else 0.0, "changes": len(stamps), "crossed": n - 1,
            "during": during, "after": after}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(app: str, port: int = 0, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """``streamlit run app`` on a free port (or ``port``), with ``env`` added to its environment;
    returns once it answers its health check (or after a minute): (process, base URL)."""
    port = port or _free_port()   # another benchmark or test server may hold a fixed port
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / app),
                             "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    return proc, url


def browser_medians(slugs: list[str], presses: int, app: str = "app.py", port: int = 0,
                    live: dict | None = None) -> dict[str, float | None]:
    """Median slider -> redraw per page; with ``live`` (a dict to fill), each page's live slider
    too: {"live": median ms, "drag": drag()}."""
    from playwright.sync_api import sync_playwright

    proc, url = serve(app, port)
    out: dict[str, float | None] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            first_session(browser, url)
            for slug in slugs:
                page = lesson_tab(browser, url, slug)
                if page.locator(SLIDER).count() == 0:
                    out[slug] = None
                    page.close()
                    continue
                try:
                    out[slug] = statistics.median(press_times(page, presses))
                except Exception:        # its first Streamlit slider moves no figure (E2's α: the
                    out[slug] = None     # rank, the figure's control, is live): n/a
                if live is not None and page.locator(LIVE).count():
                    page.wait_for_timeout(1000)
                    live[slug] = {"live": statistics.median(live_times(page, presses)), "drag": drag(page)}
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def first_session(browser, url: str) -> None:
    """The server's first session (see tests/browser/conftest.py), so that no lesson pays for it."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_selector('[data-testid="stMain"] h1, [data-testid="stMain"] .js-plotly-plot', timeout=60000)
    page.close()


def lesson_tab(browser, url: str, slug: str):
    """A fresh tab on one lesson, as a student opening a shared link, counting the server's runs."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.add_init_script(f"({RUN_PROBE})()")
    page.goto(f"{url}/{slug}")
    page.wait_for_selector('[data-testid="stMain"] .js-plotly-plot', timeout=60000)
    page.wait_for_timeout(1500)
    return page


def live_only(slugs: list[str], presses: int, drags: int) -> list[dict]:
    """Every live slider of each page (not only the first), each measured twice in one tab: with the
    full redraw (Plotly.react on every frame, ui/chart.js before the fast path: window.__anatomyFullRedraw)
    and with the fast path. ``drags`` drags each: the median fps, the worst runs during/after."""
    from playwright.sync_api import sync_playwright

    proc, url = serve("app.py")
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            first_session(browser, url)
            for slug in slugs:
                page = lesson_tab(browser, url, slug)
                keys = page.evaluate("() => Array.from(document.querySelectorAll('.anatomy-live'))"
                                     ".map(b => b.dataset.key)")
                for key in keys:
                    for mode in ("full", "fast"):
                        page.evaluate(f"() => {{ window.__anatomyFullRedraw = {str(mode == 'full').lower()}; }}")
                        live = statistics.median(live_times(page, presses, key))
                        runs = [drag(page, key) for _ in range(drags)]
                        rows.append({"slug": slug, "key": key, "mode": mode, "live": live,
                                     "fps": statistics.median(r["fps"] for r in runs),
                                     "changes": statistics.median(r["changes"] for r in runs),
                                     "crossed": runs[0]["crossed"], "during": max(r["during"] for r in runs),
                                     "after": sorted({r["after"] for r in runs})})
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--presses", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--real", action="store_true", help="the lessons that offer SmolLM2, opened on it")
    ap.add_argument("--drag", type=int, default=0, metavar="N",
                    help="only the live sliders: every one on each page, N drags each, full redraw against "
                         "the fast path, with the floor row")
    args = ap.parse_args()
    lessons = [lesson for lesson in existing_lessons()
               if not args.only or lesson.ns in args.only.split(",")]
    if args.drag:
        rows = live_only([lesson.url_path for lesson in lessons], args.presses, args.drag)
        floor = browser_medians([""], args.presses, "bench/floor_app.py")[""]
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; floor (slider -> redraw) {floor:.0f} ms")
        print(f"{'page':<13}{'chart':<14}{'redraw':<7}{'live (ms)':>10}{'x floor':>9}{'drag fps':>10}"
              f"{'changes':>9}{'crossed':>9}{'runs drag/after':>17}")
        for r in rows:
            after = "/".join(str(a) for a in r["after"])
            print(f"{r['slug']:<13}{r['key']:<14}{r['mode']:<7}{r['live']:>10.0f}{r['live'] / floor:>9.2f}"
                  f"{r['fps']:>10.0f}{r['changes']:>9.0f}{r['crossed']:>9}{str(r['during']) + ' / ' + after:>17}")
        return
    if args.real:
        lessons = [lesson for lesson in lessons if lesson.ns in REAL_LESSONS]
    scripts = {lesson.ns: script_median_ms(lesson.file, args.runs,
                                           REAL_QUERY.get(lesson.ns, {f"{lesson.ns}.lm": "smollm2"}) if args.real else None)
               for lesson in lessons}
    live: dict = {}
    redraw = {} if args.no_browser else browser_medians([lesson.url_path for lesson in lessons], args.presses,
                                                        live=live)
    floor = None if args.no_browser else browser_medians([""], args.presses, "bench/floor_app.py")[""]
    print(f"{'lesson':<8}{'script median (ms)':>20}{'slider->redraw median (ms)':>30}"
          f"{'live (ms)':>11}{'x floor':>9}{'drag fps':>10}{'crossed':>9}{'runs drag/after':>17}")
    for lesson in lessons:
        r = redraw.get(lesson.url_path)
        r_text = "n/a" if r is None else f"{r:.0f}"
        row = f"{lesson.code:<8}{scripts[lesson.ns]:>20.1f}{r_text:>30}"
        one = live.get(lesson.url_path)
        if one:
            d = one["drag"]
            ratio = f"{one['live'] / floor:.2f}" if floor else "n/a"
            row += (f"{one['live']:>11.0f}{ratio:>9}{d['fps']:>10.0f}{d['crossed']:>9}"
                    f"{str(d['during']) + ' / ' + str(d['after']):>17}")
        print(row)
    if floor is not None:
        print(f"{'floor':<8}{'':>20}{floor:>30.0f}   (bench/floor_app.py: one slider, one 11x11 heatmap)")


if __name__ == "__main__":
    main()
