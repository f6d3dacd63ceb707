"""B1 · Scaled dot-product attention."""
import functools
import math

import streamlit as st

from core.lab import toy
from core.lab.attention_lab import cell_arithmetic, scaling_by_width
from core.lab.real_attention import prompt_ids
from core.lab.real_tokens import dropped_note
from core.parts.attention import scaled_dot_product_attention
from ui.b1_attention import ENTROPY_KEYS, HIST_N, REAL_TOKENS, TRAINED, WIDTHS, D, scale_demo, steps_demo
from ui.classroom import presenting
from ui.explorer import explorer
from ui.frame import (
    beside_code,
    choice,
    device,
    figure,
    fragment,
    header,
    lang,
    plain,
    ranged_slider,
    repeat_control,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.model import course_model, real_model
from viz.attention import batch_grid, heatmap, histogram, lines, steps_grid, weight_top

NS = "b1"
DEFAULT_TEXT = "君不见，黄河之水天上来"
SOURCES = ["random", "course", "smollm2"]   # ids in the URL (b1.source=smollm2); "course" links still work
REAL_TEXT = "The cat sat on the mat because it was tired."   # SmolLM2 reads English: its example
BATCH = ["黄河之水天上来", "奔流到海不复回", "人生得意须尽欢"]   # three lines of one length: a batch of B = 3
PANELS = [f"{NS}.panel_q", f"{NS}.panel_k", f"{NS}.panel_v", f"{NS}.panel_scores", f"{NS}.panel_weights",
          f"{NS}.panel_output"]

header(NS)


def text_controls() -> tuple[int, st.delta_generator.DeltaGenerator, st.delta_generator.DeltaGenerator]:
    """The seed (a change redraws the page), a slot for the text box and one for d_k and d_v:
    both filled by the matrix section's fragment, since the box's label follows the source."""
    c1, c2, c3 = st.columns([3, 2, 1])
    with c3:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    return int(seed), c1.container(), c2.container()


def text_input(source: str) -> tuple[str, bool]:
    """The text (the example when empty) and whether it is the student's own. The label says how
    the source reads it; on SmolLM2 a note under the box says which text it reads instead of
    the page's Chinese example."""
    label = tr(f"{NS}.text_label_real") if source == "smollm2" else tr(f"{NS}.text_label")
    text = text_box(f"{NS}.text", DEFAULT_TEXT, 48, label)
    typed = not text.empty and text.text != DEFAULT_TEXT
    if source == "smollm2" and (loaded := real_model(dev)) and (note := dropped_note(loaded[1], text.text)):
        st.warning(tr("real.dropped", **note))                   # bytes SmolLM2 has no token for
    if source == "smollm2" and not typed:
        st.caption(tr(f"{NS}.real_example", text=plain(REAL_TEXT)))
    return (text.text if not text.empty else DEFAULT_TEXT), typed


def width_controls(slot) -> tuple[int, int]:
    """d_k (queries and keys) and d_v (values, and so the output): only d_k must be shared."""
    with slot:
        c1, c2 = st.columns(2)
        with c1:
            d_k = st.slider("d_k", 1, 64, 8, key=f"{NS}.d_k", bind="query-params", help=tr(f"{NS}.d_k_help"))
        with c2:
            d_v = st.slider("d_v", 1, 64, 8, key=f"{NS}.d_v", bind="query-params", help=tr(f"{NS}.d_v_help"))
    return int(d_k), int(d_v)


def scale_controls():
    """The width is the histogram's own live slider (ui.live): read here, drawn with the figure."""
    return int(live_value(f"{NS}.width", WIDTHS, 64))


def hist_frames(seed: int) -> list:
    """The histogram at every width (the live slider's frames), from one core call."""
    raw, scaled = tr(f"{NS}.raw"), tr(f"{NS}.scaled")
    return [histogram({raw: s["scores_raw"].numpy(), scaled: s["scores_scaled"].numpy()},
                      title=tr(f"{NS}.hist_fig", d_k=w) + "<br>" + tr(f"{NS}.live.hist_entropy",
                                                                    raw=float(s["mean_entropy_raw"]),
                                                                    scaled=float(s["mean_entropy_scaled"])),
                      x_title=tr("common.score"), y_title=tr(f"{NS}.density"))
            for w, s in zip(WIDTHS, scaling_by_width(WIDTHS, HIST_N, seed), strict=True)]


# The page's fixed parts (prose, the code) are laid out once; each fragment below refills only
# its own slots, so a slider move re-sends its figures, not the page. The text and the seed
# change both sections: they rerun the page.
seed, text_slot, d_k_slot = text_controls()
dev = device()
slot = {}
st.subheader(tr(f"{NS}.matrix_title"))
slot["source"] = st.container()
# In presenter mode the six panels get a slide of their own (with the row and column again): under
# the source's controls and caption they were squeezed to 300 px at 1280x720.
slide(tr("classroom.slide.continued", title=tr(f"{NS}.matrix_title")))
slot["matrix"] = st.container()      # six panels need the page's whole width
slot["cell"] = beside_code(scaled_dot_product_attention, cell_arithmetic)
st.subheader(tr(f"{NS}.scale_title"))
st.markdown(tr(f"{NS}.scale_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.scale_title")))
slot["scale"] = st.container()
st.subheader(tr(f"{NS}.batch_title"))
st.markdown(tr(f"{NS}.batch_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.batch_title")))
slot["batch"] = beside_code(toy.batch_attention, height=420)


