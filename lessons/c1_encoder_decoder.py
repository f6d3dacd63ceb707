"""C1 · Encoder and decoder: the original Transformer, trained to read dates, taken apart."""
import streamlit as st

from core.lab.date_lab import (
    norm_stats,
    relu_off,
    right_answer,
    standardise,
    teacher_forced,
)
from core.models.encdec import DecoderLayer, EncoderLayer, FeedForward, cross_attend, greedy
from core.text.dates import parse, unknown_characters
from ui.c1_encoder_decoder import decoding_view, ffn_view, norm_view, sublayer_view
from ui.date_model import checkpoint_available, checkpoints, date_model, reading
from ui.frame import (
    choice,
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    plain,
    ranged_slider,
    slide,
    text_box,
    tr,
    try_this,
)
from viz.block import tensor_heatmap
from viz.encdec import alignment_map, forcing_grid, in_out, stacks_diagram, step_probs, sublayers, with_marks
from viz.encdec import norm_stats as norm_chart

NS = "c1"
# Out of style on purpose: capital letters the model never saw in training. It hesitates (81 %
# at the month's second digit) and gets the month wrong, so the decoding figures show real
# distributions and teacher forcing on the right answer differs from the model's own steps.
DEFAULT_DATE = "MONDAY, 30 NOVEMBER 2026"
DEFAULT_PART, DEFAULT_NORM = "decoder.cross_attn", "encoder.layers.0.self_attn_norm"
FEEDS = ["answer", "own"]      # what teacher forcing feeds the decoder (language-neutral: the URL)
# The decoding section opens on the model saved after 150 of its 1,200 training steps: the shipped
# one is sure of every character of the default date (every step's largest probability 1.00 but
# one), so its bars show nothing of a choice. At 150 it makes the same mistake (2026-10-30),
# unsure: its chosen characters' probabilities run from 0.58 to 1.00.
DEFAULT_CKPT = 150
# And on step 5 of its decoding, the month's first digit of a YYYY-MM-DD date: at 150 steps it
# writes the right "1" with 58 %, against 39 % for "0" (step 0, the year's "2", is certain).
DEFAULT_STEP = 5
MAX_DATE = 31                  # the model has 32 positions: the text and its <eos>
# Language-neutral choices (they go into the URL): stack and sub-layer, as in the trace names.
PARTS = [f"{stack}.{part}" for stack in ("encoder", "decoder") for part in sublayers(stack)]
BOX, WHAT = f"{NS}.box", f"{NS}.what"      # c1.box.<part>: diagram labels; c1.what.<part>: one line on it
WEIGHTS_CAPTION = {"self_attn": f"{NS}.weights_caption_self_attn", "cross_attn": f"{NS}.weights_caption_cross_attn"}
DIAGRAM_LABELS = ("self_attn", "self_attn_norm", "cross_attn", "ffn", "masked", "embed_src", "embed_tgt",
                  "linear", "encoder", "decoder")

header(NS)
dev = device()
loaded = date_model(dev)


def example_controls():
    text = text_box(f"{NS}.date", DEFAULT_DATE, MAX_DATE, tr(f"{NS}.date_label"))
    return DEFAULT_DATE if text.empty else text.text


def clicked_sublayer() -> None:
    """The diagram's click (before the rerun): the box's dotted name sets the layer and the
    sub-layer controls, as if they had been moved ("decoder.layers.1.cross_attn")."""
    value = st.session_state.get(f"{NS}.diagram")
    name = value.get("select") if hasattr(value, "get") else None
    parts = name.split(".") if isinstance(name, str) else []
    if len(parts) == 4 and parts[1] == "layers" and parts[2].isdigit() and f"{parts[0]}.{parts[3]}" in PARTS:
        st.session_state[f"{NS}.layer"] = int(parts[2])
        st.session_state[f"{NS}.part"] = f"{parts[0]}.{parts[3]}"


def sublayer_controls(n_layers: int):
    # Set by a click on the diagram too: the defaults go into the session's state once, not as
    # arguments (a widget given a default and also set through st.session_state makes Streamlit warn).
    st.session_state.setdefault(f"{NS}.layer", 0)
    st.session_state.setdefault(f"{NS}.part", DEFAULT_PART)
    c1, c2 = st.columns([1, 2])
    with c1:
        layer = st.slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, key=f"{NS}.layer", bind="query-params")
    with c2:
        part = st.selectbox(tr(f"{NS}.part_label"), PARTS, key=f"{NS}.part", bind="query-params",
                            help=tr(f"{NS}.part_help"))
    stack, sub = (part or DEFAULT_PART).split(".")
    return stack, int(layer), sub


