"""Lesson A1's controls and tables, and its results computed once for every session: BPE trained
on a corpus, the text's tokens in each scheme, and SmolLM2's tokens and merges of a text.
"""
from __future__ import annotations

import streamlit as st

from core.lab.real_tokens import count_tokens, dropped_note, merge_steps, readable, symbol_text, tokens_of_chars
from core.models.model import CourseModelUnavailable, load_course_tokenizer
from core.text import byte_bpe
from core.text.bpe import ByteBPE, corpora, corpus_lengths, load_corpus, tokenize
from core.text.tokenizer import CharTokenizer
from ui.frame import choice, drawn, figure, plain, shapes_table, text_box, tr
from ui.theme import SCROLL_BOX
from ui.words import text_table
from viz.tokens import chips, per_character

NS = "a1"
MAX_MERGES = 256
SCHEMES = ["char", "byte", "bpe"]
MAX_PIECES = 40            # pieces of the text offered for the merge replay
MERGES_SHOWN = 20          # rows of SmolLM2's merge table from the chosen rank on
DEFAULT_TEXT = "君不见，黄河之水天上来"
# The contract's English example beside the poem: a line of the sample training text, so its
# merges show (and so does the course vocabulary's lack of Latin letters: all <unk>).
EXAMPLES = {f"{NS}.example_zh": DEFAULT_TEXT, f"{NS}.example_en": "the river comes down from the sky"}
# Language-neutral ids in the URL, translated labels on the page (ui.frame.choice).
OPTION_TEXT = {"char": f"{NS}.opt_char", "byte": f"{NS}.opt_byte", "bpe": f"{NS}.opt_bpe",
               "sample": f"{NS}.opt_sample", "tang300": f"{NS}.opt_tang300"}
TEXT_LIMIT = 256           # characters: up to 768 byte tokens, so SmolLM2 sees >= 256 of them
MAX_CHIPS = 96             # chips drawn; the table below them lists every id
MAX_BARS = 32              # characters in the per-character figure


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


# --- The page's controls and tables (lessons/a1_tokens.py lays out the sections) ------------------
def visible(token: str) -> str:
    """A space or line break in a table cell, made visible (a merge " " + "t" reads "␣ + t")."""
    return token.replace(" ", "␣").replace("\n", "↵")


ROW_PX = 36               # one row of a markdown table, drawn (header included)


def scrolled(table: str, height: int, name: str) -> None:
    """A table in a box of ``height`` px that scrolls when its rows do not fit (and then takes a
    tab stop: ui/theme.py); a short table takes only its own height."""
    rows = table.count("\n")                    # the header's rule and the body rows
    tall = rows * ROW_PX + 12 > height
    box = st.container(height=height, border=False, key=f"{SCROLL_BOX}-{name}") if tall else st.container()
    box.markdown(table)


def use_example(text: str) -> None:
    st.session_state[f"{NS}.text"] = text          # a callback: runs before the text box is drawn


def text_controls(real_tok):
    c1, c2 = st.columns([3, 2])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, TEXT_LIMIT, tr(f"{NS}.text_label"), area=True)
        if real_tok is not None and (note := dropped_note(real_tok, text.text)):
            st.warning(tr("real.dropped", **note))          # bytes SmolLM2 has no token for
        b1, b2 = st.columns(2)
        for col, (name, example) in zip((b1, b2), EXAMPLES.items(), strict=True):
            col.button(tr(name), key=name, on_click=use_example, args=(example,), width="stretch")
    with c2:
        if real_tok is not None:            # the chips are SmolLM2's own tokens
            st.caption(tr(f"{NS}.real_scheme"))
            scheme = "char"
        else:
            scheme = choice(tr(f"{NS}.scheme_label"), SCHEMES, f"{NS}.scheme",
                            {s: tr(OPTION_TEXT[s]) for s in SCHEMES}, widget="segmented", default="char",
                            help=tr(f"{NS}.scheme_help"))
    return (text.text if not text.empty else DEFAULT_TEXT), scheme or "char"


def bpe_controls():
    c1, c2 = st.columns([3, 2])
    with c1:
        k = st.slider(tr(f"{NS}.merges_label"), 0, MAX_MERGES, 40, key=f"{NS}.merges", bind="query-params")
    with c2:
        names = corpora()
        corpus = choice(tr(f"{NS}.corpus_label"), names, f"{NS}.corpus",
                        {c: tr(OPTION_TEXT[c]) for c in names}, widget="segmented", default="sample",
                        help=tr(f"{NS}.corpus_help"))
    return k, corpus or "sample"


