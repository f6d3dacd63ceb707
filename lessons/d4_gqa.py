"""D4 · Grouped-query and multi-query attention: query heads share key/value heads."""
import streamlit as st

from core.calc import configs
from core.calc.kv_cache import cache_bytes_by_kv_heads, kv_cache_bytes, kv_groups, kv_head_choices
from core.calc.kv_sharing import used_by
from core.lab.d_real_kv import group_attention, projection_shapes
from core.lab.real_tokens import dropped_note
from core.parts.mha import MultiHeadAttention, repeat_kv
from ui.d4_gqa import REAL_TOKENS, course_attention, real_attention
from ui.frame import (
    choice,
    code_panel,
    device,
    figure,
    fragment,
    header,
    model_labels,
    shapes_table,
    text_box,
    tr,
    try_this,
)
from ui.model import REAL, course_model, model_switch, real_model
from viz.attention import head_grid
from viz.gqa import cache_bars, group_maps, head_map

NS = "d4"
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
DEFAULT_PROMPT = "君不见，黄河之水天上来"
# SmolLM2 reads English. A sentence that comes back: heads that look at the earlier copy show it.
REAL_PROMPT = "The little fox found a red ball. Then the little fox kicked the red ball into the river."
REAL_CHARS = 1024          # the box's limit; the tokens are cut again at REAL_TOKENS
REAL_LAYER = 15
KINDS = {"mha": f"{NS}.kind_mha", "gqa": f"{NS}.kind_gqa", "mqa": f"{NS}.kind_mqa"}

header(NS)


def forget_kv_heads():
    """A new model starts from its own published H_kv, not from the last model's choice."""
    st.session_state.pop(f"{NS}.kv_heads", None)


def sharing_controls():
    c1, c2, c3 = st.columns([3, 2, 2])
    with c2:
        name = choice(tr(f"{NS}.model"), configs.names(), f"{NS}.model", model_labels(configs.names()),
                      default="llama-2-70b", on_change=forget_kv_heads)
    cfg = configs.get(name)
    with c1:
        h_kv = st.select_slider(tr(f"{NS}.kv_heads"), kv_head_choices(cfg.n_heads), value=cfg.n_kv_heads,
                                key=f"{NS}.kv_heads", bind="query-params", help=tr(f"{NS}.kv_heads_help"))
    with c3:
        context = st.select_slider(tr(f"{NS}.context"), CONTEXTS, value=4096, key=f"{NS}.context",
                                   bind="query-params")
    return cfg, h_kv, context


def kind_of(h: int, h_kv: int) -> str:
    return "mha" if h_kv == h else ("mqa" if h_kv == 1 else "gqa")