def step_controls(n: int):
    # Its range follows the model: an early checkpoint may write <eos> sooner or never.
    return ranged_slider(tr(f"{NS}.step_label"), 0, n - 1, min(DEFAULT_STEP, n - 1), key=f"{NS}.step",
                         help=tr(f"{NS}.step_help"))


def checkpoint_controls(steps: list[int]) -> int:
    """Which model the decoding section reads: the shipped one (the last step) or one saved earlier
    in its training (assets/date_model_checkpoints.json), when it was unsure; DEFAULT_CKPT first."""
    default = DEFAULT_CKPT if DEFAULT_CKPT in steps else steps[-1]
    return st.select_slider(tr(f"{NS}.ckpt_label"), steps, value=default, key=f"{NS}.ckpt",
                            bind="query-params", help=tr(f"{NS}.ckpt_help"))


def num(x: float, digits: int = 3) -> str:
    """``digits`` decimals, without the "-0.000" of a tiny negative rounding error."""
    text = f"{float(x):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def shape(a) -> str:
    return "(" + ", ".join(str(v) for v in a.shape) + ")"


# ---------------------------------------------------------------- fixed layout, filled by fragments
slot = {"example": st.container()}
st.subheader(tr(f"{NS}.stacks_title"))
st.markdown(tr(f"{NS}.stacks_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.stacks_title")))
st.caption(tr(f"{NS}.marks"))          # the key to the special tokens' marks on every axis below
left, right = st.columns([1, 1])
slot["diagram"], slot["controls"], slot["io"] = left.container(), right.container(), right.container()
slot["detail"] = st.container()
# Fixed, not refilled by the fragment: both layers' code names every sub-layer in order, shown
# in full (in a 520 px box the decoder's code was cut off below the encoder's).
code_panel(EncoderLayer.forward, DecoderLayer.forward, cross_attend, height=None)
# Code panels run the full width under their figures: beside a figure, at 1024 px, they
# would scroll sideways. The functions shown are wrapped to 66 characters.
st.subheader(tr(f"{NS}.norm_title"))
st.markdown(tr(f"{NS}.norm_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.norm_title")))
slot["norm_controls"], slot["norm"] = st.container(), st.container()
code_panel(standardise, norm_stats, height=None)

st.subheader(tr(f"{NS}.ffn_title"))
st.markdown(tr(f"{NS}.ffn_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.ffn_title")))
slot["ffn_controls"], slot["ffn"] = st.container(), st.container()
code_panel(FeedForward, relu_off, height=None)

st.subheader(tr(f"{NS}.decode_title"))
st.markdown(tr(f"{NS}.decode_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.decode_title")))
slot["feed_controls"], slot["step_controls"] = st.container(), st.container()
slot["decode"], slot["forcing"] = st.container(), st.container()
slot["forcing_caption"] = st.container()
code_panel(greedy, teacher_forced, height=None)


def example_section() -> str:
    """The example, for every section below, and what the model writes for it: a new text
    reruns the whole page."""
    with slot["example"]:
        text = example_controls()
        unknown = unknown_characters(text)
        answer = right_answer(text)
        if unknown:
            st.warning(tr(f"{NS}.unknown", chars=" ".join(f"「{plain(c)}」" for c in unknown)))
        if answer is None:
            st.warning(tr(f"{NS}.not_a_date"))
        elif parse(text) is None:
            st.info(tr(f"{NS}.out_of_style"))
        output = reading(text, dev)["output"]
        wrote = f"`{output}`" if output else tr(f"{NS}.nothing")
        if answer is None:
            st.markdown(tr(f"{NS}.attempt", output=wrote))
        elif output == answer:
            st.success(tr(f"{NS}.right", output=wrote))
        else:
            st.info(tr(f"{NS}.wrong", output=wrote, iso=answer))   # the example is wrong on purpose
    return text


