"""D3 · The memory wall: decoding waits for memory, not for arithmetic."""
import streamlit as st

from core.calc import configs, roofline
from core.calc.flops import (
    decode_operators,
    decode_variants,
    prefill_and_decode,
    prefill_and_decode_at,
    step_bytes,
    step_flops,
)
from core.calc.kv_cache import kv_cache_bytes
from core.calc.params import count_params
from core.calc.timing import copy_seconds, decode_against_bandwidth
from ui.classroom import presenting
from ui.d3_memory_wall import shared_measures
from ui.frame import (
    beside_code,
    built_figure,
    choice,
    device,
    figure,
    fragment,
    header,
    lang,
    model_labels,
    repeat_control,
    slide,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.model import real_model, real_model_available
from viz.common import steady_margins
from viz.roofline import duration, format_bars, hierarchy_chart, human, roofline_chart

NS = "d3"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
# Bytes per value of the weights and of the cache for each choice. Q4_1 is a weight format
# (5 bits a weight: core.calc.roofline.WEIGHT_FORMATS); its cache stays fp16, as llama.cpp keeps it.
Q4_1 = roofline.WEIGHT_FORMATS["q4_1"]
FORMATS = {"fp32": (4, 4), "fp16": (2, 2), "int8": (1, 1), "q4_1": (Q4_1.bytes_per_weight, 2),
           "int4": (0.5, 0.5)}
DTYPES = list(FORMATS)
CACHE_AS = {"q4_1": "fp16"}    # how the cache is stored where it is not in the weights' format
# The real model's rows: as our decoder holds it, fp16, Q4_1 everywhere, and its GGUF as shipped.
REAL_ROWS = ("fp32", "fp16", "q4_1", "gguf")
REAL_LABELS = {"fp32": f"{NS}.real_fp32", "fp16": f"{NS}.real_fp16", "q4_1": f"{NS}.real_q4_1",
               "gguf": f"{NS}.real_gguf"}
REAL_CONTEXT = 64          # tokens in the cache while one step is timed
MOVES_START = (16, 16384)   # batch, context where GQA, MQA and a smaller cache visibly move decoding
LEVELS = {"sram": f"{NS}.sram", "hbm": f"{NS}.hbm", "host": f"{NS}.host"}
POINTS = {"prefill": f"{NS}.prefill_point", "decode": f"{NS}.decode_point"}
OPS = {"weights": f"{NS}.op_weights", "attention": f"{NS}.op_attention"}
VARIANTS = {"mha": f"{NS}.v_mha", "gqa": f"{NS}.v_gqa", "mqa": f"{NS}.v_mqa", "int8": f"{NS}.v_int8",
            "int4": f"{NS}.v_int4"}

header(NS)


def real_format_bytes() -> dict[str, dict[str, float]]:
    """Bytes one decoding step reads of SmolLM2's weights in each REAL_ROWS format, and bits per weight."""
    cfg = configs.get(configs.SMOLLM2)
    n = count_params(cfg)
    out = {f: {"bytes": n * roofline.WEIGHT_FORMATS[f].bytes_per_weight,
               "bits": roofline.WEIGHT_FORMATS[f].bits_per_weight} for f in REAL_ROWS[:3]}
    shipped = roofline.gguf_weight_bytes(cfg)["total"]
    out["gguf"] = {"bytes": shipped, "bits": 8 * shipped / n}
    return out


def workload_controls():
    # The batch is the roofline's own live slider (ui.live): read here, drawn with the figure.
    batch = int(live_value(f"{NS}.batch", BATCHES, 1))
    # Presenter mode: the four in one row, so the roofline under them keeps the screen's height.
    if presenting():
        c2, c3, c4, c5 = st.columns([2.2, 1.6, 1.6, 3])
    else:
        c2 = st.container()
        c3, c4, c5 = st.columns([1.8, 1.5, 3.7])      # the five formats in one row at 1024 px
    context = c2.select_slider(tr(f"{NS}.context"), CONTEXTS, value=4096, key=f"{NS}.context",
                               bind="query-params")
    with c3:
        model = choice(tr(f"{NS}.model"), configs.names(), f"{NS}.model", model_labels(configs.names()),
                       on_change=own_format)
    gpu = c4.selectbox(tr(f"{NS}.gpu"), roofline.names(), index=1, key=f"{NS}.gpu", bind="query-params")
    with c5:
        dtype = st.segmented_control(tr(f"{NS}.dtype"), DTYPES, default="fp16", key=f"{NS}.dtype",
                                     bind="query-params", help=tr(f"{NS}.dtype_help"), required=True)
        dtype = dtype or "fp16"
        # The label names the weights; what the cache is stored as is said under it (q4_1: fp16).
        cache = CACHE_AS.get(dtype, dtype)
        st.caption(tr(f"{NS}.cache_as_weights", fmt=cache) if cache == dtype
                   else tr(f"{NS}.cache_apart", fmt=cache, weights=dtype))
    return batch, context, configs.get(model), roofline.get(gpu), dtype


def own_format():
    """SmolLM2 ships as Q4_1: choosing it shows it in its own format (the others keep theirs)."""
    if st.session_state.get(f"{NS}.model") == configs.SMOLLM2:
        st.session_state[f"{NS}.dtype"] = "q4_1"


def moves_controls():
    """The batch and context of the last figure, beside it: it starts where the cache dominates the
    bytes (batch 16, 16,384 tokens), since at batch 1 and a short context its points lie on top of
    each other, and a reader (or a presenter's slide) should not need the sliders two sections up."""
    c1, c2 = st.columns(2)
    batch = c1.select_slider(tr(f"{NS}.batch"), BATCHES, value=MOVES_START[0], key=f"{NS}.moves_batch",
                             bind="query-params")
    context = c2.select_slider(tr(f"{NS}.context"), CONTEXTS, value=MOVES_START[1], key=f"{NS}.moves_context",
                               bind="query-params")
    return batch, context


# The page's fixed parts (titles, prose, the code) are laid out once; the fragment below
# refills only the slots that depend on the workload, so a control re-sends the figures only.
# The workload row sits right above the roofline, the figure most of it moves (the hierarchy above
# follows its GPU): at the top of the page, a batch or context moved only figures below the fold.
slot = {}
st.subheader(tr(f"{NS}.hierarchy_title"))
left, right = st.columns([3, 2])
slot["hierarchy"], slot["hierarchy_text"] = left.container(), right.container()
st.subheader(tr(f"{NS}.roofline_title"))
st.markdown(tr(f"{NS}.roofline_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.roofline_title")))
slot["controls"] = st.container(border=True)
slot["roofline"] = beside_code(step_flops, step_bytes, roofline.attainable_tflops, height=560)
st.subheader(tr(f"{NS}.ops_title"))
st.markdown(tr(f"{NS}.ops_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.ops_title")))
slot["ops"] = beside_code(decode_operators, height=520)
st.subheader(tr(f"{NS}.moves_title"))
st.markdown(tr(f"{NS}.moves_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.moves_title")))
slot["moves_controls"] = st.container(border=True)
slot["moves"] = st.container()


