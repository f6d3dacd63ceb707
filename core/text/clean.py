"""Cleaning what a learner types before any lesson touches it.

Any Unicode is allowed: the lessons show markup as text and map unknown characters
to UNK. What is cut is length (so one student cannot stall the server) and control
characters (which draw nothing and confuse the token chips).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class CleanText:
    text: str          # what the lesson uses
    empty: bool        # nothing but whitespace was typed
    truncated: bool    # longer than the limit; the tail was cut
    original_len: int  # characters typed, before cutting


def clean_text(text: str | None, limit: int) -> CleanText:
    """Drop control characters (keep newlines and tabs as spaces), cut to ``limit`` characters.

    Example: clean_text("a\\x00b" + "c" * 10, 3) -> CleanText("abc", empty=False, truncated=True, original_len=12)
    """
    text = text or ""
    kept = []
    for ch in text:
        if ch in "\n\t\r":
            kept.append(" " if ch != "\n" else ch)
        elif unicodedata.category(ch) in ("Cc", "Cs"):
            continue
        else:
            kept.append(ch)
    cleaned = "".join(kept)
    n = len(cleaned)
    return CleanText(
        text=cleaned[:limit],
        empty=not cleaned.strip(),
        truncated=n > limit,
        original_len=n,
    )
