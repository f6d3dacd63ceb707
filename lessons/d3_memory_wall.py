"""D3 · The memory wall: decoding waits for memory, not for arithmetic."""
import streamlit as st

from core.calc import configs, roofline
from core.calc.flops import decode_operators, prefill_and_decode, step_bytes, step_flops
from core.calc.kv_cache import kv_cache_bytes
from core.calc.params import count_params
from core.calc.timing import copy_seconds, decode_against_bandwidth
from ui.classroom import presenting
from ui.d3_memory_wall import (
    BATCHES,
    CONTEXTS,
    FORMATS,
    LEVELS,
    Q4_1,
    REAL_CONTEXT,
    REAL_ROWS,
    moves_controls,
    moves_view,
    ops_figure,
    real_bytes_figure,
    real_format_bytes,
    real_speed_figure,
    roofline_frames,
    shared_measures,
    workload_controls,
)
from ui.frame import device, drawn, figure, lang, repeat_control, tr
from ui.lesson import Lesson
from ui.live import live_figure
from ui.model import real_model, real_model_available
from viz.roofline import duration, hierarchy_chart, human

NS = "d3"

lesson = Lesson(NS)

# Every section but the last follows the workload row, which sits right above the roofline, the
# figure most of it moves (the hierarchy above follows its GPU): at the top of the page, a batch
# or context moved only figures below the fold.
lesson.section("hierarchy", layout_only=True, text=None, above=(), slide=False)
lesson.section("roofline", layout_only=True, code=(step_flops, step_bytes, roofline.attainable_tflops), height=560)
lesson.section("ops", layout_only=True, code=(decode_operators,), above=())
lesson.section("moves", layout_only=True)


@lesson.body
def workload(slots):
    with slots["roofline"].controls, st.container(border=True):
        batch, context, cfg, gpu, dtype = workload_controls()
    per_value, cache_value = FORMATS[dtype]

    levels = roofline.hierarchy(gpu)
    with slots["hierarchy"].figure:
        left, right = st.columns([3, 2])
        with left:
            figure(hierarchy_chart([tr(LEVELS[lv["level"]]) for lv in levels], [lv["bytes"] for lv in levels],
                                   [lv["bytes_per_s"] for lv in levels], titles=(tr(f"{NS}.capacity"),
                                   tr(f"{NS}.bandwidth")), axis_title=tr(f"{NS}.log_axis")), key=f"{NS}.hierarchy",
                   name=tr(f"{NS}.hierarchy_title"))
        right.markdown(tr(f"{NS}.hierarchy_text", gpu=gpu.title, sram=human(levels[0]["bytes"], "B", 1024),
                          hbm=f"{gpu.hbm_gb:g} GB = {gpu.hbm_gib:.1f} GiB",
                          ratio=levels[0]["bytes_per_s"] / levels[1]["bytes_per_s"],
                          host=levels[1]["bytes_per_s"] / levels[2]["bytes_per_s"]))

    pd = prefill_and_decode(cfg, context, batch, per_value, cache_value)
    placed = {name: roofline.place(gpu, v["flops"], v["bytes"]) for name, v in pd.items()}
    with slots["roofline"].figure:
        live_figure(roofline_frames, (cfg.name, gpu.name, context, dtype, lang()), f"{NS}.roofline",
                    f"{NS}.batch", BATCHES, 1, tr(f"{NS}.batch"))
        dec, pre = placed["decode"], placed["prefill"]
        bound = tr(f"{NS}.memory_bound") if dec["memory_bound"] else tr(f"{NS}.compute_bound")
        st.markdown(tr(f"{NS}.decode_numbers", time=duration(dec["seconds"]), tps=batch / dec["seconds"],
                       pct=100 * dec["tflops"] / gpu.peak_tflops, i=dec["intensity"], bound=bound))
        st.markdown(tr(f"{NS}.prefill_numbers", time=duration(pre["seconds"]), i=pre["intensity"],
                       pct=100 * pre["tflops"] / gpu.peak_tflops))
        weights = count_params(cfg) * per_value
        cache = kv_cache_bytes(cfg, context, batch, cache_value)
        need = roofline.gpus_needed(gpu, weights + cache)
        holds = tr(f"{NS}.holds", weights=human(weights, "B", 1024), cache=human(cache, "B", 1024),
                   gpu=gpu.title, n=need)
        (st.warning if need > 1 else st.caption)(holds)

    with slots["ops"].figure:         # operator by operator: at batch 1 and at the chosen batch
        if presenting():   # presenter mode: the batch and the context again, on this figure's slide
            c1, c2 = st.columns(2)
            with c1:
                repeat_control(st.select_slider, tr(f"{NS}.batch"), BATCHES, key=f"{NS}.batch")
            with c2:
                repeat_control(st.select_slider, tr(f"{NS}.context"), CONTEXTS, key=f"{NS}.context")
        figure(ops_figure(cfg, gpu, context, batch, dtype), key=f"{NS}.ops")
        ops = decode_operators(cfg, context, batch, per_value, cache_value)
        st.caption(tr(f"{NS}.ops_caption", b=batch, w=ops["weights"]["intensity"], a=ops["attention"]["intensity"],
                      g=cfg.n_heads // cfg.n_kv_heads))

    with slots["moves"].controls, st.container(border=True):
        batch, context = moves_controls()
    with slots["moves"].figure:
        fig, table = moves_view(cfg, gpu, context, batch, dtype)
        figure(fig, key=f"{NS}.moves")
        st.markdown(table)
        st.caption(tr(f"{NS}.moves_caption"))


# SmolLM2 on this machine: its real bytes, its measured speed.
@lesson.section("real", code=(roofline.WeightFormat.bits_per_weight.fget, decode_against_bandwidth, copy_seconds),
                height=560, widths=(3, 2), above=())
def smollm2(s, dev):
    real_cfg, real_bytes = configs.get(configs.SMOLLM2), real_format_bytes()
    figure(drawn(real_bytes_figure, lang()), key=f"{NS}.real_bytes")
    st.caption(tr(f"{NS}.real_bytes_caption", params=count_params(real_cfg), ratio=16 / Q4_1.bits_per_weight,
                  gguf=real_bytes["gguf"]["bytes"]))
    measures = shared_measures()                                     # {device: result}, every session's
    available = real_model_available()
    if not available:
        real_model(dev)                                              # the install note, nothing else
    elif st.button(tr(f"{NS}.real_measure", device=dev), key=f"{NS}.real_btn"):
        loaded = real_model(dev)
        if loaded is not None:
            with st.spinner(tr(f"{NS}.real_measuring")):
                measures[dev] = decode_against_bandwidth(loaded[0], REAL_CONTEXT)
    got = measures.get(dev) if available else None
    if got:
        tps = (got["decode_tps"], *(got["gbps"] * 1e9 / real_bytes[r]["bytes"] for r in REAL_ROWS))
        figure(drawn(real_speed_figure, tps, dev, lang()), key=f"{NS}.real_speed")
        st.markdown(tr(f"{NS}.real_numbers", decode=duration(got["decode_s"]), read=duration(got["read_s"]),
                       mib=got["weight_bytes"] / 2**20, gbps=got["gbps"], q4=tps[3], n=REAL_CONTEXT,
                       verdict=tr(f"{NS}.real_below" if got["ratio"] < 1 else f"{NS}.real_above",
                                  pct=100 * got["ratio"])))
    elif available:
        st.info(tr(f"{NS}.real_none"))


lesson.run(dev=device())
lesson.quiz([("try1", 2), ("try2", 0), ("try3", 1)])
