"""A trained byte-level BPE tokenizer, applied (not learned): SmolLM2's, read from its GGUF.

Dimension legend
    L   UTF-8 bytes of a text (1 per ASCII letter, 3 per Chinese character, 4 per emoji)
    T   tokens after the merges (T <= L)
    V   vocabulary size (49,152 for SmolLM2): the 256 byte symbols, merged tokens, special tokens
    M   merges, in rank order: merge 0 was learned first and is applied first

The GPT-2 scheme (Radford et al. 2019, sec. 2.2), in four steps:
1. Special tokens such as <|im_start|> are cut out of the text first and become their own ids.
2. The pre-tokenizer splits the rest into pieces; merges never cross a piece boundary. For
   SmolLM2 (GGUF ``tokenizer.ggml.pre`` = "smollm", as llama.cpp and the model's tokenizer.json
   do it): every digit is its own piece, then the GPT-2 regex splits what lies between digits.
3. Each piece becomes UTF-8 bytes, each byte one printable character (``byte_to_char``:
   a space is "Ġ", a line break "Ċ"), so every string is made of the 256 byte symbols.
4. Merges are applied in rank order: repeatedly join the adjacent pair with the lowest rank.
Any character at all is bytes, so no character becomes an unknown token, and decode(encode(s)) == s
whenever the vocabulary has a token for each of the text's bytes. SmolLM2's has none for 21 byte
values (``no_token``: 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, 0xF5-0xFF),
so the lead byte of U+40000-U+BFFFF and those control characters
have no token. Such a byte is dropped before the merges, as Hugging Face's byte-level BPE does on
the same vocabulary (``unk_token`` None, no byte fallback): the bytes on either side of it may then
merge. ``dropped(text)`` says which characters lost which bytes, so a lesson can say so.

Python's ``re`` has no Unicode classes (\\p{L} letters, \\p{N} numbers): the ``regex`` package
(pinned in requirements.txt) matches the patterns as written.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

# Step 2. "\p{N}" isolates digits (llama.cpp's first expression for "smollm"); the second is
# GPT-2's: contractions, letters with an optional space before, numbers, other symbols,
# runs of white space (the last one is kept for the next piece: " world" keeps its space).
DIGIT = regex.compile(r"\p{N}")
GPT2_SPLIT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
PRE_TOKENIZERS = ("smollm", "gpt2")

# SmolLM2-Instruct's ChatML chat template (GGUF tokenizer.chat_template), written out in Python.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@functools.cache
def byte_to_char() -> dict[int, str]:
    """GPT-2's map of the 256 byte values to printable characters.

    Printable Latin-1 bytes ("!".."~", "¡".."¬", "®".."ÿ") stand for themselves; the other 68
    (control bytes, space, 0x7f-0xa0, 0xad) get the characters from U+0100 on, in order.

    Example: byte_to_char()[ord("a")] -> "a"; [32] (space) -> "Ġ"; [10] (newline) -> "Ċ"
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@functools.cache
def char_to_byte() -> dict[str, int]:
    """The inverse of byte_to_char. Example: char_to_byte()["Ġ"] -> 32"""
    return {c: b for b, c in byte_to_char().items()}


def pre_tokenize(text: str, kind: str = "smollm") -> list[str]:
    """Step 2: the pieces merges stay inside.

    Example: pre_tokenize("Hi  you 2024!") -> ["Hi", " ", " you", " ", "2", "0", "2", "4", "!"]
    """
    if kind not in PRE_TOKENIZERS:
        raise ValueError(f"pre-tokenizer {kind!r} is not implemented; known: {PRE_TOKENIZERS}")
    parts = [text]
    if kind == "smollm":
        parts, start = [], 0
        for m in DIGIT.finditer(text):
            parts += [text[start:m.start()], m.group()]
            start = m.end()
        parts.append(text[start:])
    return [piece for part in parts if part for piece in GPT2_SPLIT.findall(part)]


