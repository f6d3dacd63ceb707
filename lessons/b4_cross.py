"""B4 · Cross-attention: a trained encoder-decoder reading dates, then two typed texts untrained."""
import numpy as np
import streamlit as st

from core.lab.date_lab import random_cross_attention
from core.models.encdec import cross_attend, cross_kv
from core.parts.mha import MultiHeadAttention
from ui.b4_cross import (
    MAX_TOKENS,
    cross_demo,
    cross_shapes,
    date_controls,
    example_buttons,
    text_controls,
    trained_view,
    verdict,
)
from ui.date_model import date_model
from ui.frame import device, figure, shapes_table, tr
from ui.lesson import Lesson
from viz.attention import rect_grid
from viz.encdec import alignment_map, head_strip, score_grid

NS = "b4"

lesson = Lesson(NS)
dev = device()
loaded = date_model(dev)


# The example buttons sit under the prose that says "press an example", on its slide. "The code"
# runs the page's width under the figures: at 1024 px beside a figure it would scroll sideways.
@lesson.section("trained", code=(cross_kv, cross_attend, MultiHeadAttention.attend), code_below=True,
                height=None, note=example_buttons, above=("controls", "verdict"), below=("scores",))
def trained(s, loaded, dev):
    """The trained model's section; reruns alone when its text, layer or head changes."""
    if not loaded:
        return
    config = loaded[0].config
    with s.controls:
        text, layer, head = date_controls(config.n_layers, config.n_heads)
    view = trained_view(text, dev)
    with s.verdict:
        verdict(text, view)
    w = view["weights"][layer]                                                    # (H, N, S)
    h, n, src = w.shape
    panels = np.concatenate([w.mean(0, keepdims=True), w])                       # (1 + H, N, S)
    names = [tr(f"{NS}.average")] + [tr(f"{NS}.head_name", i=i) for i in range(h)]
    shown = 0 if head is None else head + 1                                      # panel 0: the average
    # Rows as in C1: the character the decoder has read (<bos>, then what it wrote), the
    # source's end mark as <eos>.
    title = tr(f"{NS}.trained_fig", layer=layer, name=names[shown], n=n, s=src)
    st.markdown(f"**{title}**")
    figure(alignment_map(panels[shown], view["fed"], view["source"],
                         hover_names=(tr(f"{NS}.writing"), tr(f"{NS}.reading"), tr("common.weight")),
                         height=max(320, 26 * n + 70)), key=f"{NS}.trained", name=title)
    st.caption(tr(f"{NS}.trained_caption"))
    strip = tr(f"{NS}.strip_fig", layer=layer)
    st.markdown(f"**{strip}**")
    figure(head_strip(panels, names, height=max(170, 9 * n + 70)), key=f"{NS}.strip", name=strip)
    st.caption(tr(f"{NS}.strip_caption", n=n, s=src))
    align, best_text = s.scores.columns([1, 1])
    scores = view["scores"]
    if scores is None:
        align.info(tr(f"{NS}.no_alignment"))
        return
    best = np.unravel_index(int(scores.argmax()), scores.shape)
    with align:
        st.markdown(f"**{tr(f'{NS}.align_fig')}**")
        figure(score_grid(scores, row_names=[tr(f"{NS}.layer_name", i=i) for i in range(scores.shape[0])],
                          col_names=[str(j) for j in range(scores.shape[1])], title=tr(f"{NS}.heads_axis"),
                          hover_names=(tr(f"{NS}.layer_label"), tr(f"{NS}.heads_axis"), tr(f"{NS}.on_field"))),
               key=f"{NS}.align")
    best_text.markdown(tr(f"{NS}.best_head", layer=int(best[0]), head=int(best[1]),
                          score=100 * float(scores[best]), here=100 * float(scores[layer].max()),
                          this_layer=layer, this_head=int(scores[layer].argmax())))


@lesson.section("untrained", code=(random_cross_attention,), code_below=True, height=None,
                above=("controls", "title"))
def untrained(s, dev):
    """The two-typed-texts demo; reruns alone when a control moves."""
    with s.controls:
        target, source, h, seed = text_controls()
    demo = cross_demo(target, source, h, seed, dev)
    tgt, src = demo["target"], demo["source"]
    with s.title:
        if demo["cut"]:
            st.warning(tr(f"{NS}.cut", limit=MAX_TOKENS))
        title = tr(f"{NS}.matrix_title", n_t=len(tgt), n_s=len(src))
        st.markdown(f"**{title}**")
    figure(rect_grid(demo["weights"], tgt, src, titles=[tr(f"{NS}.head_name", i=i) for i in range(h)],
                     cols=2, hover_names=(tr(f"{NS}.query_target"), tr(f"{NS}.key_source"), tr("common.weight")),
                     height_per_row=max(320, 26 * len(tgt) + 90)), key=f"{NS}.cross", name=title)
    st.caption(tr(f"{NS}.read_matrix"))
    shapes_table(cross_shapes(len(tgt), len(src), demo["shapes"]))


lesson.section("where", layout_only=True, slide=False, above=())

lesson.run(loaded=loaded, dev=dev)
lesson.quiz([("try1", 1), ("try2", 2), ("try3", 0), ("try4", 1)])
