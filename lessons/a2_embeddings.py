"""A2 · Embeddings: ids look up rows of a (V, D) table; a trained table puts related characters close."""
import streamlit as st

from core.lab.embedding import (
    kept_on_map,
    lookup,
    nearest,
    nearest_to,
    pca_2d,
    unit_rows,
    word_list,
    word_vectors,
)
from core.lab.real_tokens import dropped_note
from core.models.model import REBUILD
from ui import real_embeddings
from ui.a2_embeddings import (
    FALLBACK_D,
    course_model,
    map_points,
    neighbours_of,
    prompt_rows,
    random_rows,
    weight_table,
)
from ui.frame import (
    beside_code,
    built_figure,
    choice,
    code_panel,
    device,
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
from viz.common import label
from viz.embeddings import matrix, neighbours, pca_map, word_map

NS = "a2"
DEFAULT_TEXT = "君不见，黄河之水天上来"
DEFAULT_CHAR = "春"   # its nearest rows of E: 新 微 国 花 风 颜 边 愁 柳 (a loose spring family)
TABLES = ["embed", "output"]   # the model's input embedding, and the rows of its output projection
TABLE_TEXT = {"embed": f"{NS}.opt_embed", "output": f"{NS}.opt_output"}   # ids in the URL, names on the page
DEFAULT_WORD = "king"
DEFAULT_WORDS = ("king queen man woman prince princess Paris France Rome Italy Tokyo Japan "
                 "cat dog kitten puppy apple banana tangerine")   # tangerine: 3 tokens, their mean
MAX_WORDS = 30
WORDS_LIMIT = 300          # characters of the word list

header(NS)
lm = model_switch(NS)
real = real_model(device()) if lm == REAL else None   # (model, tokenizer), or None after a note


def text_controls(tables: bool):
    """The prompt, and which course table (E or the output layer), or a seed without the model."""
    c1, c2 = st.columns([3, 2])
    with c1:
        label = tr(f"{NS}.real_text_label") if real is not None else tr(f"{NS}.text_label")
        text = text_box(f"{NS}.text", DEFAULT_TEXT, 48, label)
        if real is not None and (note := dropped_note(real[1], text.text)):    # bytes SmolLM2 lacks
            st.warning(tr("real.dropped", **note))
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


def real_neighbour_controls() -> tuple[str, bool, int]:
    c1, c2, c3 = st.columns([2, 2, 2])
    with c1:
        word = text_box(f"{NS}.word", DEFAULT_WORD, 32, tr(f"{NS}.word_label"), empty_key=f"{NS}.word_empty")
        if real is not None and (note := dropped_note(real[1], word.text)):
            st.warning(tr("real.dropped", **note))
    with c2:
        space = st.toggle(tr(f"{NS}.space_label"), True, key=f"{NS}.space", bind="query-params",
                          help=tr(f"{NS}.space_help"))
    with c3:
        k = st.slider(tr(f"{NS}.k_label"), 3, 20, 10, key=f"{NS}.k", bind="query-params")
    return (word.text if not word.empty else DEFAULT_WORD), space, k


def real_map_controls() -> list[str]:
    typed = text_box(f"{NS}.words", DEFAULT_WORDS, WORDS_LIMIT, tr(f"{NS}.words_label"), area=True,
                     empty_key=f"{NS}.words_empty")
    if real is not None and (note := dropped_note(real[1], typed.text)):
        st.warning(tr("real.dropped", **note))
    words, cut = word_list(typed.text, MAX_WORDS)
    if cut:
        st.warning(tr(f"{NS}.words_cut", n=MAX_WORDS))
    if not typed.empty and len(words) < 3:
        st.info(tr(f"{NS}.words_few"))
    return words if len(words) >= 3 else word_list(DEFAULT_WORDS, MAX_WORDS)[0]


model, tok, problem = course_model()

# The page's fixed parts (prose, the code) are laid out once; the fragment below refills only
# the slots that depend on its controls, so a slider move re-sends the figures, not the page.
# In presenter mode each section's prose is a slide, then its controls with the figures they move.
st.subheader(tr(f"{NS}.lookup_title"))
if model is None and real is None:
    st.warning(tr(f"{NS}.no_model", command=REBUILD))
    st.caption(problem)
st.markdown(tr(f"{NS}.real_lookup_text") if real is not None else tr(f"{NS}.lookup_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.lookup_title")))
slot = {"controls": st.container()}          # the text and the table, above the matrix they drive
slot["lookup"] = beside_code(lookup, height=300)

