"""Lesson D4's controls, its trained models' sections, and its results computed once for every
session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.calc import configs
from core.calc.kv_cache import kv_groups, kv_head_choices
from core.calc.kv_sharing import used_by
from core.lab.d_real_kv import group_attention, projection_shapes
from core.lab.head_analysis import model_attention
from core.lab.real_tokens import dropped_note
from core.parts.mha import MultiHeadAttention, repeat_kv
from ui.frame import choice, code_panel, figure, model_labels, shapes_table, text_box, tr
from ui.model import course_model, real_model
from viz.attention import head_grid
from viz.gqa import group_maps, head_map

REAL_TOKENS = 256
NS = "d4"
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
DEFAULT_PROMPT = "君不见，黄河之水天上来"
# SmolLM2 reads English. A sentence that comes back: heads that look at the earlier copy show it.
REAL_PROMPT = "The little fox found a red ball. Then the little fox kicked the red ball into the river."
REAL_CHARS = 1024          # the box's limit; the tokens are cut again at REAL_TOKENS
REAL_LAYER = 15
KINDS = {"mha": f"{NS}.kind_mha", "gqa": f"{NS}.kind_gqa", "mqa": f"{NS}.kind_mqa"}


@st.cache_data(max_entries=64, show_spinner=False)
def course_attention(prompt: str, dev: str) -> dict:
    """Every layer's attention weights (L, H, N, N) on ``prompt``, as the model computed them."""
    model, tok = course_model(dev)
    tokens, weights = model_attention(model, tok, prompt, dev, bos=False)                # (L, H, N, N)
    return {"weights": weights.float().cpu().numpy(), "tokens": tokens}


@st.cache_data(max_entries=32, show_spinner=False)
def real_attention(prompt: str, layer: int, dev: str) -> dict:
    """SmolLM2's attention in ``layer`` on ``prompt`` (at most REAL_TOKENS tokens), grouped by the
    KV head each query head reads: {kv_head: (heads, (3, N, N) weights)}. Only this layer is kept."""
    model, tok = real_model(dev)
    ids = tok.encode(prompt)
    cut = len(ids) > REAL_TOKENS
    ids = ids[:REAL_TOKENS]
    groups = group_attention(model, ids, layer) if ids else []
    return {"tokens": tok.tokens(ids), "cut": cut, "n": len(ids),
            "groups": [{"heads": g["heads"], "weights": g["weights"].numpy()} for g in groups]}


# --- The page's controls and the trained models' section (lessons/d4_gqa.py lays them out) -------
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
    """Example: kind_of(32, 32) -> "mha"; kind_of(32, 8) -> "gqa"; kind_of(32, 1) -> "mqa" """
    return "mha" if h_kv == h else ("mqa" if h_kv == 1 else "gqa")


def why_table() -> str:
    """The section's prose, then who uses which sharing, as a markdown table."""
    header_row = [tr(f"{NS}.col_model"), "H", "H_kv", tr(f"{NS}.col_kind"), tr(f"{NS}.col_source")]
    return tr(f"{NS}.why_text") + "\n\n" + "\n".join(
        [f"| {' | '.join(header_row)} |", "|---|---:|---:|---|---|"]
        + [f"| {s.title} | {s.n_heads} | {s.n_kv_heads} | {tr(KINDS[s.kind])}"
           + (f"-{s.n_kv_heads}" if s.kind == "gqa" else "") + f" | {s.source} |" for s in used_by()])


def course_section(loaded, dev: str) -> None:
    """The course model's heads, each titled by the KV head it reads."""
    model, _ = loaded
    mc = model.config
    st.markdown(tr(f"{NS}.model_text", h=mc.n_heads, h_kv=mc.n_kv_heads, g=mc.n_heads // mc.n_kv_heads))
    c1, c2 = st.columns([3, 1])
    with c1:
        text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 64, tr(f"{NS}.prompt_label"))
    with c2:
        layer = st.slider(tr(f"{NS}.layer"), 0, mc.n_layers - 1, mc.n_layers - 1, key=f"{NS}.layer",
                          bind="query-params")
    run = course_attention(DEFAULT_PROMPT if text.empty else text.text, dev)
    model_groups = kv_groups(mc.n_heads, mc.n_kv_heads)
    titles = [tr(f"{NS}.head_title", q=h, kv=g) for h, g in enumerate(model_groups)]
    left, right = st.columns([1, 1])
    with left:
        figure(head_grid(run["weights"][layer], run["tokens"], titles=titles, cols=2,
                         hover_names=(tr("common.query"), tr("common.key"), tr("common.weight"))),
               key=f"{NS}.maps", name=tr(f"{NS}.model_title"))
        st.caption(tr(f"{NS}.maps_caption", layer=layer, g=mc.n_heads // mc.n_kv_heads))
    with right:
        code_panel(MultiHeadAttention.forward, MultiHeadAttention.attend, height=560)   # attend repeats k, v


def real_section(model, dev: str) -> None:
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
        if note := dropped_note(real_model(dev)[1], text.text):      # bytes SmolLM2 has no token for
            st.warning(tr("real.dropped", **note))
    with c2:
        layer = st.slider(tr(f"{NS}.layer"), 0, mc.n_layers - 1, REAL_LAYER, key=f"{NS}.real_layer",
                          bind="query-params")
    with c3:
        kv = st.slider(tr(f"{NS}.real_kv"), 0, h_kv - 1, 0, key=f"{NS}.real_kv", bind="query-params")
    with st.spinner(tr(f"{NS}.real_running")):
        run = real_attention(REAL_PROMPT if text.empty else text.text, layer, dev)
    if run["cut"]:
        st.warning(tr(f"{NS}.real_cut", n=REAL_TOKENS))
    if not run["groups"]:
        return
    group = run["groups"][kv]
    titles = [tr(f"{NS}.head_title", q=q, kv=kv) for q in group["heads"]]
    # The page's whole width: three maps side by side, each key named under its column.
    figure(group_maps(group["weights"], run["tokens"], titles=titles,
                      hover_names=(tr("common.query"), tr("common.key"), tr("common.weight"))),
           key=f"{NS}.real_maps", name=tr(f"{NS}.model_title"))
    left, right = st.columns([1, 1])
    with left:
        st.caption(tr(f"{NS}.real_caption", layer=layer, kv=kv, heads=", ".join(map(str, group["heads"])),
                      n=run["n"]))
    with right:
        code_panel(group_attention, repeat_kv, height=520)
