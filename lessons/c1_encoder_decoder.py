"""C1 · Encoder and decoder: the original Transformer, trained to read dates, taken apart."""
import streamlit as st

from core.lab.date_lab import norm_stats, relu_off, standardise, teacher_forced
from core.models.encdec import DecoderLayer, EncoderLayer, FeedForward, cross_attend, greedy
from ui.c1_encoder_decoder import (
    DEFAULT_NORM,
    checkpoint_notes,
    clicked_sublayer,
    compare_table,
    decode_controls,
    decoding_view,
    diagram_labels,
    example_section,
    ffn_names,
    ffn_view,
    forcing_caption,
    norm_caption,
    norm_names,
    norm_table,
    norm_view,
    pick,
    shape,
    step_controls,
    sublayer_controls,
    sublayer_view,
)
from ui.date_model import checkpoints, date_model, reading
from ui.frame import device, figure, tr
from ui.lesson import Lesson
from viz.block import tensor_heatmap
from viz.encdec import alignment_map, forcing_grid, in_out, stacks_diagram, step_probs, with_marks
from viz.encdec import norm_stats as norm_chart

NS = "c1"
WHAT = f"{NS}.what"            # c1.what.<part>: one line on each sub-layer
WEIGHTS_CAPTION = {"self_attn": f"{NS}.weights_caption_self_attn", "cross_attn": f"{NS}.weights_caption_cross_attn"}

lesson = Lesson(NS)
dev = device()
loaded = date_model(dev)
example = example_section(dev) if loaded else None      # a new text reruns the whole page

# "The code" runs the page's width under each section's figures: beside a figure, at 1024 px, it
# would scroll sideways (the functions shown are wrapped to 66 characters). Both layers' code
# names every sub-layer in order, shown in full.
BELOW = {"code_below": True, "height": None}


@lesson.section("stacks", code=(EncoderLayer.forward, DecoderLayer.forward, cross_attend), **BELOW,
                above=("marks",), below=("detail",))
def stacks(s, text, loaded, dev):
    """Reruns alone when the layer or the sub-layer moves (or a box of the diagram is clicked)."""
    s.marks.caption(tr(f"{NS}.marks"))          # the key to the special tokens' marks on every axis below
    if not loaded:
        return
    n_layers = loaded[0].config.n_layers
    diagram, right = st.columns([1, 1])
    with right:
        stack, layer, sub = sublayer_controls(n_layers)
    name = f"{stack}.layers.{layer}.{sub}"
    with diagram:
        # A click on a sub-layer opens it (on_select).
        figure(stacks_diagram(name, n_layers, diagram_labels()), f"{NS}.diagram", present_height=None,
               on_select=clicked_sublayer, name=tr(f"{NS}.stacks_title"))
        st.caption(tr(f"{NS}.diagram_caption"))
    v = sublayer_view(text, stack, layer, sub, dev)
    rows = v["rows"]
    with right:
        st.markdown(f"**`{name}`** — {tr(f'{WHAT}.{sub}')}")
        figure(in_out(v["in"], v["out"], rows, titles=(tr(f"{NS}.input"), tr(f"{NS}.output")),
                      hover_names=(tr(f"{NS}.token"), tr(f"{NS}.column"), tr(f"{NS}.value")),
                      height=max(300, 22 * len(rows) + 90)), key=f"{NS}.io",
               name=f"{name}: {tr(f'{NS}.input')} → {tr(f'{NS}.output')}")
        st.caption(tr(f"{NS}.io_caption", inp=v["in_name"], out=v["out_name"], shape=shape(v["out"])))
    with s.detail:
        if "weights" in v:
            st.markdown(f"**`{name}.weights`** · {tr(f'{NS}.weights_fig')}")
            figure(alignment_map(v["weights"], rows, v["cols"],
                                 hover_names=(tr(f"{NS}.token"), tr("common.key"), tr("common.weight")),
                                 height=max(300, 24 * len(rows) + 70)), key=f"{NS}.weights",
                   name=f"{name}.weights · {tr(f'{NS}.weights_fig')}")
            st.caption(tr(WEIGHTS_CAPTION[sub]))
        else:
            st.caption(tr(f"{NS}.detail_elsewhere"))


