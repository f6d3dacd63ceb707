"""C2 · Inside the LLaMA block: RMSNorm, attention with RoPE and GQA, SwiGLU, parameter counts.
The block walkthrough runs on the course model or, by the switch, on SmolLM2-135M."""
import numpy as np
import streamlit as st
import torch

from core.calc import configs
from core.calc.params import PARTS, count_params, expert_params, model_stages, numel, param_breakdown
from core.calc.timing import time_norms
from core.lab.block_anatomy import (
    BLOCK_PARTS,
    HEAD_PARTS,
    compare_norms,
    gate_effect,
    part_matrix,
    strip_stages,
)
from core.lab.real_tokens import dropped_note
from core.models.model import Block
from core.parts.activations import gelu, relu
from core.parts.ffn import SwiGLU, silu
from core.parts.mha import MultiHeadAttention
from core.parts.norms import layer_norm, rms_norm
from core.parts.trace import Trace
from ui.c2_block import REAL_TOKENS, curves_demo, norm_demo, traced, traced_real
from ui.classroom import presenting
from ui.frame import (
    beside_code,
    built_figure,
    choice,
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    model_labels,
    ranged_slider,
    section_with_controls,
    send_now,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.model import REAL, course_model, model_switch, real_model, real_model_available
from viz.attention import heatmap, lines
from viz.block import block_diagram, gate_bars, norm_scatter, stream_sizes, tensor_heatmap
from viz.common import label
from viz.params import breakdown_bars
from viz.strip import compact, model_strip

NS = "c2"
DEFAULT_TEXT = "君不见，黄河之水天上来"
MAX_CHARS = 48
REAL_TEXT = "The quick brown fox jumps over the lazy dog."
CJK_LINE = "君不见，黄河之水天上来"      # A1's line: what a Chinese character costs SmolLM2, counted
REAL_CHARS = 1200     # SmolLM2 reads byte-level BPE tokens: a text is cut at REAL_TOKENS (256) of them
PART_TEXT = f"{NS}.part"          # c2.part.<trace name>: what each part of the block is
STAGES = {"ids": f"{NS}.stage_ids", "embed": f"{NS}.stage_embed", "block": f"{NS}.stage_block",
          "final_norm": f"{NS}.stage_final_norm", "output": f"{NS}.stage_output", "softmax": f"{NS}.stage_softmax"}
COUNT_TEXT = f"{NS}.parts"        # c2.parts.<part of core.calc.params.PARTS>: rows of the counter
TIMING_WIDTHS = [256, 1024, 4096]
# Language-neutral labels of the diagram: the formulas are the same in every language.
# Two short lines a box: the diagram is ~620 px wide on a laptop, a box ~40 px.
LABELS = {
    "resid_pre": "x", "attn_norm": "RMS<br>Norm", "attn.q": "q<br>RoPE", "attn.k": "k<br>RoPE", "attn.v": "v",
    "attn.weights": "softmax<br>qkᵀ/√d", "attn.out": "W_o", "resid_mid": "x +<br>attn", "ffn_norm": "RMS<br>Norm",
    "ffn.gate": "SiLU<br>(W₁h)", "ffn.up": "W₃h", "ffn_out": "W₂<br>(g⊙u)", "resid_post": "x +<br>ffn",
}
CODE = {"resid_pre": (Block.forward,), "attn_norm": (rms_norm,), "attn.out": (MultiHeadAttention.attend,),
        "resid_mid": (Block.forward, Block.feed_forward), "ffn_norm": (rms_norm,), "ffn_out": (Block.ffn_out, SwiGLU.forward),
        "resid_post": (Block.feed_forward,), "ffn.gate": (SwiGLU.forward, silu), "ffn.up": (SwiGLU.forward,)}

header(NS)
dev = device()
course = configs.get("course")


def block_controls(arch):
    """Text, block, head and part; the block's and head's ranges follow the model (the course
    model's 4 blocks and 4 heads, SmolLM2's 30 and 9), each model keeps its own text."""
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        if real:
            text = text_box(f"{NS}.rtext", REAL_TEXT, REAL_CHARS, tr(f"{NS}.rtext_label", limit=REAL_TOKENS))
            if note := dropped_note(real[1], text.text):     # bytes SmolLM2 has no token for
                st.warning(tr("real.dropped", **note))
        else:
            text = text_box(f"{NS}.text", DEFAULT_TEXT, MAX_CHARS, tr(f"{NS}.text_label"))
    with c2:
        layer = ranged_slider(tr(f"{NS}.layer_label"), 0, arch.n_layers - 1, 0, key=f"{NS}.layer")
    with c3:
        head = ranged_slider(tr(f"{NS}.head_label"), 0, arch.n_heads - 1, 0, key=f"{NS}.head",
                             help=tr(f"{NS}.head_help"))
    part = st.segmented_control(tr(f"{NS}.part_label"), BLOCK_PARTS, default="attn_norm", key=f"{NS}.part",
                                bind="query-params", required=True)
    default = REAL_TEXT if real else DEFAULT_TEXT
    return (text.text if not text.empty else default), layer, head, part or "attn_norm"


def norm_controls():
    return st.slider(tr(f"{NS}.shift_label"), -3.0, 3.0, 0.0, 0.5, key=f"{NS}.shift", bind="query-params",
                     help=tr(f"{NS}.shift_help"))


def timing_controls():
    c1, c2 = st.columns([2, 1])
    with c1:
        width = st.select_slider(tr(f"{NS}.timing_width"), TIMING_WIDTHS, value=1024, key=f"{NS}.twidth",
                                 bind="query-params")
    with c2:
        st.write("")
        pressed = st.button(tr(f"{NS}.timing_button"), key=f"{NS}.time", type="primary")
    return width, pressed


def gate_controls(n: int):
    """The token whose gate is drawn: its range follows the text (0 … N − 1)."""
    return ranged_slider(tr(f"{NS}.token_label"), 0, n - 1, 7, key=f"{NS}.token")


def timing_section():
    """Times the two norms on a button (a live benchmark is too slow for every run)."""
    width, pressed = timing_controls()
    if pressed:
        send_now()   # the progress bar shows as it moves
        bar = st.progress(0.0, text=tr(f"{NS}.timing_running"))
        st.session_state[f"{NS}.timing"] = {"width": width, "dev": dev, **time_norms(
            1024, width, 30, dev, on_step=lambda f: bar.progress(f, text=tr(f"{NS}.timing_running")))}
        bar.empty()
    result = st.session_state.get(f"{NS}.timing")
    if result:
        c1, c2, c3 = st.columns(3)
        c1.metric("LayerNorm", f"{result['layer_ms']:.3f} ms")
        c2.metric("RMSNorm", f"{result['rms_ms']:.3f} ms")
        c3.metric(tr(f"{NS}.ratio"), f"{result['ratio']:.2f}×")
        saving = 100 * result["saving"]
        outcome = (tr(f"{NS}.timing_faster", pct=saving) if saving >= 0 else tr(f"{NS}.timing_slower", pct=-saving))
        st.caption(tr(f"{NS}.timing_caption", width=result["width"], dev=result["dev"], outcome=outcome))
    else:
        st.caption(tr(f"{NS}.timing_hint"))


# The page's fixed parts (prose, most code panels, the activation curves, the timing) are laid
# out once; the fragment below refills only the slots that depend on its controls, so moving
# the block, the part, the shift or the token re-sends the figures, not the whole page.
st.subheader(tr(f"{NS}.block_title"))
# The course model by default; SmolLM2 by the switch (?c2.lm=smollm2), the same walkthrough on
# the real model's own tensors. Without its package the switch says how to install it.
real = real_model(dev) if model_switch(NS) == REAL else None
loaded = real or course_model(dev)
arch = configs.get(configs.SMOLLM2) if real else course
if real:
    n_cjk = len(real[1].encode(CJK_LINE))                                # counted, not typed
    st.markdown(tr(f"{NS}.real_text") + "\n" + tr(f"{NS}.real_cjk", line=CJK_LINE, n=n_cjk, chars=len(CJK_LINE),
                                                   per=n_cjk / len(CJK_LINE)))
    counted, tied = numel(real[0]), arch.vocab_size * arch.d_model    # the tied (V, D) matrix once
    st.caption(tr(f"{NS}.real_check", counted=counted, formula=count_params(arch), output=tied, twice=counted + tied))
else:                                   # the shapes of the model the tensors below come from
    st.markdown(tr(f"{NS}.course_text"))
# The whole model first (the chosen block framed), then the diagram, then the controls right above
# the tensor view they drive (block, head, part).
slot = {"strip": st.container()}
if presenting():   # presenter mode: the block's diagram on a slide of its own, under the whole model's strip
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.block_title")))
slot.update(diagram=st.container(), controls=st.container())
if loaded:
    left, right = st.columns([1, 1])
    slot["tensor"], slot["tensor_code"] = left.container(), right.container()
    st.subheader(tr(f"{NS}.stream_title"))
    st.markdown(tr(f"{NS}.stream_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.stream_title")))
    slot["stream"] = st.container()

