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
from ui.f3_learning import NEW_MAX, continuation_view, head_view, learned, next_char_view, opening_ids
from ui.frame import (
    beside_code,
    built_figure,
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    plain,
    ranged_slider,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.prompt import openings
from viz.attention import head_grid
from viz.learning import by_checkpoint, loss_curve, next_char_grid

NS = "f3"
DEFAULT_OPENING = "床前明月光，疑是地上霜。"
DEFAULT_READ = 10            # after 「床前明月光，疑是地上」 the next character is 「霜」
OPENING_CHARS = 48           # what the box keeps
HEAD_CHARS = 16              # characters the head's pattern is drawn on (every one labelled)
HEAD = (2, 2)                # block 2, head 2 learns to look one half-line (6 characters) back
NEW_MIN, NEW_DEFAULT = 4, 24            # NEW_MAX: ui.f3_learning (its one run serves them all)
# A poem the model read 100 times over, one it read once, and lines it never read (Song poems).
EXAMPLES = ["床前明月光，疑是地上霜。", "君不见，黄河之水", "千山鸟飞绝，", "大江东去，浪淘尽，"]

header(NS)
got = learned(device())


def step_name(step: int) -> str:
    return tr(f"{NS}.step_name", step=step)


# ------------------------------------------------------------------ the whole run, fixed figures
if got is not None:
    ck = got.checkpoints
    names = [step_name(s) for s in ck.steps]
    st.subheader(tr(f"{NS}.curve_title"))
    st.markdown(tr(f"{NS}.curve_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.curve_title")))   # presenter mode: the curve, tall
    with beside_code(batch_loss, window_means, height=None):
        refs = {tr(f"{NS}.ref_unigram"): got.counts.unigram_loss, tr(f"{NS}.ref_bigram"): got.counts.bigram_loss}
        figure(built_figure((f"{NS}.curve", lang()), lambda: loss_curve(
            ck.step_loss, got.logged, [(e.step, e.loss) for e in ck.entries], refs,
            names=(tr(f"{NS}.curve_every"), tr(f"{NS}.curve_logged"), tr(f"{NS}.curve_marks")),
            title=tr(f"{NS}.curve_fig"), x_title=tr(f"{NS}.step_axis"), y_title=tr(f"{NS}.loss_axis"),
            mark_labels=[str(s) for s in ck.steps])), key=f"{NS}.curve", present_height=420)
        st.caption(tr(f"{NS}.curve_caption", start=ck.entries[0].loss, end=ck.entries[-1].loss,
                      uni=got.counts.unigram_loss, bi=got.counts.bigram_loss, steps=ck.steps[-1],
                      uni_at=first_below(got.logged, got.counts.unigram_loss),
                      bi_at=first_below(got.logged, got.counts.bigram_loss)))

    st.subheader(tr(f"{NS}.order_title"))
    st.markdown(tr(f"{NS}.order_text"))
    res = got.resemblance
    with beside_code(count_models, resemblance):
        figure(built_figure((f"{NS}.order", lang()), lambda: by_checkpoint([str(x) for x in ck.steps], {
            tr(f"{NS}.order_unigram"): res["unigram"], tr(f"{NS}.order_bigram"): res["bigram"],
            tr(f"{NS}.order_truth"): res["truth"]}, title=tr(f"{NS}.order_fig"), x_title=tr(f"{NS}.checkpoint_axis"),
            y_title=tr(f"{NS}.order_axis"))), key=f"{NS}.order")
        peak_uni = ck.steps[max(range(len(names)), key=res["unigram"].__getitem__)]
        peak_bi = ck.steps[max(range(len(names)), key=res["bigram"].__getitem__)]
        st.caption(tr(f"{NS}.order_caption", uni=peak_uni, bi=peak_bi, truth=res["truth"][-1]))

    # ---------------------------------------------------------- one opening, at every checkpoint
    # Presenter mode: one slide, the opening's pills across it, its box beside the slider, the grid
    # under them and the prose as a caption under it (a slide of prose alone, then one of the
    # opening's controls alone, half empty, came before).
    if presenting():
        st.subheader(tr(f"{NS}.next_title"))
        slot = {"pills": st.container()}
        slot["opening"], slot["read"] = st.columns([3, 2], vertical_alignment="bottom")
    else:
        st.subheader(tr(f"{NS}.opening_title"))
        st.markdown(tr(f"{NS}.opening_text"))
        slot = {"opening": st.container()}
        slot["pills"] = slot["opening"]
        st.subheader(tr(f"{NS}.next_title"))
        st.markdown(tr(f"{NS}.next_text"))
        slot["read"] = st.container()
    slot["next"] = st.container()             # a grid of 7 + 2 rows: the page's whole width, the code under it
    if presenting():
        st.caption(tr(f"{NS}.next_text"))
    code_panel(next_char_at)
    st.subheader(tr(f"{NS}.write_title"))
    st.markdown(tr(f"{NS}.write_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.write_title")))   # presenter mode: the table and its controls
    slot["write"] = beside_code(continuations, height=None)
    st.subheader(tr(f"{NS}.head_title"))
    st.markdown(tr(f"{NS}.head_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.head_title")))   # presenter mode: the early checkpoints
    slot["head"] = st.container()             # seven panels: the page's whole width, the code under them
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.head_title")))   # presenter mode: the late ones
    slot["head_late"] = st.container()
    code_panel(head_at_checkpoints, height=None)


