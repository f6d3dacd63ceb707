"""E1 · Mixture of experts: a router sends each token to k of E feed-forward experts."""
import math

import streamlit as st

from core.lab.moe_lab import all_to_all, arch_of, expert_stats, memory_and_compute
from core.models.moe_model import NO_AUX_PREFIX, REBUILD, MoEModelUnavailable
from core.parts.moe import MoE, choose_experts, expert_capacity, fill_experts, switch_loss
from ui.classroom import presenting
from ui.frame import device, drawn, figure, lang, repeat_control, text_box, tr
from ui.lesson import Lesson
from ui.live import live_figure
from ui.moe import (
    CAPACITY,
    DEFAULT_PROMPT,
    LIMIT,
    MAIN,
    balance_figure,
    collapse_figure,
    dense_training,
    devices_figure,
    learned_table,
    load_cached,
    load_frames,
    marked_text,
    memory_figure,
    memory_points,
    memory_table,
    routed,
    router_figure,
    routing_controls,
    score_table,
    shipped,
    song_counts,
)

NS = "e1"

lesson = Lesson(NS)
dev = device()
loaded = load_cached(MAIN, dev)
if isinstance(loaded, MoEModelUnavailable):
    st.error(tr(f"{NS}.unavailable", reason=str(loaded), command=REBUILD))
    st.stop()
cfg = loaded[0].config

# Routing, load and devices follow one row of controls (the prompt and the routing's settings).
lesson.section("route", layout_only=True, code=(MoE.forward, choose_experts), height=560)
lesson.section("load", layout_only=True, code=(expert_capacity, fill_experts, switch_loss), height=480, above=())
lesson.section("devices", layout_only=True, code=(all_to_all,), height=420, above=())


@lesson.body
def routing(slots, dev):
    with slots["route"].controls:
        text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, LIMIT, tr(f"{NS}.prompt_label"))
        prompt = DEFAULT_PROMPT if text.empty else text.text
        layer, mode, k, n_used, capacity, noise, seed = routing_controls(cfg.n_layers, cfg.n_experts)
    settings = (prompt, mode, k, n_used, capacity, noise, seed, dev)
    run = routed(*settings)
    r, n = run["layers"][layer], len(run["tokens"])
    beyond = int((r["wanted"] - r["capacity"]).clip(min=0).sum()) if r["capacity"] is not None else 0

    with slots["route"].figure:
        if mode in ("switch", "gshard") or k > n_used:
            st.caption(tr(f"{NS}.k_note", k=run["k"]))
        if mode != "noisy" and noise != 1.0:
            st.caption(tr(f"{NS}.noise_note"))
        figure(drawn(router_figure, settings, layer, presenting(), lang()), key=f"{NS}.router")
        st.markdown(tr(f"{NS}.losses", aux=r["aux"], balance=r["balance"], z=r["z"]))
    with slots["load"].figure:
        # presenter mode: the capacity again, on this figure's slide
        repeat_control(st.select_slider, tr(f"{NS}.capacity"), CAPACITY, key=f"{NS}.capacity",
                       help=tr(f"{NS}.capacity_help"))
        live_figure(load_frames, (prompt, mode, k, n_used, noise, seed, layer, dev, lang()),
                    f"{NS}.load", f"{NS}.capacity", CAPACITY, "1.25", tr(f"{NS}.capacity"),
                    help=tr(f"{NS}.capacity_help"))
        cap_text = tr(f"{NS}.no_limit") if r["capacity"] is None else str(r["capacity"])
        st.markdown(tr(f"{NS}.overflow_count", n=beyond, tokens=int(r["overflowed"].sum()), total=n,
                       partly=int(r["partly"].sum()), cap=cap_text)
                    + "\n\n" + marked_text(run["tokens"], r["overflowed"], r["partly"]), unsafe_allow_html=True)
        st.caption(tr(f"{NS}.hits", hits=run["hits"], total=max(0, n - 1)))
    with slots["devices"].figure:
        repeat_control(st.slider, tr(f"{NS}.n_used"), 1, cfg.n_experts, key=f"{NS}.n_used")   # presenter mode
        traffic = r["traffic"]
        crossing = int(traffic.sum() - traffic.trace())
        figure(drawn(devices_figure, settings, layer, lang()), key=f"{NS}.devices")
        st.markdown(tr(f"{NS}.crossing", n=crossing, total=int(traffic.sum()), back=2 * crossing))


@lesson.section("collapse", code=(switch_loss,), height=420, widths=(3, 2), above=(), slide=False)
def collapse(s, dev):
    """What training did: balanced against collapsed."""
    main_info, noaux_info = shipped(MAIN), shipped(NO_AUX_PREFIX)
    if main_info is None:
        st.info(tr(f"{NS}.no_stats", command=REBUILD))
        return
    figure(drawn(collapse_figure, noaux_info is None, dev, lang()), key=f"{NS}.collapse")
    if noaux_info is None:
        st.info(tr(f"{NS}.no_noaux", command=f"{REBUILD} --no-aux"))
    figure(drawn(balance_figure, noaux_info is None, lang()), key=f"{NS}.balance")
    if noaux_info is not None:
        st.caption(tr(f"{NS}.runs", a=main_info["meta"]["training"]["steps"],
                      b=noaux_info["meta"]["training"]["steps"]))
    st.markdown(score_table(main_info, noaux_info))
    song, dense_run, moe_run = song_counts(), dense_training(), main_info["meta"]["training"]
    st.caption(tr(f"{NS}.scores_caption", v=cfg.vocab_size, uniform=math.log(cfg.vocab_size),
                  dropped=song["whole"]["unknown"], chars=song["whole"]["characters"],
                  moe_steps=moe_run["steps"], moe_batch=moe_run["batch_size"],
                  dense_steps=dense_run["steps"], dense_batch=dense_run["batch_size"]))
    st.markdown(tr(f"{NS}.overfit", train=main_info["meta"]["training_split_loss"],
                   val=main_info["meta"]["validation_loss"]))


@lesson.section("learned", code=(expert_stats,), height=480, above=(), slide=False)
def learned(s):
    """What the experts learned: one layer's experts at a time."""
    if (main_info := shipped(MAIN)) is None:
        st.info(tr(f"{NS}.no_stats", command=REBUILD))
        return
    stats = main_info["experts"]
    layer = st.slider(tr(f"{NS}.learned_layer"), 0, len(stats["layers"]) - 1, 0,
                      key=f"{NS}.learned_layer", bind="query-params")
    st.markdown(learned_table(stats, layer))
    st.caption(tr(f"{NS}.learned_caption", tokens=stats["tokens"], min=stats["min_count"]))


@lesson.section("memory", code=(memory_and_compute, arch_of), height=420, above=(), slide=False)
def memory(s, dev):
    """Memory against compute: every registry model and ours."""
    figure(drawn(memory_figure, dev, lang()), key=f"{NS}.memory")
    st.markdown(memory_table(memory_points(MAIN, tr(f"{NS}.moe_course"), cfg)))
    st.caption(tr(f"{NS}.memory_caption"))


lesson.run(dev=dev)
lesson.quiz([("try1", 2), ("try2", 0), ("try3", 1)])