st.subheader(tr(f"{NS}.near_title"))
if real is not None:
    st.markdown(tr(f"{NS}.near_text_math") + "\n\n" + tr(f"{NS}.real_near_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.near_title")))
    slot["near_controls"] = st.container()
    left, right = st.columns([1, 1])
    slot["near"] = left.container()
    with right:
        code_panel(nearest_to, unit_rows, word_vectors, height=460)
    st.subheader(tr(f"{NS}.real_map_title"))
    st.markdown(tr(f"{NS}.real_map_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.real_map_title")))
    slot["map_controls"] = st.container()
    slot["map"] = beside_code(word_vectors, pca_2d, height=520)
else:
    st.markdown(tr(f"{NS}.near_text_math") + "\n\n" + tr(f"{NS}.near_text"))
    if model is None:
        st.info(tr(f"{NS}.needs_model"))
    else:
        slide(tr("classroom.slide.continued", title=tr(f"{NS}.near_title")))
        slot["near_controls"] = st.container()
        left, right = st.columns([1, 1])
        slot["near"] = left.container()
        with right:
            code_panel(nearest, height=420)
        st.subheader(tr(f"{NS}.map_title"))
        st.markdown(tr(f"{NS}.map_text"))
        slide(tr("classroom.slide.continued", title=tr(f"{NS}.map_title")))
        slot["map"] = beside_code(pca_2d, kept_on_map, height=520)


