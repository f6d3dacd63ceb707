"""B4 · Cross-attention: a trained encoder-decoder reading dates, then two typed texts untrained."""
import numpy as np
import streamlit as st

from core.lab.date_lab import random_cross_attention
from core.models.encdec import cross_attend, cross_kv
from core.parts.mha import MultiHeadAttention
from core.text.dates import STYLE_EXAMPLES, unknown_characters
from ui.b4_cross import MAX_TOKENS, D, cross_demo, trained_view
from ui.date_model import date_model
from ui.frame import (
    choice,
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    plain,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from viz.attention import rect_grid
from viz.encdec import alignment_map, head_strip, score_grid

NS = "b4"
# The example buttons: English (the year moves to the front: a crossing alignment) beside
# Chinese (year, month, day in order: a straight one). The default follows the page's language.
EXAMPLES = {"en": [STYLE_EXAMPLES[k] for k in ("en_weekday", "en_short", "en_us")],
            "zh": [STYLE_EXAMPLES[k] for k in ("zh_digits", "zh_numerals", "zh_month_first")]}
DEFAULT_DATE = EXAMPLES["zh" if lang() == "zh" else "en"][0]
DATE_KEY = f"{NS}.date"
AVERAGE = "avg"              # the head choice that averages the heads: not a number (head 0 is one)
MAX_DATE = 31                 # the model has 32 positions: the text and its <eos>
DEFAULT_TARGET = "The water of the Yellow River comes from the sky"
DEFAULT_SOURCE = "黄河之水天上来"
HEADS = [1, 2, 4, 8]

header(NS)
dev = device()
loaded = date_model(dev)


def use_example(text: str) -> None:
    # A button's callback runs before the script: the box is then made with this value (and,
    # as text_box is told by "{key}_set", without a default beside it).
    st.session_state[DATE_KEY] = text
    st.session_state[f"{DATE_KEY}_set"] = True


def example_buttons() -> None:
    """Every example date is one click away: English on the left, Chinese on the right."""
    heads = {"en": tr(f"{NS}.examples_en"), "zh": tr(f"{NS}.examples_zh")}
    for col, language in zip(st.columns(2), ("en", "zh"), strict=True):
        with col:
            st.caption(heads[language])
            for i, example in enumerate(EXAMPLES[language]):
                st.button(example, key=f"{NS}.ex_{language}{i}", on_click=use_example, args=(example,))


def date_box() -> str:
    """The date to read: the frame's ``text_box`` (an over-long date is cut in the box and the
    address too, as every other box), the default date when it is empty."""
    cleaned = text_box(DATE_KEY, DEFAULT_DATE, MAX_DATE, tr(f"{NS}.date_label"))
    return DEFAULT_DATE if cleaned.empty else cleaned.text


def date_controls(n_layers: int, n_heads: int):
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        text = date_box()
    with c2:
        layer = st.slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, 0, key=f"{NS}.layer",
                          bind="query-params", help=tr(f"{NS}.layer_help"))
    with c3:
        heads = [AVERAGE] + [str(i) for i in range(n_heads)]
        head = choice(tr(f"{NS}.head_label"), heads, f"{NS}.head", [tr(f"{NS}.average_short")] + heads[1:],
                      widget="segmented")
    return text, int(layer), None if head == AVERAGE else int(head)


def text_controls():
    c1, c2 = st.columns(2)
    with c1:
        target = text_box(f"{NS}.target", DEFAULT_TARGET, 80, tr(f"{NS}.target_label"))
    with c2:
        source = text_box(f"{NS}.source", DEFAULT_SOURCE, 40, tr(f"{NS}.source_label"))
    c3, c4 = st.columns([3, 1])
    with c3:
        h = st.select_slider(tr(f"{NS}.heads_label"), HEADS, value=2, key=f"{NS}.heads", bind="query-params")
    with c4:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    return (target.text if not target.empty else DEFAULT_TARGET,
            source.text if not source.empty else DEFAULT_SOURCE, int(h), int(seed))


def shape(t: tuple) -> str:
    return "(" + ", ".join(str(v) for v in t) + ")"


def quoted(chars: list[str]) -> str:
    """Characters named in a message: each escaped (never markup), spaces made visible."""
    return " ".join(f"「{plain(c) if c != ' ' else '␣'}」" for c in chars)


# The page's fixed parts are laid out once; the fragments below refill only their slots.
st.subheader(tr(f"{NS}.trained_title"))
st.markdown(tr(f"{NS}.trained_text"))
example_buttons()                  # under the prose that says "press an example", on its slide
slide(tr("classroom.slide.continued", title=tr(f"{NS}.trained_title")))
slot = {"date_controls": st.container(), "verdict": st.container(), "trained": st.container()}
align_left, align_right = st.columns([1, 1])
slot["align"], slot["best"] = align_left.container(), align_right.container()
# Full width: at 1024 px a code panel beside a figure would scroll sideways.
code_panel(cross_kv, cross_attend, MultiHeadAttention.attend, height=None)

