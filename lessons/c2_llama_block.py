"""C2 · Inside the LLaMA block: RMSNorm, attention with RoPE and GQA, SwiGLU, parameter counts.
The block walkthrough runs on the course model or, by the switch, on SmolLM2-135M."""
import streamlit as st
import torch

from core.calc import configs
from core.calc.params import PARTS, count_params, expert_params, numel, param_breakdown
from core.lab.block_anatomy import compare_norms, gate_effect
from core.parts.activations import gelu, relu
from core.parts.ffn import SwiGLU, silu
from core.parts.mha import MultiHeadAttention
from core.parts.norms import layer_norm, rms_norm
from ui.c2_block import (
    CODE,
    COUNT_TEXT,
    PART_TEXT,
    REAL_TOKENS,
    activations,
    block_controls,
    block_intro,
    config_row,
    curves_demo,
    diagram,
    gate_controls,
    norm_controls,
    norm_demo,
    params_controls,
    tensor_view,
    timing_section,
    traced,
    traced_real,
    whole_model,
)
from ui.classroom import presenting
from ui.frame import code_panel, device, drawn, figure, lang, shapes_table, tr
from ui.lesson import Lesson
from ui.model import REAL, course_model, model_switch, real_model, real_model_available
from viz.block import gate_bars, norm_scatter, stream_sizes
from viz.common import label
from viz.params import breakdown_bars

NS = "c2"

lesson = Lesson(NS)
dev = device()

# The whole model first (the chosen block framed), then the diagram, then the controls right above
# the tensor view they drive (block, head, part). Presenter mode: the block's diagram on a slide of
# its own, under the whole model's strip.
lesson.section("block", layout_only=True, text=None, slide="strip" if presenting() else False, lead=("switch",),
               above=("strip", "diagram", "controls"))
block_slots = lesson.arrange()["block"]
with block_slots.switch:
    # The course model by default; SmolLM2 by the switch (?c2.lm=smollm2), the same walkthrough on
    # the real model's own tensors. Without its package the switch says how to install it.
    real = real_model(dev) if model_switch(NS) == REAL else None
    loaded = real or course_model(dev)
    block_intro(real)
arch = configs.get(configs.SMOLLM2) if real else configs.get("course")

if loaded:
    lesson.section("stream", layout_only=True, above=())
lesson.section("norm", layout_only=True, code=(layer_norm, rms_norm, compare_norms), height=560, below=("timing",))
lesson.section("swiglu", layout_only=True, above=("act", "controls"),
               code=(SwiGLU.forward, gate_effect) if loaded else (), height=420)
slots = lesson.arrange()
with slots["norm"].timing:
    timing_section(dev)         # on a button: the whole page reruns, as a press should
with slots["swiglu"].act:
    left, right = st.columns([1, 1])
    with left:
        figure(drawn(activations, tr(f"{NS}.act_fig")), key=f"{NS}.act")
        curves = curves_demo()
        st.caption(tr(f"{NS}.act_caption", low=float(curves["silu_min"]), at=float(curves["silu_argmin"])))
    with right:
        code_panel(silu, gelu, relu, height=360)


