"""Build assets/song100.txt, the Song poems E2 fine-tunes the course model on.

Same source as the course corpus (scripts/build_corpus.py): Debian's fortunes-zh, whose
file song100 (《宋诗一百首》) sits beside tang300. Get it (no install needed):

    apt-get download fortunes-zh
    dpkg -x fortunes-zh_*.deb /tmp/fz
    python scripts/build_song100.py /tmp/fz/usr/share/games/fortunes/song100

The fortune file is parsed as tang300 is (colour codes and "%" separators removed). Its
header lines read "题目:《塞上》" and "作者:柳开（９４６－９９９）"; we write them as tang300
does ("《塞上》", "作者：柳开"), the poet's dates dropped. The course model reads one
character as one token from a fixed vocabulary, so every character it does not know is
dropped (about 4 %); the counts go to assets/song100.json for the lesson to show.
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


def keep_known(line: str, tok: CharTokenizer) -> tuple[str, int]:
    """The line without the characters the vocabulary lacks, and how many went.

    Example (vocab without 骹): keep_known("鸣骹直上", tok) -> ("鸣直上", 1)
    """
    kept = "".join(ch for ch in line if tok.is_known(ch))
    return kept, len(line) - len(kept)


def build(raw: str, tok: CharTokenizer) -> tuple[str, dict]:
    poems, dropped, total, lines_touched = [], 0, 0, 0
    for poem in parse_fortunes(raw):
        title, author = tang_header(poem[0], poem[1])
        out = []
        for line in [title, author, *poem[2:]]:
            kept, n = keep_known(line, tok)
            total += len(line)
            dropped += n
            lines_touched += n > 0
            if kept:
                out.append(kept)
        poems.append(out)
    text = "\n\n".join("\n".join(p) for p in poems) + "\n"
    stats = {"poems": len(poems), "characters_in": total, "dropped": dropped,
             "lines_with_drops": lines_touched, "characters_out": len(text),
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
    print(f"{stats['poems']} poems, {stats['characters_out']} characters; dropped {stats['dropped']} "
          f"of {stats['characters_in']} (not in the course model's vocabulary) -> {args.out}")


if __name__ == "__main__":
    main()
