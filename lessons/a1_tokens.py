"""A1 · Tokenization: characters, bytes and byte-pair merges."""
import streamlit as st

from core.lab.real_tokens import merge_steps, tokens_of_chars
from core.text import byte_bpe
from core.text.bpe import ByteBPE, best_pair, merge, pair_counts, tokenize
from ui.a1_tokens import (
    SCHEMES,
    bpe_controls,
    course_ids,
    merge_table,
    real_chars,
    real_ids,
    real_merge_replay,
    real_view,
    text_controls,
    trained,
    views,
)
from ui.frame import figure, tr
from ui.lesson import Lesson
from ui.model import REAL, model_switch, real_model
from viz.tokens import counts, merge_curve

NS = "a1"

lesson = Lesson(NS)
lm = model_switch(NS)
# Only the tokenizer is used here, so the CPU copy (the one ui/preload.py loads at start).
real = real_model("cpu") if lm == REAL else None
real_tok: byte_bpe.ByteBPE | None = real[1] if real else None

# In presenter mode each section's prose is a slide, then its controls with the figures they move.
if real_tok is None:
    lesson.section("ids", layout_only=True, code=(tokenize, ByteBPE.encode), height=460)
else:                                          # the chips are SmolLM2's: its tokenizer, two more sections
    lesson.section("ids", layout_only=True, text=f"{NS}.real_ids_text",
                   code=(byte_bpe.ByteBPE.encode, byte_bpe.pre_tokenize, byte_bpe.bpe))
    lesson.section("real_char", layout_only=True, slide=False, above=(), code=(tokens_of_chars,), height=460)
    lesson.section("real_merge", layout_only=True, slide=False, below=("replay",),   # replay: the page's width
                   code=(merge_steps, byte_bpe.ByteBPE.merge))
lesson.section("bpe", layout_only=True, code=(pair_counts, best_pair, merge, ByteBPE.train))  # k, corpus above
lesson.section("count", layout_only=True, above=())


@lesson.body
def body(slots, real_tok):
    """One fragment: the text drives every section, k and the corpus the curve and the counts."""
    with slots["ids"].controls:
        text, scheme = text_controls(real_tok)
    with slots["bpe"].controls:
        k, corpus = bpe_controls()
        with st.spinner(tr(f"{NS}.training")):   # the first look at a corpus trains its BPE
            bpe, chars, lengths = trained(corpus)
    k_used = min(k, len(bpe.merges))
    shown = views(text, corpus, k)
    rv = real_view(text, real_tok) if real_tok is not None else None

    with slots["ids"].figure:
        if rv is None:
            course_ids(shown[scheme], scheme, text)
        else:
            real_ids(rv, text, real_tok)
    if rv is not None:
        with slots["real_char"].figure:
            real_chars(rv, real_tok)
        real_merge_replay(rv, slots["real_merge"], real_tok)

    with slots["bpe"].figure:
        figure(merge_curve(lengths, k_used, title=tr(f"{NS}.curve_fig", corpus=corpus), x_title=tr(f"{NS}.merge_step"),
                           y_title=tr(f"{NS}.corpus_tokens")), key=f"{NS}.curve")
        merge_table(bpe, k, k_used)

    with slots["count"].figure:
        names = [tr(f"{NS}.scheme_char"), tr(f"{NS}.scheme_byte"), tr(f"{NS}.scheme_bpe", k=k_used)]
        numbers = [len(shown[s].ids) - 2 for s in SCHEMES]
        if rv is not None:                        # the trained tokenizer beside ours
            names.append(tr(f"{NS}.scheme_real"))
            numbers.append(len(rv["ids"]))
        figure(counts(names, numbers, title=tr(f"{NS}.count_fig"), y_title=tr(f"{NS}.tokens_axis")), key=f"{NS}.counts")
        st.caption(tr(f"{NS}.count_caption", chars=numbers[0], bytes=numbers[1], bpe=numbers[2])
                   + (tr(f"{NS}.count_caption_real", real=numbers[3]) if rv is not None else ""))


lesson.run(real_tok=real_tok)
lesson.quiz([("try1", 2), ("try2", 1), ("try3", 0)])