# ---------------------------------------------------------------- RMSNorm vs LayerNorm
slot["norm_controls"], slot["norms"] = section_with_controls(NS, "norm", layer_norm, rms_norm, compare_norms,
                                                             height=560)
timing_section()

# ---------------------------------------------------------------- SwiGLU
st.subheader(tr(f"{NS}.swiglu_title"))
st.markdown(tr(f"{NS}.swiglu_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.swiglu_title")))
curves = curves_demo()
left, right = st.columns([1, 1])
with left:
    figure(built_figure((f"{NS}.act", lang()), lambda: lines(
        curves["x"], {"ReLU": curves["relu"], "GELU": curves["gelu"], "SiLU": curves["silu"]},
        title=tr(f"{NS}.act_fig"), x_title="x", markers=False)), key=f"{NS}.act")
    st.caption(tr(f"{NS}.act_caption", low=float(curves["silu_min"]), at=float(curves["silu_argmin"])))
with right:
    code_panel(silu, gelu, relu, height=360)
if loaded:
    slot["gate_controls"] = st.container()
    slot["gate"] = beside_code(SwiGLU.forward, gate_effect, height=420)


def whole_model(layer: int):
    """The whole model as a strip, the shown block framed. 30 blocks do not fit a strip: the
    first, the chosen and the last, the runs between as one box."""
    stages = strip_stages(model_stages(arch), layer)
    names = [tr(f"{NS}.stage_gap", a=s["first"], b=s["last"]) if s["name"] == "gap"
             else tr(STAGES[s["name"]], i=s["layer"]) for s in stages]
    chosen = next(i for i, s in enumerate(stages) if s["name"] == "block" and s["layer"] == layer)
    # The output is (N, V); the softmax the model samples from is its last row, the next token's.
    shapes = [s["shape"] if s["name"] != "softmax" else f"(N, {arch.vocab_size})" for s in stages]
    notes = [tr(f"{NS}.strip_params", n=compact(s["params"])) if s["params"]
             else tr(f"{NS}.strip_last") if s["name"] == "softmax"
             else tr(f"{NS}.strip_tied") if s["name"] == "output" and arch.tied_embeddings else ""
             for s in stages]
    return model_strip([s["name"] for s in stages], names, shapes, notes, selected=chosen,
                       title=tr(f"{NS}.strip_fig", n=count_params(arch)))


