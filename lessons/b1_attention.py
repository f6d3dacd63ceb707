"""B1 · Scaled dot-product attention."""
import contextlib
import functools
import math

import streamlit as st

from core.lab import toy
from core.lab.attention_lab import cell_arithmetic
from core.parts.attention import scaled_dot_product_attention
from ui.b1_attention import (
    BATCH,
    ENTROPY_KEYS,
    TRAINED,
    WIDTHS,
    D,
    hist_frames,
    scale_demo,
    shape_rows,
    source_controls,
    steps_demo,
    top_row,
    trained,
    widths,
)
from ui.classroom import presenting
from ui.explorer import explorer
from ui.frame import device, figure, lang, repeat_control, shapes_table, tr
from ui.lesson import Lesson
from ui.live import live_figure, live_value
from viz.attention import batch_grid, heatmap, lines, steps_grid, weight_top

NS = "b1"
PANELS = [f"{NS}.panel_q", f"{NS}.panel_k", f"{NS}.panel_v", f"{NS}.panel_scores", f"{NS}.panel_weights",
          f"{NS}.panel_output"]
INTRO = {"random": f"{NS}.random_intro", "course": f"{NS}.course_intro", "smollm2": f"{NS}.real_intro"}

lesson = Lesson(NS)
seed, text_slot, d_k_slot = top_row()      # the text and d_k are the matrix section's, drawn up here


# The six panels need the page's whole width (the "wide" slot, a slide of their own in presenter
# mode: under the source's controls they were squeezed to 300 px at 1280x720); the cell's
# arithmetic sits beside the code.
@lesson.section("matrix", code=(scaled_dot_product_attention, cell_arithmetic), above=("controls", "wide", "mix"),
                slide="controls", marks={"mix": f"{NS}.mix_slide"})
def matrix(s, seed, dev):
    with s.controls:
        source, text, layer, head, r, c = source_controls(text_slot, dev)
        st.caption(tr(INTRO[source]))
    d_model, d_k, d_v = widths(d_k_slot, source, dev)
    with st.spinner(tr(f"{NS}.real_running")) if source == "smollm2" else contextlib.nullcontext():
        demo = steps_demo(text, source, d_k, d_v, layer, head, seed, dev)
    if demo["n_ids"] > len(demo["tokens"]):
        s.controls.warning(tr(f"{NS}.real_cut", n=demo["n_ids"], limit=len(demo["tokens"])))
    tokens = demo["tokens"]
    r, c = min(r, len(tokens) - 1), min(c, len(tokens) - 1)
    with s.wide:
        hover = (tr("common.query"), tr("common.key"), tr(f"{NS}.value"))
        title = (tr(f"{NS}.steps_fig_course", layer=layer, head=head) if source == "course"
                 else tr(f"{NS}.steps_fig_real", layer=layer, head=head) if source == "smollm2"
                 else tr(f"{NS}.weights_fig", d_k=d_k, d_v=d_v))
        grid = functools.partial(steps_grid, demo["q"], demo["k"], demo["v"], demo["scores"], demo["weights"],
                                 demo["output"], tokens, titles=[tr(key) for key in PANELS], cell=(r, c),
                                 hover=hover, masked=demo["masked"],
                                 bar_titles=(tr(f"{NS}.value"), tr("common.score"), tr("common.weight")),
                                 value_titles=(tr(f"{NS}.scale_qk"), tr(f"{NS}.scale_vo")))
        if not presenting():
            figure(grid(title=title), key=f"{NS}.weights")
    # Two rows of three panels were 112 px each on a 1280x720 slide: in presenter mode Q, K, V on
    # one slide, scores, weights and output on the next ("mix"), each with the row and column again.
    for part, copy, slot in (((0, 1, 2), "again", s.wide), ((3, 4, 5), "again2", s.mix)) if presenting() else ():
        with slot:
            again_r, again_c = st.columns(2)
            with again_r:
                repeat_control(st.slider, tr(f"{NS}.row_label"), 0, len(tokens) - 1, key=f"{NS}.r", copy=copy)
            with again_c:
                repeat_control(st.slider, tr(f"{NS}.col_label"), 0, len(tokens) - 1, key=f"{NS}.c", copy=copy)
            figure(grid(show=part, title=title if copy == "again" else None),   # untitled on its second slide: named
                   key=f"{NS}.weights" if copy == "again" else f"{NS}.weights_mix", name=title)
    with s.mix:
        # For a projector: the weights alone, the page's whole width (off by default: no cost).
        if st.toggle(tr(f"{NS}.large_label"), value=False, key=f"{NS}.large", bind="query-params"):
            figure(heatmap(demo["weights"], tokens, tokens, title=tr(f"{NS}.large_fig"), hover_names=hover,
                           masked=demo["masked"], zmax=weight_top(demo["weights"]),
                           colorbar_title=tr("common.weight"), height=640), key=f"{NS}.large_fig")
    st.caption(tr(f"{NS}.read_matrix"))
    # The row the softmax read (closed keys at −∞): its m, e and Σ give the framed weight.
    cell = cell_arithmetic(demo["steps"], r, c, demo["mask"])
    st.markdown(tr(f"{NS}.cell_steps_masked" if cell["masked"] else f"{NS}.cell_steps", r=r, c=c,
                   dot=cell["dot"], root=cell["sqrt_d_k"], d_k=d_k, score=cell["score"], top=cell["max"],
                   shift=cell["shift"], e=cell["exp"], total=cell["row_sum"], weight=cell["weight"],
                   seen=cell["seen"]))
    if source in TRAINED:
        cfg = trained(source, dev)[0].config
        st.caption(tr(f"{NS}.course_note", d_head=d_k, d=d_model, heads=cfg.n_heads, kv=cfg.n_kv_heads))
    shapes_table(shape_rows(source, len(tokens), d_model, d_k, d_v))


