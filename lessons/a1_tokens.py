"""A1 · Tokenization: characters, bytes and byte-pair merges."""
import pandas as pd
import streamlit as st

from core.lab.real_tokens import dropped_note, merge_steps, tokens_of_chars
from core.text import byte_bpe
from core.text.bpe import ByteBPE, best_pair, corpora, merge, pair_counts, tokenize
from ui.a1_tokens import (
    MAX_MERGES,
    MERGES_SHOWN,
    SCHEMES,
    real_merges,
    real_view,
    trained,
    views,
)
from ui.frame import (
    beside_code,
    built_figure,
    choice,
    figure,
    fragment,
    header,
    lang,
    plain,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.model import REAL, model_switch, real_model
from viz.tokens import chips, counts, merge_curve, per_character

NS = "a1"
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

header(NS)
lm = model_switch(NS)
# Only the tokenizer is used here, so the CPU copy (the one ui/preload.py loads at start).
real = real_model("cpu") if lm == REAL else None
real_tok: byte_bpe.ByteBPE | None = real[1] if real else None


def visible(token: str) -> str:
    """A space or line break in a table cell, made visible (a merge " " + "t" reads "␣ + t")."""
    return token.replace(" ", "␣").replace("\n", "↵")


def use_example(text: str) -> None:
    st.session_state[f"{NS}.text"] = text          # a callback: runs before the text box is drawn


def text_controls():
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


def real_merge_controls(pieces: list[dict]) -> tuple[int, int]:
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


# The page's fixed parts (prose, the code) are laid out once; the fragment below refills only
# the slots that depend on its controls, so a slider move re-sends the figures, not the page.
# In presenter mode each section's prose is a slide, then its controls with the figures they move.
slot = {}
st.subheader(tr(f"{NS}.ids_title"))
if real_tok is None:
    st.markdown(tr(f"{NS}.ids_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.ids_title")))
    slot["controls"] = st.container()           # the text and the tokenizer, above the chips they drive
    slot["ids"] = beside_code(tokenize, ByteBPE.encode, height=460)
else:
    st.markdown(tr(f"{NS}.real_ids_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.ids_title")))
    slot["controls"] = st.container()
    slot["ids"] = beside_code(byte_bpe.ByteBPE.encode, byte_bpe.pre_tokenize, byte_bpe.bpe, height=520)
    st.subheader(tr(f"{NS}.real_char_title"))
    st.markdown(tr(f"{NS}.real_char_text"))
    slot["chars"] = beside_code(tokens_of_chars, height=460)
    st.subheader(tr(f"{NS}.real_merge_title"))
    st.markdown(tr(f"{NS}.real_merge_text"))
    slot["real_controls"] = st.container()
    slot["real_merges"] = beside_code(merge_steps, byte_bpe.ByteBPE.merge, height=520)
    slot["replay"] = st.container()         # the whole width: a piece's symbols after each merge
st.subheader(tr(f"{NS}.bpe_title"))
st.markdown(tr(f"{NS}.bpe_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.bpe_title")))
slot["bpe_controls"] = st.container()          # k and the corpus sit above the curve they move
slot["merges"] = beside_code(pair_counts, best_pair, merge, ByteBPE.train, height=520)
st.subheader(tr(f"{NS}.count_title"))
st.markdown(tr(f"{NS}.count_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.count_title")))
slot["counts"] = st.container()


