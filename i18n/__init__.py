"""Message catalogues: one per language, the same keys in each.

Each language is a folder of TOML files (``i18n/en/b1.toml``, ``i18n/zh/b1.toml``); a
file's tables flatten to dotted keys under the file's stem, so ``[try1] q = "…"`` in
``b1.toml`` is the key ``b1.try1.q``. Nothing here is process-global: the caller
passes the language on every lookup, so two students in two languages never meet.
"""
from __future__ import annotations

import functools
import string
import tomllib
from pathlib import Path

LANGS = ("en", "zh")
DEFAULT_LANG = "en"
_ROOT = Path(__file__).parent


def _flatten(prefix: str, table: dict) -> dict[str, object]:
    """Example: _flatten("b1", {"title": "T", "try1": {"q": "Q"}}) -> {"b1.title": "T", "b1.try1.q": "Q"}"""
    out: dict[str, object] = {}
    for name, value in table.items():
        key = f"{prefix}.{name}"
        if isinstance(value, dict):
            out.update(_flatten(key, value))
        else:
            out[key] = value
    return out


@functools.cache
def catalogue(lang: str) -> dict[str, object]:
    """Every key of one language, read once per process (the files never change at run time)."""
    if lang not in LANGS:
        lang = DEFAULT_LANG
    out: dict[str, object] = {}
    for path in sorted((_ROOT / lang).glob("*.toml")):
        with path.open("rb") as f:
            out.update(_flatten(path.stem, tomllib.load(f)))
    return out


def t(lang: str, key: str, **fields: object) -> str:
    """The text of ``key`` in ``lang``, with ``{fields}`` filled in.

    A missing key shows itself as ``⟦key⟧`` instead of crashing the lesson; the
    catalogue test makes sure none is missing.
    """
    value = catalogue(lang).get(key)
    if value is None:
        return f"⟦{key}⟧"
    text = str(value)
    return _FORMAT.format(text, **fields) if fields else text


class _Formatter(string.Formatter):
    """str.format plus one spec for English plurals: ``{n:plural:head|heads}``.

    Example: _FORMAT.format("{n} {n:plural:head|heads}", n=1) -> "1 head"; n=4 -> "4 heads"
    """

    def format_field(self, value, format_spec: str):
        if format_spec.startswith("plural:"):
            one, _, many = format_spec[len("plural:"):].partition("|")
            return one if value == 1 else many
        return super().format_field(value, format_spec)


_FORMAT = _Formatter()


def items(lang: str, key: str) -> list[str]:
    """A list-valued key (answer options, table headers)."""
    value = catalogue(lang).get(key)
    return [str(v) for v in value] if isinstance(value, list) else []
