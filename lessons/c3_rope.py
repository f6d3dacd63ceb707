"""C3 · RoPE, rotary position embedding; at the end a trained model's own q and k under two bases."""
import numpy as np
import streamlit as st

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
    DISTANCES,
    M_VALUES,
    N_VALUES,
    REAL_TOKENS,
    REFERENCE,
    by_key,
    dist_frames,
    distance_view,
    plane_frames,
    real_controls,
    real_qk,
    rotation,
    rotation_controls,
    score_matrix,
    speeds,
    token_controls,
    wave_view,
)
from ui.frame import beside_code, device, drawn, figure, lang, shapes_table, tr
from ui.lesson import Lesson
from ui.live import live_figure
from ui.model import REAL, course_model, model_switch, real_model
from viz.attention import heatmap
from viz.rope import by_distance, per_pair

NS = "c3"

lesson = Lesson(NS)
top = st.container()     # the rotation's controls, above the first title: every section below follows them

lesson.section("rotate", layout_only=True, code=(apply_rope, rotate_pairs, pair_angle), above=(), slide=False)
lesson.section("dist", layout_only=True, code=(pair_angles_by_key,), height=None, above=(), slide=False)
lesson.section("speed", layout_only=True, code=(frequencies,), height=None, above=())
lesson.section("bound", layout_only=True, code=(rope_score_bound,), height=None, above=())   # prose, then the decay
lesson.section("toeplitz", layout_only=True, code=(rope_score_matrix, fixed_query_key))
lesson.section("complex", layout_only=True, code=(apply_rope_complex, rope_both_forms), above=("note",))


