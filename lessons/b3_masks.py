"""B3 · Masks."""
import numpy as np
import streamlit as st

from core.lab.attention_lab import (
    change_token,
    future_leak,
    future_leaks,
    masked_attention,
    padded_attention,
    phrases,
    with_mask,
)
from core.parts.attention import scaled_dot_product_attention
from core.parts.masks import causal_mask, padding_mask
from core.text.tokenizer import PAD
from ui.b3_masks import LEAK_HEADS, D, batch, leak, single
from ui.classroom import presenting
from ui.explorer import explorer
from ui.frame import (
    beside_code,
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from viz.attention import heatmap
from viz.common import label
from viz.masks import batch_panels, change_bars, mask_matrix, masked_scores

NS = "b3"
DEFAULT_TEXT = "君不见，黄河之水天上来"
PAD_EXAMPLE = ["君不见", "黄河之水天上来", "奔流到海"]
LIMIT = 24
PAD_SHOWN = "pad"            # the padding token as the figures write it, on every axis and in the mask

header(NS)


def text_controls():
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, LIMIT, tr(f"{NS}.text_label"))
    with c2:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    with c3:
        causal = st.toggle(tr(f"{NS}.causal_label"), value=True, key=f"{NS}.causal", bind="query-params",
                           help=tr(f"{NS}.causal_help"))
    return (text.text if not text.empty else DEFAULT_TEXT), int(seed), causal


def width_controls():
    return st.slider("d_k", 1, 64, 8, key=f"{NS}.d_k", bind="query-params")


def padded_texts(text: str) -> list[str]:
    """The phrases of the text as a batch, or a fixed example (with a note) when they can't show padding."""
    texts = phrases(text)
    if len(texts) < 2:
        st.info(tr(f"{NS}.pad_fallback"))
        return PAD_EXAMPLE
    if len({len(t) for t in texts}) == 1:
        st.info(tr(f"{NS}.pad_equal", n=len(texts[0])))
        return PAD_EXAMPLE
    return texts


def mask_layout(text: str, causal: bool) -> tuple[dict, list[str]]:
    """Sections 1 and 2 without what d_k changes: the prose and the code, laid out once per full
    run, with an empty slot for each part that mask_sections draws."""
    slots = {"controls": st.container()}
    title = tr(f"{NS}.steps_title", kind=tr(f"{NS}.decoder" if causal else f"{NS}.encoder"))
    st.subheader(title)
    if presenting():   # presenter mode: two charts a slide, so that a "−∞" at 18 px fits its cell
        c1, c2 = st.columns(2)
        slide(tr("classroom.slide.continued", title=title))
        c3 = st.columns(2)[0]
    else:
        c1, c2, c3 = st.columns(3)
    slots.update(mask=c1.container(), scores=c2.container(), weights=c3.container(), check=st.container())
    left, right = st.columns([1, 1])
    with left:
        st.markdown(tr(f"{NS}.steps_text"))
        slots["shapes"] = st.container()
    with right:
        code_panel(masked_attention, causal_mask, scaled_dot_product_attention, with_mask, height=560)
    st.subheader(tr(f"{NS}.pad_title"))
    st.markdown(tr(f"{NS}.pad_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.pad_title")))
    texts = padded_texts(text)
    slots["padding"] = beside_code(padding_mask, padded_attention, height=480)
    slots["batch"] = st.container()
    return slots, texts


