"""Lesson A2's controls, and its results computed once for every session: the course model's
embedding table, a prompt's rows, nearest neighbours and the table's map.
"""
from __future__ import annotations

import streamlit as st

from core.lab import toy
from core.lab.embedding import (
    frequent_ids,
    kept_on_map,
    lookup,
    nearest,
    pca_2d,
    word_list,
)
from core.lab.real_tokens import dropped_note
from core.models.model import REBUILD
from ui import real_embeddings
from ui.frame import choice, drawn, figure, plain, shapes_table, text_box, tr
from ui.model import course_model_or_reason
from viz.common import label
from viz.embeddings import matrix, neighbours, word_map

NS = "a2"
FALLBACK_D = 64
DEFAULT_TEXT = "君不见，黄河之水天上来"
DEFAULT_CHAR = "春"   # its nearest rows of E: 新 微 国 花 风 颜 边 愁 柳 (a loose spring family)
TABLES = ["embed", "output"]   # the model's input embedding, and the rows of its output projection
TABLE_TEXT = {"embed": f"{NS}.opt_embed", "output": f"{NS}.opt_output"}   # ids in the URL, names on the page
DEFAULT_WORD = "king"
DEFAULT_WORDS = ("king queen man woman prince princess Paris France Rome Italy Tokyo Japan "
                 "cat dog kitten puppy apple banana tangerine")   # tangerine: 3 tokens, their mean
MAX_WORDS = 30
WORDS_LIMIT = 300          # characters of the word list


def course_model():
    """(model, tokenizer, None) or (None, None, why not): ui.model's copy, shared by every student and
    every lesson (this page once loaded a second copy of its own, 5.4 MB)."""
    return course_model_or_reason("cpu")


def weight_table(name: str):
    model = course_model()[0]
    layer = model.output if name == "output" else model.embed
    return layer.weight.detach()                                   # (V, D)


@st.cache_data(max_entries=64)
def prompt_rows(name: str, text: str, dev: str) -> dict:
    """X = E[ids] for the prompt, from the trained table ``name``."""
    model, tok, _ = course_model()
    ids = tok.encode(text)                                          # (N,)
    x = lookup(weight_table(name).to(dev), ids)                     # (N, D)
    return {"ids": ids, "tokens": tok.tokens(ids), "x": x.cpu().numpy()}


@st.cache_data(max_entries=64)
def random_rows(text: str, seed: int, dev: str) -> dict:
    tokens, x = toy.embed_text(text, FALLBACK_D, seed, dev)        # (N, D)
    return {"tokens": tokens, "x": x.cpu().numpy()}


@st.cache_data(max_entries=256)
def neighbours_of(name: str, row: int, k: int, top: int, dev: str) -> tuple[list[int], list[str], list[float]]:
    table = weight_table(name).to(dev)                              # (V, D)
    found, sims = nearest(table, row, k, frequent_ids(len(table), top).to(dev))
    return found.tolist(), course_model()[1].tokens(found.tolist()), sims.cpu().tolist()


@st.cache_data(max_entries=16)
def table_map(name: str, top: int) -> dict:
    """The 2-D PCA of the ``top`` most frequent characters' rows (fitted once per choice)."""
    table = weight_table(name)                                      # (V, D)
    ids = frequent_ids(len(table), top)                             # (C,)
    pca = pca_2d(table[ids])
    return {"tokens": course_model()[1].tokens(ids.tolist()), "pca": pca}


@st.cache_data(max_entries=256)
def map_points(name: str, top: int, ids: tuple[int, ...], near: tuple[int, ...]) -> dict:
    """The map of the frequent rows, with the rows ``ids`` (prompt, then the chosen character)
    and the chosen one's nearest rows ``near`` placed on it, and how many of those the map kept."""
    tmap = table_map(name, top)
    pca = tmap["pca"]
    placed = pca.project(lookup(weight_table(name), list(ids)))                     # (n, 2)
    nearby = pca.project(lookup(weight_table(name), list(near)))                    # (k, 2)
    return {"tokens": tmap["tokens"], "coords": pca.coords.numpy(), "explained": pca.explained.tolist(),
            "placed": placed.numpy(), "near": nearby.numpy(), "kept": kept_on_map(pca.coords, placed[-1], nearby)}


