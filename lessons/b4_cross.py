"""B4 · Cross-attention."""
import streamlit as st

from core.lab.attention_lab import cross_attention, embed_tokens, word_tokens
from core.parts.mha import MultiHeadAttention
from ui.frame import beside_code, device, figure, header, shapes_table, text_box, tr, try_this
from viz.attention import rect_grid

NS = "b4"
DEFAULT_TARGET = "The water of the Yellow River comes from the sky"
DEFAULT_SOURCE = "黄河之水天上来"
HEADS = [1, 2, 4, 8]
MAX_TOKENS = 24
D = 32

header(NS)


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


@st.cache_data(max_entries=64)
def cross_demo(target: str, source: str, n_heads: int, seed: int, dev: str) -> dict:
    tgt, src = word_tokens(target), word_tokens(source)
    cut = len(tgt) > MAX_TOKENS or len(src) > MAX_TOKENS
    tgt, src = tgt[:MAX_TOKENS] or ["∅"], src[:MAX_TOKENS] or ["∅"]
    _, trace = cross_attention(tgt, src, n_heads, seed, D, dev)
    return {"target": tgt, "source": src, "cut": cut,
            "weights": trace["attn.weights"][0].cpu().numpy(),                  # (H, N_target, N_source)
            "shapes": {name: tuple(t.shape) for name, t in trace.tensors.items()}}


def shape(t: tuple) -> str:
    return "(" + ", ".join(str(v) for v in t) + ")"


# The page's fixed parts (the code, the closing prose) are laid out once; the fragment below
# refills only the slots that depend on its controls.
slot = {"controls": st.container(), "title": st.container()}
slot["matrix"] = beside_code(cross_attention, embed_tokens, word_tokens, MultiHeadAttention.forward, height=720)
st.subheader(tr(f"{NS}.where_title"))
st.markdown(tr(f"{NS}.where_text"))


@st.fragment
def lesson_body():
    """Reruns alone when a control moves (st.fragment) and writes only into the slots above:
    the code, the prose and the questions are neither sent nor drawn again."""
    with slot["controls"]:
        target, source, h, seed = text_controls()
    demo = cross_demo(target, source, h, seed, device())
    tgt, src, s = demo["target"], demo["source"], demo["shapes"]
    n_t, n_s = len(tgt), len(src)
    with slot["title"]:
        if demo["cut"]:
            st.warning(tr(f"{NS}.cut", limit=MAX_TOKENS))
        st.subheader(tr(f"{NS}.matrix_title", n_t=n_t, n_s=n_s))
    with slot["matrix"]:
        figure(rect_grid(demo["weights"], tgt, src, titles=[tr(f"{NS}.head_name", i=i + 1) for i in range(h)],
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


lesson_body()

try_this(NS, [("try1", 1), ("try2", 1), ("try3", 0)])
