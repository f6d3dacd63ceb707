"""Lesson D3's controls and figures, and its measurements shared by every session.
"""
from __future__ import annotations

import streamlit as st

from core.calc import configs, roofline
from core.calc.flops import decode_operators, decode_variants, prefill_and_decode_at
from core.calc.params import count_params
from ui.classroom import presenting
from ui.frame import choice, model_labels, tr
from ui.live import live_value
from viz.common import steady_margins
from viz.roofline import duration, format_bars, human, roofline_chart

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


@st.cache_resource(show_spinner=False)
def shared_measures() -> dict:
    """{device: decode_against_bandwidth(...)}: one press serves every student of the process."""
    return {}


def real_format_bytes() -> dict[str, dict[str, float]]:
    """Bytes one decoding step reads of SmolLM2's weights in each REAL_ROWS format, and bits per weight."""
    cfg = configs.get(configs.SMOLLM2)
    n = count_params(cfg)
    out = {f: {"bytes": n * roofline.WEIGHT_FORMATS[f].bytes_per_weight,
               "bits": roofline.WEIGHT_FORMATS[f].bits_per_weight} for f in REAL_ROWS[:3]}
    shipped = roofline.gguf_weight_bytes(cfg)["total"]
    out["gguf"] = {"bytes": shipped, "bits": 8 * shipped / n}
    return out


def own_format():
    """SmolLM2 ships as Q4_1: choosing it shows it in its own format (the others keep theirs)."""
    if st.session_state.get(f"{NS}.model") == configs.SMOLLM2:
        st.session_state[f"{NS}.dtype"] = "q4_1"


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


def _chart(gpu, points, arrows, title, **kwargs):
    """A roofline of ``gpu`` with the page's axis titles, roof and ridge."""
    return roofline_chart(gpu.peak_tflops, gpu.hbm_gbps, points, arrows=arrows, title=title,
                          x_title=tr(f"{NS}.x_axis"), y_title=tr(f"{NS}.y_axis"), roof_name=tr(f"{NS}.roof"),
                          ridge_text=tr(f"{NS}.ridge", i=gpu.ridge), **kwargs)


def roofline_frames(model: str, gpu_name: str, context: int, dtype: str, language: str) -> list:
    """The roofline at every batch size (the live slider's frames), from one core call."""
    cfg, gpu = configs.get(model), roofline.get(gpu_name)
    at = [{name: roofline.place(gpu, v["flops"], v["bytes"]) for name, v in at_b.items()}
          for at_b in prefill_and_decode_at(cfg, context, BATCHES, *FORMATS[dtype])]
    # One x axis and one plot area for every batch size: the points move, the axes stay.
    span = [p["intensity"] for spots in at for p in spots.values()]
    figs = []
    for b, spots in zip(BATCHES, at, strict=True):
        points = [{"name": tr(POINTS[name], n=context, b=b), "intensity": p["intensity"],
                   "tflops": p["tflops"], "symbol": "diamond" if name == "prefill" else "circle"}
                  for name, p in spots.items()]
        figs.append(_chart(gpu, points, [], tr(f"{NS}.roofline_fig", gpu=gpu.title, model=cfg.title), span=span))
    return steady_margins(figs)


def ops_figure(cfg, gpu, context: int, batch: int, dtype: str):
    """The weights' and attention's operators at batch 1 and at ``batch``, an arrow between."""
    points, arrows = [], []
    for op, symbol in (("weights", "square"), ("attention", "circle")):
        for b in dict.fromkeys((1, batch)):
            o = decode_operators(cfg, context, b, *FORMATS[dtype])[op]
            p = roofline.place(gpu, o["flops"], o["bytes"])
            points.append({"name": tr(OPS[op], b=b), "intensity": p["intensity"], "tflops": p["tflops"],
                           "symbol": symbol})
        if batch != 1:
            arrows.append((len(points) - 2, len(points) - 1))
    return _chart(gpu, points, arrows, tr(f"{NS}.ops_fig", model=cfg.title, n=context))


def moves_view(cfg, gpu, context: int, batch: int, dtype: str):
    """What GQA, MQA and smaller cache values move: the roofline with arrows, and a table."""
    rows = decode_variants(cfg, context, batch, FORMATS[dtype][0])
    moved = [roofline.place(gpu, r["flops"], r["bytes"]) for r in rows]
    ids = [r["id"] for r in rows]
    heads_chain = [ids.index(n) for n in ("mha", "gqa", "mqa") if n in ids]
    own = ids.index("gqa") if "gqa" in ids else ids.index("mha" if cfg.n_kv_heads == cfg.n_heads else "mqa")
    dtype_chain = [own, ids.index("int8"), ids.index("int4")]
    arrows = list(zip(heads_chain, heads_chain[1:], strict=False)) + list(zip(dtype_chain, dtype_chain[1:],
                                                                               strict=False))
    fig = _chart(gpu, [{"name": tr(VARIANTS[r["id"]], h=r["n_kv_heads"]), "intensity": m["intensity"],
                        "tflops": m["tflops"]} for r, m in zip(rows, moved, strict=True)],
                 arrows, tr(f"{NS}.moves_fig", b=batch, n=context, model=cfg.title))
    columns = [tr(f"{NS}.col_variant"), tr(f"{NS}.col_cache"), tr(f"{NS}.col_ms"), tr(f"{NS}.col_tps")]
    table = [f"| {' | '.join(columns)} |", "|---|---:|---:|---:|"]
    for r, m in zip(rows, moved, strict=True):
        cache = human(r["kv_bytes"], "B", 1024)
        table.append(f"| {tr(VARIANTS[r['id']], h=r['n_kv_heads'])} | {cache} | {duration(m['seconds'])} "
                     f"| {batch / m['seconds']:,.0f} |")
    return fig, "\n".join(table)


def real_labels() -> list[str]:
    real_bytes = real_format_bytes()
    return [tr(REAL_LABELS[row], bits=real_bytes[row]["bits"]) for row in REAL_ROWS]


def real_bytes_figure(language: str):
    """The bytes one step reads of SmolLM2's weights in each format."""
    real_bytes = real_format_bytes()
    return format_bars(real_labels(), [real_bytes[r]["bytes"] / 2**20 for r in REAL_ROWS],
                       title=tr(f"{NS}.real_bytes_fig", model=configs.get(configs.SMOLLM2).title),
                       x_title=tr(f"{NS}.real_mib"), text=[human(real_bytes[r]["bytes"], "B", 1024) for r in REAL_ROWS])


def real_speed_figure(tps: tuple, dev: str, language: str):
    """SmolLM2's measured tokens a second against what each format's bytes allow at the measured bandwidth."""
    rows = [tr(f"{NS}.real_decoded")] + [tr(f"{NS}.real_bound", fmt=lbl) for lbl in real_labels()]
    return format_bars(rows, list(tps), title=tr(f"{NS}.real_speed_fig", model=configs.get(configs.SMOLLM2).title,
                                                 device=dev),
                       x_title=tr(f"{NS}.real_tps"), text=[f"{t:,.1f}" for t in tps], highlight=[0])
