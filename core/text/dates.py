"""Dates written in words, English or Chinese, and the ISO date they mean: the task of C1 and B4.

    "Monday, 30 November 2026" | "30 Nov 2026" | "November 30, 2026"
    "2026年11月30日" | "二〇二六年十一月三十日" | "十一月三十日，2026年"      ->  "2026-11-30"

The English day-month-year forms put the year last, and ISO puts it first: a model that
reads them must look back across the whole source, so its cross-attention crosses. The
Chinese forms (apart from the last) keep ISO's order and give a monotonic alignment.

Pure Python: a seeded generator that never makes an invalid date (no 30 February), the
rendering of every style with the span of each field in the text, and a parser that
recognises exactly these styles (so the app can tell a date from anything else).
"""
from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass

from core.text.tokenizer import CharTokenizer

FIRST_YEAR, LAST_YEAR = 1900, 2099
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ZH_DIGITS = "〇一二三四五六七八九"

# The styles, by a stable name (used in URLs and tests).
STYLES = ("en_weekday", "en_short", "en_us", "zh_digits", "zh_numerals", "zh_month_first")
STYLE_EXAMPLES = {
    "en_weekday": "Monday, 30 November 2026",
    "en_short": "30 Nov 2026",
    "en_us": "November 30, 2026",
    "zh_digits": "2026年11月30日",
    "zh_numerals": "二〇二六年十一月三十日",
    "zh_month_first": "十一月三十日，2026年",
}

# Every character a source may hold, and a target: the vocabularies are fixed by the task,
# not by a training sample, so no valid date can ever fall outside them.
SOURCE_CHARS = "".join(sorted(set(
    "".join(MONTHS) + "".join(WEEKDAYS) + "0123456789 ," + ZH_DIGITS + "十年月日，")))
TARGET_CHARS = "0123456789-"
TARGET_LEN = 10                     # "YYYY-MM-DD"
FIELDS = ("year", "month", "day")
# Which field each target character copies: year year year year - month month - day day
TARGET_FIELDS = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2


def source_tokenizer() -> CharTokenizer:
    return CharTokenizer(SOURCE_CHARS)


def target_tokenizer() -> CharTokenizer:
    return CharTokenizer(TARGET_CHARS)


def zh_number(n: int) -> str:
    """1..31 in Chinese numerals, as dates are written.

    Example: zh_number(1) -> "一", zh_number(10) -> "十", zh_number(21) -> "二十一"
    """
    tens, ones = divmod(n, 10)
    head = "" if tens == 0 else ("十" if tens == 1 else ZH_DIGITS[tens] + "十")
    return head + (ZH_DIGITS[ones] if ones else "")


def zh_year(y: int) -> str:
    """Digit by digit, with 〇 for zero. Example: zh_year(2026) -> "二〇二六" """
    return "".join(ZH_DIGITS[int(c)] for c in str(y))


@dataclass(frozen=True)
class Rendered:
    text: str                              # the date in words
    iso: str                               # "YYYY-MM-DD"
    spans: dict[str, tuple[int, int]]      # field -> [start, end) of its characters in ``text``
    style: str


def render(date: dt.date, style: str) -> Rendered:
    """One date in one style, with where its year, month and day sit in the text.

    Example: render(date(2026, 11, 30), "en_short") ->
             Rendered("30 Nov 2026", "2026-11-30", {"day": (0, 2), "month": (3, 6), "year": (7, 11)})
    """
    y, m, d = str(date.year), MONTHS[date.month - 1], str(date.day)
    if style == "en_weekday":
        parts = [(WEEKDAYS[date.weekday()] + ", ", None), (d, "day"), (" ", None), (m, "month"),
                 (" ", None), (y, "year")]
    elif style == "en_short":
        parts = [(d, "day"), (" ", None), (m[:3], "month"), (" ", None), (y, "year")]
    elif style == "en_us":
        parts = [(m, "month"), (" ", None), (d, "day"), (", ", None), (y, "year")]
    elif style == "zh_digits":
        parts = [(y, "year"), ("年", None), (str(date.month), "month"), ("月", None), (d, "day"), ("日", None)]
    elif style == "zh_numerals":
        parts = [(zh_year(date.year), "year"), ("年", None), (zh_number(date.month), "month"), ("月", None),
                 (zh_number(date.day), "day"), ("日", None)]
    elif style == "zh_month_first":
        parts = [(zh_number(date.month), "month"), ("月", None), (zh_number(date.day), "day"),
                 ("日，", None), (y, "year"), ("年", None)]
    else:
        raise ValueError(f"unknown style {style!r}; styles: {', '.join(STYLES)}")
    text, spans = "", {}
    for piece, field in parts:
        if field:
            spans[field] = (len(text), len(text) + len(piece))
        text += piece
    return Rendered(text, date.isoformat(), spans, style)