def real_merge_controls(pieces: list[dict], real_tok) -> tuple[int, int]:
    c1, c2 = st.columns([1, 1])
    with c1:
        start = st.slider(tr(f"{NS}.rank_label"), 0, len(real_tok.merges) - MERGES_SHOWN, 0,
                          key=f"{NS}.rank", bind="query-params", help=tr(f"{NS}.rank_help"))
    with c2:
        # The piece by its number in the text (the address holds the number, not the text).
        names = {i: f"{i + 1}: {p['piece']}" for i, p in enumerate(pieces)}
        first = next((i for i, p in enumerate(pieces) if p["steps"]), 0)
        piece = choice(tr(f"{NS}.piece_label"), list(names), f"{NS}.piece", names, default=first,
                       help=tr(f"{NS}.piece_help"))
    return start, piece


def course_ids(view, scheme: str, text: str) -> None:
    """The chips and the id table of one of this lesson's tokenizers (the course model's chars)."""
    shown = min(len(view.ids), MAX_CHIPS)
    figure(chips(view.tokens[:shown], view.ids[:shown], view.special[:shown],
                 title=tr(f"{NS}.chips_fig", scheme=tr(OPTION_TEXT[scheme]), n=len(view.ids)),
                 hover_names=(tr(f"{NS}.token"), "id", tr(f"{NS}.position"))), key=f"{NS}.chips")
    if shown < len(view.ids):
        st.caption(tr(f"{NS}.chips_cut", shown=shown, n=len(view.ids)))
    if scheme == "char" and any(t == "<unk>" for t in view.tokens):
        st.info(tr(f"{NS}.has_unk"))
    # An id that is on screen, named as the row of E it selects in A2 (char ids only: the
    # byte and BPE ids belong to this lesson's own tokenizers, not to the course model).
    known = [(t, i) for t, i, sp in zip(view.tokens, view.ids, view.special, strict=True) if not sp]
    if scheme != "char":
        st.caption(tr(f"{NS}.row_other"))
    elif known:
        st.caption(tr(f"{NS}.row_caption", token=plain(known[0][0]), id=known[0][1]))
    scrolled(text_table([tr(f"{NS}.col_position"), tr(f"{NS}.col_token"), "id"],
                        [(i, visible(t), d) for i, (t, d) in enumerate(zip(view.tokens, view.ids, strict=True))]), 240, "ids")
    n = len(view.ids)
    shapes_table([(tr(f"{NS}.text"), f"{len(text)} {tr(f'{NS}.chars')}"), (tr(f"{NS}.ids"), f"({n},)"),
                  (tr(f"{NS}.with_specials"), f"BOS + {n - 2} + EOS")])


def real_ids(rv: dict, text: str, real_tok) -> None:
    """SmolLM2's chips and ids of the text, each token with its bytes."""
    n = len(rv["ids"])
    shown = min(n, MAX_CHIPS)
    # Built once per text and language for every session (ui.figures.drawn).
    figure(drawn(chips, rv["tokens"][:shown] or [""], rv["ids"][:shown] or [""], rv["special"][:shown] or [True],
                 title=tr(f"{NS}.real_chips_fig", n=n), hover_names=(tr(f"{NS}.token"), "id", tr(f"{NS}.position"))),
           key=f"{NS}.chips")
    if shown < n:
        st.caption(tr(f"{NS}.chips_cut", shown=shown, n=n))
    scrolled(text_table([tr(f"{NS}.col_position"), tr(f"{NS}.col_token"), "id", tr(f"{NS}.col_bytes")],
                        [(i, visible(t), d, h) for i, (t, d, h) in enumerate(zip(rv["tokens"], rv["ids"], rv["hex"],
                                                                                 strict=True))]), 240, "real-ids")
    shapes_table([(tr(f"{NS}.text"), f"{len(text)} {tr(f'{NS}.chars')}"), (tr(f"{NS}.ids"), f"({n},)"),
                  (tr(f"{NS}.vocab"), f"V = {len(real_tok):,}")])


