"""B3 · Masks."""
import streamlit as st

from core.lab.attention_lab import change_token, future_leak, masked_attention, padded_attention, with_mask
from core.parts.attention import scaled_dot_product_attention
from core.parts.masks import causal_mask, padding_mask
from core.text.tokenizer import PAD
from ui.b3_masks import D, batch, leak, leak_frames, padded_texts, single, text_controls, width_controls
from ui.classroom import presenting
from ui.explorer import explorer
from ui.frame import device, figure, lang, shapes_table, tr
from ui.lesson import Lesson
from ui.live import live_figure, live_value
from viz.attention import heatmap
from viz.masks import batch_panels, mask_matrix, masked_scores

NS = "b3"
PAD_SHOWN = "pad"            # the padding token as the figures write it, on every axis and in the mask

lesson = Lesson(NS)
# The text, the seed and the mask switch change everything: a full run. d_k and the changed
# position each touch one part: those parts are fragments and rerun alone.
text, seed, causal = text_controls()
dev = device()
d_k_slot = st.container()    # d_k: the first two sections' (drawn by their fragment)
n = len(single(text, 8, seed, causal, dev)["tokens"])

# 1. mask -> scores + mask -> softmax: its title names the mask; the three charts in a row (two a
# slide in presenter mode, so that a "−∞" at 18 px fits its cell); the prose beside the code.
lesson.section("steps", layout_only=True, title_fields={"kind": tr(f"{NS}.decoder" if causal else f"{NS}.encoder")},
               text=None, slide="pair" if presenting() else False,
               above=("pair", "third", "check") if presenting() else ("pair", "check"), height=560,
               code=(masked_attention, causal_mask, scaled_dot_product_attention, with_mask))
lesson.section("pad", layout_only=True, code=(padding_mask, padded_attention), height=480, below=("batch",))


@lesson.body
def masks(slots, text, seed, causal, dev):
    """Sections 1 and 2 (one text, a padded batch); rerun alone when d_k moves."""
    with d_k_slot:
        d_k = width_controls()
    one = single(text, d_k, seed, causal, dev)
    tokens, n = one["tokens"], len(one["tokens"])
    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    s = slots["steps"]
    c1, c2, c3 = (*s.pair.columns(2), s.third.columns(2)[0]) if presenting() else s.pair.columns(3)
    with c1:
        figure(mask_matrix(one["mask"], tokens, tokens, title=tr(f"{NS}.mask_fig"),
                           hover_names=(tr("common.query"), tr("common.key"), tr(f"{NS}.added"))), key=f"{NS}.mask")
    with c2:
        figure(masked_scores(one["seen"], tokens, tokens, title=tr(f"{NS}.scores_fig"),
                             hover_names=(tr("common.query"), tr("common.key"), tr("common.score"))), key=f"{NS}.scores")
    with c3:
        figure(heatmap(one["weights"], tokens, tokens, title=tr(f"{NS}.weights_fig"), hover_names=hover,
                       masked=~one["mask"]), key=f"{NS}.weights")
    check = one["check"]
    s.check.caption(tr(f"{NS}.check", masked=check["masked"], largest=check["largest_masked"],
                       low=check["row_sum_min"], high=check["row_sum_max"]))
    with s.figure:
        st.markdown(tr(f"{NS}.steps_text"))
        shapes_table([
            ("X", f"({n}, {D})"), ("Q, K, V", f"({n}, {d_k})"), (tr(f"{NS}.mask_name"), f"({n}, {n})"),
            ("QKᵀ/√d_k + M", f"({n}, {n})"), ("softmax", f"({n}, {n})"), (tr(f"{NS}.output"), f"({n}, {d_k})"),
        ])

    # 2. a padded batch
    with slots["pad"].controls:
        texts = padded_texts(text)
    padded = batch(tuple(texts), d_k, seed, causal, dev)
    lengths = [len(t) for t in texts]
    b, n_max = len(texts), max(lengths)
    with slots["pad"].figure:
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
    with slots["pad"].batch:
        figure(batch_panels(padded["weights"], padded["tokens"],
                            titles=[tr(f"{NS}.seq_title", i=i, n=length) for i, length in enumerate(lengths)],
                            hover_names=hover, height=440, masked=~padded["mask"]), key=f"{NS}.batch",
               name=tr(f"{NS}.pad_title"))
        check = padded["check"]
        st.caption(tr(f"{NS}.pad_check", masked=check["masked"], largest=check["largest_masked"],
                      low=check["row_sum_min"], high=check["row_sum_max"]))


# 3. Peeking at the future: reruns alone when the changed position moves.
@lesson.section("leak", above=(), code=(future_leak, change_token) if n >= 2 else (), height=480)
def peek(s, text, seed, causal, dev):
    n = len(single(text, 8, seed, causal, dev)["tokens"])
    if n < 2:
        st.info(tr(f"{NS}.leak_short"))
        return
    # Positions from 0, as in the code; position 0 has nothing before it, so p starts at 1.
    positions = list(range(1, n))
    p = int(live_value(f"{NS}.changed", positions, n // 2))
    moved = leak(text, p, seed, dev)
    live_figure(leak_frames, (text, seed, causal, dev, lang()), f"{NS}.leak", f"{NS}.changed",
                positions, n // 2, tr(f"{NS}.position_label"))
    m1, m2 = st.columns(2)
    m1.metric(tr(f"{NS}.metric_causal", p=p), f"{float(moved['causal'][:p].max()):.4f}")
    m2.metric(tr(f"{NS}.metric_none", p=p), f"{float(moved['none'][:p].max()):.4f}")
    st.markdown(tr(f"{NS}.leak_read"))


lesson.run(text=text, seed=seed, causal=causal, dev=dev)
explorer(NS, open_by_default=False)
lesson.quiz([("try1", 0), ("try2", 1), ("try3", 2)])
