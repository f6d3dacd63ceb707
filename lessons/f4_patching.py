"""F4 · Where the answer lives: activation patching on SmolLM2. Two runs that differ in one fact,
one activation copied from one into the other, and how much of the answer comes back."""
import functools

import numpy as np
import streamlit as st

from core.lab.patching import PAIRS, PairError, logit_diff, patch_entry, recovered, resume, tokenize_pair
from ui.classroom import presenting
from ui.f4_page import (
    DIR_KEYS,
    F1_MARKED,
    OWN,
    TOP_HEADS,
    answer_notes,
    f1_heads_marked,
    heads_table,
    own_controls,
    pair_controls,
    pair_problem,
    runs_figure,
    runs_section,
    selected_maps,
    strongest,
    top_heads,
    words,
)
from ui.f4_patching import cell_run, map_scale, pair_key, picked_cell
from ui.frame import device, drawn, figure, plain, ranged_slider, tr
from ui.lesson import Lesson
from ui.model import real_model
from viz.attention import bars
from viz.common import label
from viz.patching import head_patch_map, recovery_map, sublayer_maps

NS = "f4"
# Presenter mode: the residual map 400 px tall (a quarter more on screen), its caption above the bar
# at 1280x720; a cell's six likeliest tokens, not ten (ten bars at the presenter's type met, and every
# other token's label was thinned away, the top one's first).
RESID_PRESENT, CELL_PRESENT_BARS = 400, 6

lesson = Lesson(NS)
dev = device()
loaded = real_model(dev)                 # SmolLM2 only: the pairs are English sentences
if loaded is None:
    st.info(tr(f"{NS}.needs_real"))

# Presenter mode: the two runs below the controls' slide, their numbers and then their chart (the
# chart's caption fell under the bar), the residual map on a slide of its own after the sliders (its
# caption too), the patched cell's answer after the map, and the heads' table after the head map.
lesson.section("pair", layout_only=True, below=("runs", "runs_fig"),
               marks={"runs": f"{NS}.runs_slide", "runs_fig": f"{NS}.runs_fig_slide"})
# The code: the copy (patch_entry), the hook point where the patched run goes on through the
# model's own blocks (resume), the metric (logit_diff, recovered).
lesson.section("resid", layout_only=True, code=(patch_entry, resume, logit_diff, recovered), height=560,
               slide="controls", below=("cell",), marks={"cell": f"{NS}.cell_slide"})
lesson.section("sub", layout_only=True, above=())
lesson.section("heads", layout_only=True, above=(), below=("table",), marks={"table": f"{NS}.table_slide"})