@fragment
def block_sections():
    """The block, the norms and the SwiGLU gate share the prompt and the layer. They rerun
    alone (st.fragment) when one of their controls moves, and write only into the slots above."""
    with slot["controls"]:
        text, layer, head, part = block_controls(arch)
        if real:
            with st.spinner(tr(f"{NS}.running")):      # a new text or block: one forward pass, < 1 s
                data = traced_real(text, layer, dev, real)
            if data["n_all"] > REAL_TOKENS:
                st.warning(tr(f"{NS}.tokens_cut", limit=REAL_TOKENS, n=data["n_all"]))
        else:
            data = traced(text, dev, loaded) if loaded else None
    with slot["strip"]:
        figure(built_figure((f"{NS}.strip", arch.name, layer, lang()), lambda: whole_model(layer)), key=f"{NS}.strip")
    with slot["diagram"]:
        roomy = presenting()      # presenter mode: taller boxes, for labels at 18 px
        figure(built_figure((f"{NS}.diagram", part, roomy, lang()), lambda: block_diagram(
            part, LABELS, regions={"attn": tr(f"{NS}.region_attn"), "ffn": tr(f"{NS}.region_ffn")}, roomy=roomy)),
               key=f"{NS}.diagram")
        st.markdown(f"**`blocks.{layer}.{part}`** — {tr(f'{PART_TEXT}.{part}')}")


    if data is not None:
        trace = Trace({k: torch.from_numpy(v) for k, v in data["tensors"].items()})
        tokens, n = data["tokens"], len(data["tokens"])
        n_rep = arch.n_heads // arch.n_kv_heads
        matrix = part_matrix(trace, layer, part, head, n_rep)
        with slot["tensor"]:
            title = tr(f"{NS}.tensor_fig", name=f"blocks.{layer}.{part}", shape=tuple(matrix.shape))
            if part == "attn.weights":
                hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
                future = np.triu(np.ones((n, n), dtype=bool), 1)      # keys after the query: masked
                fig = heatmap(matrix, tokens, tokens, title=title, hover_names=hover, height=420, masked=future)
            else:
                hover = (tr(f"{NS}.token"), tr(f"{NS}.column"), tr(f"{NS}.value"))
                fig = tensor_heatmap(matrix, tokens, title=title, hover_names=hover)
            figure(fig, key=f"{NS}.tensor")
            if part in HEAD_PARTS:
                kv = head // n_rep
                st.caption(tr(f"{NS}.gqa_caption", head=head, kv=kv, n_rep=n_rep, h=arch.n_heads,
                              h_kv=arch.n_kv_heads))
            shapes_table([(f"blocks.{layer}.{p}", str(tuple(data["tensors"][f"blocks.{layer}.{p}"].shape)))
                          for p in BLOCK_PARTS])
        with slot["tensor_code"]:
            code_panel(*CODE.get(part, (MultiHeadAttention.forward, MultiHeadAttention.attend)))
        with slot["stream"]:
            stages = ["in"] + [f"{i}·{s}" for i in range(arch.n_layers) for s in ("attn", "ffn")]
            figure(stream_sizes(stages, data["stream"], data["added"],
                                names=(tr(f"{NS}.stream_name"), tr(f"{NS}.added_name")),
                                title=tr(f"{NS}.stream_fig", n=n), y_title="RMS",
                                x_title=tr(f"{NS}.stream_axis")), key=f"{NS}.stream")
            st.caption(tr(f"{NS}.stream_caption", first=float(data["stream"][0]), last=float(data["stream"][-1])))

    with slot["norm_controls"]:
        shift = norm_controls()
    source = "toy" if data is None else REAL if real else "course"
    norms = norm_demo(text, layer, shift, source, dev, loaded)
    vectors = norms["input"]
    source = tr({"toy": f"{NS}.vectors_toy", REAL: f"{NS}.vectors_real"}.get(source, f"{NS}.vectors_model"),
                layer=layer)
    names = {"input": tr(f"{NS}.input_name"), "layer": "LayerNorm", "rms": "RMSNorm"}
    with slot["norms"]:
        figure(norm_scatter({names[k]: (norms[f"{k}_mean"], norms[f"{k}_rms"]) for k in names},
                            title=tr(f"{NS}.norm_fig"), x_title=tr(f"{NS}.mean_axis"), y_title="RMS", height=440),
               key=f"{NS}.norms")
        st.caption(tr(f"{NS}.norm_caption", source=source, shift=shift,
                      ln_mean=float(norms["layer_largest_mean"]), rms_mean=float(norms["rms_largest_mean"])))
        shapes_table([(tr(f"{NS}.input_name"), f"({vectors.shape[0]}, {vectors.shape[1]})"),
                      ("mean, RMS", f"({vectors.shape[0]}, 1)"),
                      ("LayerNorm, RMSNorm", f"({vectors.shape[0]}, {vectors.shape[1]})")])

    if data is not None:
        with slot["gate_controls"]:
            token = gate_controls(n)
        gate = trace[f"blocks.{layer}.ffn.gate"][0, token]                                 # (F,)
        up = trace[f"blocks.{layer}.ffn.up"][0, token]                                     # (F,)
        effect = {k: v.numpy() for k, v in gate_effect(gate, up).items()}
        with slot["gate"]:
            order = effect["order"]
            figure(gate_bars(effect["gate"][order], effect["up"][order], effect["passed"][order],
                             names=(tr(f"{NS}.up_name"), tr(f"{NS}.gate_name"), tr(f"{NS}.passed_name")),
                             title=tr(f"{NS}.gate_fig", token=label(tokens[token]), layer=layer),
                             x_title=tr(f"{NS}.unit_axis")), key=f"{NS}.gate")
            st.caption(tr(f"{NS}.gate_caption", closed=100 * float(effect["closed_fraction"]),
                          f=arch.ffn_hidden))