@fragment
def sublayer_sections(text: str):
    """Reruns alone when the layer or the sub-layer moves; writes only into its slots."""
    n_layers = loaded[0].config.n_layers
    with slot["controls"]:
        stack, layer, sub = sublayer_controls(n_layers)
    name = f"{stack}.layers.{layer}.{sub}"
    labels = {k: tr(f"{BOX}.{k}") for k in DIAGRAM_LABELS}
    labels.update(cross_attn_norm=labels["self_attn_norm"], ffn_norm=labels["self_attn_norm"])
    with slot["diagram"]:
        # ui.chart directly: ui.frame.figure has no click (on_select) to pass on yet.
        # A click on a sub-layer opens it (on_select).
        figure(stacks_diagram(name, n_layers, labels), f"{NS}.diagram", present_height=None,
               on_select=clicked_sublayer)
        st.caption(tr(f"{NS}.diagram_caption"))
    v = sublayer_view(text, stack, layer, sub, dev)
    rows = v["rows"]
    with slot["io"]:
        st.markdown(f"**`{name}`** — {tr(f'{WHAT}.{sub}')}")
        figure(in_out(v["in"], v["out"], rows, titles=(tr(f"{NS}.input"), tr(f"{NS}.output")),
                      hover_names=(tr(f"{NS}.token"), tr(f"{NS}.column"), tr(f"{NS}.value")),
                      height=max(300, 22 * len(rows) + 90)), key=f"{NS}.io")
        st.caption(tr(f"{NS}.io_caption", inp=v["in_name"], out=v["out_name"], shape=shape(v["out"])))
    with slot["detail"]:
        if "weights" in v:
            st.markdown(f"**`{name}.weights`** · {tr(f'{NS}.weights_fig')}")
            figure(alignment_map(v["weights"], rows, v["cols"],
                                 hover_names=(tr(f"{NS}.token"), tr("common.key"), tr("common.weight")),
                                 height=max(300, 24 * len(rows) + 70)), key=f"{NS}.weights")
            st.caption(tr(WEIGHTS_CAPTION[sub]))
        else:
            st.caption(tr(f"{NS}.detail_elsewhere"))


def pick(key: str, label: str, options: list[str], default: str) -> str:
    value = st.selectbox(label, options, index=options.index(default), key=key, bind="query-params")
    return value or default


@fragment
def norm_section(text: str):
    """Reruns alone when its Add & Norm is changed."""
    n_layers = loaded[0].config.n_layers
    names = [f"{stack}.layers.{i}.{p}" for stack in ("encoder", "decoder") for i in range(n_layers)
             for p in sublayers(stack) if p.endswith("norm")]
    with slot["norm_controls"]:
        name = pick(f"{NS}.norm", tr(f"{NS}.norm_label"), names, DEFAULT_NORM)
    v = norm_view(text, name, dev)
    s, rows = v["stats"], v["rows"]
    with slot["norm"]:
        figure(norm_chart(rows, s, names=(tr(f"{NS}.before"), tr(f"{NS}.standard"), tr(f"{NS}.after")),
                          titles=(tr(f"{NS}.mean"), tr(f"{NS}.variance"))), key=f"{NS}.norm_fig")
        st.caption(tr(f"{NS}.norm_caption", name=name,
                      m0=num(s["mean_before"].min(), 2), m1=num(s["mean_before"].max(), 2),
                      v0=num(s["var_before"].min(), 2), v1=num(s["var_before"].max(), 2),
                      a0=num(s["mean_after"].min(), 2), a1=num(s["mean_after"].max(), 2),
                      b0=num(s["var_after"].min(), 2), b1=num(s["var_after"].max(), 2)))
        head = f"| {tr(f'{NS}.token')} | {tr(f'{NS}.mean')} ↦ | {tr(f'{NS}.variance')} ↦ |\n|---|---|---|\n"
        st.markdown(head + "\n".join(
            f"| {plain(tok) if tok.strip() else '␣'} | {num(s['mean_before'][i])} → {num(s['mean_standard'][i])} "
            f"| {num(s['var_before'][i])} → {num(s['var_standard'][i])} |" for i, tok in enumerate(rows[:4])))


@fragment
def ffn_section(text: str):
    """Reruns alone when its feed-forward is changed."""
    n_layers = loaded[0].config.n_layers
    names = [f"{stack}.layers.{i}.ffn" for stack in ("encoder", "decoder") for i in range(n_layers)]
    with slot["ffn_controls"]:
        name = pick(f"{NS}.ffn", tr(f"{NS}.ffn_label"), names, "decoder.layers.0.ffn")
    v = ffn_view(text, name, dev)
    hidden, rows = v["hidden"], v["rows"]
    with slot["ffn"]:
        st.markdown(f"**`{name}.hidden`** · {tr(f'{NS}.ffn_fig', f=hidden.shape[1])}")
        figure(with_marks(tensor_heatmap(hidden, rows, title=None,
                                         hover_names=(tr(f"{NS}.token"), tr(f"{NS}.unit"), tr(f"{NS}.value")),
                                         height=max(300, 22 * len(rows) + 120))), key=f"{NS}.ffn_fig")
        st.caption(tr(f"{NS}.ffn_caption", f=hidden.shape[1], d=loaded[0].config.d_model, off=100 * v["off_all"],
                      lo=100 * float(v["off"].min()), hi=100 * float(v["off"].max())))


