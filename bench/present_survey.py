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
from tests.browser.test_slides import MEASURE, chart_overlaps, problems  # noqa: E402
from tests.live_server import free_port  # noqa: E402
from ui.course import existing_lessons  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]

# The slide's measures and verdict are tests/browser/test_slides.py's (one definition of each).


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
            print("lesson lang size step charts chart_px title_px code_px fig_bottom/bar problems")
            bad = 0
            for lesson in lessons:
                for lang in args.lang.split(","):
                    for size in args.sizes.split(","):
                        w, h = map(int, size.split("x"))
                        page = browser.new_page(viewport={"width": w, "height": h})
                        page.goto(f"{url}/{lesson.url_path}?lang={lang}&present=1&step=1", timeout=120000)
                        settle(page)
                        n = int(page.locator(".anatomy-classroom").get_attribute("data-steps"))
                        for k in range(1, n + 1):
                            if k > 1:
                                page.goto(f"{url}/{lesson.url_path}?lang={lang}&present=1&step={k}", timeout=120000)
                                settle(page)
                                page.wait_for_timeout(500)       # charts below the fold: their own task
                            m = page.evaluate(MEASURE)
                            # The overview's titles are not read here: that check is left to the test.
                            found = [p for p in problems(m, chart_overlaps(page, w), k, [""] * n)
                                     if not p.startswith("slide shows")]
                            bad += bool(found)
                            bottom = round(m["figure"]["bottom"]) if m["figure"] else None
                            print(f"{lesson.code} {lang} {size} {k}/{n} {m['charts']} {m['chartMin']} {m['titleMin']} "
                                  f"{m['codeMin']} {bottom}/{round(m['barTop'])} {'; '.join(found[:3])}", flush=True)
                        page.close()
            print(f"slides failing: {bad}")
            browser.close()
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()
