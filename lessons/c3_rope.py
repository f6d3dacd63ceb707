"""C3 · RoPE, rotary position embedding; at the end a trained model's own q and k under two bases."""
import numpy as np
import streamlit as st

from core.lab.real_tokens import dropped_note
from core.lab.rope_analysis import (
    fixed_query_key,
    pair_angle,
    pair_angles_by_key,
    real_query_key,
    rope_both_forms,
    rope_score_bound,
    rope_score_matrix,
    rope_wavelengths,
    score_by_distance,
)
from core.parts.positional import frequencies
from core.parts.rope import apply_rope, apply_rope_complex, rotate_pairs
from ui.c3_rope import (
    COMPARE,
    COURSE_CHARS,
    DISTANCES,
    REAL_BASES,
    REAL_TOKENS,
    by_key,
    real_curves,
    real_qk,
    rotation,
    rotation_frames,
    score_matrix,
    speeds,
)
from ui.frame import (
    beside_code,
    built_figure,
    device,
    figure,
    fragment,
    header,
    lang,
    ranged_slider,
    section_with_controls,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.model import REAL, course_model, model_switch, real_model
from viz.attention import heatmap
from viz.common import label
from viz.rope import by_distance, pair_plane, per_pair, score_by_offset, score_curves

NS = "c3"
WIDTHS = [8, 16, 32, 64, 128]
BASES = [100, 1000, 10000, 500000, 1000000]
REFERENCE = {10000: f"{NS}.base_llama2", 500000: f"{NS}.base_llama3"}
# The real-model section: SmolLM2's base against LLaMA-2's, on a trained model's own q and k.
OWN = {10000: f"{NS}.base_llama2", 100000: f"{NS}.base_smollm2"}
COURSE_TEXT = "君不见，黄河之水天上来，奔流到海不复回。"
REAL_TEXT = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog again."
REAL_CHARS = 1200

# The query's positions on the live slider: every other one, so that the frames stay near 150 KB
# (the trail is sent once; the hand, the arc and the title are each frame's own).
M_VALUES = list(range(0, 257, 2))
# The key's positions on its live slider (the score against m − n): every one; a frame is two
# points and a title, ~0.2 KB.
N_VALUES = list(range(0, 257))

header(NS)


def rotation_controls():
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 2])     # room for 「随机种子」 on one line at 1024 px
    with c3:
        d = st.select_slider(tr(f"{NS}.d_label"), WIDTHS, value=64, key=f"{NS}.d", bind="query-params")
    with c4:
        base = st.select_slider(tr(f"{NS}.base_label"), BASES, value=10000, key=f"{NS}.base",
                                bind="query-params")
    with c5:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr("common.seed_help"))
    with c1:
        m = int(live_value(f"{NS}.m", M_VALUES, 12))   # the plane's own live slider (ui.live)
        n = int(live_value(f"{NS}.key_n", N_VALUES, 4))  # the distance figure's live slider
    with c2:
        # The pairs of this width, 0 … d/2 − 1; a narrower d clamps the chosen pair to the last one.
        pair = ranged_slider(tr(f"{NS}.pair_label"), 0, d // 2 - 1, 3, key=f"{NS}.pair", help=tr(f"{NS}.pair_help"))
    return m, n, pair, d, float(base), int(seed)


def matrix_controls():
    return st.slider(tr(f"{NS}.n_label"), 4, 64, 24, key=f"{NS}.n", bind="query-params")


# The page's fixed parts (prose, the code) are laid out once; the fragment below refills only
# the slots that depend on its controls, so a slider move re-sends the figures, not the page.
slot = {"controls": st.container()}
st.subheader(tr(f"{NS}.rotate_title"))
slot["plane"] = beside_code(apply_rope, rotate_pairs, pair_angle)
st.subheader(tr(f"{NS}.dist_title"))
st.markdown(tr(f"{NS}.dist_text"))
slot["dist"] = beside_code(pair_angles_by_key, height=None)
st.subheader(tr(f"{NS}.speed_title"))
st.markdown(tr(f"{NS}.speed_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.speed_title")))
slot["freq"] = beside_code(frequencies, height=None)
st.subheader(tr(f"{NS}.bound_title"))
st.markdown(tr(f"{NS}.bound_text"))            # the decay explained before its chart
slide(tr("classroom.slide.continued", title=tr(f"{NS}.bound_title")))
slot["bound"] = beside_code(rope_score_bound, height=None)
slot["matrix_controls"], slot["matrix"] = section_with_controls(NS, "toeplitz", rope_score_matrix,
                                                                fixed_query_key)