def opening_controls() -> str:
    with slot["pills"]:
        openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
    text = text_box(f"{NS}.prompt", DEFAULT_OPENING, OPENING_CHARS, tr(f"{NS}.prompt_label"),
                    empty_key=f"{NS}.empty_prompt")
    return DEFAULT_OPENING if text.empty else text.text


def next_section(text: str, ids: list[int], dev: str) -> None:
    with slot["read"]:
        read = ranged_slider(tr(f"{NS}.read_label"), 1, len(ids), min(DEFAULT_READ, len(ids)), key=f"{NS}.read",
                             help=tr(f"{NS}.read_help"))
    with st.spinner(tr(f"{NS}.reading")):
        v = next_char_view(text, read, dev)
    rows = [*names, tr(f"{NS}.row_unigram"), tr(f"{NS}.row_bigram", char=v["read"][-1])]
    cols = [*v["chars"], tr(f"{NS}.others")]
    values = [*v["probs"], v["unigram"], v["bigram"]]
    figure(next_char_grid(values, rows, cols, title=tr(f"{NS}.next_fig", text="".join(v["read"][-12:])),
                          split=len(names), colorbar_title=tr(f"{NS}.prob"),
                          hover_names=(tr(f"{NS}.checkpoint_axis"), tr(f"{NS}.char"), tr(f"{NS}.prob"))),
           key=f"{NS}.next", present_height=390)
    truth = tr(f"{NS}.next_truth", char=plain(v["target"])) if v["target"] else tr(f"{NS}.next_end")
    certainty = " · ".join(tr(f"{NS}.certainty_item", step=s, char=plain(c), p=p, bits=b)
                           for s, c, p, b in zip(ck.steps, v["top_char"], v["top_prob"], v["entropy"], strict=True))
    st.caption(tr(f"{NS}.next_caption", truth=truth, items=certainty))


def write_section(text: str, dev: str) -> None:
    c1, c2 = st.columns([3, 1])
    n_new = c1.slider(tr(f"{NS}.new_label"), NEW_MIN, NEW_MAX, NEW_DEFAULT, key=f"{NS}.new", bind="query-params")
    seed = int(c2.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr(f"{NS}.seed_help")))
    with st.spinner(tr(f"{NS}.writing")):
        runs = continuation_view(text, n_new, seed, dev)
    head = f"| {tr(f'{NS}.col_step')} | {tr(f'{NS}.col_loss')} | {tr(f'{NS}.col_greedy')} | {tr(f'{NS}.col_sampled')} |"
    lines = [head, "|---:|---:|---|---|"]
    for e, run in zip(ck.entries, runs, strict=True):
        lines.append(f"| {e.step} | {e.loss:.2f} | {plain(run['greedy']) or '∅'} | {plain(run['sampled']) or '∅'} |")
    st.markdown(tr(f"{NS}.write_opening", text=plain(text)) + "\n\n" + "\n".join(lines))
    st.caption(tr(f"{NS}.write_caption"))


def head_section(text: str, ids: list[int], dev: str) -> None:
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
    for (part, key), where in zip(parts, (st.container(), slot["head_late"]), strict=False):
        with where:
            figure(head_grid(v["weights"][part], v["tokens"], titles=names[part], cols=4 if presenting() else 3,
                             hover_names=(tr(f"{NS}.query"), tr(f"{NS}.key"), tr(f"{NS}.weight")),
                             colorbar_title=tr(f"{NS}.weight"), height_per_row=330, label_size=14),
                   key=key, present_height=420)
    cut = tr(f"{NS}.head_cut", n=HEAD_CHARS, total=len(ids)) if len(ids) > HEAD_CHARS else ""
    st.caption(tr(f"{NS}.head_caption", layer=layer, head=head, kv=head // (cfg.n_heads // cfg.n_kv_heads),
                  cut=cut).strip())


@fragment
def lesson_body() -> None:
    """Reruns alone when a control moves and refills only the slots above: the prose, the
    code and the fixed figures are neither sent nor drawn again."""
    dev = device()
    with slot["opening"]:
        text = opening_controls()
    ids = opening_ids(text, dev)
    unknown = sum(1 for i in ids if i == ck.tokenizer.unk_id)
    if unknown:
        with slot["opening"]:
            st.warning(tr(f"{NS}.unknown_note", n=unknown))
    with slot["next"]:
        next_section(text, ids, dev)
    with slot["write"]:
        write_section(text, dev)
    with slot["head"]:
        head_section(text, ids, dev)


if got is not None:
    lesson_body()

try_this(NS, [("try1", 1), ("try2", 2), ("try3", 0)])