@lesson.body
def body(slots, loaded, dev):
    """One fragment: the pair, its direction and the chosen cell refill every section."""
    if loaded is None:
        return
    with slots["pair"].controls:
        picked, noising = pair_controls()
        texts = own_controls() if picked == OWN else (PAIRS[picked].clean, PAIRS[picked].corrupted,
                                                      PAIRS[picked].right, PAIRS[picked].wrong)
        try:
            pair = tokenize_pair(loaded[1], *texts)
        except PairError as err:
            pair_problem(err)
            return
        answer_notes(loaded[1], texts[2], texts[3])
        if not pair.differ:
            st.warning(tr(f"{NS}.same_prompts"))
            return
        key = pair_key(*texts, noising, dev)
        maps = selected_maps(key, picked != OWN, loaded)
    if maps is None:
        slots["pair"].runs.caption(tr(f"{NS}.waiting", n=len(pair.clean_ids)))
        return
    with slots["pair"].runs:
        runs_section(maps, texts)
    with slots["pair"].runs_fig:
        runs_figure(maps)
        if not maps.separable:
            st.warning(tr(f"{NS}.inseparable"))
            return
    resid = maps.recovered["resid_pre"]                                      # (L, T)
    n_layers, n = resid.shape
    dir_keys = DIR_KEYS["noise" if noising else "denoise"]
    direction = tr(dir_keys[3])
    hover = words(f"{NS}.layer_word", f"{NS}.pos_word", f"{NS}.recovered_word")
    with slots["resid"].controls:
        c1, c2 = st.columns(2)
        with c1:
            layer = ranged_slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, n_layers // 2, key=f"{NS}.layer")
        with c2:
            pos = ranged_slider(tr(f"{NS}.pos_label"), 0, n - 1, pair.differ[-1], key=f"{NS}.pos")
    with slots["resid"].figure:
        fig = drawn(recovery_map, resid, maps.clean_tokens, maps.corrupted_tokens,
                    title=tr(f"{NS}.resid_fig", direction=direction),
                    axis_titles=words(f"{NS}.layer_axis", f"{NS}.pos_axis"), hover_names=hover,
                    colorbar_title=tr(f"{NS}.recovered_word"), selected=(layer, pos), **map_scale(noising))
        # A click on a cell moves the block and position sliders (on_select).
        figure(fig, f"{NS}.resid", present_height=RESID_PRESENT,
               on_select=functools.partial(picked_cell, f"{NS}.resid", f"{NS}.layer", f"{NS}.pos"))
        st.caption(tr(dir_keys[2], layers=n_layers, n=n, first=plain(maps.clean_tokens[pair.differ[0]]),
                      early=float(np.nanmean(resid[: n_layers // 3, pair.differ[-1]])),
                      late=float(np.nanmean(resid[-(n_layers // 6):, -1])), cells=n_layers * n))
    with slots["resid"].cell:
        got = cell_run(key, "resid_pre", layer, pos, loaded)
        at = maps.clean_tokens[pos] if maps.clean_tokens[pos] == maps.corrupted_tokens[pos] else \
            f"{maps.clean_tokens[pos]}/{maps.corrupted_tokens[pos]}"
        k = CELL_PRESENT_BARS if presenting() else len(got["top"])
        figure(drawn(bars, [f"“{label(t)}”" for t in got["top"][:k]], {tr(f"{NS}.prob_word"): got["top_probs"][:k]},
                     title=tr(f"{NS}.cell_fig", layer=layer, at=label(at)), y_title=tr(f"{NS}.prob_word"),
                     fmt=".3f", height=420), key=f"{NS}.cell")
        st.caption(tr(f"{NS}.cell_caption", layer=layer, pos=pos, at=plain(at), diff=got["logit_diff"],
                      recovered=got["recovered"], top=plain(got["top"][0]), right=plain(maps.right)))
    with slots["sub"].figure:
        attn, ffn = maps.recovered["attn_out"], maps.recovered["ffn_out"]
        figure(drawn(sublayer_maps, attn, ffn, maps.clean_tokens, maps.corrupted_tokens,
                     title=tr(f"{NS}.sub_fig", direction=direction),
                     panel_titles=words(f"{NS}.attn_name", f"{NS}.ffn_name"),
                     axis_titles=words(f"{NS}.layer_axis", f"{NS}.pos_word"), hover_names=hover,
                     colorbar_title=tr(f"{NS}.recovered_word")), key=f"{NS}.sub")
        ai, aj, av = strongest(attn, noising)
        fi, fj, fv = strongest(ffn, noising)
        st.caption(tr(f"{NS}.sub_caption", a_layer=ai, a_at=plain(maps.clean_tokens[aj]), a_pos=aj, a_value=av,
                      f_layer=fi, f_at=plain(maps.clean_tokens[fj]), f_pos=fj, f_value=fv))
    with slots["heads"].figure:
        heads = maps.recovered["head"]                                       # (L, H)
        marks, scores = f1_heads_marked(texts[0], dev, loaded)
        figure(drawn(head_patch_map, heads, marks, title=tr(f"{NS}.heads_fig", direction=direction),
                     axis_titles=words(f"{NS}.layer_axis", f"{NS}.head_axis"),
                     hover_names=words(f"{NS}.layer_word", f"{NS}.head_word", f"{NS}.recovered_word"),
                     colorbar_title=tr(f"{NS}.recovered_word"), **map_scale(noising)), key=f"{NS}.heads")
    with slots["heads"].table:
        st.markdown(heads_table(heads, scores, noising))
        flagged = {h for hs in marks.values() for h in hs}
        shared = sum((i // heads.shape[1], i % heads.shape[1]) in flagged for i in top_heads(heads, noising))
        hl, hh, hv = strongest(heads, noising)
        st.caption(tr(f"{NS}.heads_caption", k=TOP_HEADS, shared=shared, marked=F1_MARKED, layer=hl, head=hh,
                      value=hv, attn=float(maps.recovered["attn_out"][hl, -1])))


lesson.run(loaded=loaded, dev=dev)
lesson.quiz([("try1", 1), ("try2", 2), ("try3", 0)])