@fragment
def sharing_sections():
    """Sections 1 and 2 follow the model, H_kv and the context; they rerun alone (st.fragment)
    when one of those moves, leaving the course model's heads and the questions as they are."""
    # 1 · Who reads what (the controls under its title: in presenter mode, on the slide of its map)
    st.subheader(tr(f"{NS}.map_title"))
    cfg, h_kv, context = sharing_controls()
    kind = kind_of(cfg.n_heads, h_kv)
    groups = kv_groups(cfg.n_heads, h_kv)
    left, right = st.columns([1, 1])
    with left:
        figure(head_map(groups, row_names=(tr(f"{NS}.query_heads"), tr(f"{NS}.kv_row")),
                        hover_names=(tr(f"{NS}.query_head"), tr(f"{NS}.kv_head")),
                        title=tr(f"{NS}.map_fig", model=cfg.title, kind=tr(KINDS[kind]), h=cfg.n_heads, h_kv=h_kv)),
               key=f"{NS}.diagram")
        st.markdown(tr(f"{NS}.map_caption", h=cfg.n_heads, h_kv=h_kv, g=cfg.n_heads // h_kv, own=cfg.n_kv_heads))
        shapes_table([
            ("Q = X W_q", f"(B, {cfg.n_heads}, N, {cfg.head_dim})"),
            ("K, V = X W_k, X W_v", f"(B, {h_kv}, S, {cfg.head_dim})"),
            (tr(f"{NS}.cache_row"), f"({cfg.n_layers}, 2, B, {h_kv}, S, {cfg.head_dim})"),
            ("repeat_kv(K), repeat_kv(V)", f"(B, {cfg.n_heads}, S, {cfg.head_dim})"),
            ("softmax(QKᵀ/√d_head)", f"(B, {cfg.n_heads}, N, S)"),
        ])
    with right:
        code_panel(repeat_kv, kv_groups, height=460)

    # 2 · What it saves --------------------------------------------------------------------------
    st.subheader(tr(f"{NS}.cache_title"))
    st.markdown(tr(f"{NS}.cache_text"))
    sizes = cache_bytes_by_kv_heads(cfg, context)
    choices = list(sizes)
    gib = [sizes[c] / 2**30 for c in choices]
    labels = [f"{c}<br>{tr(KINDS[kind_of(cfg.n_heads, c)])}" for c in choices]   # two lines: upright, narrow
    left, right = st.columns([1, 1])
    with left:
        figure(cache_bars(labels, gib, choices.index(h_kv), title=tr(f"{NS}.cache_fig", model=cfg.title, n=context),
                          y_title="GiB", text=[f"{g:,.3g} GiB" for g in gib]),
               key=f"{NS}.cache")
        chosen = sizes[h_kv]
        # Two lines: the product, then its value (one line ran past half the page at 1440 px).
        st.latex(rf"\begin{{aligned}} M_{{KV}} &= 2 \times {cfg.n_layers} \times {h_kv} \times {cfg.head_dim}"
                 rf" \times {context:,} \times 2\ \text{{B}} \\ &= {chosen:,}\ \text{{B}}"
                 rf" \approx {chosen / 2**30:.3g}\ \text{{GiB}} \end{{aligned}}".replace(",", "{,}"))
        st.caption(tr(f"{NS}.cache_caption", mha=sizes[cfg.n_heads] / 2**30, ratio=cfg.n_heads // h_kv))
        if context > cfg.max_seq_len:
            st.warning(tr(f"{NS}.beyond_trained", model=cfg.title, trained=cfg.max_seq_len, context=context))
    with right:
        code_panel(kv_cache_bytes, cache_bytes_by_kv_heads, height=420)


sharing_sections()

# 2b · Why not always MQA: who uses what -------------------------------------------------------------
st.subheader(tr(f"{NS}.why_title"))
header_row = [tr(f"{NS}.col_model"), "H", "H_kv", tr(f"{NS}.col_kind"), tr(f"{NS}.col_source")]
st.markdown(tr(f"{NS}.why_text") + "\n\n" + "\n".join(
    [f"| {' | '.join(header_row)} |", "|---|---:|---:|---|---|"]
    + [f"| {s.title} | {s.n_heads} | {s.n_kv_heads} | {tr(KINDS[s.kind])}"
       + (f"-{s.n_kv_heads}" if s.kind == "gqa" else "") + f" | {s.source} |" for s in used_by()]))

# 3 · A trained model's shared heads: the course model or SmolLM2 --------------------------------
st.subheader(tr(f"{NS}.model_title"))
loaded = course_model(device())


def course_section():
    model, _ = loaded
    mc = model.config
    st.markdown(tr(f"{NS}.model_text", h=mc.n_heads, h_kv=mc.n_kv_heads, g=mc.n_heads // mc.n_kv_heads))
    c1, c2 = st.columns([3, 1])
    with c1:
        text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 64, tr(f"{NS}.prompt_label"))
    with c2:
        layer = st.slider(tr(f"{NS}.layer"), 0, mc.n_layers - 1, mc.n_layers - 1, key=f"{NS}.layer",
                          bind="query-params")
    run = course_attention(DEFAULT_PROMPT if text.empty else text.text, device())
    model_groups = kv_groups(mc.n_heads, mc.n_kv_heads)
    titles = [tr(f"{NS}.head_title", q=h, kv=g) for h, g in enumerate(model_groups)]
    left, right = st.columns([1, 1])
    with left:
        figure(head_grid(run["weights"][layer], run["tokens"], titles=titles, cols=2,
                         hover_names=(tr("common.query"), tr("common.key"), tr("common.weight"))),
               key=f"{NS}.maps")
        st.caption(tr(f"{NS}.maps_caption", layer=layer, g=mc.n_heads // mc.n_kv_heads))
    with right:
        code_panel(MultiHeadAttention.forward, MultiHeadAttention.attend, height=560)   # attend repeats k, v


def real_section(model) -> None:
    """SmolLM2's grouping read off its weights, and the maps of the query heads sharing one KV head."""
    mc = model.config
    shapes = projection_shapes(model)
    h, h_kv = shapes["w_q"][0] // mc.d_head, shapes["w_k"][0] // mc.d_head        # rows / d_head
    groups = kv_groups(h, h_kv)
    st.markdown(tr(f"{NS}.real_text", h=h, h_kv=h_kv, g=h // h_kv, d=mc.d_model, dh=mc.d_head,
                   q=shapes["w_q"][0], k=shapes["w_k"][0]))
    left, right = st.columns([1, 1])
    with left:
        figure(head_map(groups, row_names=(tr(f"{NS}.query_heads"), tr(f"{NS}.kv_row")),
                        hover_names=(tr(f"{NS}.query_head"), tr(f"{NS}.kv_head")),
                        title=tr(f"{NS}.map_fig", model="SmolLM2 135M", kind=tr(KINDS["gqa"]), h=h, h_kv=h_kv),
                        height=240), key=f"{NS}.real_map")
    with right:
        shapes_table([(f"{name}.weight", str(shape)) for name, shape in shapes.items()])
    c1, c2, c3 = st.columns([4, 2, 2])
    with c1:
        text = text_box(f"{NS}.real_prompt", REAL_PROMPT, REAL_CHARS, tr(f"{NS}.real_prompt_label"))
        if note := dropped_note(real_model(device())[1], text.text):      # bytes SmolLM2 has no token for
            st.warning(tr("real.dropped", **note))
    with c2:
        layer = st.slider(tr(f"{NS}.layer"), 0, mc.n_layers - 1, REAL_LAYER, key=f"{NS}.real_layer",
                          bind="query-params")
    with c3:
        kv = st.slider(tr(f"{NS}.real_kv"), 0, h_kv - 1, 0, key=f"{NS}.real_kv", bind="query-params")
    with st.spinner(tr(f"{NS}.real_running")):
        run = real_attention(REAL_PROMPT if text.empty else text.text, layer, device())
    if run["cut"]:
        st.warning(tr(f"{NS}.real_cut", n=REAL_TOKENS))
    if not run["groups"]:
        return
    group = run["groups"][kv]
    titles = [tr(f"{NS}.head_title", q=q, kv=kv) for q in group["heads"]]
    # The page's whole width: three maps side by side, each key named under its column.
    figure(group_maps(group["weights"], run["tokens"], titles=titles,
                      hover_names=(tr("common.query"), tr("common.key"), tr("common.weight"))),
           key=f"{NS}.real_maps")
    left, right = st.columns([1, 1])
    with left:
        st.caption(tr(f"{NS}.real_caption", layer=layer, kv=kv, heads=", ".join(map(str, group["heads"])),
                      n=run["n"]))
    with right:
        code_panel(group_attention, repeat_kv, height=520)


@fragment
def model_section():
    """Section 3 reruns alone (st.fragment) when its model, prompt, layer or KV head changes."""
    lm = model_switch(NS)
    if lm == REAL:
        real = real_model(device())
        if real is not None:
            real_section(real[0])
            return
    if loaded is not None:
        course_section()


model_section()

try_this(NS, [("try1", 1), ("try2", 2), ("try3", 0)])