def real_chars(rv: dict, real_tok) -> None:
    """Tokens per character: the course model's 1 against SmolLM2's, with the UTF-8 bytes."""
    c = rv["count"]
    m = min(len(rv["chars"]), MAX_BARS)
    course_per = [1] * m                 # the course model: one id per character (<unk> included)
    figure(drawn(per_character, rv["chars"][:m],
                 [(tr(f"{NS}.bar_course"), course_per), (tr(f"{NS}.bar_real"), rv["char_tokens"][:m]),
                  (tr(f"{NS}.bar_bytes"), rv["char_bytes"][:m])],
                 title=tr(f"{NS}.real_char_fig", course=c["course_per_char"], real=c["smollm2_per_char"]),
                 y_title=tr(f"{NS}.per_char_axis")), key=f"{NS}.per_char")
    if m < len(rv["chars"]):
        st.caption(tr(f"{NS}.bars_cut", shown=m, n=len(rv["chars"])))
    st.markdown(tr(f"{NS}.real_count_line", chars=c["chars"], course=c["course"], real=c["smollm2"],
                   bytes=c["bytes"], course_per=c["course_per_char"], real_per=c["smollm2_per_char"]))
    # The bytes of one Chinese character: the first of the text, or 黄 for a text without one.
    at = next((i for i, ch in enumerate(rv["chars"]) if "\u4e00" <= ch <= "\u9fff"), None)
    if at is None:
        st.caption(tr(f"{NS}.no_cjk"))
        shown = real_view("黄", real_tok)
        ch, cover, ids, toks, hexes = "黄", shown["char_cover"][0], shown["ids"], shown["tokens"], shown["hex"]
    else:
        ch, cover, ids, toks, hexes = rv["chars"][at], rv["char_cover"][at], rv["ids"], rv["tokens"], rv["hex"]
    utf8 = ch.encode("utf-8")
    parts = " + ".join(f"{plain(visible(toks[t]))} ({ids[t]}: {hexes[t]})" for t in cover)
    st.markdown(tr(f"{NS}.char_bytes", char=plain(ch), hex=utf8.hex(" ").upper(), n=len(utf8),
                   k=len(cover), parts=parts))


def real_merge_replay(rv: dict, s, real_tok) -> None:
    """SmolLM2's merge table from a chosen rank (``s.controls``, ``s.figure``) and one piece of
    the text merged step by step (``s.replay``, the page's width)."""
    with s.controls:
        start, piece = real_merge_controls(rv["pieces"] or [{"piece": "", "steps": [], "start": [], "ids": []}],
                                           real_tok)
    rows = [(rank, *map(visible, pair), new) for rank, *pair, new in real_merges(start, real_tok)]
    with s.figure:
        st.markdown(tr(f"{NS}.real_rank_caption", start=start, end=rows[-1][0]))
        scrolled(text_table([tr(f"{NS}.col_rank"), tr(f"{NS}.col_left"), tr(f"{NS}.col_right"),
                             tr(f"{NS}.col_joined"), tr(f"{NS}.col_new")], rows), 260, "real-ranks")
    if not rv["pieces"]:
        return
    with s.replay:
        p = rv["pieces"][min(piece, len(rv["pieces"]) - 1)]
        st.markdown(tr(f"{NS}.replay_caption", piece=plain(p["piece"]), n=len(p["start"]), k=len(p["steps"]),
                       t=len(p["ids"])))
        steps = [(0, "", "", "", "", " | ".join(map(visible, p["start"])))] + [
            (i + 1, str(rank), visible(left), visible(right), str(count), " | ".join(map(visible, after)))
            for i, (rank, left, right, count, after) in enumerate(p["steps"])]
        scrolled(text_table([tr(f"{NS}.col_step"), tr(f"{NS}.col_rank"), tr(f"{NS}.col_left"),
                             tr(f"{NS}.col_right"), tr(f"{NS}.col_times"), tr(f"{NS}.col_after")], steps), 420, "replay")
        st.caption(tr(f"{NS}.replay_ids", ids=", ".join(map(str, p["ids"]))))


def merge_table(bpe: ByteBPE, k: int, k_used: int) -> None:
    """The first ``k_used`` merges of the corpus's BPE, newest first (a note when k asks for more)."""
    rows = [(m.step, f"{bpe.token_text(m.pair[0])} + {bpe.token_text(m.pair[1])}", f"({m.pair[0]}, {m.pair[1]})",
             m.count, m.new_id, bpe.token_text(m.new_id)) for m in reversed(bpe.merges[:k_used])]
    st.markdown(tr(f"{NS}.table_caption", k=k_used))
    scrolled(text_table([tr(f"{NS}.col_step"), tr(f"{NS}.col_pair"), tr(f"{NS}.col_ids"), tr(f"{NS}.col_count"),
                         tr(f"{NS}.col_new"), tr(f"{NS}.col_token")], rows), 260, "merges")
    if k > len(bpe.merges):
        st.info(tr(f"{NS}.exhausted", n=len(bpe.merges)))
