"""A2 · Embeddings: ids look up rows of a (V, D) table; a trained table puts related characters close."""
import functools

import streamlit as st

from core.lab.embedding import kept_on_map, lookup, nearest, nearest_to, pca_2d, row_lengths, word_vectors
from ui.a2_embeddings import (
    FALLBACK_D,
    TABLE_TEXT,
    course_model,
    known_char,
    map_points,
    neighbour_controls,
    neighbours_of,
    no_model_note,
    prompt_rows,
    random_rows,
    smollm2_sections,
    text_controls,
    weight_table,
)
from ui.frame import device, drawn, figure, plain, shapes_table, tr
from ui.lesson import Lesson
from ui.model import REAL, model_switch, real_model
from viz.embeddings import matrix, neighbours, pca_map

NS = "a2"

lesson = Lesson(NS)
lm = model_switch(NS)
real = real_model(device()) if lm == REAL else None   # (model, tokenizer), or None after a note
model, tok, problem = course_model()

# The lookup, neighbours and a map: on SmolLM2's table, or on the course model's (a random table
# and no more without it). In presenter mode each section's prose is a slide, then its controls
# with the figures they move.
missing = model is None and real is None
lesson.section("lookup", layout_only=True, code=(lookup,), height=300,
               text=None if missing else f"{NS}.real_lookup_text" if real is not None else "",
               note=functools.partial(no_model_note, problem) if missing else None)
if real is not None:
    lesson.section("near", layout_only=True, text=[f"{NS}.near_text_math", f"{NS}.real_near_text"],
                   code=(nearest_to, row_lengths, word_vectors), height=460)
    lesson.section("real_map", layout_only=True, code=(word_vectors, pca_2d))
elif model is None:
    lesson.section("near", layout_only=True, text=[f"{NS}.near_text_math", f"{NS}.near_text"], slide=False,
                   above=(), note=functools.partial(st.info, tr(f"{NS}.needs_model")))
else:
    lesson.section("near", layout_only=True, text=[f"{NS}.near_text_math", f"{NS}.near_text"],
                   code=(nearest,), height=420)
    lesson.section("map", layout_only=True, above=(), code=(pca_2d, kept_on_map))


@lesson.body
def body(slots, dev):
    """One fragment: the text drives every section; the prose, the code and the questions stay put."""
    with slots["lookup"].controls:
        text, picked = text_controls(model is not None and real is None, real)
    if real is not None:
        smollm2_sections(slots, text, real, dev)
        return
    if model is None:
        rows = random_rows(text, picked, dev)
        v, d, kind = len(set(text)) + 4, FALLBACK_D, tr(f"{NS}.random_table", seed=picked)
    else:
        rows = prompt_rows(picked, text, dev)
        (v, d), kind = weight_table(picked).shape, tr(f"{NS}.trained_table", table=tr(TABLE_TEXT[picked]))
    tokens = rows["tokens"]
    with slots["lookup"].figure:
        figure(matrix(rows["x"], tokens, title=tr(f"{NS}.matrix_fig", n=len(tokens), d=d, kind=kind),
                      hover_names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value"))), key=f"{NS}.matrix")
        if model is not None and tok.unk_id in rows["ids"]:
            st.info(tr(f"{NS}.has_unk"))
        shapes_table([(tr(f"{NS}.ids"), f"({len(tokens)},)"), (tr(f"{NS}.table"), f"({v}, {d})"),
                      ("X = E[ids]", f"({len(tokens)}, {d})")])
    if model is None:
        return

    with slots["near"].controls:
        k, char, top, near_table = neighbour_controls(len(tok) - 4)
        char = known_char(char, tok)
    row = tok.stoi[char]
    found_ids, found, sims = neighbours_of(near_table, row, k, top, dev)
    table_name = tr(TABLE_TEXT[near_table])
    with slots["near"].figure:
        figure(drawn(neighbours, found, sims, title=tr(f"{NS}.near_fig", char=char, k=len(found), table=table_name),
                     x_title=tr(f"{NS}.cosine")), key=f"{NS}.neighbours")

    known = [i for i in dict.fromkeys(rows["ids"]) if i >= 4]      # the prompt's characters, once each
    points = map_points(near_table, top, (*known, row), tuple(found_ids))
    with slots["map"].figure:
        ex1, ex2 = points["explained"]
        n = len(points["tokens"])
        # Built once per setting for every session (drawn): placing the labels apart is ~20 ms a map.
        figure(drawn(pca_map, points["coords"], points["tokens"], points["placed"][:-1], tok.tokens(known),
                     points["placed"][-1:], char, title=tr(f"{NS}.map_fig", n=n, table=table_name),
                     names=(tr(f"{NS}.map_all"), tr(f"{NS}.map_prompt"), tr(f"{NS}.map_chosen")),
                     axes=(f"PC 1 ({ex1:.1%})", f"PC 2 ({ex2:.1%})"), neighbour_coords=points["near"],
                     neighbour_tokens=found, neighbour_name=tr(f"{NS}.map_near", k=len(found))), key=f"{NS}.pca")
        st.caption(tr(f"{NS}.map_caption", kept=points["kept"], k=len(found), char=plain(char),
                      chance=len(found) ** 2 / max(1, n), kept_pct=ex1 + ex2))
        shapes_table([(tr(f"{NS}.searched"), f"({n}, {d})"), ("V[:, :2]", f"({d}, 2)"),
                      (tr(f"{NS}.map_points"), f"({n}, 2)")])


lesson.run(dev=device())
if real is None:
    lesson.quiz([("try1", 1), ("try2", 0), ("try3", 1)])
else:                                    # on SmolLM2, its own questions (its table, its tokens)
    lesson.quiz([("try4", 1), ("try5", 0), ("try6", 2)])
