"""Lesson A1's results, computed once for every session: BPE trained on a corpus, the text's tokens
in each scheme, and SmolLM2's tokens and merges of a text.
"""
from __future__ import annotations

import streamlit as st

from core.lab.real_tokens import count_tokens, merge_steps, readable, symbol_text, tokens_of_chars
from core.models.model import CourseModelUnavailable, load_course_tokenizer
from core.text import byte_bpe
from core.text.bpe import ByteBPE, corpus_lengths, load_corpus, tokenize
from core.text.tokenizer import CharTokenizer

MAX_MERGES = 256
SCHEMES = ["char", "byte", "bpe"]
MAX_PIECES = 40            # pieces of the text offered for the merge replay
MERGES_SHOWN = 20          # rows of SmolLM2's merge table from the chosen rank on


@st.cache_data(max_entries=4)
def trained(corpus: str) -> tuple[ByteBPE, list[str], list[int]]:
    """BPE with every merge, the character vocabulary and the corpus curve, for one corpus."""
    text = load_corpus(corpus)
    bpe = ByteBPE.train(text, MAX_MERGES)
    return bpe, list(CharTokenizer.from_text(text).itos[4:]), corpus_lengths(text, bpe)


@st.cache_resource(show_spinner=False)
def course_vocabulary() -> CharTokenizer | None:
    """The course model's own character vocabulary, shared by A1 and A2: an id here is the same
    row of the embedding table there. None when assets/ lacks it (a fresh checkout)."""
    try:
        return load_course_tokenizer()
    except CourseModelUnavailable:
        return None


@st.cache_data(max_entries=512)
def views(text: str, corpus: str, k: int) -> dict:
    bpe, chars, _ = trained(corpus)
    char_tok, bpe_k = course_vocabulary() or CharTokenizer(chars), bpe.truncated(k)
    return {scheme: tokenize(text, scheme, char_tok, bpe_k) for scheme in SCHEMES}


@st.cache_data(max_entries=512)
def real_view(text: str, _tok: byte_bpe.ByteBPE) -> dict:
    """SmolLM2's tokens of ``text`` (the one shared tokenizer: ``_tok`` is not part of the key),
    each character's tokens, the counts, and the merges applied to each piece, in order."""
    ids = _tok.encode(text)                                          # (T,)
    course_ids = (course_vocabulary() or CharTokenizer(sorted(set(text)))).encode(text)   # (C,)
    pieces = [p for seg, special in _tok.split(text) for p in
              ([seg] if special else byte_bpe.pre_tokenize(seg, _tok.pre))][:MAX_PIECES]
    replays = []
    for piece in pieces:
        if piece in _tok.special:
            replays.append({"piece": piece, "start": [piece], "steps": [], "ids": [_tok.special[piece]]})
            continue
        start, steps = merge_steps(piece, _tok.ranks, _tok.no_token)
        final = steps[-1].after if steps else tuple(start)
        replays.append({"piece": piece, "start": [symbol_text(c) for c in start], "ids": [_tok.ids[t] for t in final],
                        "steps": [(m.rank, symbol_text(m.left), symbol_text(m.right), m.count,
                                   [symbol_text(t) for t in m.after]) for m in steps]})
    per_char = tokens_of_chars(text, _tok, ids)
    return {"ids": ids, "tokens": [readable(_tok.token_bytes(i)) for i in ids],
            "hex": [_tok.token_bytes(i).hex(" ") for i in ids], "special": [i in _tok.special.values() for i in ids],
            "chars": [c.char for c in per_char], "char_tokens": [len(c.tokens) for c in per_char],
            "char_bytes": [len(c.utf8) for c in per_char], "char_cover": [list(c.tokens) for c in per_char],
            "count": count_tokens(text, course_ids, ids), "pieces": replays}


@st.cache_data(max_entries=256)
def real_merges(start: int, _tok: byte_bpe.ByteBPE) -> list[tuple[int, str, str, str, int]]:
    """SmolLM2's merges ``start`` .. ``start + MERGES_SHOWN - 1``: rank, left, right, joined, new id."""
    rows = []
    for rank in range(start, min(start + MERGES_SHOWN, len(_tok.merges))):
        m = _tok.merge(rank)
        rows.append((m.rank, symbol_text(m.left), symbol_text(m.right), symbol_text(m.joined), _tok.ids[m.joined]))
    return rows