def trained(source: str):
    """The (model, tokenizer) of a trained source, or None (ui.model has said why)."""
    return real_model(dev) if source == "smollm2" else course_model(dev)


def source_text(source: str, text: str, typed: bool) -> tuple[str, int]:
    """The text a source reads and its token count. SmolLM2 knows English: on the page's Chinese
    example (the box untouched or empty) it reads its own English one."""
    if source != "smollm2":
        return text, len(text)
    text = text if typed else REAL_TEXT
    return text, min(len(prompt_ids(trained(source)[1], text, REAL_TOKENS, bos=False)[0]), REAL_TOKENS)


def source_controls():
    """Where Q, K, V come from, the text (in its slot at the top), and which cell to work out."""
    c1, c2, c3, c4 = st.columns([3, 1, 1, 2])
    with c1:
        source = choice(tr(f"{NS}.source_label"), SOURCES, f"{NS}.source",
                        {"random": tr(f"{NS}.source_random"), "course": tr(f"{NS}.source_course"),
                         "smollm2": tr(f"{NS}.source_real")}, widget="segmented")
    if source == "smollm2" and trained(source) is None:
        source = "course"                        # ui.model's note said why; the course model instead
    if source == "course" and trained(source) is None:
        source = "random"
    layer = head = 0
    if source in TRAINED:
        cfg = trained(source)[0].config
        # The range follows the model (4 × 4 or 30 × 9): ranged_slider clamps a value beyond it.
        with c2:
            layer = ranged_slider(tr(f"{NS}.layer_label"), 0, cfg.n_layers - 1, 0, key=f"{NS}.layer")
        with c3:
            head = ranged_slider(tr(f"{NS}.head_label"), 0, cfg.n_heads - 1, 0, key=f"{NS}.head")
    with text_slot:
        text, typed = text_input(source)
    read, n = source_text(source, text, typed)
    with c4:
        # A new text length clamps the chosen cell, and a longer one brings it back (ranged_slider).
        r = ranged_slider(tr(f"{NS}.row_label"), 0, n - 1, min(3, n - 1), key=f"{NS}.r")
        c = ranged_slider(tr(f"{NS}.col_label"), 0, n - 1, 0, key=f"{NS}.c")
    return source, read, layer, head, r, c


def shape_rows(source: str, n: int, d_model: int, d_k: int, d_v: int) -> list[tuple[str, str]]:
    """The tensors of one call with their shapes, from the widths actually used (the model's
    config in course mode: one head's slice of each projection)."""
    if source in TRAINED:
        w = [(tr(f"{NS}.shape_wq_head"), f"({d_model}, {d_k})"), (tr(f"{NS}.shape_wkv_head"), f"({d_model}, {d_k})")]
    else:
        w = [("W_q, W_k", f"({d_model}, {d_k})"), ("W_v", f"({d_model}, {d_v})")]
    return [("X", f"({n}, {d_model})"), *w, ("Q, K", f"({n}, {d_k})"), ("V", f"({n}, {d_v})"),
            ("QKᵀ/√d_k, softmax", f"({n}, {n})"), (tr(f"{NS}.output"), f"({n}, {d_v})")]