def course_ids(view, scheme: str, text: str) -> None:
    """The chips and the id table of one of this lesson's tokenizers (the course model's chars)."""
    drawn = min(len(view.ids), MAX_CHIPS)
    figure(chips(view.tokens[:drawn], view.ids[:drawn], view.special[:drawn],
                 title=tr(f"{NS}.chips_fig", scheme=tr(OPTION_TEXT[scheme]), n=len(view.ids)),
                 hover_names=(tr(f"{NS}.token"), "id", tr(f"{NS}.position"))), key=f"{NS}.chips")
    if drawn < len(view.ids):
        st.caption(tr(f"{NS}.chips_cut", shown=drawn, n=len(view.ids)))
    if scheme == "char" and any(t == "<unk>" for t in view.tokens):
        st.info(tr(f"{NS}.has_unk"))
    # An id that is on screen, named as the row of E it selects in A2 (char ids only: the
    # byte and BPE ids belong to this lesson's own tokenizers, not to the course model).
    known = [(t, i) for t, i, sp in zip(view.tokens, view.ids, view.special, strict=True) if not sp]
    if scheme != "char":
        st.caption(tr(f"{NS}.row_other"))
    elif known:
        st.caption(tr(f"{NS}.row_caption", token=plain(known[0][0]), id=known[0][1]))
    st.dataframe(pd.DataFrame({tr(f"{NS}.col_position"): range(len(view.ids)), tr(f"{NS}.col_token"): view.tokens,
                               "id": view.ids}), hide_index=True, height=240, key=f"{NS}.id_table")
    n = len(view.ids)
    shapes_table([(tr(f"{NS}.text"), f"{len(text)} {tr(f'{NS}.chars')}"), (tr(f"{NS}.ids"), f"({n},)"),
                  (tr(f"{NS}.with_specials"), f"BOS + {n - 2} + EOS")])


def real_ids(rv: dict, text: str) -> None:
    """SmolLM2's chips and ids of the text, each token with its bytes."""
    n = len(rv["ids"])
    drawn = min(n, MAX_CHIPS)
    # Built once per text and language for every session (ui.frame.built_figure).
    figure(built_figure(("a1.real_chips", lang(), text), lambda: chips(
        rv["tokens"][:drawn] or [""], rv["ids"][:drawn] or [""], rv["special"][:drawn] or [True],
        title=tr(f"{NS}.real_chips_fig", n=n), hover_names=(tr(f"{NS}.token"), "id", tr(f"{NS}.position")))),
        key=f"{NS}.chips")
    if drawn < n:
        st.caption(tr(f"{NS}.chips_cut", shown=drawn, n=n))
    st.dataframe(pd.DataFrame({tr(f"{NS}.col_position"): range(n), tr(f"{NS}.col_token"): list(map(visible, rv["tokens"])),
                               "id": rv["ids"], tr(f"{NS}.col_bytes"): rv["hex"]}),
                 hide_index=True, height=240, key=f"{NS}.id_table")
    shapes_table([(tr(f"{NS}.text"), f"{len(text)} {tr(f'{NS}.chars')}"), (tr(f"{NS}.ids"), f"({n},)"),
                  (tr(f"{NS}.vocab"), f"V = {len(real_tok):,}")])


def real_chars(rv: dict, text: str) -> None:
    """Tokens per character: the course model's 1 against SmolLM2's, with the UTF-8 bytes."""
    c = rv["count"]
    m = min(len(rv["chars"]), MAX_BARS)
    course_per = [1] * m                 # the course model: one id per character (<unk> included)
    figure(built_figure(("a1.per_char", lang(), text), lambda: per_character(
        rv["chars"][:m], [(tr(f"{NS}.bar_course"), course_per), (tr(f"{NS}.bar_real"), rv["char_tokens"][:m]),
                          (tr(f"{NS}.bar_bytes"), rv["char_bytes"][:m])],
        title=tr(f"{NS}.real_char_fig", course=c["course_per_char"], real=c["smollm2_per_char"]),
        y_title=tr(f"{NS}.per_char_axis"))), key=f"{NS}.per_char")
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


