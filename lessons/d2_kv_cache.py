"""D2 · The KV cache: keep the keys and values of past tokens instead of recomputing them."""
import re

import streamlit as st
import torch

from core.calc import configs, roofline
from core.calc.flops import measure_decoding
from core.calc.kv_cache import DTYPE_BYTES, kv_cache_bytes
from core.calc.params import count_params
from core.lab.cache_steps import CacheStep, cache_histories, cache_history
from core.lab.d_real_kv import cache_nbytes, measured_cache
from core.models.generate import Generation
from core.parts.kv_cache import LayerKV
from ui.classroom import presenting
from ui.d2_kv_cache import NEW_TOKENS, REAL_TEXT, flop_curves, real_cache, replay, shared_timings
from ui.frame import (
    beside_code,
    bring_into_view,
    choice,
    code_panel,
    common_mistake,
    device,
    figure,
    fragment,
    header,
    lang,
    model_labels,
    plain,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.model import COURSE, REAL, course_model, model_switch, real_model
from ui.prompt import openings
from viz.common import steady_margins
from viz.kv import cache_step, cost_lines, memory_lines

NS = "d2"
DEFAULT_PROMPT = "君不见，黄河之水"
# Openings: the default; the lecture notes' KV-cache walk-through 「将进酒：人生得」 -> 「意」, which the
# course model does not complete so (it read 人生得意 only after the line 朝如青丝暮成雪。); and that
# line in front, where it does.
EXAMPLES = [DEFAULT_PROMPT, "将进酒：人生得", "君不见，高堂明镜悲白发，朝如青丝暮成雪。人生得"]
STEPS = list(range(NEW_TOKENS))   # the live step slider's values (a run that ends early has fewer)
MEASURED = [16, 32, 64, 96, 128, 160, 192, 224, 256]
# SmolLM2 is ~1,000× the course model's work a token: fewer lengths, a shorter window, two repeats
# keep its measurement to seconds (the counted curve still goes to 256 for both).
MEASURED_ON = {COURSE: MEASURED, REAL: [16, 64, 128, 256]}
TIMING = {COURSE: {}, REAL: {"window": 4, "repeats": 2}}
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
DTYPES = list(DTYPE_BYTES)

header(NS)
dev = device()


def gib_text(gib: float) -> str:
    """Example: 2560.3 -> "2,560"; 2.0 -> "2"; 0.0625 -> "0.0625" """
    return f"{gib:,.0f}" if gib >= 100 else f"{gib:.3g}"

loaded = course_model(dev)


def step_controls(n_layers: int, n_heads: int):
    key = f"{NS}.step"

    def move(to):
        st.session_state[key] = max(0, min(NEW_TOKENS - 1, to(st.session_state.get(key, 0))))
        st.session_state[f"{NS}.presses"] = st.session_state.get(f"{NS}.presses", 0) + 1

    # The step is the figure's own live slider (ui.live): read here, the buttons beside it set it.
    step = int(live_value(key, STEPS, 0))
    # One row: the figure's slide keeps the screen's height for the figure (presenter mode).
    c4, c5, c2, c3 = st.columns([3, 3, 1.7 if presenting() else 1.2, 1.2], vertical_alignment="bottom")
    layer = c4.slider(tr(f"{NS}.layer"), 0, n_layers - 1, 0, key=f"{NS}.layer", bind="query-params")
    head = c5.slider(tr(f"{NS}.head"), 0, n_heads - 1, 0, key=f"{NS}.head", bind="query-params")
    c2.button(tr(f"{NS}.next"), on_click=move, args=(lambda n: n + 1,), key=f"{NS}.next_btn", type="primary",
              width="stretch", help=tr(f"{NS}.step_help"))
    c3.button(tr(f"{NS}.reset"), on_click=move, args=(lambda n: 0,), key=f"{NS}.reset_btn", width="stretch")
    if not presenting():
        st.caption(tr(f"{NS}.step_help"))
    return step, layer, head


def calculator_controls(default: str):
    """The calculator's controls; its model opens on ``default`` (the lesson's model where the
    registry has it) and follows a switch of the lesson's model unless the student chose another."""
    followed = f"{NS}.model_followed"            # the default the calculator last opened on
    last = st.session_state.get(followed)
    if last is not None and last != default and st.session_state.get(f"{NS}.model") == last:
        st.session_state[f"{NS}.model"] = default
    st.session_state[followed] = default
    c1, c2 = st.columns([2, 3])
    with c1:
        name = choice(tr(f"{NS}.model"), configs.names(), f"{NS}.model", model_labels(configs.names()),
                      default=default)
    with c2:
        dtype = st.segmented_control(tr(f"{NS}.dtype"), DTYPES, default="fp16", key=f"{NS}.dtype",
                                     bind="query-params", required=True, help=tr(f"{NS}.dtype_help"))
    c3, c4 = st.columns(2)
    batch = c3.select_slider(tr(f"{NS}.batch"), BATCHES, value=1, key=f"{NS}.batch", bind="query-params")
    context = c4.select_slider(tr(f"{NS}.context"), CONTEXTS, value=4096, key=f"{NS}.context",
                               bind="query-params")
    return configs.get(name), dtype or "fp16", batch, context


# 1 · Step through decoding ----------------------------------------------------------------------
# Each section lays out its fixed parts (the code) once; a fragment refills only the slots that
# depend on its controls, so a slider move re-sends that section's figure, not the page.
st.subheader(tr(f"{NS}.steps_title"))
if loaded is not None:
    model, tok = loaded
    mc = model.config
    step_slots = {"controls": st.container()}
    step_slots["figure"] = beside_code(LayerKV.append, Generation.step, height=620, widths=(3, 2))

    @fragment
    def step_section():
        """Reruns alone when the prompt, the step, the layer or the head changes."""
        with step_slots["controls"]:
            # Presenter mode: the prompt box beside the step's controls, one row above the figure, on
            # the section's one slide (a slide of the box and the openings alone was mostly blank).
            if presenting():
                where_text, where_step = st.columns([1, 4], vertical_alignment="bottom")
            else:
                openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
                where_text = where_step = st.container()
            label = tr(f"{NS}.prompt_label")
            if presenting():   # the label's first words, before its bracket: five lines in a narrow column
                label = re.split(r"[(（]", label, maxsplit=1)[0].strip()
            with where_text:
                text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 48, label, empty_key=f"{NS}.empty_prompt")
            with where_step:
                step, layer, head = step_controls(mc.n_layers, mc.n_heads)
            run = replay("" if text.empty else text.text, dev)
            if run["unknown"]:
                st.warning(tr(f"{NS}.unknown_note", n=run["unknown"]))
            if step >= len(run["steps"]):
                st.info(tr(f"{NS}.eos_note", n=len(run["steps"])))
                step = len(run["steps"]) - 1
            steps = [CacheStep(s["fed"], s["chosen"], *(torch.from_numpy(s[n]) for n in ("q", "k", "v", "weights")))
                     for s in run["steps"]]
            shown_steps = list(range(len(steps)))
            seen = cache_history(steps, layer, head, step)
            fed = steps[step].fed
            tokens = run["prompt"] + run["chosen"][:step]
            s_len, d_head = seen["k"].shape
            before, now = "".join(tokens[: s_len - fed]), "".join(tokens[s_len - fed:])
            st.markdown(tr(f"{NS}.sequence", before=plain(before), now=plain(now), next=plain(run["chosen"][step])))

        with step_slots["figure"]:
            titles = (tr(f"{NS}.panel_q"), tr(f"{NS}.panel_k", g=seen["kv_head"]),
                      tr(f"{NS}.panel_v", g=seen["kv_head"]), tr(f"{NS}.panel_w"))

            def cache_frames():   # the figure after every step (the live slider's frames), one core call
                histories = cache_histories(steps, layer, head, shown_steps)
                last = histories[-1]   # every step drawn in the last step's frame, in one colour range
                rows = last["k"].shape[0]
                limit = max(1e-6, *(float(last[n].abs().max()) for n in ("q", "k", "v")))
                return steady_margins([cache_step(h["q"], h["k"], h["v"], h["weights"], steps[t].fed,
                                   run["prompt"] + run["chosen"][:t], titles=titles, rows=rows, limit=limit,
                                   value_names=(tr(f"{NS}.position"), tr(f"{NS}.dim"), tr(f"{NS}.value")),
                                   hover_names=(tr("common.query"), tr("common.key"), tr("common.weight")))
                        for t, h in zip(shown_steps, histories, strict=True)])

            live_figure(cache_frames, ("d2.fig", "" if text.empty else text.text, layer, head, dev, lang()),
                        f"{NS}.fig", f"{NS}.step", shown_steps, 0, tr(f"{NS}.step_label"))
            presses = st.session_state.get(f"{NS}.presses", 0)
            if presses != st.session_state.get(f"{NS}.presses_shown", 0):   # Step or Reset moved the figure
                st.session_state[f"{NS}.presses_shown"] = presses
                bring_into_view(f"{NS}.fig", presses)
            st.caption(tr(f"{NS}.step_caption", t=step, fed=fed, s=s_len, p=len(run["prompt"]), layers=mc.n_layers,
                          g=seen["kv_head"], head=head))
            shapes_table([
                (tr(f"{NS}.fed_row"), f"(1, {fed})"),
                ("q", f"(1, {mc.n_heads}, {fed}, {d_head})"),
                ("k, v " + tr(f"{NS}.new_rows"), f"(1, {mc.n_kv_heads}, {fed}, {d_head})"),
                ("cache.layers[i].k, .v", f"(1, {mc.n_kv_heads}, {s_len}, {d_head})"),
                (tr(f"{NS}.weights_row"), f"(1, {mc.n_heads}, {fed}, {s_len})"),
            ])

    step_section()
    common_mistake(f"{NS}.mistake_own_key")