# --- The page's controls (lessons/a2_embeddings.py lays out the sections that read them) ----------
def no_model_note(problem: str) -> None:
    """The lookup section's prose without the course model: what is missing, how to rebuild it."""
    st.warning(tr(f"{NS}.no_model", command=REBUILD))
    st.caption(problem)
    st.markdown(tr(f"{NS}.lookup_text"))


def dropped(real, text: str) -> None:
    """A warning for the bytes of ``text`` SmolLM2 has no token for (``real``: its model and tokenizer)."""
    if real is not None and (note := dropped_note(real[1], text)):
        st.warning(tr("real.dropped", **note))


def text_controls(tables: bool, real):
    """The prompt, and which course table (E or the output layer), or a seed without the model."""
    c1, c2 = st.columns([3, 2])
    with c1:
        label = tr(f"{NS}.real_text_label") if real is not None else tr(f"{NS}.text_label")
        text = text_box(f"{NS}.text", DEFAULT_TEXT, 48, label)
        dropped(real, text.text)
    with c2:
        if real is not None:                    # tied embeddings: one table, nothing to choose
            st.caption(tr(f"{NS}.real_tied"))
            picked = "embed"
        elif tables:
            picked = choice(tr(f"{NS}.table_label"), TABLES, f"{NS}.table", {t: tr(TABLE_TEXT[t]) for t in TABLES},
                            widget="segmented", default="embed", help=tr(f"{NS}.table_help"))
        else:
            picked = int(st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                                         help=tr("common.seed_help")))
    return (text.text if not text.empty else DEFAULT_TEXT), picked


def neighbour_controls(n_chars: int):
    c1, c2, c3, c4 = st.columns([2, 2, 2, 3])
    with c1:
        k = st.slider(tr(f"{NS}.k_label"), 3, 20, 10, key=f"{NS}.k", bind="query-params")
    with c2:
        char = text_box(f"{NS}.char", DEFAULT_CHAR, 1, tr(f"{NS}.char_label"))
    with c3:
        top = st.select_slider(tr(f"{NS}.top_label"), [100, 300, 1000, n_chars], value=300, key=f"{NS}.top",
                               bind="query-params", help=tr(f"{NS}.top_help"))
    with c4:
        # E by default, the table the lesson is about; the output rows, which group more clearly, on a click.
        table = choice(tr(f"{NS}.near_table_label"), TABLES, f"{NS}.near_table",
                       {t: tr(TABLE_TEXT[t]) for t in TABLES}, widget="segmented", default="embed",
                       help=tr(f"{NS}.table_help"))
    return k, (char.text if not char.empty else DEFAULT_CHAR), top, table or "embed"


def known_char(char: str, tok) -> str:
    """The chosen character, or the default one (with a warning) when the vocabulary lacks it."""
    if tok.is_known(char):
        return char
    st.warning(tr(f"{NS}.unknown_char", char=char, default=DEFAULT_CHAR))
    return DEFAULT_CHAR


def real_neighbour_controls(real) -> tuple[str, bool, int]:
    c1, c2, c3 = st.columns([2, 2, 2])
    with c1:
        word = text_box(f"{NS}.word", DEFAULT_WORD, 32, tr(f"{NS}.word_label"), empty_key=f"{NS}.word_empty")
        dropped(real, word.text)
    with c2:
        space = st.toggle(tr(f"{NS}.space_label"), True, key=f"{NS}.space", bind="query-params",
                          help=tr(f"{NS}.space_help"))
    with c3:
        k = st.slider(tr(f"{NS}.k_label"), 3, 20, 10, key=f"{NS}.k", bind="query-params")
    return (word.text if not word.empty else DEFAULT_WORD), space, k