@fragment
def matrix_section(seed: int, dev: str):
    """Section 1; reruns alone when the text, the source, d_k or d_v moves."""
    with slot["source"]:
        source, text, layer, head, r, c = source_controls()
        st.caption(tr({"random": f"{NS}.random_intro", "course": f"{NS}.course_intro",
                       "smollm2": f"{NS}.real_intro"}[source]))
    if source in TRAINED:
        cfg = trained(source)[0].config
        d_model = cfg.d_model
        with d_k_slot:     # the model fixes the widths: no slider that would do nothing
            st.caption(tr(f"{NS}.course_widths", d_head=cfg.d_head))
        d_k = d_v = cfg.d_head
    else:
        d_model = D
        d_k, d_v = width_controls(d_k_slot)
    if source == "smollm2":
        with st.spinner(tr(f"{NS}.real_running")):
            demo = steps_demo(text, source, d_k, d_v, layer, head, seed, dev)
        if demo["n_ids"] > len(demo["tokens"]):
            slot["source"].warning(tr(f"{NS}.real_cut", n=demo["n_ids"], limit=len(demo["tokens"])))
    else:
        demo = steps_demo(text, source, d_k, d_v, layer, head, seed, dev)
    tokens = demo["tokens"]
    r, c = min(r, len(tokens) - 1), min(c, len(tokens) - 1)
    with slot["matrix"]:
        hover = (tr("common.query"), tr("common.key"), tr(f"{NS}.value"))
        names = [tr(key) for key in PANELS]
        title = (tr(f"{NS}.steps_fig_course", layer=layer, head=head) if source == "course"
                 else tr(f"{NS}.steps_fig_real", layer=layer, head=head) if source == "smollm2"
                 else tr(f"{NS}.weights_fig", d_k=d_k, d_v=d_v))
        grid = functools.partial(steps_grid, demo["q"], demo["k"], demo["v"], demo["scores"], demo["weights"],
                                 demo["output"], tokens, titles=names, cell=(r, c), hover=hover,
                                 masked=demo["masked"],
                                 bar_titles=(tr(f"{NS}.value"), tr("common.score"), tr("common.weight")),
                                 value_titles=(tr(f"{NS}.scale_qk"), tr(f"{NS}.scale_vo")))
        if presenting():
            # Two rows of three panels were 112 px each on a 1280x720 slide: Q, K, V on one slide,
            # scores, weights and output on the next, each with the row and the column again.
            for part, copy in (((0, 1, 2), "again"), ((3, 4, 5), "again2")):
                if copy == "again2":
                    slide(tr(f"{NS}.mix_slide"))
                again_r, again_c = st.columns(2)
                with again_r:
                    repeat_control(st.slider, tr(f"{NS}.row_label"), 0, len(tokens) - 1, key=f"{NS}.r", copy=copy)
                with again_c:
                    repeat_control(st.slider, tr(f"{NS}.col_label"), 0, len(tokens) - 1, key=f"{NS}.c", copy=copy)
                figure(grid(show=part, title=title if copy == "again" else None),
                       key=f"{NS}.weights" if copy == "again" else f"{NS}.weights_mix")
        else:
            figure(grid(title=title), key=f"{NS}.weights")
        # For a projector: the weights alone, the page's whole width (off by default: no cost).
        if st.toggle(tr(f"{NS}.large_label"), value=False, key=f"{NS}.large", bind="query-params"):
            figure(heatmap(demo["weights"], tokens, tokens, title=tr(f"{NS}.large_fig"), hover_names=hover,
                           masked=demo["masked"], zmax=weight_top(demo["weights"]),
                           colorbar_title=tr("common.weight"), height=640), key=f"{NS}.large_fig")
    with slot["cell"]:
        st.caption(tr(f"{NS}.read_matrix"))
        # The row the softmax read (closed keys at −∞): its m, e and Σ give the framed weight.
        cell = cell_arithmetic(demo["steps"], r, c, demo["mask"])
        st.markdown(tr(f"{NS}.cell_steps_masked" if cell["masked"] else f"{NS}.cell_steps", r=r, c=c,
                       dot=cell["dot"], root=cell["sqrt_d_k"], d_k=d_k, score=cell["score"], top=cell["max"],
                       shift=cell["shift"], e=cell["exp"], total=cell["row_sum"], weight=cell["weight"],
                       seen=cell["seen"]))
        if source in TRAINED:
            st.caption(tr(f"{NS}.course_note", d_head=d_k, d=d_model, heads=cfg.n_heads, kv=cfg.n_kv_heads))
        shapes_table(shape_rows(source, len(tokens), d_model, d_k, d_v))