# 2 · What it saves: counted and measured -------------------------------------------------------------
st.subheader(tr(f"{NS}.cost_title"))
st.markdown(tr(f"{NS}.cost_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.cost_title")))
lm = model_switch(NS)                                   # course model (default) or SmolLM2
cost_name = configs.SMOLLM2 if lm == REAL else configs.COURSE
cost_cfg = configs.get(cost_name)
timed = loaded if lm == COURSE else real_model(dev)     # (model, tokenizer) whose decoding is timed
curves = flop_curves(cost_name, MEASURED[-1])
names = {"cached": tr(f"{NS}.cached"), "recomputed": tr(f"{NS}.recomputed")}
c1, c2 = st.columns(2)
with c1:
    figure(cost_lines(curves["x"], {names[k]: curves[k] for k in ("cached", "recomputed")},
                      title=tr(f"{NS}.flops_fig", model=cost_cfg.title), x_title=tr(f"{NS}.context_axis"),
                      y_title=tr(f"{NS}.flops_axis"), log_y=True), key=f"{NS}.flops")
    st.caption(tr(f"{NS}.flops_caption", n=curves["x"][-1], ratio=curves["recomputed"][-1] / curves["cached"][-1]))
with c2:
    results = shared_timings()                           # one entry per (model, device), every session's
    setting = (lm, dev)
    if timed is not None:
        if st.button(tr(f"{NS}.measure", device=dev, model=cost_cfg.title), key=f"{NS}.measure_btn"):
            model_t, tok_t = timed
            bar = st.progress(0.0, text=tr(f"{NS}.measuring"))
            contexts = [n for n in MEASURED_ON[lm] if n <= model_t.config.max_seq_len]
            text = DEFAULT_PROMPT if lm == COURSE else REAL_TEXT
            ids = (tok_t.encode(text) * contexts[-1])[: contexts[-1]]
            seconds = measure_decoding(model_t, ids, contexts, progress=lambda f: bar.progress(f), **TIMING[lm])
            results[setting] = {"x": contexts, **seconds}
            bar.empty()
    measured = results.get(setting)
    if measured:
        ms = {names[k]: [1000 * s for s in measured[k]] for k in ("cached", "recomputed")}
        figure(cost_lines(measured["x"], ms, title=tr(f"{NS}.timing_fig", device=dev, model=cost_cfg.title),
                          x_title=tr(f"{NS}.context_axis"), y_title=tr(f"{NS}.ms_axis")), key=f"{NS}.timing")
        st.caption(tr(f"{NS}.timing_caption", n=measured["x"][-1],
                      ratio=measured["recomputed"][-1] / measured["cached"][-1],
                      tps=1 / measured["cached"][-1]))
    elif timed is not None:
        st.info(tr(f"{NS}.timing_none", model=cost_cfg.title))