@lesson.section("norm", code=(standardise, norm_stats), **BELOW)
def norm(s, text, loaded, dev):
    """Reruns alone when its Add & Norm is changed."""
    if not loaded:
        return
    with s.controls:
        name = pick(f"{NS}.norm", tr(f"{NS}.norm_label"), norm_names(loaded[0].config.n_layers), DEFAULT_NORM)
    v = norm_view(text, name, dev)
    figure(norm_chart(v["rows"], v["stats"], names=(tr(f"{NS}.before"), tr(f"{NS}.standard"), tr(f"{NS}.after")),
                      titles=(tr(f"{NS}.mean"), tr(f"{NS}.variance"))), key=f"{NS}.norm_fig",
           name=f"{name} · {tr(f'{NS}.norm_title')}")
    st.caption(norm_caption(name, v["stats"]))
    st.markdown(norm_table(v["rows"], v["stats"]))


@lesson.section("ffn", code=(FeedForward, relu_off), **BELOW)
def ffn(s, text, loaded, dev):
    """Reruns alone when its feed-forward is changed."""
    if not loaded:
        return
    with s.controls:
        name = pick(f"{NS}.ffn", tr(f"{NS}.ffn_label"), ffn_names(loaded[0].config.n_layers), "decoder.layers.0.ffn")
    v = ffn_view(text, name, dev)
    hidden, rows = v["hidden"], v["rows"]
    st.markdown(f"**`{name}.hidden`** · {tr(f'{NS}.ffn_fig', f=hidden.shape[1])}")
    figure(with_marks(tensor_heatmap(hidden, rows, title=None,
                                     hover_names=(tr(f"{NS}.token"), tr(f"{NS}.unit"), tr(f"{NS}.value")),
                                     height=max(300, 22 * len(rows) + 120))), key=f"{NS}.ffn_fig",
           name=f"{name}.hidden · {tr(f'{NS}.ffn_fig', f=hidden.shape[1])}")
    st.caption(tr(f"{NS}.ffn_caption", f=hidden.shape[1], d=loaded[0].config.d_model, off=100 * v["off_all"],
                  lo=100 * float(v["off"].min()), hi=100 * float(v["off"].max())))


@lesson.section("decode", code=(greedy, teacher_forced), **BELOW, above=("controls", "step"), below=("forcing",))
def decode(s, text, loaded, dev):
    """Reruns alone when the checkpoint, the decoding step or what teacher forcing feeds moves."""
    if not loaded:
        return
    saved = checkpoints()
    with s.controls:
        entry, ckpt, feed = decode_controls(saved, dev)
    d = decoding_view(text, feed, dev, ckpt)
    steps = len(d["stepped"])
    with s.step:
        step = min(step_controls(steps), steps - 1)
    chosen = d["ids"][step]
    own_fed = reading(text, dev, ckpt)["fed"]
    so_far = "".join(own_fed[1: step + 1])
    st.markdown(tr(f"{NS}.step_line", step=step, fed=f"`<bos>{so_far}`", chosen=f"`{d['vocab'][chosen]}`",
                   p=100 * float(d["stepped"][step][chosen])))
    probs_title = tr(f"{NS}.step_fig", step=step)
    st.markdown(f"**{probs_title}**")
    figure(step_probs(d["vocab"], d["stepped"][step], chosen, title=None, y_title=tr(f"{NS}.probability"),
                      forced=d["forced"][step] if step < len(d["forced"]) else None,
                      names=(tr(f"{NS}.stepped_name"), tr(f"{NS}.forced_name")),
                      height=max(320, 24 * steps + 130)), key=f"{NS}.probs", name=probs_title)
    st.caption(tr(f"{NS}.marks"))      # the marks stand in the vocabulary, next to the digits
    if entry is not None:   # under the figure: on a slide, the figure comes first
        checkpoint_notes(d, entry, ckpt, saved)
    n = len(d["fed"])
    with s.forcing:
        forcing_title = tr(f"{NS}.forcing_fig", n=n)
        st.markdown(f"**{forcing_title}**")
        figure(forcing_grid(d["forced"], d["fed"], d["vocab"], min(step, n - 1), title=None,
                            hover_names=(tr(f"{NS}.read"), tr(f"{NS}.next"), tr(f"{NS}.probability")),
                            height=max(320, 24 * n + 130)), key=f"{NS}.forcing", name=forcing_title)
        st.caption(forcing_caption(d, own_fed))


lesson.section("compare", layout_only=True, slide=False, above=(), note=compare_table)

lesson.run(text=example, loaded=loaded, dev=dev)
lesson.quiz([("try1", 2), ("try2", 0), ("try3", 1)])
