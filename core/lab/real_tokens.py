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
    piece: str, ranks: dict[tuple[str, str], int], no_token: frozenset[int] = frozenset()
) -> tuple[list[str], list[MergeStep]]:
    """The bytes of one pre-tokenized piece, and every merge applied to
    them, in order. The bytes in ``no_token`` (the vocabulary has no
    symbol for them: ByteBPE.no_token) are dropped first, as encode does.

    Each step joins the adjacent pair of lowest rank, everywhere in the
    piece, until no adjacent pair is a merge (GPT-2's BPE, as
    core.text.byte_bpe.bpe does it).
    Example: merge_steps("abc", {("b", "c"): 0, ("a", "bc"): 1}) ->
        (["a", "b", "c"], [MergeStep(0, "b", "c", 1, ("a", "bc")),
                           MergeStep(1, "a", "bc", 1, ("abc",))])
    """
    table = byte_to_char()
    start = [table[b] for b in piece.encode("utf-8") if b not in no_token]   # (L,) a byte each
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
    two characters counts for both; a character whose bytes were all
    dropped (ByteBPE.no_token) has none.

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
        stop = start + sum(b not in tok.no_token for b in utf8)   # ch is bytes [start, stop) of the ids
        if stop == start:                   # every byte of ch dropped: no token holds it
            out.append(CharTokens(ch, utf8, ()))
            continue
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


def dropped_note(tok: ByteBPE, text: str, shown: int = 6) -> dict[str, object] | None:
    """The fields of a lesson's notice that ``tok`` dropped bytes of ``text`` (ByteBPE.dropped),
    or None when it dropped none: how many characters, the first ``shown`` of them by code point
    (with the character itself where it prints), and how many byte values were dropped, and which.

    Example (SmolLM2): dropped_note(tok, "hi \U00050000") ->
        {"n": 1, "chars": "U+50000", "k": 1, "bytes": "0xF1"}
    """
    lost = tok.dropped(text)
    if not lost:
        return None
    names = [f"{ch} (U+{ord(ch):04X})" if ch.isprintable() else f"U+{ord(ch):04X}" for ch, _ in lost[:shown]]
    more = ", …" if len(lost) > shown else ""
    values = sorted({b for _, raw in lost for b in raw})
    return {"n": len(lost), "chars": ", ".join(names) + more, "k": len(values),
            "bytes": ", ".join(f"0x{b:02X}" for b in values)}


def special_runs(tok: ByteBPE, ids: list[int], limit: int | None = None) -> list[tuple[str, bool]]:
    """``ids`` decoded as runs of (text, is_special): a special token (<|im_start|>) is a run of its
    own, the ordinary tokens between specials one run. A text typed as "<|im_end|>" is ordinary
    tokens, so it stays inside an ordinary run: the caption can mark only the real control tokens.
    With ``limit``, a longer text keeps its first and last limit // 2 characters and " … " between
    them, never cutting a special token.

    Example (SmolLM2): special_runs(tok, [1, 4093, 198, 6004, 2]) ->
        [("<|im_start|>", True), ("user\\nhi", False), ("<|im_end|>", True)]
    """
    specials = set(tok.special.values())
    runs: list[tuple[list[int], bool]] = []
    for i in ids:
        if i in specials or not runs or runs[-1][1]:
            runs.append(([i], i in specials))
        else:
            runs[-1][0].append(i)
    out = [(tok.decode(r), special) for r, special in runs]
    total = sum(len(t) for t, _ in out)
    if limit is None or total <= limit:
        return out
    # A run's characters [start, end) of the whole text; cut [a, b), widened to whole specials.
    a, b, at, head, tail = limit // 2, total - limit // 2, 0, [], []
    for text, special in out:
        start, end = at, at + len(text)
        at = end
        if special:
            if start < a:
                head.append((text, True))
            elif end > b:
                tail.append((text, True))
            continue
        if start < a:
            head.append((text[: a - start], False))
        if end > b:
            tail.append((text[max(0, b - start):], False))
    return [*head, (" … ", False), *tail]