if lm == REAL and timed is not None:
    # SmolLM2's cache per token: counted from its config, weighed on a real KVCache.
    with st.spinner(tr(f"{NS}.weighing")):
        weighed = real_cache(dev)
    per_fp16 = kv_cache_bytes(cost_cfg, 1, 1, DTYPE_BYTES["fp16"])
    per_fp32 = kv_cache_bytes(cost_cfg, 1, 1, DTYPE_BYTES["fp32"])
    left, right = st.columns([3, 2])
    with left:
        st.latex(rf"""\begin{{aligned}} 2 \times \underbrace{{{cost_cfg.n_layers}}}_{{L}}
                 \times \underbrace{{{cost_cfg.n_kv_heads}}}_{{H_{{kv}}}}
                 \times \underbrace{{{cost_cfg.head_dim}}}_{{d_{{head}}}} \times b
                 &= {per_fp16:,}\ \text{{B}} \quad (b = 2,\ \text{{fp16}}) \\
                 &= {per_fp32:,}\ \text{{B}} \quad (b = 4,\ \text{{fp32}}) \end{{aligned}}""".replace(",", "{,}"))
        st.markdown(tr(f"{NS}.weighed", n=weighed["tokens"], bytes=weighed["bytes"],
                       per=weighed["bytes"] / weighed["tokens"], half=weighed["bytes_fp16"],
                       per_half=weighed["bytes_fp16"] / weighed["tokens"], fp16=per_fp16, fp32=per_fp32,
                       text=plain(REAL_TEXT), layers=cost_cfg.n_layers, kv=cost_cfg.n_kv_heads,
                       d=cost_cfg.head_dim, h=cost_cfg.n_heads))
    with right:
        code_panel(measured_cache, cache_nbytes, height=360)

