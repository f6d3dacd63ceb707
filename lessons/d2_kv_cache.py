"""D2 · The KV cache: keep the keys and values of past tokens instead of recomputing them."""
import streamlit as st
import torch

from core.calc import configs, roofline
from core.calc.flops import decode_flops, measure_decoding
from core.calc.params import count_params
from core.models.generate import Generation
from core.parts.kv_cache import DTYPE_BYTES, CacheStep, LayerKV, cache_history, kv_cache_bytes, watch_cache
from ui.frame import (
    beside_code,
    bring_into_view,
    choice,
    common_mistake,
    device,
    figure,
    fragment,
    header,
    model_labels,
    plain,
    shapes_table,
    text_box,
    tr,
    try_this,
)
from ui.model import course_model
from ui.prompt import openings
from viz.kv import cache_step, cost_lines, memory_lines

NS = "d2"
DEFAULT_PROMPT = "君不见，黄河之水"
# Openings: the default; the lecture notes' KV-cache walk-through 「将进酒：人生得」 -> 「意」, which the
# course model does not complete so (it read 人生得意 only after the line 朝如青丝暮成雪。); and that
# line in front, where it does.
EXAMPLES = [DEFAULT_PROMPT, "将进酒：人生得", "君不见，高堂明镜悲白发，朝如青丝暮成雪。人生得"]
NEW_TOKENS = 16
MEASURED = [16, 32, 64, 96, 128, 160, 192, 224, 256]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
DTYPES = list(DTYPE_BYTES)

header(NS)
dev = device()


def gib_text(gib: float) -> str:
    """Example: 2560.3 -> "2,560"; 2.0 -> "2"; 0.0625 -> "0.0625" """
    return f"{gib:,.0f}" if gib >= 100 else f"{gib:.3g}"

loaded = course_model(dev)


@st.cache_data(max_entries=64, show_spinner=False)
def replay(prompt: str, dev: str) -> dict:
    """Greedy decoding of NEW_TOKENS tokens with the cache, every step's q, k, v and weights kept."""
    model, tok = course_model(dev)
    gen = Generation(model, tok, prompt, NEW_TOKENS)
    steps = watch_cache(gen)
    return {"steps": [{"fed": s.fed, "chosen": s.chosen, "q": s.q.numpy(), "k": s.k.numpy(), "v": s.v.numpy(),
                       "weights": s.weights.numpy()} for s in steps],
            "prompt": tok.tokens(gen.prompt.ids), "chosen": tok.tokens([s.chosen for s in steps]),
            "dropped": gen.prompt.dropped, "unknown": gen.prompt.unknown}


@st.cache_data(max_entries=4, show_spinner=False)
def flop_curves(max_len: int) -> dict:
    cfg = configs.get("course")
    lengths = list(range(8, max_len + 1, 8))
    return {"x": lengths, "cached": [decode_flops(cfg, n) for n in lengths],
            "recomputed": [decode_flops(cfg, n, cache=False) for n in lengths]}


def step_controls(n_layers: int, n_heads: int):
    key = f"{NS}.step"

    def move(to):
        st.session_state[key] = max(0, min(NEW_TOKENS - 1, to(st.session_state.get(key, 0))))
        st.session_state[f"{NS}.presses"] = st.session_state.get(f"{NS}.presses", 0) + 1

    c1, c2, c3 = st.columns([5, 1, 1], vertical_alignment="bottom")
    with c1:
        step = st.slider(tr(f"{NS}.step_label"), 0, NEW_TOKENS - 1, 0, key=key, bind="query-params",
                         help=tr(f"{NS}.step_help"))
    c2.button(tr(f"{NS}.next"), on_click=move, args=(lambda n: n + 1,), key=f"{NS}.next_btn", type="primary",
              width="stretch")
    c3.button(tr(f"{NS}.reset"), on_click=move, args=(lambda n: 0,), key=f"{NS}.reset_btn", width="stretch")
    c4, c5 = st.columns(2)
    layer = c4.slider(tr(f"{NS}.layer"), 0, n_layers - 1, 0, key=f"{NS}.layer", bind="query-params")
    head = c5.slider(tr(f"{NS}.head"), 0, n_heads - 1, 0, key=f"{NS}.head", bind="query-params")
    return step, layer, head


