"""F2 · The logit lens: each layer's guess at the next token, and which writes into the residual
stream made the final answer. SmolLM2-135M by default; the course model beside it, or alone
where SmolLM2 is not installed."""
import streamlit as st

from core.lab.logit_lens import TOKEN_LIMIT, direct_attribution, final_scale, lens_logits, read_lens, settles_at
from core.lab.real_tokens import dropped_note
from ui.classroom import presenting
from ui.f2_lens import attribution, bar_labels, cell_hover, fig_word, lens_data, top_heads, visible
from ui.frame import (
    beside_code,
    built_figure,
    choice,
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
from ui.model import COURSE, REAL, course_model, model_switch, real_model
from ui.prompt import openings
from viz.attention import bars
from viz.lens import CUT, head_contributions, layer_lines, lens_grid, write_bars

NS = "f2"
DEFAULT_PROMPT = "The capital of France is"
EXAMPLES = ["The capital of France is", "When Mary and John went to the store, John gave a drink to",
            "The Eiffel Tower is in the city of", "One, two, three, four,"]
REAL_CHARS = 400          # SmolLM2 reads tokens: the text is cut at TOKEN_LIMIT of them
COURSE_TEXT = "床前明月光，疑是地上霜"

header(NS)
dev = device()


def rows(n_layers: int) -> list[str]:
    """The lens's rows by name: the embedding, then the block each reads after."""
    return [tr(f"{NS}.row_embed")] + [str(i) for i in range(n_layers)]


def shown_rows(n_rows: int, most: int = 11) -> list[int]:
    """The lens's rows drawn on a slide (presenter mode): all of them when ``most`` fit, else the
    embedding and every k-th block counted down from the last, so that each row is tall enough
    for its 18 px labels. Example: shown_rows(31) -> [0, 3, 6, ..., 30] (11 rows)."""
    if n_rows <= most:
        return list(range(n_rows))
    step = -(-(n_rows - 1) // (most - 1))
    return [0] + list(range(n_rows - 1, 0, -step))[::-1]


def grid_figure(data: dict, key: str, keep: list[int] | None = None):
    """The lens grid of one result, built once per text and language for every session; ``keep``:
    the rows drawn (all by default)."""
    names = rows(data["n_layers"])
    keep = list(range(len(names))) if keep is None else keep

    def build():
        hover = cell_hover(data, names)
        return lens_grid(data["top_probs"][keep, :, 0], [[g[0] for g in data["guesses"][r]] for r in keep],
                         data["tokens"], [names[r] for r in keep], [hover[r] for r in keep],
                         title=tr(f"{NS}.grid_fig", n=len(data["tokens"])), x_title=tr(f"{NS}.grid_x"),
                         y_title=tr(f"{NS}.grid_y"), bar_title=tr(f"{NS}.prob"))

    return built_figure((key, tuple(data["tokens"]), data["n_layers"], tuple(keep), lang()), build)


def text_controls(real: bool):
    """SmolLM2's prompt (with openings to try, outside presenter mode) or the course model's line of verse."""
    if real:
        if not presenting():   # presenter mode: the grid under the text box keeps the screen's height
            openings(NS, EXAMPLES, tr(f"{NS}.examples_label"))
        box = text_box(f"{NS}.prompt", DEFAULT_PROMPT, REAL_CHARS, tr(f"{NS}.prompt_label", limit=TOKEN_LIMIT))
        if (loaded := real_model(dev)) and (note := dropped_note(loaded[1], box.text)):   # bytes SmolLM2 lacks
            st.warning(tr("real.dropped", **note))
        return DEFAULT_PROMPT if box.empty else box.text
    box = text_box(f"{NS}.ctext", COURSE_TEXT, TOKEN_LIMIT, tr(f"{NS}.ctext_label"))
    return COURSE_TEXT if box.empty else box.text


# ---------------------------------------------------------------- the lens
st.subheader(tr(f"{NS}.lens_title"))
st.markdown(tr(f"{NS}.lens_text"))
# Presenter mode: the model is chosen on the prose's slide, the grid has the next to itself with
# the text box above it (the model's switch beside the box was cut to "SmolL…").
real = real_model(dev) if model_switch(NS, default=REAL) == REAL else None
slide(tr("classroom.slide.continued", title=tr(f"{NS}.lens_title")))
loaded = real or course_model(dev)
name = REAL if real else COURSE
data = None
if loaded:
    text = text_controls(bool(real))
    with st.spinner(tr(f"{NS}.running")):          # a new text: one forward pass and 31 lens reads, < 2 s
        data = lens_data(text, name, dev, loaded)
    if data["n_ids"] > TOKEN_LIMIT:
        st.warning(tr(f"{NS}.tokens_cut", limit=TOKEN_LIMIT, n=data["n_ids"]))
    # On a slide the grid keeps a row in three (31 rows of 18 px labels do not fit 720 px).
    keep = shown_rows(data["n_layers"] + 1) if presenting() else None
    figure(grid_figure(data, f"{NS}.grid", keep), key=f"{NS}.grid", present_height=380)
    last = len(data["tokens"]) - 1
    row0 = tr(f"{NS}.row0_tied" if data["tied"] else f"{NS}.row0_own", echo=data["echo"], n=last + 1)
    st.caption(tr(f"{NS}.grid_caption", token=plain(visible(data["answer"][last])),
                  p=float(data["answer_probs"][-1, last]), row0=row0, cut=CUT))

    # ------------------------------------------------------------ the answer through the layers
    st.subheader(tr(f"{NS}.answer_title"))
    st.markdown(tr(f"{NS}.answer_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.answer_title")))
    # The depth first: the cell view below the curve reads one row of the grid (blocks passed) at
    # the chosen column (the position); both sliders sit right above the figures they move.
    left, right = st.columns(2)
    slot = {"layer": left.container(), "pos": right.container(),
            "answer": beside_code(lens_logits, read_lens, height=760)}
    # ------------------------------------------------------------ direct logit attribution
    st.subheader(tr(f"{NS}.dla_title"))
    st.markdown(tr(f"{NS}.dla_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.dla_title")))
    slot["target"] = st.container()
    slot["dla"] = beside_code(direct_attribution, final_scale, height=480)
    st.subheader(tr(f"{NS}.heads_title"))
    st.markdown(tr(f"{NS}.heads_text"))
    slot["heads"] = st.container()


