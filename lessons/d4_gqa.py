"""D4 · Grouped-query and multi-query attention: query heads share key/value heads."""
import streamlit as st

from core.calc.kv_cache import cache_bytes_by_kv_heads, kv_cache_bytes, kv_groups
from core.parts.mha import repeat_kv
from ui.d4_gqa import KINDS, course_section, kind_of, real_section, sharing_controls, why_table
from ui.frame import device, figure, shapes_table, tr
from ui.lesson import Lesson
from ui.model import REAL, course_model, model_switch, real_model
from viz.gqa import cache_bars, head_map

NS = "d4"

lesson = Lesson(NS)

# Who reads what, and what it saves: both follow the model, H_kv and the context (the controls
# under the first title: in presenter mode, on the slide of its map).
lesson.section("map", layout_only=True, code=(repeat_kv, kv_groups), height=460, slide=False)
lesson.section("cache", layout_only=True, code=(kv_cache_bytes, cache_bytes_by_kv_heads), height=420, above=(),
               slide=False)


@lesson.body
def sharing(slots):
    with slots["map"].controls:
        cfg, h_kv, context = sharing_controls()
    kind = kind_of(cfg.n_heads, h_kv)
    with slots["map"].figure:
        figure(head_map(kv_groups(cfg.n_heads, h_kv), row_names=(tr(f"{NS}.query_heads"), tr(f"{NS}.kv_row")),
                        hover_names=(tr(f"{NS}.query_head"), tr(f"{NS}.kv_head")),
                        title=tr(f"{NS}.map_fig", model=cfg.title, kind=tr(KINDS[kind]), h=cfg.n_heads, h_kv=h_kv)),
               key=f"{NS}.diagram")
        st.markdown(tr(f"{NS}.map_caption", h=cfg.n_heads, h_kv=h_kv, g=cfg.n_heads // h_kv, own=cfg.n_kv_heads))
        shapes_table([
            ("Q = X W_q", f"(B, {cfg.n_heads}, N, {cfg.head_dim})"),
            ("K, V = X W_k, X W_v", f"(B, {h_kv}, S, {cfg.head_dim})"),
            (tr(f"{NS}.cache_row"), f"({cfg.n_layers}, 2, B, {h_kv}, S, {cfg.head_dim})"),
            ("repeat_kv(K), repeat_kv(V)", f"(B, {cfg.n_heads}, S, {cfg.head_dim})"),
            ("softmax(QKᵀ/√d_head)", f"(B, {cfg.n_heads}, N, S)"),
        ])

    sizes = cache_bytes_by_kv_heads(cfg, context)
    choices = list(sizes)
    gib = [sizes[c] / 2**30 for c in choices]
    labels = [f"{c}<br>{tr(KINDS[kind_of(cfg.n_heads, c)])}" for c in choices]   # two lines: upright, narrow
    with slots["cache"].figure:
        figure(cache_bars(labels, gib, choices.index(h_kv), title=tr(f"{NS}.cache_fig", model=cfg.title, n=context),
                          y_title="GiB", text=[f"{g:,.3g} GiB" for g in gib]),
               key=f"{NS}.cache")
        chosen = sizes[h_kv]
        # Two lines: the product, then its value (one line ran past half the page at 1440 px).
        st.latex(rf"\begin{{aligned}} M_{{KV}} &= 2 \times {cfg.n_layers} \times {h_kv} \times {cfg.head_dim}"
                 rf" \times {context:,} \times 2\ \text{{B}} \\ &= {chosen:,}\ \text{{B}}"
                 rf" \approx {chosen / 2**30:.3g}\ \text{{GiB}} \end{{aligned}}".replace(",", "{,}"))
        st.caption(tr(f"{NS}.cache_caption", mha=sizes[cfg.n_heads] / 2**30, ratio=cfg.n_heads // h_kv))
        if context > cfg.max_seq_len:
            st.warning(tr(f"{NS}.beyond_trained", model=cfg.title, trained=cfg.max_seq_len, context=context))


@lesson.section("why", text=None, above=(), slide=False)
def why(s):
    """Why not always MQA: who uses what."""
    st.markdown(why_table())


@lesson.section("model", text=None, above=(), slide=False)
def trained(s, dev):
    """A trained model's shared heads: the course model or SmolLM2 (its own switch)."""
    loaded = course_model(dev)
    if model_switch(NS) == REAL and (real := real_model(dev)) is not None:
        real_section(real[0], dev)
    elif loaded is not None:
        course_section(loaded, dev)


lesson.run(dev=device())
lesson.quiz([("try1", 1), ("try2", 2), ("try3", 0)])