@fragment
def scale_section(seed: int):
    """Section 2; reruns alone when the width moves."""
    with slot["scale"]:
        width = scale_controls()
        demo = scale_demo(width, seed)
        c1, c2 = st.columns(2)
        with c1:
            raw, scaled = tr(f"{NS}.raw"), tr(f"{NS}.scaled")
            live_figure(lambda: hist_frames(seed), ("b1.hist", seed, lang()), f"{NS}.hist", f"{NS}.width",
                        WIDTHS, 64, tr(f"{NS}.width_label"))
            st.caption(tr(f"{NS}.variance", d_k=width, raw=float(demo["scores_raw"].var()),
                          scaled=float(demo["scores_scaled"].var())))
        with c2:
            at = WIDTHS.index(width)
            mine = tr(f"{NS}.current", d_k=width)
            figure(lines(WIDTHS, {raw: demo["curve_raw"], scaled: demo["curve_scaled"],
                                  mine: [math.nan] * at + [float(demo["curve_raw"][at])]
                                  + [math.nan] * (len(WIDTHS) - at - 1)},
                         title=tr(f"{NS}.entropy_fig"), x_title="d_k", y_title=tr(f"{NS}.entropy_axis"),
                         log_x=True, markers=True, legend_below=True,
                         styles={mine: {"mode": "markers", "marker": {"size": 18, "symbol": "star",
                                                                      "color": "#d62728",
                                                                      "line": {"color": "black", "width": 1}}}}),
                   key=f"{NS}.entropy")
            st.caption(tr(f"{NS}.entropy_caption", n=ENTROPY_KEYS, max=math.log(ENTROPY_KEYS)))


@fragment
def batch_section(seed: int, dev: str):
    """Section 3: three texts of one length, attended in one call; reruns alone with its d_k."""
    with slot["batch"]:
        d_k = st.select_slider(tr(f"{NS}.batch_d_k"), [2, 4, 8, 16, 32], value=8, key=f"{NS}.batch_d_k",
                               bind="query-params")
        attn = toy.batch_attention(BATCH, D, d_k, seed, dev)
        figure(batch_grid(attn.weights, [list(t) for t in BATCH],
                          titles=[tr(f"{NS}.batch_panel", b=b) for b in range(len(BATCH))],
                          hover=(tr("common.query"), tr("common.key"), tr("common.weight")),
                          title=tr(f"{NS}.batch_fig", b=len(BATCH), n=len(BATCH[0])), bar_title=tr("common.weight")),
               key=f"{NS}.batch")
        shapes_table([("X", f"({len(BATCH)}, {len(BATCH[0])}, {D})"), ("Q, K, V", f"({len(BATCH)}, {len(BATCH[0])}, {d_k})"),
                      ("QKᵀ/√d_k, softmax", f"({len(BATCH)}, {len(BATCH[0])}, {len(BATCH[0])})"),
                      (tr(f"{NS}.output"), f"({len(BATCH)}, {len(BATCH[0])}, {d_k})")])


matrix_section(seed, dev)
scale_section(seed)
batch_section(seed, dev)

explorer(NS, open_by_default=False)

try_this(NS, [("try1", 1), ("try2", 2), ("try3", 0)])
