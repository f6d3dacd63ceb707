"""Issue 22, D3 #7: on a Chinese page no line may start with 「。」 or 「，」 left behind by inline maths.

The browser may break a line between a KaTeX span and the full-width punctuation after it (the
span is an inline box, so kinsoku rules do not hold it to the punctuation): either the
punctuation goes inside the maths (\\text{，}) or the sentence goes on with a character.
"""
import re
import tomllib
from pathlib import Path

import pytest

ZH = Path(__file__).resolve().parent.parent / "i18n" / "zh"
AFTER_MATH = re.compile(r"(?<!\$)\$[^$\n]+\$(?!\$)[，。；：、！？）」]")


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("ns", ["d1", "d2", "d3", "d4", "f2"])
def test_no_punctuation_right_after_inline_maths(ns):
    table = tomllib.loads((ZH / f"{ns}.toml").read_text(encoding="utf-8"))
    bad = [m.group(0)[-30:] for text in _strings(table) for m in AFTER_MATH.finditer(text)]
    assert not bad, bad


def test_the_pattern():
    assert AFTER_MATH.search("缩小为原来的 $H_{kv} / H$。设有")
    assert not AFTER_MATH.search("缩小为原来的 $H_{kv} / H\\text{。}$设有")
    assert not AFTER_MATH.search("$$x$$\n。")