@fragment
def answer_sections():
    """The block read, the position and the attribution's target rerun only these figures (st.fragment)."""
    n, n_layers = len(data["tokens"]), data["n_layers"]
    names = rows(n_layers)
    with slot["layer"]:
        row = ranged_slider(tr(f"{NS}.row_label"), 0, n_layers, n_layers // 2, key=f"{NS}.row",
                            help=tr(f"{NS}.row_help"))
    with slot["pos"]:
        pos = ranged_slider(tr(f"{NS}.pos_label"), 0, n - 1, TOKEN_LIMIT - 1, key=f"{NS}.pos",
                            help=tr(f"{NS}.pos_help"))
    answer, at = data["answer"][pos], data["tokens"][pos]
    with slot["answer"]:
        ranks = data["answer_ranks"][:, pos]
        figure(built_figure((f"{NS}.answer", tuple(data["tokens"]), n_layers, pos, lang()), lambda: layer_lines(
            {tr(f"{NS}.answer_name", token=fig_word(answer)): data["answer_probs"][:, pos],
             tr(f"{NS}.top_name"): data["top_probs"][:, pos, 0]}, names,
            title=tr(f"{NS}.answer_fig", token=fig_word(answer), at=fig_word(at), pos=pos),
            x_title=tr(f"{NS}.grid_y"), y_title=tr(f"{NS}.prob"))), key=f"{NS}.answer")
        settle = settles_at(ranks)
        where = tr(f"{NS}.settle_embed") if settle == 0 else tr(f"{NS}.settle_block", b=settle - 1)   # row r: after block r - 1
        st.caption(tr(f"{NS}.answer_caption", token=plain(visible(answer)), where=where,
                      rank=int(ranks[0]), mid=int(ranks[len(ranks) // 2]), p=float(data["answer_probs"][-1, pos])))
        guesses = data["guesses"][row][pos]
        figure(bars(bar_labels(guesses), {tr(f"{NS}.prob"): data["top_probs"][row, pos].tolist()},
                    title=tr(f"{NS}.cell_fig", b=row, at=fig_word(at), k=len(guesses)),
                    y_title=tr(f"{NS}.prob"), fmt=".3f", height=400), key=f"{NS}.cell")
        st.caption(tr(f"{NS}.cell_caption", share=float(data["top_probs"][row, pos].sum()), k=len(guesses),
                      rest=data["vocab"] - len(guesses)))

    with slot["target"]:
        others = data["candidates"][pos]
        labels = {"logit": tr(f"{NS}.target_logit", token=visible(answer))}
        labels.update({str(c): tr(f"{NS}.target_diff", token=visible(answer), other=visible(others[c]), rank=c + 1)
                       for c in range(1, len(others))})
        target = choice(tr(f"{NS}.target_label"), list(labels), f"{NS}.target", labels,
                        help=tr(f"{NS}.target_help"))
    terms, heads, model_value = attribution(data, pos, target)              # (W,), (L, H), the logit
    other = None if target == "logit" else fig_word(others[int(target)])
    with slot["dla"]:
        title = (tr(f"{NS}.dla_fig_logit", token=fig_word(answer), at=fig_word(at)) if other is None
                 else tr(f"{NS}.dla_fig_diff", token=fig_word(answer), other=other, at=fig_word(at)))
        figure(write_bars(float(terms[0]), terms[1::2], terms[2::2],
                          (tr(f"{NS}.embed_name"), tr(f"{NS}.attn_name"), tr(f"{NS}.ffn_name")), tr(f"{NS}.row_embed"),
                          title=title, x_title=tr(f"{NS}.block_axis"), y_title=tr(f"{NS}.term_axis")),
               key=f"{NS}.dla")
        st.caption(tr(f"{NS}.dla_caption", w=len(terms), total=float(terms.sum()), model=model_value,
                      attn=float(terms[1::2].sum()), ffn=float(terms[2::2].sum()), embed=float(terms[0])))
    with slot["heads"]:
        title = (tr(f"{NS}.heads_fig", token=fig_word(answer), at=fig_word(at)) if other is None
                 else tr(f"{NS}.heads_fig_diff", token=fig_word(answer), other=other))
        figure(head_contributions(heads, title=title, axis_titles=(tr(f"{NS}.block_axis"), tr(f"{NS}.head_axis")),
                                  hover_names=(tr(f"{NS}.block_axis"), tr(f"{NS}.head_axis"), tr(f"{NS}.term_axis")),
                                  bar_title=tr(f"{NS}.term_axis")), key=f"{NS}.heads")
        best, worst = top_heads(heads, 3)
        st.caption(tr(f"{NS}.heads_caption", h=heads.shape[1], l=heads.shape[0], count=heads.size,
                      best=", ".join(f"L{i}·H{j} {v:+.2f}" for i, j, v in best),
                      worst=", ".join(f"L{i}·H{j} {v:+.2f}" for i, j, v in worst)))


if data is not None:
    answer_sections()

# ---------------------------------------------------------------- the course model beside it
st.subheader(tr(f"{NS}.course_title"))
if real:
    st.markdown(tr(f"{NS}.course_text"))
    course = course_model(dev)
    if course:
        text = text_controls(False)
        small = lens_data(text, COURSE, dev, course)
        figure(grid_figure(small, f"{NS}.course"), key=f"{NS}.course")
        st.caption(tr(f"{NS}.course_caption", first=float(small["top_probs"][0, :, 0].mean()),
                      last=float(small["top_probs"][-1, :, 0].mean()), l=small["n_layers"]))
else:
    st.markdown(tr(f"{NS}.course_alone"))

try_this(NS, [("try1", 2), ("try2", 0), ("try3", 1)])