@lesson.body
def rotation_sections(slots, top, dev):      # the rotation's controls move every section but the last
    with top:
        m, n_key, pair, d, base, seed = rotation_controls()
    rot = rotation(d, base, m, n_key, pair, seed, dev)
    with slots["rotate"].figure:
        live_figure(plane_frames, (d, base, n_key, pair, seed, dev, lang()), f"{NS}.plane", f"{NS}.m",
                    M_VALUES, 12, tr(f"{NS}.m_label"))
        angle = m * rot["theta"]
        st.caption(tr(f"{NS}.angle_caption", pair=pair, theta=rot["theta"], m=m, angle=angle,
                      turns=angle / (2 * np.pi)))
        st.caption(tr(f"{NS}.between_caption", offset=rot["offset"], mn=m - n_key, theta=rot["theta"],
                      angle=rot["angle"], score=rot["score"]))
        shapes_table([("q", f"({d},)"), (tr(f"{NS}.positions"), f"({m + 1},)"),
                      (tr(f"{NS}.angles"), f"({m + 1}, {d // 2})"), (tr(f"{NS}.rotated"), f"({m + 1}, {d})"),
                      (tr(f"{NS}.one_pair"), f"({m + 1}, 2)")])
    with slots["dist"].figure:
        live_figure(dist_frames, (d, base, m, pair, seed, dev, lang()), f"{NS}.dist", f"{NS}.key_n",
                    N_VALUES, 4, tr(f"{NS}.key_label"), help=tr(f"{NS}.key_help"))
        at, i = by_key(d, base, m, N_VALUES, pair, seed, dev), N_VALUES.index(n_key)
        st.caption(tr(f"{NS}.dist_caption", mn=m - n_key, total=at["total"][i], pair=pair, score=at["score"][i],
                      m=m, n=n_key))

    chosen = int(base)
    sp = speeds(d, chosen)
    shown = list(dict.fromkeys((*COMPARE, chosen)))       # the two references, then the slider's base
    names = {b: tr(REFERENCE.get(b, f"{NS}.base_name"), base=f"{b:,}") for b in shown}
    with slots["speed"].figure:
        figure(per_pair({names[b]: sp[f"theta_{b}"] for b in shown}, title=tr(f"{NS}.freq_fig", d=d),
                        x_title=tr(f"{NS}.pair_axis"), y_title=tr(f"{NS}.theta_axis"), chosen=names[chosen]),
               key=f"{NS}.freq")
        slowest = {b: 2 * np.pi / float(sp[f"theta_{b}"][-1]) for b in shown}
        st.caption(tr(f"{NS}.freq_caption_own" if chosen not in COMPARE else f"{NS}.freq_caption",
                      slow_a=slowest[COMPARE[0]], slow_b=slowest[COMPARE[1]], base=f"{chosen:,}",
                      slow_c=slowest[chosen]))
    with slots["bound"].figure:
        figure(by_distance(DISTANCES, {names[b]: sp[f"bound_{b}"] for b in shown},
                           title=tr(f"{NS}.bound_fig", d=d), x_title=tr(f"{NS}.distance_axis"),
                           y_title=tr(f"{NS}.bound_axis"), chosen=names[chosen]), key=f"{NS}.bound")
        st.caption(tr(f"{NS}.bound_caption", start=(d // 2 + 1) / 2, first=float(sp[f"bound_{chosen}"][0]),
                      base=f"{chosen:,}"))

    with slots["toeplitz"].controls:
        n = st.slider(tr(f"{NS}.n_label"), 4, 64, 24, key=f"{NS}.n", bind="query-params")
    sm = score_matrix(d, base, n, seed, dev)
    with slots["toeplitz"].figure:
        ticks = [str(i) for i in range(n)]
        figure(heatmap(sm["scores"], ticks, ticks, title=tr(f"{NS}.matrix_fig", n=n, base=f"{base:,.0f}"),
                       hover_names=("m", "n", "qₘ·kₙ"), weights=False), key=f"{NS}.matrix")
        st.caption(tr(f"{NS}.matrix_caption", error=sm["error"]))
        shapes_table([("q, k", f"({d},)"), ("qₘ, kₙ", f"({n}, {d})"), ("qₘ · kₙᵀ", f"({n}, {n})")])
    with slots["complex"].figure:
        st.metric(tr(f"{NS}.max_diff", m=m), f"{rot['max_abs_diff']:.2e}")
        st.caption(tr(f"{NS}.complex_caption", m=m, d=d))


# A trained model's q and k: its switch under the title (page level), the wavelengths under the figure.
@lesson.section("real", code=(score_by_distance, real_query_key), height=560, lead=("switch",), below=("wave",))
def trained(s, real, loaded, wave, dev):
    if not loaded:
        return
    lm, cfg = REAL if real else "course", loaded[0].config
    with s.controls:
        text, layer, head = real_controls(cfg, real)
        with st.spinner(tr(f"{NS}.running")):        # a new text or block: one forward pass, < 1 s
            qk = real_qk(lm, text, layer, dev, loaded)
        if real and qk["n_all"] > REAL_TOKENS:
            st.warning(tr(f"{NS}.tokens_cut", limit=REAL_TOKENS, n=qk["n_all"]))
        n = len(qk["tokens"])
        query, key = token_controls(n)
    # Built once per setting for every session: a rerun at the same values neither unpickles
    # 16,382 scores nor builds the figures again.
    dist_fig, dist_text = drawn(distance_view, lm, text, layer, head, query, key, dev, lang())
    figure(dist_fig, key=f"{NS}.real")
    st.caption(dist_text)
    d = cfg.d_head
    shapes_table([(f"blocks.{layer}.attn.q", f"(1, {cfg.n_heads}, {n}, {d})"),
                  (f"blocks.{layer}.attn.k", f"(1, {cfg.n_kv_heads}, {n}, {d})"),
                  (tr(f"{NS}.one_q"), f"({d},)"), (tr(f"{NS}.scores_name"), f"({cfg.max_seq_len - 1},)")])
    with wave:
        wave_fig, wave_text = drawn(wave_view, lm, dev, lang())
        figure(wave_fig, key=f"{NS}.wave")
        st.caption(wave_text)


dev = device()
slots = lesson.arrange()
slots["complex"].note.info(tr(f"{NS}.pairing_note"))
with slots["real"].switch:
    real = real_model(dev) if model_switch(NS) == REAL else None
    loaded = real or course_model(dev)
with slots["real"].wave:
    wave = beside_code(rope_wavelengths, height=None)
lesson.draw(top=top, real=real, loaded=loaded, wave=wave, dev=dev)
lesson.quiz([("try1", 1), ("try2", 0), ("try3", 2)])
