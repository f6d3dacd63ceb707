"""F3 · A model learning: the course model's checkpoints along its training, and what each knew."""
import streamlit as st

from core.lab.learning import (
    batch_loss,
    continuations,
    count_models,
    first_below,
    head_at_checkpoints,
    next_char_at,
    resemblance,
    window_means,
)
from ui.classroom import presenting
from ui.f3_learning import (
    NEW_MAX,
    continuation_table,
    continuation_view,
    curve_figure,
    head_view,
    learned,
    next_caption,
    next_char_view,
    opening_controls,
    opening_ids,
    order_caption,
    order_figure,
    step_names,
)
from ui.frame import device, drawn, figure, lang, ranged_slider, tr
from ui.lesson import Lesson
from viz.attention import head_grid
from viz.learning import next_char_grid

NS = "f3"
DEFAULT_READ = 10            # after 「床前明月光，疑是地上」 the next character is 「霜」
HEAD_CHARS = 16              # characters the head's pattern is drawn on (every one labelled)
HEAD = (2, 2)                # block 2, head 2 learns to look one half-line (6 characters) back
NEW_MIN, NEW_DEFAULT = 4, 24            # NEW_MAX: ui.f3_learning (its one run serves them all)

lesson = Lesson(NS)
dev = device()
got = learned(dev)


# ------------------------------------------------------------------ the whole run, fixed figures
@lesson.section("curve", code=(batch_loss, window_means), above=(), height=None)   # presenter: the curve, tall
def curve(s, got, dev):
    ck = got.checkpoints
    figure(drawn(curve_figure, dev, lang()), key=f"{NS}.curve", present_height=420)
    st.caption(tr(f"{NS}.curve_caption", start=ck.entries[0].loss, end=ck.entries[-1].loss,
                  uni=got.counts.unigram_loss, bi=got.counts.bigram_loss, steps=ck.steps[-1],
                  uni_at=first_below(got.logged, got.counts.unigram_loss),
                  bi_at=first_below(got.logged, got.counts.bigram_loss)))


@lesson.section("order", code=(count_models, resemblance), above=(), slide=False)
def order(s, got, dev):
    figure(drawn(order_figure, dev, lang()), key=f"{NS}.order")
    st.caption(order_caption(got))


# ---------------------------------------------------------- one opening, at every checkpoint
# Presenter mode: one slide, the opening's pills across it, its box beside the slider, the grid
# under them and the prose as a caption under it (a slide of prose alone, then one of the
# opening's controls alone, half empty, came before). The grid of 7 + 2 rows and the seven head
# panels take the page's whole width, their code under them.
if not presenting():
    lesson.section("opening", layout_only=True, above=(), slide=False)
lesson.section("next", layout_only=True, text=None if presenting() else "", slide=False,
               above=("pills", "row") if presenting() else ("read",), code=(next_char_at,), code_below=True)
lesson.section("write", layout_only=True, code=(continuations,), above=(), height=None)   # presenter: the table
lesson.section("head", layout_only=True, above=(), below=("late",), marks=("late",),     # early, then late ones
               code=(head_at_checkpoints,), code_below=True, height=None)


@lesson.body
def body(slots, got, dev):
    """Reruns alone when a control moves and refills only the slots: the prose, the code and the
    fixed figures are neither sent nor drawn again."""
    ck, names = got.checkpoints, step_names(got)
    if presenting():
        pills = slots["next"].pills
        opening, read_at = slots["next"].row.columns([3, 2], vertical_alignment="bottom")
    else:
        opening = pills = slots["opening"].figure
        read_at = slots["next"].read
    with opening:
        text = opening_controls(pills)
    ids = opening_ids(text, dev)
    if unknown := sum(1 for i in ids if i == ck.tokenizer.unk_id):
        opening.warning(tr(f"{NS}.unknown_note", n=unknown))

    with read_at:
        read = ranged_slider(tr(f"{NS}.read_label"), 1, len(ids), min(DEFAULT_READ, len(ids)), key=f"{NS}.read",
                             help=tr(f"{NS}.read_help"))
    with slots["next"].figure:
        with st.spinner(tr(f"{NS}.reading")):
            v = next_char_view(text, read, dev)
        figure(next_char_grid([*v["probs"], v["unigram"], v["bigram"]],
                              [*names, tr(f"{NS}.row_unigram"), tr(f"{NS}.row_bigram", char=v["read"][-1])],
                              [*v["chars"], tr(f"{NS}.others")], title=tr(f"{NS}.next_fig", text="".join(v["read"][-12:])),
                              split=len(names), colorbar_title=tr(f"{NS}.prob"),
                              hover_names=(tr(f"{NS}.checkpoint_axis"), tr(f"{NS}.char"), tr(f"{NS}.prob"))),
               key=f"{NS}.next", present_height=390)
        st.caption(next_caption(v, ck.steps))
        if presenting():
            st.caption(tr(f"{NS}.next_text"))

    with slots["write"].figure:
        c1, c2 = st.columns([3, 1])
        n_new = c1.slider(tr(f"{NS}.new_label"), NEW_MIN, NEW_MAX, NEW_DEFAULT, key=f"{NS}.new", bind="query-params")
        seed = int(c2.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                                   help=tr(f"{NS}.seed_help")))
        with st.spinner(tr(f"{NS}.writing")):
            runs = continuation_view(text, n_new, seed, dev)
        st.markdown(continuation_table(text, ck.entries, runs))
        st.caption(tr(f"{NS}.write_caption"))

    with slots["head"].figure:
        cfg = ck.models[0].config
        c1, c2 = st.columns(2)
        with c1:
            layer = ranged_slider(tr(f"{NS}.layer_label"), 0, cfg.n_layers - 1, HEAD[0], key=f"{NS}.layer")
        with c2:
            head = ranged_slider(tr(f"{NS}.head_label"), 0, cfg.n_heads - 1, HEAD[1], key=f"{NS}.head")
        v = head_view(text, HEAD_CHARS, layer, head, dev)
        # Panels large enough to check a claim by eye ("疑 reads 床"): three a row on a screen with 14 px
        # labels; in presenter mode one row a slide, the early checkpoints then the late ones.
        parts = [(slice(0, 4), f"{NS}.head_grid"), (slice(4, None), f"{NS}.head_late")] if presenting() \
            else [(slice(None), f"{NS}.head_grid")]
        for (part, key), where in zip(parts, (st.container(), slots["head"].late), strict=False):
            with where:
                figure(head_grid(v["weights"][part], v["tokens"], titles=names[part], cols=4 if presenting() else 3,
                                 hover_names=(tr(f"{NS}.query"), tr(f"{NS}.key"), tr(f"{NS}.weight")),
                                 colorbar_title=tr(f"{NS}.weight"), height_per_row=330, label_size=14),
                       key=key, present_height=420, name=tr(f"{NS}.head_title"))
        cut = tr(f"{NS}.head_cut", n=HEAD_CHARS, total=len(ids)) if len(ids) > HEAD_CHARS else ""
        st.caption(tr(f"{NS}.head_caption", layer=layer, head=head, kv=head // (cfg.n_heads // cfg.n_kv_heads),
                      cut=cut).strip())


if got is not None:          # else learned() has said why: no section to draw
    lesson.run(got=got, dev=dev)
lesson.quiz([("try1", 1), ("try2", 2), ("try3", 0)])