@fragment
def workload_sections():
    """Every section follows the workload row; it reruns alone (st.fragment) when one of its
    controls moves, leaving the titles, the prose, the code and the questions as they are."""
    with slot["controls"]:
        batch, context, cfg, gpu, dtype = workload_controls()
    per_value, cache_value = FORMATS[dtype]

    # 1 · The hierarchy ----------------------------------------------------------------------
    levels = roofline.hierarchy(gpu)
    with slot["hierarchy"]:
        figure(hierarchy_chart([tr(LEVELS[lv["level"]]) for lv in levels], [lv["bytes"] for lv in levels],
                               [lv["bytes_per_s"] for lv in levels],
                               titles=(tr(f"{NS}.capacity"), tr(f"{NS}.bandwidth")), axis_title=tr(f"{NS}.log_axis")),
               key=f"{NS}.hierarchy")
    slot["hierarchy_text"].markdown(tr(f"{NS}.hierarchy_text", gpu=gpu.title,
                                       sram=human(levels[0]["bytes"], "B", 1024),
                                       hbm=f"{gpu.hbm_gb:g} GB = {gpu.hbm_gib:.1f} GiB",
                                       ratio=levels[0]["bytes_per_s"] / levels[1]["bytes_per_s"],
                                       host=levels[1]["bytes_per_s"] / levels[2]["bytes_per_s"]))

    # 2 · Prefill and decode on the roofline --------------------------------------------------
    pd = prefill_and_decode(cfg, context, batch, per_value, cache_value)
    placed = {name: roofline.place(gpu, v["flops"], v["bytes"]) for name, v in pd.items()}
    with slot["roofline"]:
        def roofline_frames():   # the roofline at every batch size (the live slider's frames), one core call
            at = [{name: roofline.place(gpu, v["flops"], v["bytes"]) for name, v in at_b.items()}
                  for at_b in prefill_and_decode_at(cfg, context, BATCHES, per_value, cache_value)]
            # One x axis and one plot area for every batch size: the points move, the axes stay.
            span = [p["intensity"] for spots in at for p in spots.values()]
            figs = []
            for b, spots in zip(BATCHES, at, strict=True):
                points = [{"name": tr(POINTS[name], n=context, b=b), "intensity": p["intensity"],
                           "tflops": p["tflops"], "symbol": "diamond" if name == "prefill" else "circle"}
                          for name, p in spots.items()]
                figs.append(roofline_chart(gpu.peak_tflops, gpu.hbm_gbps, points, arrows=[], span=span,
                                           title=tr(f"{NS}.roofline_fig", gpu=gpu.title, model=cfg.title),
                                           x_title=tr(f"{NS}.x_axis"), y_title=tr(f"{NS}.y_axis"),
                                           roof_name=tr(f"{NS}.roof"), ridge_text=tr(f"{NS}.ridge", i=gpu.ridge)))
            return steady_margins(figs)

        live_figure(roofline_frames, ("d3.roofline", cfg.name, gpu.name, context, dtype, lang()), f"{NS}.roofline",
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

    # 2b · Operator by operator: at batch 1 and at the chosen batch -------------------------------
    with slot["ops"]:
        if presenting():   # presenter mode: the batch and the context again, on this figure's slide
            c1, c2 = st.columns(2)
            with c1:
                repeat_control(st.select_slider, tr(f"{NS}.batch"), BATCHES, key=f"{NS}.batch")
            with c2:
                repeat_control(st.select_slider, tr(f"{NS}.context"), CONTEXTS, key=f"{NS}.context")
        points, arrows = [], []
        for op, symbol in (("weights", "square"), ("attention", "circle")):
            for b in dict.fromkeys((1, batch)):
                o = decode_operators(cfg, context, b, per_value, cache_value)[op]
                p = roofline.place(gpu, o["flops"], o["bytes"])
                points.append({"name": tr(OPS[op], b=b), "intensity": p["intensity"], "tflops": p["tflops"],
                               "symbol": symbol})
            if batch != 1:
                arrows.append((len(points) - 2, len(points) - 1))
        figure(roofline_chart(gpu.peak_tflops, gpu.hbm_gbps, points, arrows=arrows,
                              title=tr(f"{NS}.ops_fig", model=cfg.title, n=context),
                              x_title=tr(f"{NS}.x_axis"), y_title=tr(f"{NS}.y_axis"), roof_name=tr(f"{NS}.roof"),
                              ridge_text=tr(f"{NS}.ridge", i=gpu.ridge)),
               key=f"{NS}.ops")
        ops = decode_operators(cfg, context, batch, per_value, cache_value)
        st.caption(tr(f"{NS}.ops_caption", b=batch, w=ops["weights"]["intensity"], a=ops["attention"]["intensity"],
                      g=cfg.n_heads // cfg.n_kv_heads))

    # 3 · What GQA, MQA and smaller cache values move -----------------------------------------
    with slot["moves_controls"]:
        batch, context = moves_controls()
    rows = decode_variants(cfg, context, batch, per_value)
    moved = [roofline.place(gpu, r["flops"], r["bytes"]) for r in rows]
    ids = [r["id"] for r in rows]
    heads_chain = [ids.index(n) for n in ("mha", "gqa", "mqa") if n in ids]
    own = ids.index("gqa") if "gqa" in ids else ids.index("mha" if cfg.n_kv_heads == cfg.n_heads else "mqa")
    dtype_chain = [own, ids.index("int8"), ids.index("int4")]
    arrows = list(zip(heads_chain, heads_chain[1:], strict=False)) + list(zip(dtype_chain, dtype_chain[1:],
                                                                               strict=False))
    with slot["moves"]:
        figure(roofline_chart(gpu.peak_tflops, gpu.hbm_gbps,
                              [{"name": tr(VARIANTS[r["id"]], h=r["n_kv_heads"]), "intensity": m["intensity"],
                                "tflops": m["tflops"]} for r, m in zip(rows, moved, strict=True)],
                              arrows=arrows, title=tr(f"{NS}.moves_fig", b=batch, n=context, model=cfg.title),
                              x_title=tr(f"{NS}.x_axis"), y_title=tr(f"{NS}.y_axis"), roof_name=tr(f"{NS}.roof"),
                              ridge_text=tr(f"{NS}.ridge", i=gpu.ridge)),
               key=f"{NS}.moves")
        columns = [tr(f"{NS}.col_variant"), tr(f"{NS}.col_cache"), tr(f"{NS}.col_ms"), tr(f"{NS}.col_tps")]
        table = [f"| {' | '.join(columns)} |", "|---|---:|---:|---:|"]
        for r, m in zip(rows, moved, strict=True):
            cache = human(r["kv_bytes"], "B", 1024)
            table.append(f"| {tr(VARIANTS[r['id']], h=r['n_kv_heads'])} | {cache} | {duration(m['seconds'])} "
                         f"| {batch / m['seconds']:,.0f} |")
        st.markdown("\n".join(table))
        st.caption(tr(f"{NS}.moves_caption"))


workload_sections()

# 4 · SmolLM2 on this machine: its real bytes, its measured speed -------------------------------
st.subheader(tr(f"{NS}.real_title"))
st.markdown(tr(f"{NS}.real_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.real_title")))   # presenter mode: the figures
real_cfg = configs.get(configs.SMOLLM2)
real_bytes = real_format_bytes()
real_labels = [tr(REAL_LABELS[row], bits=real_bytes[row]["bits"]) for row in REAL_ROWS]
dev = device()
with beside_code(roofline.WeightFormat.bits_per_weight.fget, decode_against_bandwidth, copy_seconds,
                 height=560, widths=(3, 2)):
    figure(built_figure((f"{NS}.real_bytes", lang(), *real_labels), lambda: format_bars(
        real_labels, [real_bytes[r]["bytes"] / 2**20 for r in REAL_ROWS],
        title=tr(f"{NS}.real_bytes_fig", model=real_cfg.title), x_title=tr(f"{NS}.real_mib"),
        text=[human(real_bytes[r]["bytes"], "B", 1024) for r in REAL_ROWS])),
        key=f"{NS}.real_bytes")
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
        rows = [tr(f"{NS}.real_decoded")] + [tr(f"{NS}.real_bound", fmt=lbl) for lbl in real_labels]
        tps = [got["decode_tps"]] + [got["gbps"] * 1e9 / real_bytes[r]["bytes"] for r in REAL_ROWS]
        figure(built_figure((f"{NS}.real_speed", lang(), dev, *tps), lambda: format_bars(
            rows, tps, title=tr(f"{NS}.real_speed_fig", model=real_cfg.title, device=dev),
            x_title=tr(f"{NS}.real_tps"), text=[f"{t:,.1f}" for t in tps], highlight=[0])),
            key=f"{NS}.real_speed")
        st.markdown(tr(f"{NS}.real_numbers", decode=duration(got["decode_s"]), read=duration(got["read_s"]),
                       mib=got["weight_bytes"] / 2**20, gbps=got["gbps"], q4=tps[3], n=REAL_CONTEXT,
                       verdict=tr(f"{NS}.real_below" if got["ratio"] < 1 else f"{NS}.real_above",
                                  pct=100 * got["ratio"])))
    elif available:
        st.info(tr(f"{NS}.real_none"))

try_this(NS, [("try1", 2), ("try2", 0), ("try3", 1)])
