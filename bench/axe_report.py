"""axe-core's WCAG 2.0/2.1 A and AA violations on every page, in both languages (issue 43).

A measurement beside the gate (tests/browser/test_axe.py fails on serious and critical ones): one
row per page and language with the number of violating nodes by impact (critical, serious,
moderate, minor), then the rules with the most nodes.

    python -m bench.axe_report                      starts a server of this checkout (as the browser tests do)
    python -m bench.axe_report --url http://127.0.0.1:8501 [--only b1,d4] [--lang zh] [--json out.json]

axe-core is the npm package (MPL-2.0), its version, rules and install in tests/browser/axe.py.
Chromium is Debian's (/usr/bin/chromium), at 1440×900, with the browser tests' arguments.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import axe  # noqa: E402
from tests.browser.axe import AXE_VERSION, IMPACTS, TAGS, VIEWPORT  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, settle  # noqa: E402
from tests.live_server import live_server  # noqa: E402
from ui.course import existing_lessons  # noqa: E402


def pages(only: set[str] | None) -> list[tuple[str, str]]:
    """(url path, short name) of the home page and every lesson, in course order."""
    found = [("", "home")] + [(lesson.url_path, lesson.code.lower()) for lesson in existing_lessons()]
    return [p for p in found if only is None or p[1] in only]


def audit(browser, url: str, slug: str, lang: str) -> list[dict]:
    """axe's violations on one page, after the script has run and every chart is drawn."""
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(f"{url}/{slug}?lang={lang}")
        settle(page)
        return axe.violations(page)
    finally:
        page.close()


def report(rows: dict[tuple[str, str], list[dict]], top: int) -> str:
    lines = [f"{'page':<8}{'lang':<6}" + "".join(f"{i:>10}" for i in IMPACTS)]
    totals = collections.Counter()
    rules: collections.Counter = collections.Counter()
    impact_of: dict[str, str] = {}
    for (name, lang), violations in rows.items():
        count = collections.Counter()
        for v in violations:
            count[v["impact"]] += v["nodes"]
            rules[v["id"]] += v["nodes"]
            impact_of[v["id"]] = v["impact"]
        totals.update(count)
        lines.append(f"{name:<8}{lang:<6}" + "".join(f"{count[i]:>10}" for i in IMPACTS))
    lines.append(f"{'total':<14}" + "".join(f"{totals[i]:>10}" for i in IMPACTS))
    lines.append("")
    lines.append(f"top rules by violating nodes ({len(rows)} pages):")
    lines += [f"  {n:>6}  {rule:<32} {impact_of[rule]}" for rule, n in rules.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running server of this app (default: start one)")
    ap.add_argument("--only", help="comma-separated page names: home,a1,b1,…")
    ap.add_argument("--lang", choices=["en", "zh"], action="append", help="default: both")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--json", type=Path, help="also write every violation (rule, impact, nodes and where) here")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    axe.install()
    only = set(args.only.split(",")) if args.only else None
    langs = args.lang or ["en", "zh"]
    rows: dict[tuple[str, str], list[dict]] = {}
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(live_server(ROOT))
        p = stack.enter_context(sync_playwright())
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        stack.callback(browser.close)
        audit(browser, url, "", "en")   # the server's first session pays for imports, not a row
        for slug, name in pages(only):
            for lang in langs:
                rows[(name, lang)] = audit(browser, url, slug, lang)
                print(f"{name} {lang}: " + ", ".join(f"{v['id']}×{v['nodes']}" for v in rows[(name, lang)]),
                      file=sys.stderr, flush=True)
    print(f"axe-core {AXE_VERSION}, tags {', '.join(TAGS)}, {VIEWPORT['width']}×{VIEWPORT['height']}; "
          "violating nodes by impact")
    print(report(rows, args.top))
    if args.json:
        args.json.write_text(json.dumps({f"{n}-{lang}": v for (n, lang), v in rows.items()}, indent=1))


if __name__ == "__main__":
    main()
