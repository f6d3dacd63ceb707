"""Build assets/song100.txt, the Song poems E2 fine-tunes the course model on.

Same source as the course corpus (scripts/build_corpus.py): Debian's fortunes-zh, whose
file song100 (《宋诗一百首》) sits beside tang300. Get it (no install needed):

    apt-get download fortunes-zh
    dpkg -x fortunes-zh_*.deb /tmp/fz
    python scripts/build_song100.py /tmp/fz/usr/share/games/fortunes/song100

The fortune file is parsed as tang300 is (colour codes and "%" separators removed). Its
header lines read "题目:《塞上》" and "作者:柳开（９４６－９９９）"; we write them as tang300
does ("《塞上》", "作者：柳开"), the poet's dates dropped. Nothing else is changed: every
character of every poem stays, so each line keeps its metre and each poet their whole name
(王禹偁). The course model reads one character as one token from a fixed vocabulary, built
from the Tang poems, so a character it lacks is read as <unk> (core.text.tokenizer does it
when the text is encoded): the model sees that a character stands there, not which. The
counts, for the poems' text alone and for the whole file with titles and authors, go to
assets/song100.json for the lesson to show.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from build_corpus import parse_fortunes  # noqa: E402

from core.text.tokenizer import CharTokenizer  # noqa: E402

DEFAULT_SOURCE = Path("/tmp/fz/usr/share/games/fortunes/song100")
DATES = re.compile(r"（[^）]*）")


def tang_header(title: str, author: str) -> tuple[str, str]:
    """The two header lines in tang300's form.

    Example: tang_header("题目:《塞上》", "作者:柳开（９４６－９９９）") -> ("《塞上》", "作者：柳开")
    """
    title = title.removeprefix("题目:").removeprefix("题目：").strip()
    name = DATES.sub("", author.removeprefix("作者:").removeprefix("作者：")).strip()
    return title, f"作者：{name}"


def count_unknown(line: str, tok: CharTokenizer) -> int:
    """Characters of the line the vocabulary lacks (read as <unk>).

    Example (vocab without 骹): count_unknown("鸣骹直上", tok) -> 1
    """
    return sum(not tok.is_known(ch) for ch in line)


def build(raw: str, tok: CharTokenizer) -> tuple[str, dict]:
    poems = []
    body = {"characters": 0, "unknown": 0, "lines": 0, "lines_with_unknown": 0}
    whole = {"characters": 0, "unknown": 0}
    for poem in parse_fortunes(raw):
        title, author = tang_header(poem[0], poem[1])
        lines = [title, author, *poem[2:]]
        for i, line in enumerate(lines):
            n = count_unknown(line, tok)
            whole["characters"] += len(line)
            whole["unknown"] += n
            if i >= 2:                                  # the poem's text, not its title and author
                body["characters"] += len(line)
                body["unknown"] += n
                body["lines"] += 1
                body["lines_with_unknown"] += n > 0
        poems.append(lines)
    text = "\n\n".join("\n".join(p) for p in poems) + "\n"
    whole["file_characters"] = len(text)                # with the line breaks between lines and poems
    stats = {"poems": len(poems), "poems_with_unknown": sum(any(count_unknown(x, tok) for x in p[2:])
                                                          for p in poems),
             "body": body, "whole": whole, "unknown_becomes": "<unk>",
             "source": "fortunes-zh: /usr/share/games/fortunes/song100"}
    return text, stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE, help="the song100 fortune file")
    ap.add_argument("--vocab", type=Path, default=ROOT / "assets" / "course_model_vocab.json")
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "song100.txt")
    args = ap.parse_args()
    if not args.source.exists():
        raise SystemExit(f"{args.source} not found; see the instructions at the top of this script")
    tok = CharTokenizer.from_json(args.vocab.read_text(encoding="utf-8"))
    text, stats = build(args.source.read_text(encoding="utf-8"), tok)
    args.out.write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(stats, ensure_ascii=False, indent=1) + "\n",
                                             encoding="utf-8")
    b, w = stats["body"], stats["whole"]
    print(f"{stats['poems']} poems; text {b['characters']} characters, {b['unknown']} read as <unk>; "
          f"whole file {w['characters']} characters (titles, authors), {w['unknown']} <unk> -> {args.out}")


if __name__ == "__main__":
    main()
