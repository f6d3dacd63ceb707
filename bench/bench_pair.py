"""Two pages, one browser, presses taken in turn: which one redraws faster, and by how much.

    python -m bench.bench_pair app.py:heads bench/floor_app.py [--presses 20]
    python -m bench.bench_pair app.py:heads app.py:heads --env-b ANATOMY_X=1

A target is APP[:URL_PATH]. Each target gets its own server (with --env-a / --env-b added to its
environment, so one change behind a switch can be compared with the code as it is) and its own
tab; a press on A's first slider, then one on B's, and so on. On these shared machines two runs
of bench_lessons differ by 20-30 ms for the same page; presses taken in turn see the same
machine, so a 10 ms difference between A and B shows here and not there.
Prints, for each target, the median, mean and minimum of slider -> changed figure (ms), and
the ratio of the medians.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_lessons import CHROMIUM_ARGS, SIGNATURE, SLIDER, WAIT_FOR_CHANGE, serve  # noqa: E402

READY = '[data-testid="stMain"] .js-plotly-plot'


def _env(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        out[name] = value
    return out


def compare(targets: list[str], envs: list[dict[str, str]], presses: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    servers = [serve(t.partition(":")[0], env=env) for t, env in zip(targets, envs, strict=True)]
    times: list[list[float]] = [[] for _ in targets]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            pages = []
            for (_, url), target in zip(servers, targets, strict=True):
                first = browser.new_page()   # the server's first session (see bench_lessons)
                first.goto(url)
                first.wait_for_selector(f'[data-testid="stMain"] h1, {READY}', timeout=60000)
                first.close()
                page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                page.goto(f"{url}/{target.partition(':')[2]}")
                page.wait_for_selector(READY, timeout=60000)
                page.wait_for_timeout(1500)
                pages.append(page)
            for i in range(presses + 2):          # the first two presses of each warm it up
                for k, page in enumerate(pages):
                    page.bring_to_front()
                    page.locator(SLIDER).first.focus()
                    page.evaluate(SIGNATURE)
                    page.evaluate("() => { window.__t0 = performance.now(); }")
                    page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                    t = page.evaluate(WAIT_FOR_CHANGE)
                    page.wait_for_timeout(400)
                    if i >= 2:
                        times[k].append(t)
            browser.close()
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=10)
    return dict(zip(["A", "B"], times, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--env-a", action="append", default=[])
    ap.add_argument("--env-b", action="append", default=[])
    ap.add_argument("--presses", type=int, default=20)
    args = ap.parse_args()
    result = compare([args.a, args.b], [_env(args.env_a), _env(args.env_b)], args.presses)
    for (name, values), target in zip(result.items(), (args.a, args.b), strict=True):
        print(f"{name} {target:<34} median {statistics.median(values):6.1f}  mean {statistics.mean(values):6.1f}"
              f"  min {min(values):6.1f}  (ms, {len(values)} presses)")
    a, b = (statistics.median(v) for v in result.values())
    print(f"A / B = {a / b:.2f}")


if __name__ == "__main__":
    main()
