"""B2 · Multi-head attention."""
import numpy as np
import streamlit as st

from core.lab.attention_lab import parameter_counts, seeded_mha
from core.lab.real_tokens import dropped_note
from core.parts.mha import MultiHeadAttention, merge_heads, split_heads
from ui.b2_heads import heads_demo
from ui.explorer import REAL_PROMPT, explorer, traced, traced_real
from ui.frame import (
    beside_code,
    device,
    figure,
    fragment,
    header,
    plain,
    ranged_slider,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.model import REAL, course_model, model_switch, real_model, real_model_available
from viz.attention import head_bands, head_grid, head_param_bars, head_split, weight_top

NS = "b2"
DEFAULT_TEXT = "君不见，黄河之水天上来"
HEADS = [1, 2, 4, 8]
WIDTHS = [16, 32, 64, 128]
REAL_TOKENS = 48           # tokens of SmolLM2's layer shown (the causal rows of a longer text are the same)

header(NS)


def smollm2_chosen() -> bool:
    """Whether the trained layer below reads SmolLM2: the switch is drawn under the text box,
    so its value is read here (the switch's rerun of the fragment redraws the box too)."""
    picked = st.session_state.get(f"{NS}.lm", st.query_params.get(f"{NS}.lm"))
    return picked == REAL and real_model_available()


def text_controls():
    real = smollm2_chosen()
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_TEXT, 32, tr(f"{NS}.text_label_real" if real else f"{NS}.text_label"))
        if real and (loaded := real_model(device())) and (note := dropped_note(loaded[1], text.text)):
            st.warning(tr("real.dropped", **note))               # bytes SmolLM2 has no token for
        if real and (text.empty or text.text == DEFAULT_TEXT):
            st.caption(tr(f"{NS}.real_example", text=plain(REAL_PROMPT)))
    with c2:
        h = st.select_slider(tr(f"{NS}.heads_label"), HEADS, value=4, key=f"{NS}.heads", bind="query-params")
    with c3:
        d = st.select_slider(tr(f"{NS}.width_label"), WIDTHS, value=32, key=f"{NS}.d_model", bind="query-params")
    with c4:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    typed = not text.empty and text.text != DEFAULT_TEXT
    return (text.text if not text.empty else DEFAULT_TEXT), typed, int(h), int(d), int(seed)


def shape(t: tuple) -> str:
    return "(" + ", ".join(str(v) for v in t) + ")"


def real_heads(text: str, typed: bool, dev: str, loaded) -> None:
    """The 9 query heads of one layer of SmolLM2 on the same text (or, on the page's Chinese
    example, on an English one): three groups of three heads, each group reading one key/value head."""
    cfg = loaded[0].config
    group = cfg.n_heads // cfg.n_kv_heads
    # The range follows the model switch: ranged_slider clamps a value beyond it. Layer 16 has a
    # previous-token head (head 0).
    layer = ranged_slider(tr(f"{NS}.real_layer"), 0, cfg.n_layers - 1, 16, key=f"{NS}.trained_layer")
    with st.spinner(tr(f"{NS}.real_running")):
        data = traced_real(text if typed else REAL_PROMPT, dev, loaded)
    n = min(len(data["tokens"]), REAL_TOKENS)
    if data["n_ids"] > n:
        st.warning(tr(f"{NS}.real_cut", n=data["n_ids"], limit=n))
    # Causal: the first n rows of a longer text's weights are those of its first n tokens alone.
    weights = data["weights"][layer, :, :n, :n].astype(np.float32)        # (H, n, n)
    top = weight_top(weights)
    tokens = ["bos" if i == 0 else t for i, t in enumerate(data["tokens"][:n])]   # <|im_start|>, short
    # A row a group of heads sharing a key/value head: three columns, up to 9 tokens; beyond,
    # two (at 1024 px a third of the chart is narrower than a column of turned word labels).
    figure(head_grid(weights, tokens, titles=[tr(f"{NS}.head_kv", i=i, kv=i // group) for i in range(cfg.n_heads)],
                     cols=group if n <= 9 else 2, hover_names=(tr("common.query"), tr("common.key"), tr("common.weight")),
                     height_per_row=300, zmax=top, colorbar_title=tr("common.weight"), key_labels=True),
           key=f"{NS}.trained")
    st.caption(tr(f"{NS}.read_trained_real", layer=layer, heads=cfg.n_heads, kv=cfg.n_kv_heads, group=group,
                  d_head=cfg.d_head, top=top))


def trained_heads(text: str, typed: bool, dev: str) -> None:
    """Every head of one layer of a trained model on the same text, on one colour scale:
    beside the random heads above, these do differ (some look back one character, some at the
    punctuation). The course model by default; SmolLM2 on the switch (b2.lm)."""
    if model_switch(NS) == REAL:
        loaded = real_model(dev)        # None: ui.model has said why; the course model follows
        if loaded is not None:
            real_heads(text, typed, dev, loaded)
            return
    loaded = course_model(dev)          # None: ui.model has said why
    if loaded is None:
        return
    cfg = loaded[0].config
    layer = ranged_slider(tr(f"{NS}.trained_layer"), 0, cfg.n_layers - 1, 1, key=f"{NS}.trained_layer")
    data = traced(text, dev)
    weights = data["weights"][layer]                                         # (H, N, N)
    top = weight_top(weights)
    tokens = ["bos" if t == "<bos>" else t for t in data["tokens"]]     # short: fits a column at 1024 px
    figure(head_grid(weights, tokens, titles=[tr(f"{NS}.head_short", i=i) for i in range(cfg.n_heads)],
                     cols=2, hover_names=(tr("common.query"), tr("common.key"), tr("common.weight")),
                     height_per_row=300, zmax=top, colorbar_title=tr("common.weight"), key_labels=True),
           key=f"{NS}.trained")
    st.caption(tr(f"{NS}.read_trained", layer=layer, heads=cfg.n_heads, d_head=cfg.d_head, top=top))


# The page's fixed parts are laid out once; the fragment below refills only the slots that
# depend on the controls, so a slider move re-sends the figures, not the prose and the code.
controls = st.container()
grid_head = st.container()
# The grid comes from the module's forward, which runs these three steps (no RoPE or cache here).
grid_slot = beside_code(MultiHeadAttention.queries, MultiHeadAttention.keys_values, MultiHeadAttention.attend,
                        seeded_mha)
st.subheader(tr(f"{NS}.trained_title"))
trained_slot = st.container()        # the same text through a trained layer: heads that do differ
st.subheader(tr(f"{NS}.reshape_title"))
st.markdown(tr(f"{NS}.reshape_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.reshape_title")))
split_slot = st.container()          # the three panels need the page's width
reshape_slot = beside_code(split_heads, merge_heads, height=640)
st.subheader(tr(f"{NS}.params_title"))
st.markdown(tr(f"{NS}.params_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.params_title")))
params_slot = beside_code(parameter_counts, height=420)


