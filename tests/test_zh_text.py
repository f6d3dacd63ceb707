"""Chinese text renders without stray spaces.

Markdown turns a single line break inside a paragraph into a space. Between two Chinese
characters, or after full-width punctuation, that space is a visible gap a reader notices
(「时钟 频率」, 「算子， 能把」). Spaces typed by hand count the same, and so does a space after
full-width punctuation before a Latin word, a number or a formula (「更少。 150 步」). A space
between Chinese and a Latin word or a formula is usual Chinese typography and is allowed.
"""
from __future__ import annotations

import re

import i18n

CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
# A markdown block begins here: a line break before it is not a space in the text.
BLOCK = re.compile(r"\s*(?:[-*+]\s|\d+\.\s|\||#|>|\$\$|```)")
# Emphasis markers sit between the characters but draw nothing.
MARK = "*~"


def _gaps(text: str) -> list[str]:
    """The places where ``text`` renders a space it should not.

    Example: _gaps("时钟\\n频率") -> ["时钟⎵频率"]; _gaps("用 GQA 时") -> []
    """
    found = []
    for m in re.finditer(r"[ \t]*(?:\n[ \t]*)+|[ \t]+", text):
        gap = m.group()
        if gap.count("\n") > 1:
            continue
        before = text[: m.start()].rstrip(MARK)
        after_all = text[m.end():]
        if "\n" in gap:
            line_start = text.rfind("\n", 0, m.start()) + 1
            if BLOCK.match(after_all) or text[line_start:].lstrip().startswith("|"):
                continue
            if before.endswith("$$") or before.endswith("\\"):
                continue
        after = after_all.lstrip(MARK)
        if not before or not after or after[0] == "|":
            continue
        a, b = before[-1], after[0]
        # A space after full-width punctuation is always a gap, emphasis markers between them
        # or not. CommonMark closes "**粗体。**" only before a space or punctuation, so write
        # "**粗体**。" (the punctuation outside): "**在这里，LoRA 并没有忘得更少。** 150 步后"
        # passed an older rule that let the space stand. It opens "**「词」**" only after a space
        # or punctuation: that space is required, where the character before it is not punctuation.
        opens = len(after) < len(after_all) and re.match(f"[{PUNCT}]", b)
        if opens and not re.match(f"[{PUNCT}]", a):
            continue
        both_cjk = re.match(f"[{CJK}]", a) and re.match(f"[{CJK}]", b)
        if both_cjk or re.match(f"[{PUNCT}]", a) or ("\n" in gap and re.match(f"[{PUNCT}]", b)):
            found.append(f"{text[max(0, m.start() - 8):m.start()]}⎵{after_all[:8]}")
    return found


def _strings() -> list[tuple[str, str]]:
    out = []
    for key, value in i18n.catalogue("zh").items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                out.append((key, text))
    return out


def test_the_rule_finds_what_the_review_found():
    assert _gaps("SRAM 带宽由 SM 数量和时钟\n频率推算")
    assert _gaps("一个只用一次的算子， 就只能干等")
    assert _gaps("一小块\n**片上 SRAM**")
    assert not _gaps("用 GQA 时，缓存为 $H_{kv}$ 个头")
    assert not _gaps("第一段。\n\n第二段。")
    assert not _gaps("三种：\n- 窗口\n- 因果")
    assert _gaps("**三张图从左往右看。** 掩码")                       # write the 。 after the **
    assert not _gaps("**三张图从左往右看**。掩码")
    assert _gaps("**在这里，LoRA 并没有忘得更少。** 150 步后")             # review E2 (2026-12-05)
    assert _gaps("**已经喂入：** {before}") and _gaps("**解码：** 3.09 FLOP/字节")
    assert _gaps("第一步是 **「词」** 本身")                              # bold inside the brackets:
    assert not _gaps("第一步是「**词**」本身")                            # no space needed


def test_no_stray_space_in_chinese():
    """One rule over every string of the Chinese catalogue (list items included): every
    offender is listed, not one test a string."""
    offenders = {key: _gaps(text) for key, text in _strings() if _gaps(text)}
    assert len(_strings()) > 1000                       # the rule saw the whole catalogue
    assert not offenders, f"{len(offenders)} strings with a stray space: {offenders}"


def test_sentences_are_joined_as_the_language_writes_them():
    """Pages put two catalogue sentences together with ui.words.sentences (ui.frame gathers it), never with " ": in
    Chinese that space is a gap after 「。」 (D1's 「…随之更新。 目前的…」)."""
    from pathlib import Path

    from ui import words

    root = Path(__file__).resolve().parent.parent
    joins = [f"{p.relative_to(root)}:{i}" for folder in ("lessons", "ui") for p in sorted((root / folder).glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r'" " \+ tr\(|\+ " " \+', line)]
    assert not joins, f"sentences joined with a space: {joins}"
    original = words.lang
    try:
        words.lang = lambda: "zh"
        assert words.sentences("一。", "", "二。") == "一。二。"
        words.lang = lambda: "en"
        assert words.sentences("One.", "", "Two.") == "One. Two."
    finally:
        words.lang = original
