"""B2 · Multi-head attention."""
import streamlit as st

from core.lab.attention_lab import parameter_counts, seeded_mha
from core.parts.mha import MultiHeadAttention, merge_heads, split_heads
from ui.b2_heads import heads_demo, reshape_rows, text_controls, trained_heads
from ui.explorer import explorer
from ui.frame import device, figure, shapes_table, tr
from ui.lesson import Lesson
from viz.attention import head_bands, head_grid, head_param_bars, head_split, weight_top

NS = "b2"

lesson = Lesson(NS)
top = st.container()          # the text, H, d_model and the seed: they move every section below

# The grid comes from the module's forward, which runs these three steps (no RoPE or cache here);
# its title names H and d_head, so the fragment writes it.
lesson.section("grid", layout_only=True, title=False, text=None, slide=False, above=(),
               code=(MultiHeadAttention.queries, MultiHeadAttention.keys_values, MultiHeadAttention.attend,
                     seeded_mha))
lesson.section("trained", layout_only=True, text=None, slide=False, above=())   # heads that do differ
lesson.section("reshape", layout_only=True, above=("split",), code=(split_heads, merge_heads), height=640)
lesson.section("params", layout_only=True, above=(), code=(parameter_counts,), height=420)


@lesson.body
def body(slots, dev):
    """One fragment: the controls on top move every section (the prose and code stay put)."""
    with top:
        text, typed, h, d, seed = text_controls(dev)
    demo = heads_demo(text, d, h, seed, dev)
    tokens, n, d_head = demo["tokens"], len(demo["tokens"]), d // h
    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    grid_title = tr(f"{NS}.grid_title", h=h, d_head=d_head)
    slots["grid"].title.subheader(grid_title)
    heads = [tr(f"{NS}.head_short", i=i) for i in range(h)]      # counted from 0, as the code does
    with slots["grid"].figure:
        # One colour scale for every head, ending at the largest weight shown: on 0..1 random heads
        # of width 4-8 (weights ~1/N) were all pale and looked alike.
        top_weight = weight_top(demo["weights"])
        figure(head_grid(demo["weights"], tokens, titles=heads, cols=2, hover_names=hover,
                         height_per_row=300 if h > 1 else 460, zmax=top_weight, colorbar_title=tr("common.weight"),
                         key_labels=True),
               key=f"{NS}.grid", name=grid_title)
        st.caption(tr(f"{NS}.read_grid", top=top_weight))
    with slots["trained"].figure:
        trained_heads(text, typed, dev)
    with slots["reshape"].split:
        figure(head_split(demo["w_q"], demo["q_flat"], demo["q"], tokens, head_names=heads,
                          titles=[tr(f"{NS}.split_wq"), tr(f"{NS}.split_q"), tr(f"{NS}.split_batch")],
                          hover=(tr(f"{NS}.row"), tr(f"{NS}.column"), tr(f"{NS}.value"))), key=f"{NS}.split",
               name=tr(f"{NS}.reshape_title"))
        st.caption(tr(f"{NS}.read_split", h=h, d_head=d_head, d=d, n=n))
    with slots["reshape"].figure:
        shapes_table(reshape_rows(demo["shapes"], n, h, d_head))
        st.caption(tr(f"{NS}.round_trip", ok=tr(f"{NS}.yes") if demo["round_trip"] else tr(f"{NS}.no")))
        figure(head_bands(demo["concat"], tokens, h, head_names=heads, title=tr(f"{NS}.concat_fig", n=n, d=d),
                          hover_names=(tr(f"{NS}.token"), tr(f"{NS}.column"), tr(f"{NS}.value"))),
               key=f"{NS}.concat")
        st.caption(tr(f"{NS}.read_concat", d_head=d_head))
    with slots["params"].figure:
        # The figure names no H: it does not change when H moves (the counts don't), so moving H
        # redraws two figures, not three. The caption below gives the numbers.
        figure(head_param_bars(["W_q", "W_k", "W_v", "W_o"], d * d_head, d * d, h,
                               head_names=heads, group_names=(tr(f"{NS}.many_heads"), tr(f"{NS}.one_head")),
                               row_names=(tr(f"{NS}.many_short"), tr(f"{NS}.one_short")),
                               title=tr(f"{NS}.params_fig", d=d), x_title=tr(f"{NS}.parameters")),
               key=f"{NS}.params")
        st.caption(tr(f"{NS}.params_caption", h=h, d=d, d_head=d_head, per_head=d * d_head,
                      matrix=d * d, total=demo["params"]["heads"]["total"]))


lesson.run(dev=device())
explorer(NS, open_by_default=False)
lesson.quiz([("try1", 0), ("try2", 1), ("try3", 2)])
