"""Byte-level byte-pair encoding (BPE): learn merges of frequent pairs, keep the history.

Dimension legend
    L   bytes of a text (UTF-8: 1 per ASCII letter, 3 per Chinese character, 4 per emoji)
    T   tokens after the merges (T <= L)
    M   merges learned; token ids 0..255 are the bytes, merge k makes id 256 + k - 1

Every text is first written as UTF-8 bytes, so the 256 byte tokens cover any Unicode at
all: nothing is ever unknown, and decode(encode(x)) == x for Chinese, English and emoji.
Training then repeats one step (Sennrich et al. 2016, after Gage 1994): count adjacent
pairs, replace the most frequent pair everywhere by a new token.

Tie rule: when several pairs share the highest count, the pair whose first occurrence
comes earliest in the training text wins (the text is read line by line, left to right).
This makes training deterministic without depending on the values of the ids.

Lines of the training text are trained separately: no merge spans a line break.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.text.tokenizer import BOS, EOS, CharTokenizer

N_BYTES = 256
TANG300 = Path(__file__).resolve().parents[2] / "assets" / "tang300.txt"
TANG300_CHARS = 6000          # the first poems only: pure-Python training must stay near a second

# A small training text: famous lines of Tang poetry (public domain) and a few English
# sentences of our own, so that merges of both scripts appear within a few dozen steps.
SAMPLE_CORPUS = """\
君不见，黄河之水天上来，奔流到海不复回。
君不见，高堂明镜悲白发，朝如青丝暮成雪。
人生得意须尽欢，莫使金樽空对月。
天生我材必有用，千金散尽还复来。
床前明月光，疑是地上霜。举头望明月，低头思故乡。
白日依山尽，黄河入海流。欲穷千里目，更上一层楼。
春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。
千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。
红豆生南国，春来发几枝。愿君多采撷，此物最相思。
空山不见人，但闻人语响。返景入深林，复照青苔上。
the river comes down from the sky and runs to the sea.
the moon is bright in front of the bed, the frost is white on the ground.
a token is a piece of text, and the model reads the tokens one by one.
the tokenizer learns which pieces of text come together most often.
"""


@dataclass(frozen=True)
class Merge:
    step: int                 # k = 1, 2, ... in the order the merges were learned
    pair: tuple[int, int]     # the two token ids that were joined
    count: int                # how often the pair occurred when it was chosen
    new_id: int               # 256 + k - 1
    tokens_after: int         # tokens in the whole training text once this merge is applied


def pair_counts(seqs: Iterable[Sequence[int]]) -> dict[tuple[int, int], int]:
    """How often each adjacent pair occurs; dict order = order of first
    occurrence.

    Overlapping pairs count: [97, 97, 97] holds (97, 97) twice.
    Example: pair_counts([[1, 2, 3, 1, 2]]) -> {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    """
    counts: dict[tuple[int, int], int] = {}
    for seq in seqs:
        for pair in zip(seq, seq[1:], strict=False):
            counts[pair] = counts.get(pair, 0) + 1
    return counts


def best_pair(
    counts: dict[tuple[int, int], int],
) -> tuple[tuple[int, int], int]:
    """The most frequent pair and its count; ties go to the pair seen first
    (dict order).

    Example: best_pair({(5, 1): 2, (1, 2): 2, (2, 3): 1}) -> ((5, 1), 2)
    """
    top_pair, top_count = None, 0
    for pair, count in counts.items():
        if count > top_count:    # strictly greater: an earlier pair keeps a tie
            top_pair, top_count = pair, count
    if top_pair is None:
        raise ValueError("no pair left to merge")
    return top_pair, top_count


def merge(seq: Sequence[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every occurrence of ``pair`` by ``new_id``, left to right,
    without overlap.

    Example: merge([97, 97, 97, 98], (97, 97), 256) -> [256, 97, 98]
    """
    out: list[int] = []
    i = 0
    while i < len(seq):
        if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out                                         # (T,) with T <= len(seq)


class ByteBPE:
    """A trained byte-level BPE: the ordered merges and the bytes of every token.
    Immutable after construction, so one instance can be shared by every student."""

    def __init__(self, merges: Sequence[Merge]):
        self.merges: tuple[Merge, ...] = tuple(merges)
        self.rank: dict[tuple[int, int], int] = {m.pair: m.step for m in self.merges}
        pieces = [bytes([b]) for b in range(N_BYTES)]
        for m in self.merges:
            pieces.append(pieces[m.pair[0]] + pieces[m.pair[1]])
        self.pieces: tuple[bytes, ...] = tuple(pieces)            # id -> the bytes it stands for

    @classmethod
    def train(cls, text: str, n_merges: int) -> ByteBPE:
        """Learn up to ``n_merges`` merges from ``text`` (fewer if no pair
        is left).

        Example: ByteBPE.train("aaabdaaabac", 1).merges[0]
                 -> Merge(1, (97, 97), 4, 256, 9):
        (a, a) occurs 4 times counting overlaps, but "aaa" holds only one
        non-overlapping copy, so the 11 bytes become 9 tokens.
        """
        lines = [line for line in text.split("\n") if line]
        seqs = [list(line.encode("utf-8")) for line in lines]  # (L_line,) each
        merges = []
        for k in range(1, n_merges + 1):
            counts = pair_counts(seqs)
            if not counts:
                break
            pair, count = best_pair(counts)
            new_id = N_BYTES + k - 1
            seqs = [merge(seq, pair, new_id) for seq in seqs]
            n_tokens = sum(len(seq) for seq in seqs)
            merges.append(Merge(k, pair, count, new_id, n_tokens))
        return cls(merges)

    def truncated(self, k: int) -> ByteBPE:
        """The tokenizer after the first ``k`` merges: training is greedy, so training
        with k merges gives exactly this prefix of the history."""
        return ByteBPE(self.merges[: max(0, k)])

    def __len__(self) -> int:
        return len(self.pieces)

    def encode(self, text: str) -> list[int]:
        """UTF-8 bytes, then the learned merges in the order they were learned.

        Example (merges of "aaabdaaabac"):
                 encode("aaabdaaabac") -> [259, 258, 97, 99]
        """
        ids = list(text.encode("utf-8"))                          # (L,)
        while len(ids) > 1:
            pairs = set(zip(ids, ids[1:], strict=False))
            never = len(self.rank) + 1        # a pair never learned ranks last
            pair = min(pairs, key=lambda p: self.rank.get(p, never))
            if pair not in self.rank:
                break
            ids = merge(ids, pair, N_BYTES + self.rank[pair] - 1)
        return ids                                                # (T,)

    def decode(self, ids: Iterable[int]) -> str:
        """Bytes of every token joined, then read as UTF-8 (broken bytes become U+FFFD)."""
        return b"".join(self.pieces[int(i)] for i in ids).decode("utf-8", errors="replace")

    def token_text(self, token_id: int) -> str:
        """A readable name for one token: its text, or hex for bytes that are not
        (yet) a whole character.

        Example: token_text(ord("a")) -> "a"; token_text(0xE9) -> "\\xe9"
        """
        return self.pieces[int(token_id)].decode("utf-8", errors="backslashreplace")


def byte_tokens(text: str) -> list[int]:
    """The plain byte-level view, before any merge.

    Example: byte_tokens("a黄") -> [97, 233, 187, 132]
    """
    return list(text.encode("utf-8"))


def corpus_lengths(text: str, bpe: ByteBPE) -> list[int]:
    """Tokens of the training text after 0, 1, ..., M merges (bytes first).

    Example: for "aaabdaaabac" and its 4 merges -> [11, 9, 7, 5, 4]
    """
    return [len(text.replace("\n", "").encode("utf-8"))] + [m.tokens_after for m in bpe.merges]


def corpora() -> list[str]:
    """Names of the training texts on offer: the built-in sample, and 《唐诗三百首》 if shipped."""
    return ["sample"] + (["tang300"] if TANG300.exists() else [])


def load_corpus(name: str) -> str:
    """The training text called ``name``; anything unknown (or a missing file) gives the sample."""
    if name == "tang300" and TANG300.exists():
        return TANG300.read_text(encoding="utf-8")[:TANG300_CHARS]
    return SAMPLE_CORPUS


@dataclass(frozen=True)
class TokenView:
    tokens: list[str]      # what each token stands for, readable
    ids: list[int]         # its id in that tokenizer's vocabulary
    special: list[bool]    # BOS, EOS and UNK


def tokenize(
    text: str, scheme: str, chars: CharTokenizer, bpe: ByteBPE
) -> TokenView:
    """``text`` as BOS + tokens + EOS under one of three schemes:
    "char" (one character, one token; UNK for characters the vocabulary lacks),
    "byte" (one UTF-8 byte, one token), "bpe" (bytes, then the merges of
    ``bpe``).

    Byte and BPE vocabularies put BOS and EOS after their last learned
    token, as GPT-2 puts <|endoftext|> at the end.
    Example: tokenize("黄", "byte", chars, bpe.truncated(0)).tokens
             -> ["<bos>", "\\xe9", "\\xbb", "\\x84", "<eos>"]
    """
    if scheme == "char":
        ids = chars.encode(text, bos=True, eos=True)                  # (N + 2,)
        return TokenView(chars.tokens(ids), ids, [i < 4 for i in ids])
    tok = bpe if scheme == "bpe" else bpe.truncated(0)
    body = tok.encode(text)                                            # (T,)
    bos, eos = len(tok), len(tok) + 1
    ids = [bos, *body, eos]                                           # (T + 2,)
    names = [BOS, *(tok.token_text(i) for i in body), EOS]
    return TokenView(names, ids, [True] + [False] * len(body) + [True])
