"""Every lesson at its defaults before and after a change (issue 41's "the same content"): two app
servers, one on an older checkout and one on this one, each page opened in both languages at
1440x900 in headless Chromium, and compared on what a student reads and sees:

- the text of the main column (every heading, paragraph, caption, label and code line, in order);
- every chart's data (each trace's type, name, x, y, z and text, as plotly.js holds it);
- the full-page screenshot: the share of pixels that differ, and a picture of where (when any do).

    git worktree add -f /tmp/before <commit>; ln -sf $PWD/.venv /tmp/before/.venv
    .venv/bin/python -m scripts.compare_pages /tmp/before --out /tmp/compare [--only b1,a2] [--lang en]

Prints one row a page and language; exits 1 when a page's text or charts differ. The screenshots
and a diff image of each differing page are left under --out.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from PIL import Image, ImageChops

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, settle
from tests.live_server import live_server
from ui.course import existing_lessons

ROOT = Path(__file__).resolve().parents[1]
READ = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const charts = [...document.querySelectorAll('.js-plotly-plot')].map((el) => (el.data || []).map((t) =>
    ({type: t.type, name: t.name, x: t.x, y: t.y, z: t.z, text: t.text})));
  return {text: main ? main.innerText : "", charts: JSON.stringify(charts)};
}"""


def _read(browser, url: str, path: str, lang: str, shot: Path) -> dict:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{url}/{path}?lang={lang}")
        settle(page)
        page.screenshot(path=str(shot), full_page=True)
        return page.evaluate(READ)
    finally:
        page.close()


def _pixels(a: Path, b: Path, out: Path) -> float:
    """The share of pixels that differ (the smaller page padded); a red map of them in ``out``."""
    one, two = Image.open(a).convert("RGB"), Image.open(b).convert("RGB")
    size = (max(one.width, two.width), max(one.height, two.height))
    pad = [Image.new("RGB", size, "white") for _ in range(2)]
    pad[0].paste(one)
    pad[1].paste(two)
    diff = ImageChops.difference(*pad).convert("L").point(lambda v: 255 if v > 16 else 0)
    share = diff.histogram()[255] / (size[0] * size[1])
    if share:
        marked = pad[1].copy()
        marked.paste((255, 0, 0), mask=diff)
        marked.save(out)
    return share


def _first_difference(a: str, b: str) -> str:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False)):
        if x != y:
            return f"line {n}: {x[:70]!r} -> {y[:70]!r}"
    return f"{len(a.splitlines())} lines -> {len(b.splitlines())} lines"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a checkout of the older commit (with .venv)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/compare_pages"))
    parser.add_argument("--only", default="", help="lesson codes, e.g. b1,a2 (default: every lesson)")
    parser.add_argument("--lang", default="en,zh")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    only = {c.strip().upper() for c in args.only.split(",") if c.strip()}
    lessons = [lesson for lesson in existing_lessons() if not only or lesson.code in only]
    args.out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for side, folder in (("before", args.before), ("after", ROOT)):
            with open(args.out / f"server-{side}.log", "w") as log, live_server(folder, log) as url:
                for lesson in lessons:
                    for lang in args.lang.split(","):
                        name = f"{lesson.code.lower()}-{lang}"
                        seen.setdefault(name, {})[side] = _read(browser, url, lesson.url_path, lang,
                                                               args.out / f"{name}-{side}.png")
        browser.close()
    failed = 0
    print(f"{'page':8} {'text':>6} {'charts':>8} {'pixels':>8}")
    for name, both in seen.items():
        a, b = both["before"], both["after"]
        text, charts = a["text"] == b["text"], a["charts"] == b["charts"]
        share = _pixels(args.out / f"{name}-before.png", args.out / f"{name}-after.png", args.out / f"{name}-diff.png")
        print(f"{name:8} {'same' if text else 'DIFF':>6} {'same' if charts else 'DIFF':>8} {share:8.2%}"
              + ("" if text else f"   {_first_difference(a['text'], b['text'])}")
              + ("" if charts else f"   charts {hashlib.sha1(a['charts'].encode()).hexdigest()[:8]} -> "
                 f"{hashlib.sha1(b['charts'].encode()).hexdigest()[:8]}"))
        (args.out / f"{name}.json").write_text(json.dumps(both, ensure_ascii=False), encoding="utf-8")
        failed += not (text and charts)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
