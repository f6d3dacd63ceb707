"""F2 · The logit lens: each layer's guess at the next token, and which writes into the residual
stream made the final answer. SmolLM2-135M by default; the course model beside it, or alone
where SmolLM2 is not installed."""
import streamlit as st

from core.lab.logit_lens import TOKEN_LIMIT, direct_attribution, final_scale, lens_logits, read_lens
from ui.classroom import presenting
from ui.f2_lens import (
    answer_caption,
    attribution,
    bar_labels,
    fig_word,
    grid_caption,
    grid_figure,
    heads_caption,
    lens_data,
    rows,
    shown_rows,
    target_labels,
    text_controls,
)
from ui.frame import choice, device, drawn, figure, lang, ranged_slider, tr
from ui.lesson import Lesson
from ui.model import COURSE, REAL, course_model, model_switch, real_model
from viz.attention import bars
from viz.lens import head_contributions, layer_lines, write_bars

NS = "f2"

lesson = Lesson(NS)


# The lens: laid out with the other sections, then drawn in the page's own run (its model and
# text move every section). Presenter mode: the model is chosen on the prose's slide, the grid has
# the next to itself with the text box above it (the switch beside the box was cut to "SmolL…").
lesson.section("lens", layout_only=True, above=("switch", "controls"), slide="switch")
# The depth first: the cell view below the curve reads one row of the grid (blocks passed) at the
# chosen column (the position); both sliders sit right above the figures they move.
lesson.section("answer", layout_only=True, code=(lens_logits, read_lens), height=760)
lesson.section("dla", layout_only=True, code=(direct_attribution, final_scale), height=480)
lesson.section("heads", layout_only=True, above=(), slide=False)


@lesson.body
def answers(slots, data):
    """The block read, the position and the attribution's target rerun only these three sections."""
    if data is None:
        return
    n, n_layers = len(data["tokens"]), data["n_layers"]
    left, right = slots["answer"].controls.columns(2)
    with left:
        row = ranged_slider(tr(f"{NS}.row_label"), 0, n_layers, n_layers // 2, key=f"{NS}.row",
                            help=tr(f"{NS}.row_help"))
    with right:
        pos = ranged_slider(tr(f"{NS}.pos_label"), 0, n - 1, TOKEN_LIMIT - 1, key=f"{NS}.pos",
                            help=tr(f"{NS}.pos_help"))
    answer, at = fig_word(data["answer"][pos]), fig_word(data["tokens"][pos])
    with slots["answer"].figure:
        figure(drawn(layer_lines, {tr(f"{NS}.answer_name", token=answer): data["answer_probs"][:, pos],
                                   tr(f"{NS}.top_name"): data["top_probs"][:, pos, 0]}, rows(n_layers),
                     title=tr(f"{NS}.answer_fig", token=answer, at=at, pos=pos), x_title=tr(f"{NS}.grid_y"),
                     y_title=tr(f"{NS}.prob")), key=f"{NS}.answer")
        st.caption(answer_caption(data, pos))
        guesses = data["guesses"][row][pos]
        figure(bars(bar_labels(guesses), {tr(f"{NS}.prob"): data["top_probs"][row, pos].tolist()},
                    title=tr(f"{NS}.cell_fig", b=row, at=at, k=len(guesses)),
                    y_title=tr(f"{NS}.prob"), fmt=".3f", height=400), key=f"{NS}.cell")
        st.caption(tr(f"{NS}.cell_caption", share=float(data["top_probs"][row, pos].sum()), k=len(guesses),
                      rest=data["vocab"] - len(guesses)))

    with slots["dla"].controls:
        target = choice(tr(f"{NS}.target_label"), list(labels := target_labels(data, pos)), f"{NS}.target",
                        labels, help=tr(f"{NS}.target_help"))
    terms, heads, model_value = attribution(data, pos, target)              # (W,), (L, H), the logit
    other = None if target == "logit" else fig_word(data["candidates"][pos][int(target)])
    with slots["dla"].figure:
        title = (tr(f"{NS}.dla_fig_logit", token=answer, at=at) if other is None
                 else tr(f"{NS}.dla_fig_diff", token=answer, other=other, at=at))
        figure(write_bars(float(terms[0]), terms[1::2], terms[2::2],
                          (tr(f"{NS}.embed_name"), tr(f"{NS}.attn_name"), tr(f"{NS}.ffn_name")), tr(f"{NS}.row_embed"),
                          title=title, x_title=tr(f"{NS}.block_axis"), y_title=tr(f"{NS}.term_axis")),
               key=f"{NS}.dla")
        st.caption(tr(f"{NS}.dla_caption", w=len(terms), total=float(terms.sum()), model=model_value,
                      attn=float(terms[1::2].sum()), ffn=float(terms[2::2].sum()), embed=float(terms[0])))
    with slots["heads"].figure:
        title = (tr(f"{NS}.heads_fig", token=answer, at=at) if other is None
                 else tr(f"{NS}.heads_fig_diff", token=answer, other=other))
        figure(head_contributions(heads, title=title, axis_titles=(tr(f"{NS}.block_axis"), tr(f"{NS}.head_axis")),
                                  hover_names=(tr(f"{NS}.block_axis"), tr(f"{NS}.head_axis"), tr(f"{NS}.term_axis")),
                                  bar_title=tr(f"{NS}.term_axis")), key=f"{NS}.heads")
        st.caption(heads_caption(heads))


# The course model beside SmolLM2 on its own line of verse, or, on the course model, why not.
@lesson.section("course", text=None, slide=False, above=())
def course(s, real, dev):
    if not real:
        st.markdown(tr(f"{NS}.course_alone"))
        return
    st.markdown(tr(f"{NS}.course_text"))
    if model := course_model(dev):
        text = text_controls(False, dev)
        small = lens_data(text, COURSE, dev, model)
        figure(drawn(grid_figure, text, COURSE, dev, None, lang()), key=f"{NS}.course")
        st.caption(tr(f"{NS}.course_caption", first=float(small["top_probs"][0, :, 0].mean()),
                      last=float(small["top_probs"][-1, :, 0].mean()), l=small["n_layers"]))


dev = device()
lens = lesson.arrange()["lens"]
with lens.switch:
    real = real_model(dev) if model_switch(NS, default=REAL) == REAL else None
with lens.controls:
    loaded, name, data = real or course_model(dev), REAL if real else COURSE, None
    if loaded:
        text = text_controls(bool(real), dev)
        with st.spinner(tr(f"{NS}.running")):         # a new text: one forward pass and 31 lens reads, < 2 s
            data = lens_data(text, name, dev, loaded)
        if data["n_ids"] > TOKEN_LIMIT:
            st.warning(tr(f"{NS}.tokens_cut", limit=TOKEN_LIMIT, n=data["n_ids"]))
if data is not None:
    with lens.figure:
        # On a slide the grid keeps a row in three (31 rows of 18 px labels do not fit 720 px).
        keep = tuple(shown_rows(data["n_layers"] + 1)) if presenting() else None
        figure(drawn(grid_figure, text, name, dev, keep, lang()), key=f"{NS}.grid", present_height=380)
        st.caption(grid_caption(data))
lesson.draw(data=data, real=real, dev=dev)
lesson.quiz([("try1", 2), ("try2", 0), ("try3", 1)])