def real_map_controls(real) -> list[str]:
    typed = text_box(f"{NS}.words", DEFAULT_WORDS, WORDS_LIMIT, tr(f"{NS}.words_label"), area=True,
                     empty_key=f"{NS}.words_empty")
    dropped(real, typed.text)
    words, cut = word_list(typed.text, MAX_WORDS)
    if cut:
        st.warning(tr(f"{NS}.words_cut", n=MAX_WORDS))
    if not typed.empty and len(words) < 3:
        st.info(tr(f"{NS}.words_few"))
    return words if len(words) >= 3 else word_list(DEFAULT_WORDS, MAX_WORDS)[0]


def smollm2_sections(slots: dict, text: str, real, dev: str) -> None:
    """A2's three steps on SmolLM2's trained table (``real``: its model and tokenizer), into the
    page's section slots: the lookup, neighbours, a map of words."""
    smol, smol_tok = real
    rows = real_embeddings.prompt_rows(text, dev, smol, smol_tok)
    v, d = real_embeddings.table(smol).shape
    tokens, n = rows["tokens"], len(rows["ids"])
    with slots["lookup"].figure:
        # Each SmolLM2 figure is built once per input and language for every session (drawn).
        figure(drawn(matrix, rows["x"], tokens, title=tr(f"{NS}.matrix_fig", n=len(tokens), d=d, kind=tr(f"{NS}.real_table")),
                     hover_names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value"))), key=f"{NS}.matrix")
        if len(tokens) < n:
            st.caption(tr(f"{NS}.rows_cut", shown=len(tokens), n=n))
        shapes_table([(tr(f"{NS}.ids"), f"({n},)"), (tr(f"{NS}.table"), f"({v:,}, {d})"), ("X = E[ids]", f"({n}, {d})")])

    with slots["near"].controls:
        word, space, k = real_neighbour_controls(real)
    near = real_embeddings.neighbours(word, space, k, dev, smol, smol_tok)
    typed = ((" " + word) if space else word).replace(" ", "␣")
    with slots["near"].figure:
        figure(drawn(neighbours, [t.replace(" ", "␣") for t in near["labels"]], near["sims"],
                     title=tr(f"{NS}.real_near_fig", k=len(near["labels"]), word=label(typed)),
                     x_title=tr(f"{NS}.cosine")), key=f"{NS}.neighbours")
        pieces = " + ".join(f"{plain(t.replace(' ', '␣'))} ({i})" for t, i in zip(near["tokens"], near["ids"], strict=True))
        key = f"{NS}.word_one" if len(near["ids"]) == 1 else f"{NS}.word_many"
        st.markdown(tr(key, word=plain(typed), pieces=pieces, n=len(near["ids"])))

    with slots["real_map"].controls:
        words = real_map_controls(real)
    wmap = real_embeddings.word_map(tuple(words), dev, smol, smol_tok)
    counts = [len(p) for p in wmap["ids"]]
    with slots["real_map"].figure:
        ex1, ex2 = wmap["explained"]
        hover = [f"{w}: {' + '.join(t).replace(' ', '␣')}" for w, t in zip(words, wmap["tokens"], strict=True)]
        figure(drawn(word_map, wmap["coords"], words, counts, title=tr(f"{NS}.real_map_fig", n=len(words)),
                     names=(tr(f"{NS}.map_one"), tr(f"{NS}.map_many")), axes=(f"PC 1 ({ex1:.1%})", f"PC 2 ({ex2:.1%})"),
                     hover=hover, hover_only=tr(f"{NS}.map_hover_only")), key=f"{NS}.word_map")
        many = [f"{plain(w)} = {' + '.join(plain(t.replace(' ', '␣')) for t in toks)}"
                for w, toks, c in zip(words, wmap["tokens"], counts, strict=True) if c > 1]
        st.caption(tr(f"{NS}.map_many_caption", words="; ".join(many)) if many else tr(f"{NS}.map_all_one"))
        shapes_table([(tr(f"{NS}.word_rows"), f"({len(words)}, {d})"), ("V[:, :2]", f"({d}, 2)"),
                      (tr(f"{NS}.map_points"), f"({len(words)}, 2)")])