def calculator_controls():
    c1, c2 = st.columns([2, 3])
    with c1:
        name = choice(tr(f"{NS}.model"), configs.names(), f"{NS}.model", model_labels(configs.names()))
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
            openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
            text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 48, tr(f"{NS}.prompt_label"), empty_key=f"{NS}.empty_prompt")
            step, layer, head = step_controls(mc.n_layers, mc.n_heads)
            run = replay("" if text.empty else text.text, dev)
            if run["unknown"]:
                st.warning(tr(f"{NS}.unknown_note", n=run["unknown"]))
            if step >= len(run["steps"]):
                st.info(tr(f"{NS}.eos_note", n=len(run["steps"])))
                step = len(run["steps"]) - 1
            steps = [CacheStep(s["fed"], s["chosen"], *(torch.from_numpy(s[n]) for n in ("q", "k", "v", "weights")))
                     for s in run["steps"]]
            seen = cache_history(steps, layer, head, step)
            fed = steps[step].fed
            tokens = run["prompt"] + run["chosen"][:step]
            s_len, d_head = seen["k"].shape
            before, now = "".join(tokens[: s_len - fed]), "".join(tokens[s_len - fed:])
            st.markdown(tr(f"{NS}.sequence", before=plain(before), now=plain(now), next=plain(run["chosen"][step])))

        with step_slots["figure"]:
            titles = (tr(f"{NS}.panel_q"), tr(f"{NS}.panel_k", g=seen["kv_head"]),
                      tr(f"{NS}.panel_v", g=seen["kv_head"]), tr(f"{NS}.panel_w"))
            figure(cache_step(seen["q"], seen["k"], seen["v"], seen["weights"], fed, tokens, titles=titles,
                              value_names=(tr(f"{NS}.position"), tr(f"{NS}.dim"), tr(f"{NS}.value")),
                              hover_names=(tr("common.query"), tr("common.key"), tr("common.weight"))),
                   key=f"{NS}.fig")
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
course_cfg = configs.get("course")
curves = flop_curves(course_cfg.max_seq_len)
names = {"cached": tr(f"{NS}.cached"), "recomputed": tr(f"{NS}.recomputed")}
c1, c2 = st.columns(2)
with c1:
    figure(cost_lines(curves["x"], {names[k]: curves[k] for k in ("cached", "recomputed")},
                      title=tr(f"{NS}.flops_fig"), x_title=tr(f"{NS}.context_axis"), y_title=tr(f"{NS}.flops_axis"),
                      log_y=True), key=f"{NS}.flops")
    st.caption(tr(f"{NS}.flops_caption", n=curves["x"][-1], ratio=curves["recomputed"][-1] / curves["cached"][-1]))
with c2:
    timing_key = f"{NS}.timing.{dev}"
    if loaded is not None:
        if st.button(tr(f"{NS}.measure", device=dev), key=f"{NS}.measure_btn"):
            bar = st.progress(0.0, text=tr(f"{NS}.measuring"))
            contexts = [n for n in MEASURED if n <= mc.max_seq_len]
            ids = (tok.encode(DEFAULT_PROMPT) * mc.max_seq_len)[: mc.max_seq_len]
            seconds = measure_decoding(model, ids, contexts, progress=lambda f: bar.progress(f))
            st.session_state[timing_key] = {"x": contexts, **seconds}
            bar.empty()
    measured = st.session_state.get(timing_key)
    if measured:
        ms = {names[k]: [1000 * s for s in measured[k]] for k in ("cached", "recomputed")}
        figure(cost_lines(measured["x"], ms, title=tr(f"{NS}.timing_fig", device=dev),
                          x_title=tr(f"{NS}.context_axis"), y_title=tr(f"{NS}.ms_axis")), key=f"{NS}.timing")
        st.caption(tr(f"{NS}.timing_caption", n=measured["x"][-1],
                      ratio=measured["recomputed"][-1] / measured["cached"][-1],
                      tps=1 / measured["cached"][-1]))
    elif loaded is not None:
        st.info(tr(f"{NS}.timing_none"))

# 3 · What it costs: memory ----------------------------------------------------------------------------
st.subheader(tr(f"{NS}.memory_title"))
st.markdown(tr(f"{NS}.memory_text"))
memory_slots = {"controls": st.container()}
memory_slots["figure"] = beside_code(kv_cache_bytes, height=380)


@fragment
def memory_section():
    """Reruns alone when the model, the number format, the batch or the context changes."""
    with memory_slots["controls"]:
        cfg, dtype, batch, context = calculator_controls()
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