def bpe(symbols: Sequence[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """Step 4 on one piece: join the adjacent pair of lowest rank, everywhere, until no pair
    of the list is a merge.

    Example: bpe(["a", "b", "c"], {("b", "c"): 0, ("a", "bc"): 1}) -> ["abc"]
    """
    word = list(symbols)
    while len(word) > 1:
        pairs = set(zip(word, word[1:], strict=False))                # adjacent pairs
        best = min(pairs, key=lambda p: ranks.get(p, len(ranks)))
        if best not in ranks:
            break
        merged, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                merged.append(word[i] + word[i + 1])
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = merged
    return word


@dataclass(frozen=True)
class Merge:
    rank: int
    left: str
    right: str

    @property
    def joined(self) -> str:
        return self.left + self.right


class ByteBPE:
    """Encode and decode with a trained vocabulary and its merges.

    ``tokens`` the vocabulary (id -> token, bytes written with byte_to_char), ``merges`` as
    "left right" strings in rank order, ``special`` the tokens cut out before pre-tokenising.
    The same interface as the course's CharTokenizer (encode, decode, tokens, bos_id, eos_id),
    so core.models.generate drives either.
    """

    def __init__(self, tokens: Sequence[str], merges: Sequence[str], special: Iterable[str],
                 pre: str = "smollm", bos_id: int | None = None, eos_id: int | None = None,
                 chat_template: str | None = None):
        if pre not in PRE_TOKENIZERS:
            raise ValueError(f"pre-tokenizer {pre!r} is not implemented; known: {PRE_TOKENIZERS}")
        self.vocab = list(tokens)                                    # id -> token
        self.ids = {t: i for i, t in enumerate(self.vocab)}          # token -> id
        self.merges: list[tuple[str, str]] = [tuple(m.split(" ", 1)) for m in merges]  # rank -> pair
        self.ranks: dict[tuple[str, str], int] = {p: r for r, p in enumerate(self.merges)}
        self.special = {t: self.ids[t] for t in special}
        # Longest first, so that no special token is cut by a shorter one inside it.
        self._special_split = regex.compile(
            "(" + "|".join(regex.escape(t) for t in sorted(self.special, key=len, reverse=True)) + ")"
        ) if self.special else None
        self.pre = pre
        self.bos_id = bos_id
        self.eos_id = eos_id
        self.chat_template = chat_template
        table = byte_to_char()
        # The byte values the vocabulary has no symbol for: encode drops them (see the module).
        self.no_token = frozenset(b for b in range(256) if table[b] not in self.ids)
        self._piece_ids = functools.lru_cache(maxsize=50_000)(self._encode_piece)

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def merge(self, rank: int) -> Merge:
        """Merge number ``rank`` (0 = learned first). Example: merge(0) -> Merge(0, "Ġ", "t")"""
        left, right = self.merges[rank]
        return Merge(rank, left, right)

    def encode_bytes(self, raw: bytes) -> list[int]:
        """Steps 3 and 4 on the bytes of one piece: a symbol a byte (a byte without a token is
        dropped first, so its neighbours may merge), then the merges.

        Example (SmolLM2): encode_bytes(b"!!") -> [10095]; encode_bytes(b"!\\x04!") -> [10095]
        """
        table = byte_to_char()
        symbols = [table[b] for b in raw if b not in self.no_token]   # (L',) L' <= L
        return [self.ids[t] for t in bpe(symbols, self.ranks)]        # (T,)

    def _encode_piece(self, piece: str) -> tuple[int, ...]:
        return tuple(self.encode_bytes(piece.encode("utf-8")))

    def split(self, text: str) -> list[tuple[str, bool]]:
        """Step 1: (segment, is_special) in order. Example: "<|im_end|>hi" ->
        [("<|im_end|>", True), ("hi", False)]"""
        if self._special_split is None:
            return [(text, False)] if text else []
        return [(s, s in self.special) for s in self._special_split.split(text) if s]

    def encode(self, text: str, bos: bool = False, eos: bool = False) -> list[int]:
        """Text -> ids. Special tokens written in the text are special tokens. A byte without a
        token is dropped (``dropped`` lists them).

        Example (SmolLM2): encode("Hello world") -> [19556, 905]
        """
        ids = [self.bos_id] if bos and self.bos_id is not None else []
        for segment, is_special in self.split(text):
            if is_special:
                ids.append(self.special[segment])
                continue
            for piece in pre_tokenize(segment, self.pre):
                ids += self._piece_ids(piece)
        if eos and self.eos_id is not None:
            ids.append(self.eos_id)
        return ids

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Each id as readable text (its bytes decoded; a broken UTF-8 piece shows �).

        Example (SmolLM2): tokens([19556, 905]) -> ["Hello", " world"]
        """
        return [self.decode([i]) for i in ids]

    def token_bytes(self, i: int) -> bytes:
        """The bytes token ``i`` stands for. Example (SmolLM2): token_bytes(905) -> b" world" """
        token = self.vocab[i]
        if token in self.special:
            return token.encode("utf-8")
        table = char_to_byte()
        return bytes(table[c] for c in token)

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text: the tokens' bytes joined, then read as UTF-8 (a cut character shows �)."""
        return b"".join(self.token_bytes(int(i)) for i in ids).decode("utf-8", errors="replace")

    def dropped(self, text: str) -> list[tuple[str, bytes]]:
        """The characters of ``text`` that lose bytes in ``encode``, each once, in order, with
        those bytes. Empty for almost every text: only the bytes in ``no_token`` are dropped.

        Example (SmolLM2): dropped("hi \U00050000!") -> [("\U00050000", b"\xf1")]
        """
        if not self.no_token:
            return []
        out, seen = [], set()
        for ch in text:
            if ch in seen:
                continue
            seen.add(ch)
            lost = bytes(b for b in ch.encode("utf-8") if b in self.no_token)
            if lost:
                out.append((ch, lost))
        return out

    def is_known(self, ch: str) -> bool:
        """Whether every byte of ``ch`` has a token (a character is bytes: no unknown token)."""
        return not any(b in self.no_token for b in ch.encode("utf-8"))

    def chat(self, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True,
             system: str = DEFAULT_SYSTEM) -> str:
        """The ChatML prompt of SmolLM2-Instruct's template: each message is
        <|im_start|>role\\ncontent<|im_end|>\\n, a system message first when there is none.

        Example: chat([{"role": "user", "content": "hi"}]) ->
            "<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n"
            "<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n"
        """
        if messages and messages[0]["role"] != "system":
            messages = [{"role": "system", "content": system}, *messages]
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")