# The text, the seed and the mask switch change everything: a full run. d_k and the changed
# position each touch one part: those parts are fragments and rerun alone (d_k's fragment draws
# only into the slots of mask_layout, so its rerun re-sends the figures, not the prose and code).
@fragment
def mask_sections(slots: dict, texts: list[str], text: str, seed: int, causal: bool, dev: str):
    """Sections 1 and 2 (one text, a padded batch); rerun alone when d_k moves."""
    with slots["controls"]:
        d_k = width_controls()
    one = single(text, d_k, seed, causal, dev)
    tokens, n = one["tokens"], len(one["tokens"])
    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))

    # 1. mask -> scores + mask -> softmax
    with slots["mask"]:
        figure(mask_matrix(one["mask"], tokens, tokens, title=tr(f"{NS}.mask_fig"),
                           hover_names=(tr("common.query"), tr("common.key"), tr(f"{NS}.added"))), key=f"{NS}.mask")
    with slots["scores"]:
        figure(masked_scores(one["seen"], tokens, tokens, title=tr(f"{NS}.scores_fig"),
                             hover_names=(tr("common.query"), tr("common.key"), tr("common.score"))), key=f"{NS}.scores")
    with slots["weights"]:
        figure(heatmap(one["weights"], tokens, tokens, title=tr(f"{NS}.weights_fig"), hover_names=hover,
                       masked=~one["mask"]),
               key=f"{NS}.weights")
    check = one["check"]
    slots["check"].caption(tr(f"{NS}.check", masked=check["masked"], largest=check["largest_masked"],
                              low=check["row_sum_min"], high=check["row_sum_max"]))
    with slots["shapes"]:
        shapes_table([
            ("X", f"({n}, {D})"), ("Q, K, V", f"({n}, {d_k})"), (tr(f"{NS}.mask_name"), f"({n}, {n})"),
            ("QKᵀ/√d_k + M", f"({n}, {n})"), ("softmax", f"({n}, {n})"), (tr(f"{NS}.output"), f"({n}, {d_k})"),
        ])

    # 2. a padded batch
    padded = batch(tuple(texts), d_k, seed, causal, dev)
    lengths = [len(t) for t in texts]
    b, n_max = len(texts), max(lengths)
    with slots["padding"]:
        rows = [tr(f"{NS}.sequence", i=i) for i in range(b)]             # text 0 is the first, as in the code
        shown = [[PAD_SHOWN if t == PAD else t for t in row] for row in padded["tokens"]]
        figure(mask_matrix([[j < length for j in range(n_max)] for length in lengths], rows,
                           [str(j) for j in range(n_max)], title=tr(f"{NS}.pad_mask_fig"),
                           hover_names=(tr(f"{NS}.sequence_word"), tr(f"{NS}.position"), tr(f"{NS}.token")),
                           cell_text=shown, height=160 + 45 * b), key=f"{NS}.padding")
        shapes_table([
            (tr(f"{NS}.batch_name"), f"({b}, {n_max}, {D})"), (tr(f"{NS}.pad_mask_name"), f"({b}, 1, {n_max})"),
            (tr(f"{NS}.combined_name") if causal else tr(f"{NS}.broadcast_name"), f"({b}, {n_max}, {n_max})"),
            ("softmax", f"({b}, {n_max}, {n_max})"),
        ])
    with slots["batch"]:
        figure(batch_panels(padded["weights"], padded["tokens"],
                            titles=[tr(f"{NS}.seq_title", i=i, n=length) for i, length in enumerate(lengths)],
                            hover_names=hover, height=440, masked=~padded["mask"]), key=f"{NS}.batch")
        check = padded["check"]
        st.caption(tr(f"{NS}.pad_check", masked=check["masked"], largest=check["largest_masked"],
                      low=check["row_sum_min"], high=check["row_sum_max"]))


@fragment
def leak_section(text: str, seed: int, causal: bool, dev: str):
    """Section 3 (peeking at the future); reruns alone when the changed position moves."""
    tokens = single(text, 8, seed, causal, dev)["tokens"]      # the characters; d_k plays no part here
    n = len(tokens)
    st.subheader(tr(f"{NS}.leak_title"))
    st.markdown(tr(f"{NS}.leak_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.leak_title")))
    if n < 2:
        st.info(tr(f"{NS}.leak_short"))
    else:
        # Positions from 0, as in the code; position 0 has nothing before it, so p starts at 1.
        positions = list(range(1, n))
        p = int(live_value(f"{NS}.changed", positions, n // 2))
        moved = leak(text, p, seed, dev)
        left, right = st.columns([1, 1])
        with left:
            setting = "causal" if causal else "none"

            def leak_frames():   # the figure at every changed position (the live slider's frames)
                leaks = [m[setting].cpu().numpy() for m in future_leaks(text, positions, LEAK_HEADS, seed, D, dev)]
                top = max(float(np.nanmax(c)) for c in leaks)    # one scale for every frame
                return [change_bars(tokens, c, q, names=(tr(f"{NS}.before", p=q), tr(f"{NS}.after", p=q)),
                                    title=tr(f"{NS}.leak_fig", p=q, old=label(tokens[q]), new=change_token(text, q)[q],
                                             mask=tr(f"{NS}.with_mask" if causal else f"{NS}.without_mask")),
                                    x_title=tr(f"{NS}.position"), y_title=tr(f"{NS}.change_axis"), y_max=top)
                        for q, c in zip(positions, leaks, strict=True)]

            live_figure(leak_frames, ("b3.leak", text, seed, causal, dev, lang()), f"{NS}.leak", f"{NS}.changed",
                        positions, n // 2, tr(f"{NS}.position_label"))
            m1, m2 = st.columns(2)
            m1.metric(tr(f"{NS}.metric_causal", p=p), f"{float(moved['causal'][:p].max()):.4f}")
            m2.metric(tr(f"{NS}.metric_none", p=p), f"{float(moved['none'][:p].max()):.4f}")
            st.markdown(tr(f"{NS}.leak_read"))
        with right:
            code_panel(future_leak, change_token, height=480)


text, seed, causal = text_controls()
dev = device()
mask_sections(*mask_layout(text, causal), text, seed, causal, dev)
leak_section(text, seed, causal, dev)

explorer(NS, open_by_default=False)

try_this(NS, [("try1", 0), ("try2", 1), ("try3", 2)])