st.subheader(tr(f"{NS}.untrained_title"))
st.markdown(tr(f"{NS}.untrained_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.untrained_title")))
slot.update({"controls": st.container(), "title": st.container()})
slot["matrix"] = st.container()
code_panel(random_cross_attention, height=None)
st.subheader(tr(f"{NS}.where_title"))
st.markdown(tr(f"{NS}.where_text"))


@fragment
def trained_body():
    """The trained model's section; reruns alone when its text or layer changes."""
    config = loaded[0].config
    with slot["date_controls"]:
        text, layer, head = date_controls(config.n_layers, config.n_heads)
    view = trained_view(text, dev)
    unknown = unknown_characters(text)
    with slot["verdict"]:
        if unknown:
            st.warning(tr(f"{NS}.unknown", chars=quoted(unknown), n=len(unknown)))
        elif view["iso"] is None:
            st.warning(tr(f"{NS}.not_a_date"))
        wrote = f"`{view['output']}`" if view["output"] else tr(f"{NS}.nothing")
        if view["iso"] is None:
            st.markdown(tr(f"{NS}.attempt", output=wrote))
        elif view["output"] == view["iso"]:
            st.success(tr(f"{NS}.right", output=wrote))
        else:
            st.error(tr(f"{NS}.wrong", output=wrote, iso=view["iso"]))
    w = view["weights"][layer]                                                    # (H, N, S)
    h, n, s = w.shape
    panels = np.concatenate([w.mean(0, keepdims=True), w])                       # (1 + H, N, S)
    names = [tr(f"{NS}.average")] + [tr(f"{NS}.head_name", i=i) for i in range(h)]
    shown = 0 if head is None else head + 1                                      # panel 0: the average
    # Rows as in C1: the character the decoder has read (<bos>, then what it wrote), the
    # source's end mark as <eos>.
    with slot["trained"]:
        st.markdown(f"**{tr(f'{NS}.trained_fig', layer=layer, name=names[shown], n=n, s=s)}**")
        figure(alignment_map(panels[shown], view["fed"], view["source"],
                             hover_names=(tr(f"{NS}.writing"), tr(f"{NS}.reading"), tr("common.weight")),
                             height=max(320, 26 * n + 70)), key=f"{NS}.trained")
        st.caption(tr(f"{NS}.trained_caption"))
        st.markdown(f"**{tr(f'{NS}.strip_fig', layer=layer)}**")
        figure(head_strip(panels, names, height=max(170, 9 * n + 70)), key=f"{NS}.strip")
        st.caption(tr(f"{NS}.strip_caption", n=n, s=s))
    scores = view["scores"]
    if scores is None:
        with slot["align"]:
            st.info(tr(f"{NS}.no_alignment"))
        return
    best = np.unravel_index(int(scores.argmax()), scores.shape)
    with slot["align"]:
        st.markdown(f"**{tr(f'{NS}.align_fig')}**")
        figure(score_grid(scores, row_names=[tr(f"{NS}.layer_name", i=i) for i in range(scores.shape[0])],
                          col_names=[str(j) for j in range(scores.shape[1])], title=tr(f"{NS}.heads_axis"),
                          hover_names=(tr(f"{NS}.layer_label"), tr(f"{NS}.heads_axis"), tr(f"{NS}.on_field"))),
               key=f"{NS}.align")
    with slot["best"]:
        st.markdown(tr(f"{NS}.best_head", layer=int(best[0]), head=int(best[1]),
                       score=100 * float(scores[best]), here=100 * float(scores[layer].max()),
                       this_layer=layer, this_head=int(scores[layer].argmax())))


@fragment
def untrained_body():
    """The two-typed-texts demo; reruns alone when a control moves (st.fragment)."""
    with slot["controls"]:
        target, source, h, seed = text_controls()
    demo = cross_demo(target, source, h, seed, dev)
    tgt, src, s = demo["target"], demo["source"], demo["shapes"]
    n_t, n_s = len(tgt), len(src)
    with slot["title"]:
        if demo["cut"]:
            st.warning(tr(f"{NS}.cut", limit=MAX_TOKENS))
        st.markdown(f"**{tr(f'{NS}.matrix_title', n_t=n_t, n_s=n_s)}**")
    with slot["matrix"]:
        figure(rect_grid(demo["weights"], tgt, src, titles=[tr(f"{NS}.head_name", i=i) for i in range(h)],
                         cols=2, hover_names=(tr(f"{NS}.query_target"), tr(f"{NS}.key_source"), tr("common.weight")),
                         height_per_row=max(320, 26 * n_t + 90)),
               key=f"{NS}.cross")
        st.caption(tr(f"{NS}.read_matrix"))
        shapes_table([
            (tr(f"{NS}.target_x"), shape((1, n_t, D))),
            (tr(f"{NS}.source_c"), shape((1, n_s, D))),
            ("Q = X W_q", shape(s["attn.q"])),
            ("K = C W_k, V = C W_v", shape(s["attn.k"])),
            ("QKᵀ/√d_head, softmax", shape(s["attn.weights"])),
            ("concat", shape(s["attn.concat"])),
            (tr(f"{NS}.output"), shape(s["attn.out"])),
        ])


if loaded:
    trained_body()
untrained_body()

try_this(NS, [("try1", 1), ("try2", 2), ("try3", 0), ("try4", 1)])
