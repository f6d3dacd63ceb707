"""Character-level tokenizer: one Unicode character, one token.

For Chinese this is the natural unit (one 字, one token). Four special tokens sit at
fixed ids in front of the characters: PAD (batches of unequal length), BOS and EOS
(start and end of a text) and UNK (any character the vocabulary lacks).
"""
from __future__ import annotations

import json
from collections.abc import Iterable

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)


class CharTokenizer:
    """A fixed vocabulary of characters; immutable after construction, so one
    instance can be shared by every student of the app."""

    def __init__(self, chars: Iterable[str]):
        seen: dict[str, None] = {}
        for ch in chars:
            if len(ch) != 1:
                raise ValueError(f"a character token must be one character, got {ch!r}")
            seen.setdefault(ch, None)
        self.itos: tuple[str, ...] = SPECIALS + tuple(seen)
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(4)

    @classmethod
    def from_text(cls, text: str) -> "CharTokenizer":
        """Every distinct character of ``text``, most frequent first (ties in first-seen order).

        Example: CharTokenizer.from_text("abca").itos[4:] -> ('a', 'b', 'c')
        """
        counts: dict[str, int] = {}
        for ch in text:
            counts[ch] = counts.get(ch, 0) + 1
        return cls(sorted(counts, key=lambda c: -counts[c]))

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str, bos: bool = False, eos: bool = False) -> list[int]:
        """Example (vocab 'ab'): encode("abz", bos=True) -> [1, 4, 5, 3]"""
        ids = [self.stoi.get(ch, self.unk_id) for ch in text]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """Characters back; PAD/BOS/EOS vanish, UNK (and ids out of range) become U+FFFD."""
        out = []
        for i in ids:
            i = int(i)
            if i in (self.pad_id, self.bos_id, self.eos_id):
                continue
            out.append(self.itos[i] if 4 <= i < len(self.itos) else "\ufffd")
        return "".join(out)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """One display string per id, specials spelled out: [1, 4] -> ['<bos>', 'a']"""
        return [self.itos[int(i)] if 0 <= int(i) < len(self.itos) else UNK for i in ids]

    def is_known(self, ch: str) -> bool:
        return ch in self.stoi and self.stoi[ch] >= 4

    def to_json(self) -> str:
        return json.dumps({"chars": list(self.itos[4:])}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "CharTokenizer":
        data = json.loads(text)
        chars = data["chars"]
        if not isinstance(chars, list) or not all(isinstance(c, str) for c in chars):
            raise ValueError("vocabulary file: 'chars' must be a list of strings")
        return cls(chars)