@lesson.section("scale", above=())
def scale(s, seed):
    width = int(live_value(f"{NS}.width", WIDTHS, 64))   # the histogram's own live slider (ui.live)
    demo = scale_demo(width, seed)
    raw, scaled = tr(f"{NS}.raw"), tr(f"{NS}.scaled")
    c1, c2 = st.columns(2)
    with c1:
        live_figure(hist_frames, (seed, lang()), f"{NS}.hist", f"{NS}.width", WIDTHS, 64, tr(f"{NS}.width_label"))
        st.caption(tr(f"{NS}.variance", d_k=width, raw=float(demo["scores_raw"].var()),
                      scaled=float(demo["scores_scaled"].var())))
    with c2:
        at = WIDTHS.index(width)
        mine = tr(f"{NS}.current", d_k=width)
        here = [math.nan] * at + [float(demo["curve_raw"][at])] + [math.nan] * (len(WIDTHS) - at - 1)
        star = {"mode": "markers", "marker": {"size": 18, "symbol": "star", "color": "#d62728",
                                              "line": {"color": "black", "width": 1}}}
        figure(lines(WIDTHS, {raw: demo["curve_raw"], scaled: demo["curve_scaled"], mine: here},
                     title=tr(f"{NS}.entropy_fig"), x_title="d_k", y_title=tr(f"{NS}.entropy_axis"),
                     log_x=True, markers=True, legend_below=True, styles={mine: star}), key=f"{NS}.entropy")
        st.caption(tr(f"{NS}.entropy_caption", n=ENTROPY_KEYS, max=math.log(ENTROPY_KEYS)))


@lesson.section("batch", code=(toy.batch_attention,), above=(), height=420)
def batch(s, seed, dev):
    """Three texts of one length, attended in one call; reruns alone with its d_k."""
    d_k = st.select_slider(tr(f"{NS}.batch_d_k"), [2, 4, 8, 16, 32], value=8, key=f"{NS}.batch_d_k",
                           bind="query-params")
    attn = toy.batch_attention(BATCH, D, d_k, seed, dev)
    b, n = len(BATCH), len(BATCH[0])
    figure(batch_grid(attn.weights, [list(t) for t in BATCH], titles=[tr(f"{NS}.batch_panel", b=i) for i in range(b)],
                      hover=(tr("common.query"), tr("common.key"), tr("common.weight")),
                      title=tr(f"{NS}.batch_fig", b=b, n=n), bar_title=tr("common.weight")), key=f"{NS}.batch")
    shapes_table([("X", f"({b}, {n}, {D})"), ("Q, K, V", f"({b}, {n}, {d_k})"),
                  ("QKᵀ/√d_k, softmax", f"({b}, {n}, {n})"), (tr(f"{NS}.output"), f"({b}, {n}, {d_k})")])


lesson.run(seed=seed, dev=device())
explorer(NS, open_by_default=False)
lesson.quiz([("try1", 1), ("try2", 2), ("try3", 0)])