# Every tenth day (by its ordinal) is kept out of training, so the accuracy is measured on
# dates the model has never seen in any style, not only on new draws of familiar ones.
SPLITS = ("train", "held_out", "all")


def in_split(date: dt.date, split: str) -> bool:
    """Example: in_split(date(2026, 11, 30), "held_out") -> True (ordinal 739950)"""
    if split == "all":
        return True
    return (date.toordinal() % 10 == 0) == (split == "held_out")


def random_date(rng: random.Random, split: str = "all") -> dt.date:
    """A uniform day between 1 Jan 1900 and 31 Dec 2099: drawn as a day count, so always valid."""
    first, last = dt.date(FIRST_YEAR, 1, 1), dt.date(LAST_YEAR, 12, 31)
    while True:
        date = first + dt.timedelta(days=rng.randrange((last - first).days + 1))
        if in_split(date, split):
            return date


def generate(n: int, seed: int, styles: tuple[str, ...] = STYLES, split: str = "all") -> list[Rendered]:
    """n dates, each in a style drawn at random; the same seed gives the same list.

    Example: generate(2, 0)[0].iso == generate(2, 0)[0].iso
    """
    rng = random.Random(seed)
    return [render(random_date(rng, split), rng.choice(styles)) for _ in range(n)]


# --- Recognising the styles ---------------------------------------------------------------

_EN_MONTH = "(?P<month>" + "|".join(MONTHS) + "|" + "|".join(m[:3] for m in MONTHS) + ")"
_ZH_NUM = "[〇一二三四五六七八九十]{1,3}"
_PATTERNS = {
    "en_weekday": "(?P<weekday>" + "|".join(WEEKDAYS) + r"), (?P<day>\d{1,2}) " + _EN_MONTH + r" (?P<year>\d{4})",
    "en_short": r"(?P<day>\d{1,2}) " + _EN_MONTH + r" (?P<year>\d{4})",
    "en_us": _EN_MONTH + r" (?P<day>\d{1,2}), (?P<year>\d{4})",
    "zh_digits": r"(?P<year>\d{4})年(?P<month>\d{1,2})月(?P<day>\d{1,2})日",
    "zh_numerals": "(?P<year>[〇一二三四五六七八九]{4})年(?P<month>" + _ZH_NUM + ")月(?P<day>" + _ZH_NUM + ")日",
    "zh_month_first": "(?P<month>" + _ZH_NUM + ")月(?P<day>" + _ZH_NUM + r")日，(?P<year>\d{4})年",
}


def _number(text: str) -> int:
    if text.isdigit() and text.isascii():
        return int(text)
    if text in MONTHS or text in (m[:3] for m in MONTHS):
        return next(i + 1 for i, m in enumerate(MONTHS) if m.startswith(text))
    if len(text) == 4:                                         # a year, digit by digit
        return int("".join(str(ZH_DIGITS.index(c)) for c in text))
    for n in range(1, 32):
        if zh_number(n) == text:
            return n
    raise ValueError(text)


def parse(text: str) -> Rendered | None:
    """The date ``text`` means when it is written in one of the styles exactly, else None.

    Invalid dates (30 February), a weekday that does not match the date, a year outside
    1900-2099 or a leading zero the generator never writes all give None: the model was
    never shown them.
    Example: parse("30 Nov 2026").iso -> "2026-11-30"; parse("31 Feb 2026") -> None
    """
    for style, pattern in _PATTERNS.items():
        m = re.fullmatch(pattern, text)
        if not m:
            continue
        try:
            date = dt.date(_number(m["year"]), _number(m["month"]), _number(m["day"]))
        except ValueError:
            return None
        if not FIRST_YEAR <= date.year <= LAST_YEAR:
            return None
        r = render(date, style)
        if r.text != text:                                     # "05" for 5, "Sept", wrong weekday...
            return None
        return r
    return None


def unknown_characters(text: str) -> list[str]:
    """The distinct characters of ``text`` outside the source vocabulary, in order of first use.

    Example: unknown_characters("30 Nov 2026 🙂!") -> ["🙂", "!"]
    """
    known = set(SOURCE_CHARS)
    return list(dict.fromkeys(ch for ch in text if ch not in known))
