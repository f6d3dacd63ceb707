"""A1 · Tokenization: characters, bytes and byte-pair merges."""
import pandas as pd
import streamlit as st

from core.models.model import CourseModelUnavailable, load_course_tokenizer
from core.text.bpe import ByteBPE, best_pair, corpora, corpus_lengths, load_corpus, merge, pair_counts, tokenize
from core.text.tokenizer import CharTokenizer
from ui.frame import beside_code, choice, figure, fragment, header, plain, shapes_table, text_box, tr, try_this
from viz.tokens import chips, counts, merge_curve

NS = "a1"
DEFAULT_TEXT = "君不见，黄河之水天上来"
# The contract's English example beside the poem: a line of the sample training text, so its
# merges show (and so does the course vocabulary's lack of Latin letters: all <unk>).
EXAMPLES = {f"{NS}.example_zh": DEFAULT_TEXT, f"{NS}.example_en": "the river comes down from the sky"}
# Language-neutral ids in the URL, translated labels on the page (ui.frame.choice).
OPTION_TEXT = {"char": f"{NS}.opt_char", "byte": f"{NS}.opt_byte", "bpe": f"{NS}.opt_bpe",
               "sample": f"{NS}.opt_sample", "tang300": f"{NS}.opt_tang300"}
MAX_MERGES = 256
SCHEMES = ["char", "byte", "bpe"]

header(NS)


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


def use_example(text: str) -> None:
    st.session_state[f"{NS}.text"] = text          # a callback: runs before the text box is drawn


def text_controls():
    c1, c2 = st.columns([3, 2])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, 64, tr(f"{NS}.text_label"))
        b1, b2 = st.columns(2)
        for col, (name, example) in zip((b1, b2), EXAMPLES.items(), strict=True):
            col.button(tr(name), key=name, on_click=use_example, args=(example,), width="stretch")
    with c2:
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


# The page's fixed parts (prose, the code) are laid out once; the fragment below refills only
# the slots that depend on its controls, so a slider move re-sends the figures, not the page.
slot = {"controls": st.container()}
st.subheader(tr(f"{NS}.ids_title"))
st.markdown(tr(f"{NS}.ids_text"))
slot["ids"] = beside_code(tokenize, ByteBPE.encode, height=460)
st.subheader(tr(f"{NS}.bpe_title"))
st.markdown(tr(f"{NS}.bpe_text"))
slot["bpe_controls"] = st.container()          # k and the corpus sit above the curve they move
slot["merges"] = beside_code(pair_counts, best_pair, merge, ByteBPE.train, height=520)
st.subheader(tr(f"{NS}.count_title"))
st.markdown(tr(f"{NS}.count_text"))
slot["counts"] = st.container()


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

    view = shown[scheme]
    with slot["ids"]:
        figure(chips(view.tokens, view.ids, view.special,
                     title=tr(f"{NS}.chips_fig", scheme=tr(OPTION_TEXT[scheme]), n=len(view.ids)),
                     hover_names=(tr(f"{NS}.token"), "id", tr(f"{NS}.position"))), key=f"{NS}.chips")
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
        figure(counts(names, numbers, title=tr(f"{NS}.count_fig"), y_title=tr(f"{NS}.tokens_axis")), key=f"{NS}.counts")
        st.caption(tr(f"{NS}.count_caption", chars=numbers[0], bytes=numbers[1], bpe=numbers[2]))


lesson_body()

try_this(NS, [("try1", 2), ("try2", 1), ("try3", 0)])