st.subheader(tr(f"{NS}.complex_title"))
st.markdown(tr(f"{NS}.complex_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.complex_title")))
st.info(tr(f"{NS}.pairing_note"))
slot["complex"] = beside_code(apply_rope_complex, rope_both_forms)

# ---------------------------------------------------------------- a trained model's q and k
st.subheader(tr(f"{NS}.real_title"))
real = real_model(device()) if model_switch(NS) == REAL else None
loaded = real or course_model(device())
st.markdown(tr(f"{NS}.real_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.real_title")))
if loaded:
    slot["real_controls"] = st.container()
    slot["real_dist"] = beside_code(score_by_distance, real_query_key, height=560)
    slot["real_wave"] = beside_code(rope_wavelengths, height=None)


@fragment
def lesson_body():
    """Reruns alone when a control moves (st.fragment) and writes only into the slots above:
    the prose, the code and the questions are neither sent nor drawn again."""
    with slot["controls"]:
        m, n_key, pair, d, base, seed = rotation_controls()
    dev = device()

    rot = rotation(d, base, m, n_key, pair, seed, dev)
    with slot["plane"]:
        def plane_frames():   # the plane at every position m (the live slider's frames)
            return [pair_plane(f["path"], title=tr(f"{NS}.plane_fig", pair=pair, m=mm, n=n_key),
                               trail_name=tr(f"{NS}.trail"), hand_name=tr(f"{NS}.hand", m=mm),
                               key_point=f["key"], key_name=tr(f"{NS}.key_hand", n=n_key),
                               angle_text=f"φ + (m − n)θ = {f['angle']:.2f}",
                               x_title=f"x[{2 * pair}]", y_title=f"x[{2 * pair + 1}]")
                    for mm, f in zip(M_VALUES, rotation_frames(d, base, M_VALUES, n_key, pair, seed, dev), strict=True)]

        live_figure(plane_frames, ("c3.plane", d, base, n_key, pair, seed, dev, lang()), f"{NS}.plane", f"{NS}.m",
                    M_VALUES, 12, tr(f"{NS}.m_label"))
        angle = m * rot["theta"]
        st.caption(tr(f"{NS}.angle_caption", pair=pair, theta=rot["theta"], m=m, angle=angle,
                      turns=angle / (2 * np.pi)))
        st.caption(tr(f"{NS}.between_caption", offset=rot["offset"], mn=m - n_key, theta=rot["theta"],
                      angle=rot["angle"], score=rot["score"]))
        shapes_table([
            ("q", f"({d},)"), (tr(f"{NS}.positions"), f"({m + 1},)"),
            (tr(f"{NS}.angles"), f"({m + 1}, {d // 2})"), (tr(f"{NS}.rotated"), f"({m + 1}, {d})"),
            (tr(f"{NS}.one_pair"), f"({m + 1}, 2)"),
        ])

    with slot["dist"]:
        names = (tr(f"{NS}.dist_total"), tr(f"{NS}.dist_pair", pair=pair))

        def dist_frames():   # the score at every key position n, the query at m (the live slider's frames)
            curve = by_key(d, base, m, N_VALUES, pair, seed, dev)
            offsets = [m - nn for nn in N_VALUES]
            return [score_by_offset(offsets, {names[0]: curve["total"], names[1]: curve["score"]}, i,
                                    title=tr(f"{NS}.dist_fig", m=m, n=nn, mn=m - nn, angle=curve["angle"][i]),
                                    x_title=tr(f"{NS}.dist_axis"), y_title=tr(f"{NS}.dist_score_axis"))
                    for i, nn in enumerate(N_VALUES)]

        live_figure(dist_frames, ("c3.dist", d, base, m, pair, seed, dev, lang()), f"{NS}.dist", f"{NS}.key_n",
                    N_VALUES, 4, tr(f"{NS}.key_label"), help=tr(f"{NS}.key_help"))
        at = by_key(d, base, m, N_VALUES, pair, seed, dev)
        i = N_VALUES.index(n_key)
        st.caption(tr(f"{NS}.dist_caption", mn=m - n_key, total=at["total"][i], pair=pair, score=at["score"][i],
                      m=m, n=n_key))

    chosen = int(base)
    sp = speeds(d, chosen)
    shown = list(dict.fromkeys((*COMPARE, chosen)))       # the two references, then the slider's base
    names = {b: tr(REFERENCE.get(b, f"{NS}.base_name"), base=f"{b:,}") for b in shown}
    with slot["freq"]:
        figure(per_pair({names[b]: sp[f"theta_{b}"] for b in shown}, title=tr(f"{NS}.freq_fig", d=d),
                        x_title=tr(f"{NS}.pair_axis"), y_title=tr(f"{NS}.theta_axis"), chosen=names[chosen]),
               key=f"{NS}.freq")
        slowest = {b: 2 * np.pi / float(sp[f"theta_{b}"][-1]) for b in shown}
        st.caption(tr(f"{NS}.freq_caption_own" if chosen not in COMPARE else f"{NS}.freq_caption",
                      slow_a=slowest[COMPARE[0]], slow_b=slowest[COMPARE[1]], base=f"{chosen:,}",
                      slow_c=slowest[chosen]))
    with slot["bound"]:
        figure(by_distance(DISTANCES, {names[b]: sp[f"bound_{b}"] for b in shown},
                           title=tr(f"{NS}.bound_fig", d=d), x_title=tr(f"{NS}.distance_axis"),
                           y_title=tr(f"{NS}.bound_axis"), chosen=names[chosen]), key=f"{NS}.bound")
        st.caption(tr(f"{NS}.bound_caption", start=(d // 2 + 1) / 2, first=float(sp[f"bound_{chosen}"][0]),
                      base=f"{chosen:,}"))

    with slot["matrix_controls"]:
        n = matrix_controls()
    sm = score_matrix(d, base, n, seed, dev)
    with slot["matrix"]:
        ticks = [str(i) for i in range(n)]
        figure(heatmap(sm["scores"], ticks, ticks, title=tr(f"{NS}.matrix_fig", n=n, base=f"{base:,.0f}"),
                       hover_names=("m", "n", "qₘ·kₙ"), weights=False), key=f"{NS}.matrix")
        st.caption(tr(f"{NS}.matrix_caption", error=sm["error"]))
        shapes_table([("q, k", f"({d},)"), ("qₘ, kₙ", f"({n}, {d})"), ("qₘ · kₙᵀ", f"({n}, {n})")])

    with slot["complex"]:
        st.metric(tr(f"{NS}.max_diff", m=m), f"{rot['max_abs_diff']:.2e}")
        st.caption(tr(f"{NS}.complex_caption", m=m, d=d))


lesson_body()


def real_controls(cfg):
    """Text, block, head, and the query and key tokens whose score is drawn (the key at or before
    the query: what a causal model compares); the ranges follow the model and the text."""
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        if real:
            text = text_box(f"{NS}.rtext", REAL_TEXT, REAL_CHARS, tr(f"{NS}.rtext_label", limit=REAL_TOKENS))
            if note := dropped_note(real[1], text.text):         # bytes SmolLM2 has no token for
                st.warning(tr("real.dropped", **note))
        else:
            text = text_box(f"{NS}.text", COURSE_TEXT, COURSE_CHARS, tr(f"{NS}.text_label"))
    with c2:
        layer = ranged_slider(tr(f"{NS}.layer_label"), 0, cfg.n_layers - 1, 0, key=f"{NS}.layer")
    with c3:
        head = ranged_slider(tr(f"{NS}.head_label"), 0, cfg.n_heads - 1, 0, key=f"{NS}.head",
                             help=tr(f"{NS}.head_help"))
    return text.text if not text.empty else (REAL_TEXT if real else COURSE_TEXT), layer, head


@fragment
def real_section():
    """Reruns alone when one of its controls moves and writes into its own slots."""
    lm = REAL if real else "course"
    model, _ = loaded
    cfg = model.config
    with slot["real_controls"]:
        text, layer, head = real_controls(cfg)
        with st.spinner(tr(f"{NS}.running")):        # a new text or block: one forward pass, < 1 s
            qk = real_qk(lm, text, layer, device(), loaded)
        if real and qk["n_all"] > REAL_TOKENS:
            st.warning(tr(f"{NS}.tokens_cut", limit=REAL_TOKENS, n=qk["n_all"]))
        tokens = qk["tokens"]
        n = len(tokens)
        c1, c2 = st.columns(2)
        with c1:
            query = ranged_slider(tr(f"{NS}.query_label"), 0, n - 1, 10_000, key=f"{NS}.query")
        with c2:
            key = ranged_slider(tr(f"{NS}.rkey_label"), 0, query, 0, key=f"{NS}.rkey")
    # Figures and captions built once per setting for every session (ui.frame.built_figure):
    # a rerun at the same values neither unpickles 16,382 scores nor builds the figures again.
    dist_fig, dist_text = built_figure((f"{NS}.real", lm, text, layer, head, query, key, lang()),
                                       lambda: distance_view(lm, text, layer, head, query, key, tokens, cfg))
    wave_fig, wave_text = built_figure((f"{NS}.wave", lm, lang()), lambda: wave_view(cfg))
    with slot["real_dist"]:
        figure(dist_fig, key=f"{NS}.real")
        st.caption(dist_text)
        d = cfg.d_head
        shapes_table([(f"blocks.{layer}.attn.q", f"(1, {cfg.n_heads}, {n}, {d})"),
                      (f"blocks.{layer}.attn.k", f"(1, {cfg.n_kv_heads}, {n}, {d})"),
                      (tr(f"{NS}.one_q"), f"({d},)"), (tr(f"{NS}.scores_name"), f"({cfg.max_seq_len - 1},)")])
    with slot["real_wave"]:
        figure(wave_fig, key=f"{NS}.wave")
        st.caption(wave_text)


def base_names() -> dict[int, str]:
    return {b: tr(OWN[b], base=f"{b:,}") for b in REAL_BASES}


def distance_view(lm, text, layer, head, query, key, tokens, cfg):
    """The score-against-distance figure of one query and key token, and its caption."""
    curves = real_curves(lm, text, layer, head, query, key, cfg.max_seq_len, device(), loaded)
    own, names, r = int(cfg.rope_base), base_names(), query - key
    fig = score_curves(curves["distances"], {names[b]: curves[f"score_{b}"] for b in REAL_BASES},
                       title=tr(f"{NS}.real_fig", layer=layer, head=head, q=label(tokens[query]),
                                k=label(tokens[key])),
                       x_title=tr(f"{NS}.distance_axis_real"), y_title=tr(f"{NS}.score_axis"),
                       mark=(r, curves["traced"], tr(f"{NS}.traced_name", r=r)) if r >= 1 else None,
                       chosen=names[own])
    other = next(b for b in REAL_BASES if b != own)
    caption = tr(f"{NS}.real_caption", r=r, own=f"{own:,}", again=curves["own"][own], traced=curves["traced"],
              other=f"{other:,}", at_other=curves["own"][other], far_a=curves[f"far_{REAL_BASES[0]}"],
              far_b=curves[f"far_{REAL_BASES[1]}"], start=cfg.max_seq_len // 8, end=cfg.max_seq_len - 1)
    return fig, caption


def wave_view(cfg):
    """The wavelength of every pair under both bases, the model's context as a line, and its caption."""
    waves = {b: rope_wavelengths(cfg.d_head, float(b)).numpy() for b in REAL_BASES}
    names, n = base_names(), cfg.max_seq_len
    fig = per_pair({names[b]: waves[b] for b in REAL_BASES}, title=tr(f"{NS}.wave_fig", d=cfg.d_head),
                   x_title=tr(f"{NS}.pair_axis"), y_title=tr(f"{NS}.wave_axis"), chosen=names[int(cfg.rope_base)],
                   level=(n, tr(f"{NS}.context_name", n=f"{n:,}")))
    never = {b: int((waves[b] > n).sum()) for b in REAL_BASES}
    caption = tr(f"{NS}.wave_caption", p=cfg.d_head // 2, n=f"{n:,}", a=never[REAL_BASES[0]], b=never[REAL_BASES[1]],
              slow_a=float(waves[REAL_BASES[0]][-1]), slow_b=float(waves[REAL_BASES[1]][-1]))
    return fig, caption

if loaded:
    real_section()

try_this(NS, [("try1", 1), ("try2", 0), ("try3", 2)])
