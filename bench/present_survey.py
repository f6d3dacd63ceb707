"""Presenter mode, slide by slide (issue 23): for every lesson, language and projector size, each
slide's smallest chart text, code text, whether its first figure is wholly on screen above the
presenter's bar, and the chart-text overlaps of tests/browser/test_layout.py.

    python -m bench.present_survey [--only b1,d2] [--lang en,zh] [--sizes 1440x900,1280x720]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import settle  # noqa: E402
from tests.browser.test_layout import PROBLEMS  # noqa: E402
from tests.live_server import free_port  # noqa: E402
from ui.course import existing_lessons  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]

# Runs in the page: what a slide shows, measured.
MEASURE = r"""() => {
  const seen = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  const px = (el) => parseFloat(getComputedStyle(el).fontSize);
  const charts = Array.from(document.querySelectorAll('[data-testid="stMain"] .anatomy-chart')).filter(seen);
  let chartMin = null, titleMin = null;
  for (const c of charts) for (const t of c.querySelectorAll('svg text')) {
    if (!seen(t) || !(t.textContent || '').trim()) continue;
    const s = parseFloat(t.style.fontSize || getComputedStyle(t).fontSize);
    const isTitle = !!t.closest('.g-gtitle');
    if (isTitle) titleMin = titleMin === null ? s : Math.min(titleMin, s);
    else if (!t.closest('.cbtitle, .hovertext, .modebar')) chartMin = chartMin === null ? s : Math.min(chartMin, s);
  }
  const codes = Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stCode"] code')).filter(seen);
  const codeMin = codes.length ? Math.min(...codes.map(px)) : null;
  const bar = document.querySelector('.anatomy-classroom');
  const barTop = bar ? bar.getBoundingClientRect().top : innerHeight;
  const first = charts[0] ? charts[0].getBoundingClientRect() : null;
  const main = document.querySelector('[data-testid="stMain"]');
  return {charts: charts.length, chartMin, titleMin, codeMin,
          inView: first ? (first.top >= 0 && first.bottom <= barTop + 1) : null,
          figBottom: first ? Math.round(first.bottom) : null, barTop: Math.round(barTop),
          tall: main ? main.scrollHeight : 0,
          step: bar ? bar.dataset.step : null};
}"""

HEADS = r"""() => {
  const B = document.querySelector('[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
  const head = (el) => el.matches('[data-testid="stElementContainer"]')
    ? !!el.querySelector(':scope > [data-testid="stHeading"] :is(h2, h3)')
    : !!el.querySelector(':scope > [data-testid="stVerticalBlock"] > [data-testid="stElementContainer"]:first-child'
                         + ' > [data-testid="stHeading"] :is(h2, h3)');
  return 1 + Array.from(B.children).filter(head).length;
}"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--lang", default="en,zh")
    ap.add_argument("--sizes", default="1440x900,1280x720")
    args = ap.parse_args(argv)
    lessons = [lesson for lesson in existing_lessons()
               if not args.only or lesson.code.lower() in args.only.lower().split(",")]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
                             str(port), "--server.headless", "true"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            print("lesson lang size step charts chart_px title_px code_px in_view fig_bottom/bar overlaps")
            bad = 0
            for lesson in lessons:
                for lang in args.lang.split(","):
                    for size in args.sizes.split(","):
                        w, h = map(int, size.split("x"))
                        page = browser.new_page(viewport={"width": w, "height": h})
                        page.goto(f"{url}/{lesson.url_path}?lang={lang}", timeout=120000)
                        settle(page)
                        n = page.evaluate(HEADS)
                        for k in range(1, n + 1):
                            page.goto(f"{url}/{lesson.url_path}?lang={lang}&present=1&step={k}", timeout=120000)
                            settle(page)
                            page.wait_for_timeout(500)       # charts below the fold: their own task
                            m = page.evaluate(MEASURE)
                            overlaps = len(page.evaluate(PROBLEMS, w))
                            ok = ((m["chartMin"] is None or m["chartMin"] >= 18) and (m["codeMin"] is None or m["codeMin"] >= 18)
                                  and m["inView"] is not False and overlaps == 0 and m["step"] == str(k))
                            bad += not ok
                            print(f"{lesson.code} {lang} {size} {k}/{n} {m['charts']} {m['chartMin']} {m['titleMin']} "
                                  f"{m['codeMin']} {m['inView']} {m['figBottom']}/{m['barTop']} {overlaps}"
                                  f"{'' if ok else '  <-- '}", flush=True)
                        page.close()
            print(f"slides failing: {bad}")
            browser.close()
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()
