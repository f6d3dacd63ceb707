"""Build assets/tang300.txt, the course model's corpus, from Debian's fortunes-zh.

Get the source file (no install needed):

    apt-get download fortunes-zh
    dpkg -x fortunes-zh_*.deb /tmp/fz
    python scripts/build_corpus.py /tmp/fz/usr/share/games/fortunes/tang300

In the fortune file poems are separated by lines holding only "%"; each poem starts
with its title and an "作者：" line, both wrapped in terminal colour codes (ESC[32m ...
ESC[m), then the text. We keep title, author and text, drop the colour codes, and
separate poems by one blank line.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

DEFAULT_SOURCE = Path("/tmp/fz/usr/share/games/fortunes/tang300")
ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(line: str) -> str:
    """Example: strip_ansi("\\x1b[32m《春晓》\\x1b[m") -> "《春晓》" """
    return ANSI.sub("", line)


def parse_fortunes(raw: str) -> list[list[str]]:
    """One list of clean lines per poem (title, author, text lines); empty entries dropped.

    Example: parse_fortunes("\\x1b[32mT\\x1b[m\\nA\\nx\\n%\\nU\\nB\\ny\\n") -> [["T", "A", "x"], ["U", "B", "y"]]
    """
    poems, current = [], []
    for line in raw.splitlines():
        if line.strip() == "%":
            if current:
                poems.append(current)
            current = []
            continue
        clean = strip_ansi(line).strip()
        if clean:
            current.append(clean)
    if current:
        poems.append(current)
    return [p for p in poems if len(p) >= 3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE, help="the tang300 fortune file")
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "tang300.txt")
    args = ap.parse_args()
    if not args.source.exists():
        raise SystemExit(f"{args.source} not found; see the instructions at the top of this script")
    poems = parse_fortunes(args.source.read_text(encoding="utf-8"))
    text = "\n\n".join("\n".join(p) for p in poems) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"{len(poems)} poems, {len(text)} characters, {len(set(text))} distinct -> {args.out}")


if __name__ == "__main__":
    main()