@lesson.body
def block(slots, real, loaded, arch):
    """The block, the norms and the SwiGLU gate share the prompt and the layer: one fragment, rerun
    alone when one of their controls moves."""
    with slots["block"].controls:
        text, layer, head, part = block_controls(arch, real)
        if real:
            with st.spinner(tr(f"{NS}.running")):      # a new text or block: one forward pass, < 1 s
                data = traced_real(text, layer, dev, real)
            if data["n_all"] > REAL_TOKENS:
                st.warning(tr(f"{NS}.tokens_cut", limit=REAL_TOKENS, n=data["n_all"]))
        else:
            data = traced(text, dev, loaded) if loaded else None
    with slots["block"].strip:
        figure(drawn(whole_model, arch.name, layer, lang()), key=f"{NS}.strip")
    with slots["block"].diagram:
        roomy = presenting()      # presenter mode: taller boxes, for labels at 18 px
        figure(drawn(diagram, part, roomy, tr(f"{NS}.region_attn"), tr(f"{NS}.region_ffn")), key=f"{NS}.diagram",
               name=tr(f"{NS}.block_title"))
        st.markdown(f"**`blocks.{layer}.{part}`** — {tr(f'{PART_TEXT}.{part}')}")
    if data is not None:
        tensor, code = slots["block"].figure.columns([1, 1])
        with tensor:
            tensor_view(data, arch, layer, part, head)
        with code:
            code_panel(*CODE.get(part, (MultiHeadAttention.forward, MultiHeadAttention.attend)))
        with slots["stream"].figure:
            stages = ["in"] + [f"{i}·{s}" for i in range(arch.n_layers) for s in ("attn", "ffn")]
            figure(stream_sizes(stages, data["stream"], data["added"],
                                names=(tr(f"{NS}.stream_name"), tr(f"{NS}.added_name")),
                                title=tr(f"{NS}.stream_fig", n=len(data["tokens"])), y_title="RMS",
                                x_title=tr(f"{NS}.stream_axis")), key=f"{NS}.stream")
            st.caption(tr(f"{NS}.stream_caption", first=float(data["stream"][0]), last=float(data["stream"][-1])))

    with slots["norm"].controls:
        shift = norm_controls()
    source = "toy" if data is None else REAL if real else "course"
    norms = norm_demo(text, layer, shift, source, dev, loaded)
    n, d = norms["input"].shape
    names = {"input": tr(f"{NS}.input_name"), "layer": "LayerNorm", "rms": "RMSNorm"}
    with slots["norm"].figure:
        figure(norm_scatter({names[k]: (norms[f"{k}_mean"], norms[f"{k}_rms"]) for k in names},
                            title=tr(f"{NS}.norm_fig"), x_title=tr(f"{NS}.mean_axis"), y_title="RMS", height=440),
               key=f"{NS}.norms")
        st.caption(tr(f"{NS}.norm_caption", shift=shift,
                      source=tr({"toy": f"{NS}.vectors_toy", REAL: f"{NS}.vectors_real"}.get(source, f"{NS}.vectors_model"),
                                layer=layer),
                      ln_mean=float(norms["layer_largest_mean"]), rms_mean=float(norms["rms_largest_mean"])))
        shapes_table([(tr(f"{NS}.input_name"), f"({n}, {d})"), ("mean, RMS", f"({n}, 1)"),
                      ("LayerNorm, RMSNorm", f"({n}, {d})")])

    if data is not None:
        with slots["swiglu"].controls:
            token = gate_controls(len(data["tokens"]))
        gate = torch.from_numpy(data["tensors"][f"blocks.{layer}.ffn.gate"][0, token])            # (F,)
        up = torch.from_numpy(data["tensors"][f"blocks.{layer}.ffn.up"][0, token])                # (F,)
        effect = {k: v.numpy() for k, v in gate_effect(gate, up).items()}
        with slots["swiglu"].figure:
            order = effect["order"]
            figure(gate_bars(effect["gate"][order], effect["up"][order], effect["passed"][order],
                             names=(tr(f"{NS}.up_name"), tr(f"{NS}.gate_name"), tr(f"{NS}.passed_name")),
                             title=tr(f"{NS}.gate_fig", token=label(data["tokens"][token]), layer=layer),
                             x_title=tr(f"{NS}.unit_axis")), key=f"{NS}.gate")
            st.caption(tr(f"{NS}.gate_caption", closed=100 * float(effect["closed_fraction"]), f=arch.ffn_hidden))


@lesson.section("params", code=(param_breakdown,), height=520)
def params(s, real, loaded):
    """The parameter counter reruns alone when its model changes."""
    with s.controls:
        arch = configs.get(params_controls() or configs.names()[0])
        c1, c2, c3 = st.columns(3)
        c1.metric(tr(f"{NS}.total_name"), f"{count_params(arch):,}")
        c2.metric(tr(f"{NS}.active_metric"), f"{count_params(arch, active=True):,}")
        c3.metric(tr(f"{NS}.per_expert"), f"{expert_params(arch):,}")
    total, active = param_breakdown(arch), param_breakdown(arch, active=True)
    unit = 1e9 if count_params(arch) >= 1e9 else 1e6
    series = {tr(f"{NS}.total_name"): [total[p] for p in PARTS]}
    if arch.is_moe:
        series[tr(f"{NS}.active_name", k=arch.experts_per_token, e=arch.n_experts)] = [active[p] for p in PARTS]
    figure(breakdown_bars([tr(f"{COUNT_TEXT}.{p}") for p in PARTS], series, unit=unit,
                          title=tr(f"{NS}.params_fig", name=arch.title),
                          x_title=tr(f"{NS}.billions") if unit == 1e9 else tr(f"{NS}.millions")), key=f"{NS}.params")
    if arch.name == configs.COURSE and loaded and not real:
        st.caption(tr(f"{NS}.course_check", counted=numel(loaded[0]), formula=count_params(arch)))
    if arch.name == configs.SMOLLM2 and real_model_available() and (smol := real or real_model(dev)):
        st.caption(tr(f"{NS}.smollm2_check", counted=numel(smol[0]), formula=count_params(arch)))
    st.markdown(config_row(arch))


lesson.arrange()
lesson.draw(real=real, loaded=loaded, arch=arch)
lesson.quiz([("try1", 2), ("try2", 1), ("try3", 0)])
