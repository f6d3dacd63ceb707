"""axe-core, the accessibility engine behind Lighthouse's audit, run on a page (issue 43).

One place for its version, its rules and how it is installed, for the gate (tests/browser/test_axe.py)
and the measurement (bench/axe_report.py). axe-core is the npm package (MPL-2.0), installed into an
ignored folder by scripts/test.sh, or on first use here:
    npm install --no-save --no-package-lock --prefix tests/browser/.axe axe-core@4.14.1
"""
from __future__ import annotations

import functools
import subprocess
from pathlib import Path

AXE_VERSION = "4.14.1"
AXE_DIR = Path(__file__).resolve().parent / ".axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]    # WCAG 2.0 and 2.1, levels A and AA
IMPACTS = ("critical", "serious", "moderate", "minor")
VIEWPORT = {"width": 1440, "height": 900}

# In the page: axe's violations, each rule with its impact and every node it found (where, and why).
_RUN = """(tags) => axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]})
    .then(r => r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
        where: v.nodes.map(n => [n.target.join(" "), (n.any[0] || n.all[0] || n.none[0] || {}).message || ""])})))"""


def install() -> None:
    """axe-core from the npm registry into AXE_DIR, unless it is there (scripts/test.sh calls this)."""
    if AXE_JS.exists():
        return
    subprocess.run(["npm", "install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund",
                    "--prefix", str(AXE_DIR), f"axe-core@{AXE_VERSION}"], check=True)


@functools.cache
def source() -> str:
    install()
    return AXE_JS.read_text(encoding="utf-8")


def violations(page) -> list[dict]:
    """axe's violations of TAGS on ``page`` as it is now (call it once the page has settled):
    ``[{"id": "color-contrast", "impact": "serious", "nodes": 2, "where": [[selector, message], ...]}]``."""
    page.add_script_tag(content=source())
    return page.evaluate(_RUN, TAGS)


def grave(found: list[dict]) -> list[dict]:
    """The serious and critical ones: what the gate fails on."""
    return [v for v in found if v["impact"] in ("critical", "serious")]


def describe(found: list[dict], limit: int = 5) -> str:
    """One line per rule and up to ``limit`` nodes under it, for a failure message."""
    lines = []
    for v in found:
        lines.append(f"{v['id']} ({v['impact']}): {v['nodes']} node(s)")
        lines += [f"    {where}: {why}" for where, why in v["where"][:limit]]
    return "\n".join(lines)


if __name__ == "__main__":
    install()
    print(AXE_JS)