def real_merge_replay(rv: dict) -> None:
    with slot["real_controls"]:
        start, piece = real_merge_controls(rv["pieces"] or [{"piece": "", "steps": [], "start": [], "ids": []}])
    rows = [(rank, *map(visible, pair), new) for rank, *pair, new in real_merges(start, real_tok)]
    with slot["real_merges"]:
        st.markdown(tr(f"{NS}.real_rank_caption", start=start, end=rows[-1][0]))
        st.dataframe(pd.DataFrame(rows, columns=[tr(f"{NS}.col_rank"), tr(f"{NS}.col_left"), tr(f"{NS}.col_right"),
                                                 tr(f"{NS}.col_joined"), tr(f"{NS}.col_new")]),
                     hide_index=True, height=260, key=f"{NS}.real_rank_table")
    if not rv["pieces"]:
        return
    with slot["replay"]:
        p = rv["pieces"][min(piece, len(rv["pieces"]) - 1)]
        st.markdown(tr(f"{NS}.replay_caption", piece=plain(p["piece"]), n=len(p["start"]), k=len(p["steps"]),
                       t=len(p["ids"])))
        steps = [(0, "", "", "", "", " | ".join(map(visible, p["start"])))] + [
            (i + 1, str(rank), visible(left), visible(right), str(count), " | ".join(map(visible, after)))
            for i, (rank, left, right, count, after) in enumerate(p["steps"])]
        st.dataframe(pd.DataFrame(steps, columns=[tr(f"{NS}.col_step"), tr(f"{NS}.col_rank"), tr(f"{NS}.col_left"),
                                                  tr(f"{NS}.col_right"), tr(f"{NS}.col_times"), tr(f"{NS}.col_after")]),
                     hide_index=True, height=min(420, 35 * (len(steps) + 1) + 3), key=f"{NS}.replay_table")
        st.caption(tr(f"{NS}.replay_ids", ids=", ".join(map(str, p["ids"]))))


@fragment
def lesson_body():
    """Reruns alone when one of its controls moves (st.fragment) and writes only into the
    slots above: the prose, the code and the questions stay as they are."""
    with slot["controls"]:
        text, scheme = text_controls()
    with slot["bpe_controls"]:
        k, corpus = bpe_controls()
        with st.spinner(tr(f"{NS}.training")):   # the first look at a corpus trains its BPE
            bpe, chars, lengths = trained(corpus)
    k_used = min(k, len(bpe.merges))
    shown = views(text, corpus, k)
    rv = real_view(text, real_tok) if real_tok is not None else None

    if rv is None:
        with slot["ids"]:
            course_ids(shown[scheme], scheme, text)
    else:
        with slot["ids"]:
            real_ids(rv, text)
        with slot["chars"]:
            real_chars(rv, text)
        real_merge_replay(rv)

    with slot["merges"]:
        figure(merge_curve(lengths, k_used, title=tr(f"{NS}.curve_fig", corpus=corpus), x_title=tr(f"{NS}.merge_step"),
                           y_title=tr(f"{NS}.corpus_tokens")), key=f"{NS}.curve")
        rows = [{tr(f"{NS}.col_step"): m.step, tr(f"{NS}.col_pair"): f"{bpe.token_text(m.pair[0])} + {bpe.token_text(m.pair[1])}",
                 tr(f"{NS}.col_ids"): f"({m.pair[0]}, {m.pair[1]})", tr(f"{NS}.col_count"): m.count,
                 tr(f"{NS}.col_new"): m.new_id, tr(f"{NS}.col_token"): bpe.token_text(m.new_id)}
                for m in reversed(bpe.merges[:k_used])]
        st.markdown(tr(f"{NS}.table_caption", k=k_used))
        st.dataframe(pd.DataFrame(rows, columns=[tr(f"{NS}.col_{c}") for c in ("step", "pair", "ids", "count", "new", "token")]),
                     hide_index=True, height=260, key=f"{NS}.merge_table")
        if k > len(bpe.merges):
            st.info(tr(f"{NS}.exhausted", n=len(bpe.merges)))

    with slot["counts"]:
        names = [tr(f"{NS}.scheme_char"), tr(f"{NS}.scheme_byte"), tr(f"{NS}.scheme_bpe", k=k_used)]
        numbers = [len(shown[s].ids) - 2 for s in SCHEMES]
        if rv is not None:                        # the trained tokenizer beside ours
            names.append(tr(f"{NS}.scheme_real"))
            numbers.append(len(rv["ids"]))
        figure(counts(names, numbers, title=tr(f"{NS}.count_fig"), y_title=tr(f"{NS}.tokens_axis")), key=f"{NS}.counts")
        st.caption(tr(f"{NS}.count_caption", chars=numbers[0], bytes=numbers[1], bpe=numbers[2])
                   + (tr(f"{NS}.count_caption_real", real=numbers[3]) if rv is not None else ""))


lesson_body()

try_this(NS, [("try1", 2), ("try2", 1), ("try3", 0)])