block_sections()


@fragment
def counter_section():
    """The parameter counter reruns alone when its model changes (st.fragment)."""
    # ---------------------------------------------------------------- parameter counter
    st.subheader(tr(f"{NS}.params_title"))
    st.markdown(tr(f"{NS}.params_text"))
    slide(tr("classroom.slide.continued", title=tr(f"{NS}.params_title")))


    def params_controls():
        return choice(tr(f"{NS}.config_label"), configs.names(), f"{NS}.config", model_labels(configs.names()))


    arch = configs.get(params_controls() or configs.names()[0])
    total, active = param_breakdown(arch), param_breakdown(arch, active=True)
    unit = 1e9 if count_params(arch) >= 1e9 else 1e6
    series = {tr(f"{NS}.total_name"): [total[p] for p in PARTS]}
    if arch.is_moe:
        series[tr(f"{NS}.active_name", k=arch.experts_per_token, e=arch.n_experts)] = [active[p] for p in PARTS]
    c1, c2, c3 = st.columns(3)
    c1.metric(tr(f"{NS}.total_name"), f"{count_params(arch):,}")
    c2.metric(tr(f"{NS}.active_metric"), f"{count_params(arch, active=True):,}")
    c3.metric(tr(f"{NS}.per_expert"), f"{expert_params(arch):,}")
    left, right = st.columns([1, 1])
    with left:
        figure(breakdown_bars([tr(f"{COUNT_TEXT}.{p}") for p in PARTS], series, unit=unit,
                              title=tr(f"{NS}.params_fig", name=arch.title),
                              x_title=tr(f"{NS}.billions") if unit == 1e9 else tr(f"{NS}.millions")),
               key=f"{NS}.params")
        if arch.name == configs.COURSE and loaded and not real:
            st.caption(tr(f"{NS}.course_check", counted=numel(loaded[0]), formula=count_params(arch)))
        if arch.name == configs.SMOLLM2 and real_model_available() and (smol := real or real_model(dev)):
            st.caption(tr(f"{NS}.smollm2_check", counted=numel(smol[0]), formula=count_params(arch)))
        st.markdown(tr(f"{NS}.config_row", v=arch.vocab_size, d=arch.d_model, l=arch.n_layers, h=arch.n_heads,
                       h_kv=arch.n_kv_heads, d_head=arch.head_dim, f=arch.ffn_hidden, e=arch.n_experts,
                       k=arch.experts_per_token)
                    + f" `norm={arch.norm}` `ffn={arch.ffn}` `tied={arch.tied_embeddings}` `bias={arch.bias}`"
                      f" `rope_base={arch.rope_base}`")
    with right:
        code_panel(param_breakdown, height=520)


counter_section()

try_this(NS, [("try1", 2), ("try2", 1), ("try3", 0)])