def real_lesson(text: str) -> None:
    """The same three steps on SmolLM2's trained table: the lookup, neighbours, a map of words."""
    smol, smol_tok = real
    dev = device()
    rows = real_embeddings.prompt_rows(text, dev, smol, smol_tok)
    v, d = real_embeddings.table(smol).shape
    tokens, n = rows["tokens"], len(rows["ids"])
    with slot["lookup"]:
        # Each SmolLM2 figure is built once per input and language for every session (built_figure).
        figure(built_figure(("a2.real_matrix", lang(), text), lambda: matrix(
            rows["x"], tokens, title=tr(f"{NS}.matrix_fig", n=len(tokens), d=d, kind=tr(f"{NS}.real_table")),
            hover_names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value")))), key=f"{NS}.matrix")
        if len(tokens) < n:
            st.caption(tr(f"{NS}.rows_cut", shown=len(tokens), n=n))
        shapes_table([(tr(f"{NS}.ids"), f"({n},)"), (tr(f"{NS}.table"), f"({v:,}, {d})"),
                      ("X = E[ids]", f"({n}, {d})")])

    with slot["near_controls"]:
        word, space, k = real_neighbour_controls()
    near = real_embeddings.neighbours(word, space, k, dev, smol, smol_tok)
    typed = ((" " + word) if space else word).replace(" ", "␣")
    with slot["near"]:
        figure(built_figure(("a2.real_near", lang(), word, space, k), lambda: neighbours(
            [t.replace(" ", "␣") for t in near["labels"]], near["sims"], title=tr(f"{NS}.real_near_fig", k=len(near["labels"]), word=label(typed)),
            x_title=tr(f"{NS}.cosine"))), key=f"{NS}.neighbours")
        pieces = " + ".join(f"{plain(t.replace(' ', '␣'))} ({i})" for t, i in zip(near["tokens"], near["ids"], strict=True))
        key = f"{NS}.word_one" if len(near["ids"]) == 1 else f"{NS}.word_many"
        st.markdown(tr(key, word=plain(typed), pieces=pieces, n=len(near["ids"])))

    with slot["map_controls"]:
        words = real_map_controls()
    wmap = real_embeddings.word_map(tuple(words), dev, smol, smol_tok)
    counts = [len(p) for p in wmap["ids"]]
    with slot["map"]:
        ex1, ex2 = wmap["explained"]
        hover = [f"{w}: {' + '.join(t).replace(' ', '␣')}" for w, t in zip(words, wmap["tokens"], strict=True)]
        figure(built_figure(("a2.word_map", lang(), tuple(words)), lambda: word_map(
            wmap["coords"], words, counts, title=tr(f"{NS}.real_map_fig", n=len(words)),
            names=(tr(f"{NS}.map_one"), tr(f"{NS}.map_many")), axes=(f"PC 1 ({ex1:.1%})", f"PC 2 ({ex2:.1%})"),
            hover=hover, hover_only=tr(f"{NS}.map_hover_only"))), key=f"{NS}.word_map")
        many = [f"{plain(w)} = {' + '.join(plain(t.replace(' ', '␣')) for t in toks)}"
                for w, toks, c in zip(words, wmap["tokens"], counts, strict=True) if c > 1]
        st.caption(tr(f"{NS}.map_many_caption", words="; ".join(many)) if many else tr(f"{NS}.map_all_one"))
        shapes_table([(tr(f"{NS}.word_rows"), f"({len(words)}, {d})"), ("V[:, :2]", f"({d}, 2)"),
                      (tr(f"{NS}.map_points"), f"({len(words)}, 2)")])


@fragment
def lesson_body():
    """Reruns alone when one of its controls moves (st.fragment) and writes only into the
    slots above: the prose, the code and the questions stay as they are."""
    with slot["controls"]:
        text, picked = text_controls(tables=model is not None and real is None)
    if real is not None:
        real_lesson(text)
        return
    hover = (tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value"))
    if model is None:
        rows = random_rows(text, picked, device())
        v, d, kind = len(set(text)) + 4, FALLBACK_D, tr(f"{NS}.random_table", seed=picked)
    else:
        rows = prompt_rows(picked, text, device())
        (v, d), kind = weight_table(picked).shape, tr(f"{NS}.trained_table", table=tr(TABLE_TEXT[picked]))
    tokens = rows["tokens"]
    with slot["lookup"]:
        figure(matrix(rows["x"], tokens, title=tr(f"{NS}.matrix_fig", n=len(tokens), d=d, kind=kind),
                      hover_names=hover), key=f"{NS}.matrix")
        if model is not None and tok.unk_id in rows["ids"]:
            st.info(tr(f"{NS}.has_unk"))
        shapes_table([(tr(f"{NS}.ids"), f"({len(tokens)},)"), (tr(f"{NS}.table"), f"({v}, {d})"),
                      ("X = E[ids]", f"({len(tokens)}, {d})")])
    if model is None:
        return

    with slot["near_controls"]:
        k, char, top, near_table = neighbour_controls(len(tok) - 4)
        if not tok.is_known(char):
            st.warning(tr(f"{NS}.unknown_char", char=char, default=DEFAULT_CHAR))
            char = DEFAULT_CHAR
    row = tok.stoi[char]
    found_ids, found, sims = neighbours_of(near_table, row, k, top, device())
    table_name = tr(TABLE_TEXT[near_table])
    with slot["near"]:
        figure(built_figure(("a2.near", lang(), near_table, row, k, top, device()), lambda: neighbours(
            found, sims, title=tr(f"{NS}.near_fig", char=char, k=len(found), table=table_name),
            x_title=tr(f"{NS}.cosine"))), key=f"{NS}.neighbours")

    known = [i for i in dict.fromkeys(rows["ids"]) if i >= 4]      # the prompt's characters, once each
    points = map_points(near_table, top, (*known, row), tuple(found_ids))
    with slot["map"]:
        ex1, ex2 = points["explained"]
        n = len(points["tokens"])
        # Built once per setting for every session: placing the labels apart is ~20 ms a map.
        figure(built_figure(("a2.map", lang(), near_table, top, tuple(known), row, k, device()), lambda: pca_map(
            points["coords"], points["tokens"], points["placed"][:-1], tok.tokens(known),
            points["placed"][-1:], char, title=tr(f"{NS}.map_fig", n=n, table=table_name),
            names=(tr(f"{NS}.map_all"), tr(f"{NS}.map_prompt"), tr(f"{NS}.map_chosen")),
            axes=(f"PC 1 ({ex1:.1%})", f"PC 2 ({ex2:.1%})"), neighbour_coords=points["near"],
            neighbour_tokens=found, neighbour_name=tr(f"{NS}.map_near", k=len(found)))), key=f"{NS}.pca")
        st.caption(tr(f"{NS}.map_caption", kept=points["kept"], k=len(found), char=plain(char),
                      chance=len(found) ** 2 / max(1, n), kept_pct=ex1 + ex2))
        shapes_table([(tr(f"{NS}.searched"), f"({n}, {d})"), ("V[:, :2]", f"({d}, 2)"),
                      (tr(f"{NS}.map_points"), f"({n}, 2)")])


lesson_body()

if real is None:
    try_this(NS, [("try1", 1), ("try2", 0), ("try3", 1)])
else:                                    # on SmolLM2, its own questions (its table, its tokens)
    try_this(NS, [("try4", 1), ("try5", 0), ("try6", 2)])
