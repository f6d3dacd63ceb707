"""A1 on SmolLM2: its trained byte-level BPE on the student's text, merge by merge.

Dimension legend
    C   characters of a text
    L   UTF-8 bytes of a text (1 per ASCII letter, 3 per Chinese character, 4 per emoji)
    T   SmolLM2 tokens of a text (T <= L)
    S   merges applied to one piece (S <= L - 1)

core.text.byte_bpe.ByteBPE encodes; this module lays its work open: which merges it applied to
a piece, in order (the same loop as core.text.byte_bpe.bpe, with a record of each step; a test
checks that both give the same tokens), and which tokens cover which character.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.text.byte_bpe import ByteBPE, byte_to_char, char_to_byte


def readable(raw: bytes) -> str:
    """Bytes as text a student can read: whole characters as themselves, a byte that is only
    part of a character as \\xNN.

    Example: readable(" king".encode()) -> " king"; readable("君".encode()[:2]) -> "\\xe5\\x90"
    """
    return raw.decode("utf-8", errors="backslashreplace")


def symbol_text(symbol: str) -> str:
    """A token written in byte symbols ("Ġking", "åĲ") as readable text (" king", "\\xe5\\x90").

    Example: symbol_text("Ġt") -> " t"
    """
    table = char_to_byte()
    return readable(bytes(table[c] for c in symbol))


@dataclass(frozen=True)
class MergeStep:
    rank: int                  # the merge's rank: 0 was learned first, and is applied first
    left: str                  # the pair joined, in byte symbols
    right: str
    count: int                 # how many places of the piece it joined at once
    after: tuple[str, ...]     # the piece's symbols once it is applied


def merge_steps(
    piece: str, ranks: dict[tuple[str, str], int]
) -> tuple[list[str], list[MergeStep]]:
    """The bytes of one pre-tokenized piece, and every merge applied to
    them, in order.

    Each step joins the adjacent pair of lowest rank, everywhere in the
    piece, until no adjacent pair is a merge (GPT-2's BPE, as
    core.text.byte_bpe.bpe does it).
    Example: merge_steps("abc", {("b", "c"): 0, ("a", "bc"): 1}) ->
        (["a", "b", "c"], [MergeStep(0, "b", "c", 1, ("a", "bc")),
                           MergeStep(1, "a", "bc", 1, ("abc",))])
    """
    table = byte_to_char()
    start = [table[b] for b in piece.encode("utf-8")]   # (L,) a byte each
    word, steps = list(start), []
    while len(word) > 1:
        pairs = set(zip(word, word[1:], strict=False))  # adjacent pairs
        best = min(pairs, key=lambda p: ranks.get(p, len(ranks)))
        if best not in ranks:
            break                               # no pair left is a merge
        merged, i, count = [], 0, 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                merged.append(word[i] + word[i + 1])
                i, count = i + 2, count + 1
            else:
                merged.append(word[i])
                i += 1
        word = merged                           # (L - joins so far,)
        steps.append(MergeStep(ranks[best], *best, count, tuple(word)))
    return start, steps


@dataclass(frozen=True)
class CharTokens:
    char: str
    utf8: bytes                # its bytes (3 for a Chinese character)
    tokens: tuple[int, ...]    # positions (in the text's token list) of the tokens covering them


def tokens_of_chars(
    text: str, tok: ByteBPE, ids: list[int]
) -> list[CharTokens]:
    r"""For each character of ``text``, the tokens of ``ids``
    (= tok.encode(text)) that hold one of its bytes. A token that spans
    two characters counts for both.

    Example (SmolLM2): tokens_of_chars("君a", tok, [16357, 245, 64]) ->
        [CharTokens("君", b"\xe5\x90\x9b", (0, 1)),
         CharTokens("a", b"a", (2,))]
    """
    ends, at = [], 0
    for i in ids:
        at += len(tok.token_bytes(i))
        ends.append(at)                     # (T,) the byte a token ends at
    out, start, t = [], 0, 0
    for ch in text:
        utf8 = ch.encode("utf-8")
        stop = start + len(utf8)            # ch is bytes [start, stop)
        while t < len(ends) and ends[t] <= start:
            t += 1                          # tokens that end before ch
        covering, u = [], t
        while u < len(ends) and (ends[u - 1] if u else 0) < stop:
            covering.append(u)              # token u starts before stop
            u += 1
        out.append(CharTokens(ch, utf8, tuple(covering)))
        start = stop
    return out


def count_tokens(text: str, course_ids: list[int], real_ids: list[int]) -> dict[str, float]:
    """The same text counted three ways, and the tokens per character of both tokenizers.

    Example: count_tokens("黄河", [7, 9], [1, 2, 3, 4]) ->
        {"chars": 2, "course": 2, "smollm2": 4, "bytes": 6, "course_per_char": 1.0,
         "smollm2_per_char": 2.0}
    """
    chars = len(text)
    return {"chars": chars, "course": len(course_ids), "smollm2": len(real_ids),
            "bytes": len(text.encode("utf-8")),
            "course_per_char": len(course_ids) / max(1, chars),
            "smollm2_per_char": len(real_ids) / max(1, chars)}
