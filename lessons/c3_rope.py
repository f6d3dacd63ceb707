"""C3 · RoPE, rotary position embedding."""
import numpy as np
import streamlit as st
import torch

from core.lab.rope_analysis import (
    fixed_query_key,
    pair_path,
    rope_both_forms,
    rope_score_bound,
    rope_score_matrix,
    toeplitz_error,
)
from core.parts.rope import apply_rope, apply_rope_complex, rope_frequencies, rotate_pairs
from ui.frame import (
    beside_code,
    code_panel,
    device,
    figure,
    fragment,
    header,
    ranged_slider,
    section_with_controls,
    shapes_table,
    tr,
    try_this,
)
from viz.attention import heatmap
from viz.rope import by_distance, pair_plane, per_pair

NS = "c3"
WIDTHS = [8, 16, 32, 64, 128]
BASES = [100, 1000, 10000, 500000, 1000000]
COMPARE = (10000, 500000)                    # LLaMA-2 and Llama-3
DISTANCES = np.unique(np.round(np.geomspace(1, 65536, 200))).astype(np.int64)

header(NS)


def rotation_controls():
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 1])
    with c3:
        d = st.select_slider(tr(f"{NS}.d_label"), WIDTHS, value=64, key=f"{NS}.d", bind="query-params")
    with c4:
        base = st.select_slider(tr(f"{NS}.base_label"), BASES, value=10000, key=f"{NS}.base",
                                bind="query-params")
    with c5:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr("common.seed_help"))
    with c1:
        m = st.slider(tr(f"{NS}.m_label"), 0, 256, 12, key=f"{NS}.m", bind="query-params")
    with c2:
        # The pairs of this width, 0 … d/2 − 1; a narrower d clamps the chosen pair to the last one.
        pair = ranged_slider(tr(f"{NS}.pair_label"), 0, d // 2 - 1, 3, key=f"{NS}.pair", help=tr(f"{NS}.pair_help"))
    return m, pair, d, float(base), int(seed)


@st.cache_data(max_entries=64)
def rotation(d: int, base: float, m: int, pair: int, seed: int, dev: str) -> dict:
    q, _ = fixed_query_key(d, seed, dev)
    forms = rope_both_forms(q, torch.arange(m + 1, device=dev), base)
    theta = rope_frequencies(d, base)
    return {"path": pair_path(forms["real"], pair).cpu().numpy(), "theta": float(theta[pair]),
            "max_abs_diff": float(forms["max_abs_diff"]), "q": q.cpu().numpy()}


@st.cache_data(max_entries=16)
def speeds(d: int) -> dict:
    out = {}
    for b in COMPARE:
        out[f"theta_{b}"] = rope_frequencies(d, float(b)).numpy()
        out[f"bound_{b}"] = rope_score_bound(torch.from_numpy(DISTANCES), d, float(b)).float().numpy()
    return out


def matrix_controls():
    return st.slider(tr(f"{NS}.n_label"), 4, 64, 24, key=f"{NS}.n", bind="query-params")


@st.cache_data(max_entries=64)
def score_matrix(d: int, base: float, n: int, seed: int, dev: str) -> dict:
    q, k = fixed_query_key(d, seed, dev)
    scores = rope_score_matrix(q, k, n, base)["scores"]
    return {"scores": scores.cpu().numpy(), "error": toeplitz_error(scores)}


# The page's fixed parts (prose, the code) are laid out once; the fragment below refills only
# the slots that depend on its controls, so a slider move re-sends the figures, not the page.
slot = {"controls": st.container()}
st.subheader(tr(f"{NS}.rotate_title"))
slot["plane"] = beside_code(apply_rope, rotate_pairs, rope_frequencies)
st.subheader(tr(f"{NS}.speed_title"))
st.markdown(tr(f"{NS}.speed_text"))
slot["speeds"] = st.container()
st.markdown(tr(f"{NS}.bound_text"))
code_panel(rope_score_bound, height=None)
slot["matrix_controls"], slot["matrix"] = section_with_controls(NS, "toeplitz", rope_score_matrix,
                                                                fixed_query_key)
st.subheader(tr(f"{NS}.complex_title"))
st.markdown(tr(f"{NS}.complex_text"))
st.info(tr(f"{NS}.pairing_note"))
slot["complex"] = beside_code(apply_rope_complex, rope_both_forms)


@fragment
def lesson_body():
    """Reruns alone when a control moves (st.fragment) and writes only into the slots above:
    the prose, the code and the questions are neither sent nor drawn again."""
    with slot["controls"]:
        m, pair, d, base, seed = rotation_controls()
    dev = device()

    rot = rotation(d, base, m, pair, seed, dev)
    with slot["plane"]:
        figure(pair_plane(rot["path"], title=tr(f"{NS}.plane_fig", pair=pair, m=m),
                          trail_name=tr(f"{NS}.trail"), hand_name=tr(f"{NS}.hand", m=m),
                          x_title=f"x[{2 * pair}]", y_title=f"x[{2 * pair + 1}]"), key=f"{NS}.plane")
        angle = m * rot["theta"]
        st.caption(tr(f"{NS}.angle_caption", pair=pair, theta=rot["theta"], m=m, angle=angle,
                      turns=angle / (2 * np.pi)))
        shapes_table([
            ("q", f"({d},)"), (tr(f"{NS}.positions"), f"({m + 1},)"),
            (tr(f"{NS}.angles"), f"({m + 1}, {d // 2})"), (tr(f"{NS}.rotated"), f"({m + 1}, {d})"),
            (tr(f"{NS}.one_pair"), f"({m + 1}, 2)"),
        ])

    sp = speeds(d)
    names = {b: tr(f"{NS}.base_name", base=f"{b:,}") for b in COMPARE}
    with slot["speeds"]:
        c1, c2 = st.columns(2)
        with c1:
            figure(per_pair({names[b]: sp[f"theta_{b}"] for b in COMPARE}, title=tr(f"{NS}.freq_fig", d=d),
                            x_title=tr(f"{NS}.pair_axis"), y_title=tr(f"{NS}.theta_axis")), key=f"{NS}.freq")
            slowest = {b: 2 * np.pi / float(sp[f"theta_{b}"][-1]) for b in COMPARE}
            st.caption(tr(f"{NS}.freq_caption", slow_a=slowest[COMPARE[0]], slow_b=slowest[COMPARE[1]]))
        with c2:
            figure(by_distance(DISTANCES, {names[b]: sp[f"bound_{b}"] for b in COMPARE},
                               title=tr(f"{NS}.bound_fig", d=d), x_title=tr(f"{NS}.distance_axis"),
                               y_title=tr(f"{NS}.bound_axis")), key=f"{NS}.bound")
            st.caption(tr(f"{NS}.bound_caption", start=(d // 2 + 1) / 2))
        st.caption(tr(f"{NS}.speeds_fixed", a=f"{COMPARE[0]:,}", b=f"{COMPARE[1]:,}", d=d))

    with slot["matrix_controls"]:
        n = matrix_controls()
    sm = score_matrix(d, base, n, seed, dev)
    with slot["matrix"]:
        ticks = [str(i) for i in range(n)]
        figure(heatmap(sm["scores"], ticks, ticks, title=tr(f"{NS}.matrix_fig", n=n, base=f"{base:,.0f}"),
                       hover_names=("m", "n", "q_m·k_n"), weights=False), key=f"{NS}.matrix")
        st.caption(tr(f"{NS}.matrix_caption", error=sm["error"]))
        shapes_table([("q, k", f"({d},)"), ("q_m, k_n", f"({n}, {d})"), ("q_m · k_nᵀ", f"({n}, {n})")])

    with slot["complex"]:
        st.metric(tr(f"{NS}.max_diff", m=m), f"{rot['max_abs_diff']:.2e}")
        st.caption(tr(f"{NS}.complex_caption", m=m, d=d))


lesson_body()

try_this(NS, [("try1", 1), ("try2", 0), ("try3", 2)])
