"""Every word on screen in this session's language: the catalogue (i18n/), sentences joined as
the language writes them, and user text made safe for markdown. Part of the lesson frame (ui/frame.py).
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

import i18n

LANG_KEY = "lang"


def lang() -> str:
    value = st.session_state.get(LANG_KEY)
    return value if value in i18n.LANGS else i18n.DEFAULT_LANG


def tr(key: str, **fields: object) -> str:
    """The text of ``key`` in this session's language."""
    return i18n.t(lang(), key, **fields)


def sentences(*parts: str) -> str:
    """Sentences of the catalogue put together as the page's language writes them: a space
    between them in English, none in Chinese (after 「。」 a space is a visible gap). Empty parts
    are left out.

    Example: sentences("One.", "", "Two.") -> "One. Two." in English, "一。二。" from 「一。」, 「二。」 in Chinese
    """
    return ("" if lang() == "zh" else " ").join(p for p in parts if p)


def tr_items(key: str) -> list[str]:
    return i18n.items(lang(), key)


def model_labels(names: Sequence[str]) -> dict[str, str]:
    """The shown names of the model registry's ids: real models by their own names, ours translated.

    Example: model_labels(["course", "llama-2-7b"]) -> {"course": "course model", "llama-2-7b": "llama-2-7b"}
    """
    return {name: tr("common.course_model") if name == "course" else name for name in names}


_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|$~&")


_BREAKS = {"\n": "↵", "\r": "", "\t": " ", "\u2028": "↵", "\u2029": "↵"}


def plain(text: str) -> str:
    """User or generated text made safe to put inside one line of st.markdown: every markdown,
    HTML and LaTeX character is backslash-escaped, so `<b>`, `**x**` and `$x$` show as typed,
    and a line break is drawn as ↵ (a real break would end the bold or coloured span around it).

    Example: plain("<b>$x$</b>") -> "\\<b\\>\\$x\\$\\</b\\>"; plain("a\nb") -> "a↵b"
    """
    return "".join("\\" + ch if ch in _MD_SPECIAL else _BREAKS.get(ch, ch) for ch in text)


def text_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table whose cells may hold the student's own text: every text cell escaped
    (``plain``, a ``|`` included), numbers right-aligned as a table of numbers does.

    Markdown, not ``st.dataframe``: a real <table> that a screen reader walks by row and column,
    and no pandas or pyarrow in the process (issue 39: ~80 MB a process; A1 was their only user).

    Example: text_table(["token", "id"], [["<b>", 7]]) -> "| token | id |\\n|---|---:|\\n| \\\\<b\\\\> | 7 |"
    """
    def numeric(i: int) -> bool:
        return bool(rows) and all(isinstance(r[i], int | float) for r in rows)

    def cell(value: object) -> str:
        return str(value) if isinstance(value, int | float) else plain(str(value))

    head = "| " + " | ".join(plain(c) for c in columns) + " |"
    rule = "|" + "".join("---:|" if numeric(i) else "---|" for i in range(len(columns)))
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])
