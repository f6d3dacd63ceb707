"""B1 · Scaled dot-product attention."""
import math

import streamlit as st

from core.lab import toy
from core.parts.attention import entropy_by_width, scaled_dot_product_attention, scaling_experiment
from ui.explorer import explorer
from ui.frame import beside_code, device, figure, header, shapes_table, text_box, tr, try_this
from viz.attention import heatmap, histogram, lines

NS = "b1"
DEFAULT_TEXT = "君不见，黄河之水天上来"
WIDTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]

header(NS)


def text_controls() -> tuple[str, int, st.delta_generator.DeltaGenerator]:
    """The text and the seed (a change redraws the page) and a slot for d_k (its fragment's)."""
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, 48, tr(f"{NS}.text_label"))
    with c3:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    return (text.text if not text.empty else DEFAULT_TEXT), int(seed), c2.container()


def scale_controls():
    return st.select_slider(tr(f"{NS}.width_label"), WIDTHS, value=64, key=f"{NS}.width",
                            bind="query-params")


@st.cache_data(max_entries=64)
def scale_demo(width: int, seed: int) -> dict:
    qs, ks = toy.unit_vectors(256, width, seed)
    stats = scaling_experiment(qs, ks)
    curve = entropy_by_width(WIDTHS, seed=seed)
    return {name: t.numpy() for name, t in {**stats, **{f"curve_{k}": c for k, c in curve.items()}}.items()}


# The page's fixed parts (prose, the code) are laid out once; each fragment below refills only
# its own slots, so a slider move re-sends its figures, not the page. The text and the seed
# change both sections: they rerun the page.
text, seed, d_k_slot = text_controls()
dev = device()
slot = {}
st.subheader(tr(f"{NS}.matrix_title"))
slot["matrix"] = beside_code(scaled_dot_product_attention)
st.subheader(tr(f"{NS}.scale_title"))
st.markdown(tr(f"{NS}.scale_text"))
slot["scale"] = st.container()
st.subheader(tr(f"{NS}.batch_title"))
st.markdown(tr(f"{NS}.batch_text"))


@st.fragment
def matrix_section(text: str, seed: int, dev: str):
    """Section 1; reruns alone when d_k moves."""
    with d_k_slot:
        d_k = st.slider("d_k", 1, 64, 8, key=f"{NS}.d_k", bind="query-params")
    D = 32
    tokens, attn = toy.self_attention(text, D, d_k, seed, dev)
    with slot["matrix"]:
        hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
        figure(heatmap(attn.weights, tokens, tokens, title=tr(f"{NS}.weights_fig", d_k=d_k),
                       hover_names=hover),
               key=f"{NS}.weights")
        st.caption(tr(f"{NS}.read_matrix"))
        n = len(tokens)
        shapes_table([
            ("X", f"({n}, {D})"), ("W_q, W_k", f"({D}, {d_k})"), ("W_v", f"({D}, {d_k})"),
            ("Q, K, V", f"({n}, {d_k})"), ("QKᵀ/√d_k, softmax", f"({n}, {n})"),
            (tr(f"{NS}.output"), f"({n}, {d_k})"),
        ])


@st.fragment
def scale_section(seed: int):
    """Section 2; reruns alone when the width moves."""
    with slot["scale"]:
        width = scale_controls()
        demo = scale_demo(width, seed)
        c1, c2 = st.columns(2)
        with c1:
            raw, scaled = tr(f"{NS}.raw"), tr(f"{NS}.scaled")
            figure(histogram({raw: demo["scores_raw"], scaled: demo["scores_scaled"]},
                             title=tr(f"{NS}.hist_fig", d_k=width), x_title=tr("common.score"),
                             y_title=tr(f"{NS}.density")),
                   key=f"{NS}.hist")
            st.caption(tr(f"{NS}.variance", d_k=width, raw=float(demo["scores_raw"].var()),
                          scaled=float(demo["scores_scaled"].var())))
        with c2:
            figure(lines(WIDTHS, {raw: demo["curve_raw"], scaled: demo["curve_scaled"]},
                         title=tr(f"{NS}.entropy_fig"), x_title="d_k", y_title=tr(f"{NS}.entropy_axis"),
                         log_x=True), key=f"{NS}.entropy")
            st.caption(tr(f"{NS}.entropy_caption", max=math.log(256)))


matrix_section(text, seed, dev)
scale_section(seed)

explorer(NS, open_by_default=False)

try_this(NS, [("try1", 1), ("try2", 2), ("try3", 0)])
