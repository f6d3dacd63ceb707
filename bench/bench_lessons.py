"""Speed of every lesson, one row each:
  script  median wall time of one script run at default settings (AppTest, >= 20 reruns)
  redraw  median time from a slider key press in Chromium to the changed figure on screen,
          against a live server (which, unlike AppTest, pays the post-run GC if it is on)

    python -m bench.bench_lessons [--runs 20] [--presses 10] [--only b1,c3] [--no-browser] [--real]
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


def browser_medians(slugs: list[str], presses: int, app: str = "app.py", port: int = 0) -> dict[str, float | None]:
    from playwright.sync_api import sync_playwright

    proc, url = serve(app, port)
    out: dict[str, float | None] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)  # the server's first session (see tests/browser/conftest.py)
            page.wait_for_selector('[data-testid="stMain"] h1, [data-testid="stMain"] .js-plotly-plot',
                                   timeout=60000)
            page.close()
            for slug in slugs:
                # A fresh tab per lesson, as a student opening a shared link.
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{url}/{slug}")
                page.wait_for_selector('[data-testid="stMain"] .js-plotly-plot', timeout=60000)
                page.wait_for_timeout(1500)
                if page.locator(SLIDER).count() == 0:
                    out[slug] = None
                    page.close()
                    continue
                out[slug] = statistics.median(press_times(page, presses))
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--presses", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--real", action="store_true", help="the lessons that offer SmolLM2, opened on it")
    args = ap.parse_args()
    lessons = [lesson for lesson in existing_lessons()
               if not args.only or lesson.ns in args.only.split(",")]
    if args.real:
        lessons = [lesson for lesson in lessons if lesson.ns in REAL_LESSONS]
    scripts = {lesson.ns: script_median_ms(lesson.file, args.runs,
                                           REAL_QUERY.get(lesson.ns, {f"{lesson.ns}.lm": "smollm2"}) if args.real else None)
               for lesson in lessons}
    redraw = {} if args.no_browser else browser_medians([lesson.url_path for lesson in lessons], args.presses)
    floor = None if args.no_browser else browser_medians([""], args.presses, "bench/floor_app.py")[""]
    print(f"{'lesson':<8}{'script median (ms)':>20}{'slider->redraw median (ms)':>30}")
    for lesson in lessons:
        r = redraw.get(lesson.url_path)
        r_text = "n/a" if r is None else f"{r:.0f}"
        print(f"{lesson.code:<8}{scripts[lesson.ns]:>20.1f}{r_text:>30}")
    if floor is not None:
        print(f"{'floor':<8}{'':>20}{floor:>30.0f}   (bench/floor_app.py: one slider, one 11x11 heatmap)")


if __name__ == "__main__":
    main()