@fragment
def lesson_body():
    """Reruns alone when one of its controls moves (st.fragment), and writes only into the
    slots above: the code panels, the prose, the explorer and the questions stay put."""
    with controls:
        text, typed, h, d, seed = text_controls()
    dev = device()
    demo = heads_demo(text, d, h, seed, dev)
    tokens, n, d_head = demo["tokens"], len(demo["tokens"]), d // h
    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    grid_head.subheader(tr(f"{NS}.grid_title", h=h, d_head=d_head))
    heads = [tr(f"{NS}.head_short", i=i) for i in range(h)]      # counted from 0, as the code does
    with grid_slot:
        # One colour scale for every head, ending at the largest weight shown: on 0..1 random heads
        # of width 4-8 (weights ~1/N) were all pale and looked alike.
        top = weight_top(demo["weights"])
        figure(head_grid(demo["weights"], tokens, titles=heads, cols=2, hover_names=hover,
                         height_per_row=300 if h > 1 else 460, zmax=top, colorbar_title=tr("common.weight"),
                         key_labels=True),
               key=f"{NS}.grid")
        st.caption(tr(f"{NS}.read_grid", top=top))
    with trained_slot:
        trained_heads(text, typed, dev)
    s = demo["shapes"]
    with split_slot:
        figure(head_split(demo["w_q"], demo["q_flat"], demo["q"], tokens, head_names=heads,
                          titles=[tr(f"{NS}.split_wq"), tr(f"{NS}.split_q"), tr(f"{NS}.split_batch")],
                          hover=(tr(f"{NS}.row"), tr(f"{NS}.column"), tr(f"{NS}.value"))), key=f"{NS}.split")
        st.caption(tr(f"{NS}.read_split", h=h, d_head=d_head, d=d, n=n))
    with reshape_slot:
        b = s["x"][0]
        shapes_table([
            ("X", shape(s["x"])),
            ("X W_q", shape((b, n, h * d_head))),
            (".view(B, N, H, d_head)", shape((b, n, h, d_head))),
            (".transpose(1, 2) → Q", shape(s["attn.q"])),
            ("K, V", shape(s["attn.k"])),
            ("QKᵀ/√d_head, softmax", shape(s["attn.weights"])),
            (tr(f"{NS}.per_head_out"), shape(s["attn.q"])),
            (".transpose(1, 2)", shape((b, n, h, d_head))),
            (".reshape(B, N, H·d_head) → concat", shape(s["attn.concat"])),
            ("concat · W_o", shape(s["attn.out"])),
        ])
        st.caption(tr(f"{NS}.round_trip", ok=tr(f"{NS}.yes") if demo["round_trip"] else tr(f"{NS}.no")))
        figure(head_bands(demo["concat"], tokens, h, head_names=heads,
                          title=tr(f"{NS}.concat_fig", n=n, d=d),
                          hover_names=(tr(f"{NS}.token"), tr(f"{NS}.column"), tr(f"{NS}.value"))),
               key=f"{NS}.concat")
        st.caption(tr(f"{NS}.read_concat", d_head=d_head))
    counts = demo["params"]
    with params_slot:
        # The figure names no H: it does not change when H moves (the counts don't), so moving H
        # redraws two figures, not three. The caption below gives the numbers.
        many, one = tr(f"{NS}.many_heads"), tr(f"{NS}.one_head")
        figure(head_param_bars(["W_q", "W_k", "W_v", "W_o"], d * d_head, d * d, h,
                               head_names=heads, group_names=(many, one),
                               row_names=(tr(f"{NS}.many_short"), tr(f"{NS}.one_short")),
                               title=tr(f"{NS}.params_fig", d=d), x_title=tr(f"{NS}.parameters")),
               key=f"{NS}.params")
        st.caption(tr(f"{NS}.params_caption", h=h, d=d, d_head=d_head, per_head=d * d_head,
                      matrix=d * d, total=counts["heads"]["total"]))


lesson_body()


explorer(NS, open_by_default=False)

try_this(NS, [("try1", 0), ("try2", 1), ("try3", 2)])