# 3 · What it costs: memory ----------------------------------------------------------------------------
st.subheader(tr(f"{NS}.memory_title"))
st.markdown(tr(f"{NS}.memory_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.memory_title")))
memory_slots = {"controls": st.container()}
memory_slots["figure"] = beside_code(kv_cache_bytes, height=380)


@fragment
def memory_section():
    """Reruns alone when the model, the number format, the batch or the context changes."""
    with memory_slots["controls"]:
        # SmolLM2 chosen above: the calculator opens on it too (the course model: on LLaMA-2-7B).
        cfg, dtype, batch, context = calculator_controls(cost_name if lm == REAL else configs.names()[0])
    per_value = DTYPE_BYTES[dtype]
    with memory_slots["figure"]:
        xs = [context * i // 64 for i in range(65)]
        kv = [kv_cache_bytes(cfg, n, batch, per_value) / 2**30 for n in xs]
        weights = count_params(cfg) * per_value / 2**30
        series = {tr(f"{NS}.kv_line"): kv, tr(f"{NS}.total_line"): [weights + g for g in kv]}
        cards = [(f"{gb:g} GB = {gb * roofline.GIB_PER_GB:.1f} GiB · {names}", gb * roofline.GIB_PER_GB)
                 for gb, names in roofline.memory_sizes()]      # one unit on the axis: GiB
        figure(memory_lines(xs, series, cards,
                            title=tr(f"{NS}.memory_fig", model=cfg.title, dtype=dtype, b=batch),
                            x_title=tr(f"{NS}.tokens_axis"), y_title="GiB"), key=f"{NS}.memory")
        total = kv_cache_bytes(cfg, context, batch, per_value)
        st.latex(rf"""\begin{{aligned}} M_{{KV}} &= \underbrace{{2}}_{{K,V}} \times \underbrace{{{cfg.n_layers}}}_{{L}}
                 \times \underbrace{{{cfg.n_kv_heads}}}_{{H_{{kv}}}} \times \underbrace{{{cfg.head_dim}}}_{{d_{{head}}}}
                 \times \underbrace{{{context:,}}}_{{T}} \times \underbrace{{{batch}}}_{{B}}
                 \times \underbrace{{{per_value:g}}}_{{b:\ \text{{{dtype}}}}} \\
                 &= {total:,}\ \text{{B}} \approx {gib_text(total / 2**30)}\ \text{{GiB}} \end{{aligned}}""".replace(",", "{,}"))
        st.caption(tr(f"{NS}.memory_caption", per_token=kv_cache_bytes(cfg, 1, 1, per_value) / 1024,
                      weights=weights, model=cfg.title))
        if context > cfg.max_seq_len:
            st.warning(tr(f"{NS}.beyond_trained", model=cfg.title, trained=cfg.max_seq_len, context=context))


memory_section()
common_mistake(f"{NS}.mistake_size")

try_this(NS, [("try1", 0), ("try2", 1), ("try3", 2)])
