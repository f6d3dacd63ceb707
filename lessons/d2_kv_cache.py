"""D2 · The KV cache: keep the keys and values of past tokens instead of recomputing them."""
import streamlit as st

from core.calc import configs, roofline
from core.calc.flops import measure_decoding
from core.calc.kv_cache import DTYPE_BYTES, kv_cache_bytes
from core.calc.params import count_params
from core.lab.cache_steps import cache_history
from core.models.generate import Generation
from core.parts.kv_cache import LayerKV
from ui.d2_kv_cache import (
    DEFAULT_PROMPT,
    MEASURED,
    MEASURED_ON,
    REAL_TEXT,
    TIMING,
    cache_frames,
    cache_steps,
    calculator_controls,
    flop_curves,
    memory_formula,
    prompt_and_step,
    real_weighing,
    replay,
    shared_timings,
)
from ui.frame import bring_into_view, common_mistake, device, figure, lang, plain, shapes_table, tr
from ui.lesson import Lesson
from ui.live import live_figure
from ui.model import COURSE, REAL, course_model, model_switch, real_model
from viz.kv import cost_lines, memory_lines

NS = "d2"

lesson = Lesson(NS)


# 1 · Step through decoding: the prompt, the step, the layer and the head above the cache.
@lesson.section("steps", code=(LayerKV.append, Generation.step), height=620, widths=(3, 2), slide=False,
                below=("mistake",))
def steps(s, loaded, dev):
    if loaded is None:
        return
    mc = loaded[0].config
    with s.controls:
        prompt, step, layer, head = prompt_and_step(mc.n_layers, mc.n_heads)
        run = replay(prompt, dev)
        if run["unknown"]:
            st.warning(tr(f"{NS}.unknown_note", n=run["unknown"]))
        if step >= len(run["steps"]):
            st.info(tr(f"{NS}.eos_note", n=len(run["steps"])))
            step = len(run["steps"]) - 1
        cached = cache_steps(run)
        seen = cache_history(cached, layer, head, step)
        fed = cached[step].fed
        tokens = run["prompt"] + run["chosen"][:step]
        s_len, d_head = seen["k"].shape
        before, now = "".join(tokens[: s_len - fed]), "".join(tokens[s_len - fed:])
        st.markdown(tr(f"{NS}.sequence", before=plain(before), now=plain(now), next=plain(run["chosen"][step])))
    live_figure(cache_frames, (prompt, layer, head, dev, lang()), f"{NS}.fig", f"{NS}.step",
                list(range(len(cached))), 0, tr(f"{NS}.step_label"), name=tr(f"{NS}.steps_title"))
    presses = st.session_state.get(f"{NS}.presses", 0)
    if presses != st.session_state.get(f"{NS}.presses_shown", 0):   # Step or Reset moved the figure
        st.session_state[f"{NS}.presses_shown"] = presses
        bring_into_view(f"{NS}.fig", presses)
    st.caption(tr(f"{NS}.step_caption", t=step, fed=fed, s=s_len, p=len(run["prompt"]), layers=mc.n_layers,
                  g=seen["kv_head"], head=head))
    shapes_table([(tr(f"{NS}.fed_row"), f"(1, {fed})"), ("q", f"(1, {mc.n_heads}, {fed}, {d_head})"),
                  ("k, v " + tr(f"{NS}.new_rows"), f"(1, {mc.n_kv_heads}, {fed}, {d_head})"),
                  ("cache.layers[i].k, .v", f"(1, {mc.n_kv_heads}, {s_len}, {d_head})"),
                  (tr(f"{NS}.weights_row"), f"(1, {mc.n_heads}, {fed}, {s_len})")])


# 2 · What it saves: counted and measured, on the model of the switch under the prose.
@lesson.section("cost", above=("switch",))
def cost(s, lm, loaded, dev):
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
        if timed is not None and st.button(tr(f"{NS}.measure", device=dev, model=cost_cfg.title),
                                           key=f"{NS}.measure_btn"):
            model_t, tok_t = timed
            bar = st.progress(0.0, text=tr(f"{NS}.measuring"))
            contexts = [n for n in MEASURED_ON[lm] if n <= model_t.config.max_seq_len]
            ids = (tok_t.encode(DEFAULT_PROMPT if lm == COURSE else REAL_TEXT) * contexts[-1])[: contexts[-1]]
            seconds = measure_decoding(model_t, ids, contexts, progress=lambda f: bar.progress(f), **TIMING[lm])
            results[(lm, dev)] = {"x": contexts, **seconds}
            bar.empty()
        if measured := results.get((lm, dev)):
            ms = {names[k]: [1000 * s for s in measured[k]] for k in ("cached", "recomputed")}
            figure(cost_lines(measured["x"], ms, title=tr(f"{NS}.timing_fig", device=dev, model=cost_cfg.title),
                              x_title=tr(f"{NS}.context_axis"), y_title=tr(f"{NS}.ms_axis")), key=f"{NS}.timing")
            st.caption(tr(f"{NS}.timing_caption", n=measured["x"][-1],
                          ratio=measured["recomputed"][-1] / measured["cached"][-1], tps=1 / measured["cached"][-1]))
        elif timed is not None:
            st.info(tr(f"{NS}.timing_none", model=cost_cfg.title))
    if lm == REAL and timed is not None:
        real_weighing(cost_cfg, dev)


# 3 · What it costs: memory, in the registry's models (SmolLM2 chosen above: the calculator opens on
# it too; the course model: on LLaMA-2-7B).
@lesson.section("memory", code=(kv_cache_bytes,), height=380, below=("mistake",))
def memory(s, lm):
    with s.controls:
        cfg, dtype, batch, context = calculator_controls(configs.SMOLLM2 if lm == REAL else configs.names()[0])
    per_value = DTYPE_BYTES[dtype]
    xs = [context * i // 64 for i in range(65)]
    kv = [kv_cache_bytes(cfg, n, batch, per_value) / 2**30 for n in xs]
    weights = count_params(cfg) * per_value / 2**30
    series = {tr(f"{NS}.kv_line"): kv, tr(f"{NS}.total_line"): [weights + g for g in kv]}
    cards = [(f"{gb:g} GB = {gb * roofline.GIB_PER_GB:.1f} GiB · {names}", gb * roofline.GIB_PER_GB)
             for gb, names in roofline.memory_sizes()]      # one unit on the axis: GiB
    figure(memory_lines(xs, series, cards, title=tr(f"{NS}.memory_fig", model=cfg.title, dtype=dtype, b=batch),
                        x_title=tr(f"{NS}.tokens_axis"), y_title="GiB"), key=f"{NS}.memory")
    st.latex(memory_formula(cfg, context, batch, per_value, dtype))
    st.caption(tr(f"{NS}.memory_caption", per_token=kv_cache_bytes(cfg, 1, 1, per_value) / 1024,
                  weights=weights, model=cfg.title))
    if context > cfg.max_seq_len:
        st.warning(tr(f"{NS}.beyond_trained", model=cfg.title, trained=cfg.max_seq_len, context=context))


dev = device()
loaded = course_model(dev)
slots = lesson.arrange()
if loaded is not None:
    with slots["steps"].mistake:
        common_mistake(f"{NS}.mistake_own_key")
with slots["cost"].switch:
    lm = model_switch(NS)                                   # course model (default) or SmolLM2
with slots["memory"].mistake:
    common_mistake(f"{NS}.mistake_size")
lesson.draw(lm=lm, loaded=loaded, dev=dev)
lesson.quiz([("try1", 0), ("try2", 1), ("try3", 2)])