@fragment
def decoding_section(text: str):
    """Reruns alone when the checkpoint, the decoding step or what teacher forcing feeds moves."""
    saved = checkpoints()
    with slot["feed_controls"]:
        # One row: in presenter mode the decoding figure must stay on the slide under them.
        left, right = st.columns(2) if len(saved) > 1 else (None, st.container())
        at = None
        if left is not None:
            with left:
                at = checkpoint_controls([e.step for e in saved])
        with right:
            feed = choice(tr(f"{NS}.feed_label"), FEEDS, f"{NS}.feed",
                          [tr(f"{NS}.feed_answer"), tr(f"{NS}.feed_own")], widget="segmented")
    entry = next((e for e in saved if e.step == at), None)
    if entry is not None and entry is not saved[-1] and not checkpoint_available(dev, entry.step):
        entry = saved[-1]                  # a damaged file: said above, and the shipped model decodes
    ckpt = None if entry is None or entry is saved[-1] else entry.step
    d = decoding_view(text, feed, dev, ckpt)
    steps = len(d["stepped"])
    with slot["step_controls"]:
        step = min(step_controls(steps), steps - 1)
    chosen = d["ids"][step]
    own_fed = reading(text, dev, ckpt)["fed"]
    with slot["decode"]:
        so_far = "".join(own_fed[1: step + 1])
        st.markdown(tr(f"{NS}.step_line", step=step, fed=f"`<bos>{so_far}`", chosen=f"`{d['vocab'][chosen]}`",
                       p=100 * float(d["stepped"][step][chosen])))
        st.markdown(f"**{tr(f'{NS}.step_fig', step=step)}**")
        figure(step_probs(d["vocab"], d["stepped"][step], chosen, title=None, y_title=tr(f"{NS}.probability"),
                          forced=d["forced"][step] if step < len(d["forced"]) else None,
                          names=(tr(f"{NS}.stepped_name"), tr(f"{NS}.forced_name")),
                          height=max(320, 24 * steps + 130)), key=f"{NS}.probs")
        st.caption(tr(f"{NS}.marks"))      # the marks stand in the vocabulary, next to the digits
        if entry is not None:   # under the figure: on a slide, the figure comes first
            written = " · ".join(f"`{d['vocab'][i]}` {100 * float(p[i]):.0f} %"
                                 for i, p in zip(d["ids"], d["stepped"], strict=False))
            st.caption(tr(f"{NS}.ckpt_caption", step=entry.step, total=saved[-1].step, loss=entry.loss,
                          acc=100 * entry.exact_match, output=f"`{d['output']}`" if d["output"] else tr(f"{NS}.nothing"),
                          line=written))
            if ckpt is not None:
                st.caption(tr(f"{NS}.ckpt_why"))
            if ckpt == DEFAULT_CKPT:
                st.caption(tr(f"{NS}.ckpt_default", step=DEFAULT_CKPT, total=saved[-1].step))
    n = len(d["fed"])
    with slot["forcing"]:
        st.markdown(f"**{tr(f'{NS}.forcing_fig', n=n)}**")
        figure(forcing_grid(d["forced"], d["fed"], d["vocab"], min(step, n - 1), title=None,
                            hover_names=(tr(f"{NS}.read"), tr(f"{NS}.next"), tr(f"{NS}.probability")),
                            height=max(320, 24 * n + 130)), key=f"{NS}.forcing")
    with slot["forcing_caption"]:
        if d["answer"] is None:
            st.caption(tr(f"{NS}.forcing_caption", diff=d["diff"]))
        elif d["first"] is None:
            st.caption(tr(f"{NS}.forcing_same", answer=d["answer"], diff=d["diff"]))
        else:
            t = d["first"]
            st.caption(tr(f"{NS}.forcing_answer", answer=d["answer"], output=d["output"], t=t,
                          fed=d["fed"][t], own=own_fed[t] if t < len(own_fed) else "<eos>", diff=d["diff"]))


if loaded:
    example = example_section()
    sublayer_sections(example)
    norm_section(example)
    ffn_section(example)
    decoding_section(example)

st.subheader(tr(f"{NS}.compare_title"))
st.markdown(tr(f"{NS}.compare_text"))
st.markdown(tr(f"{NS}.compare_table", language=lang()))

try_this(NS, [("try1", 2), ("try2", 0), ("try3", 1)])
