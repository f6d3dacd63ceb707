"""The attention explorer: every head of the trained course model on a prompt the learner types.

Used as the last section of the attention lessons (B1, B2, B3): ``explorer(NS)``. The model
comes from ``ui.model`` (one ``st.cache_resource`` copy per device, shared by every student,
so nothing per-request lives on it); the traced weights of a prompt are cached as numpy arrays.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from core.lab.head_analysis import PATTERNS, dominant_pattern, head_scores, model_attention, profile, standout_heads
from ui.frame import code_panel, device, figure, text_box, tr
from ui.model import course_model
from viz.attention import head_grid, heatmap, score_map, weight_top
from viz.common import label

NS = "explorer"
DEFAULT_PROMPT = "君不见，黄河之水天上来，奔流到海不复回。"
LIMIT = 64
# Pattern -> (short name for axes, what the head looks at, in a sentence).
PATTERN_KEYS = {
    "previous": ("explorer.short_previous", "explorer.what_previous"),
    "self": ("explorer.short_self", "explorer.what_self"),
    "first": ("explorer.short_first", "explorer.what_first"),
    "punctuation": ("explorer.short_punctuation", "explorer.what_punctuation"),
    "previous_line": ("explorer.short_previous_line", "explorer.what_previous_line"),
}


@st.cache_data(max_entries=64, show_spinner=False)
def traced(prompt: str, dev: str) -> dict:
    """Tokens, (L, H, N, N) weights and head scores of one prompt, as plain numpy/lists.
    Called only after ``course_model(dev)`` has returned a model."""
    model, tokenizer = course_model(dev)
    tokens, weights = model_attention(model, tokenizer, prompt, dev)
    prof = profile(weights, tokens)
    return {
        "tokens": tokens,
        "weights": weights.cpu().numpy(),
        "scores": {k: prof.scores[k].cpu().numpy() for k in PATTERNS},
        "lift": {k: prof.lift[k].cpu().numpy() for k in PATTERNS},
        "standout": [(n.pattern, n.layer, n.head, n.score, n.lift) for n in standout_heads(prof)],
        "dominant": dominant_pattern(prof),
        "n_kv_heads": model.config.n_kv_heads,
    }


def explorer_controls(ns: str, n_layers: int, n_heads: int) -> tuple[str, int, int, bool]:
    text = text_box(f"{ns}.ex_text", DEFAULT_PROMPT, LIMIT, tr("explorer.prompt_label"))
    c1, c2, c3 = st.columns([2, 2, 1])
    with c1:
        # Counted from 0, as the code does (blocks.0 is the first block, head 0 the first head).
        layer = st.slider(tr("explorer.layer"), 0, n_layers - 1, n_layers - 1, key=f"{ns}.ex_layer",
                          bind="query-params")
    with c2:
        head = st.slider(tr("explorer.head"), 0, n_heads - 1, 0, key=f"{ns}.ex_head", bind="query-params")
    with c3:
        grid = st.toggle(tr("explorer.grid_label", n=n_layers * n_heads), value=False, key=f"{ns}.ex_grid",
                         bind="query-params")
    return (text.text if not text.empty else DEFAULT_PROMPT), layer, head, grid


def _short(name: str) -> str:
    """A pattern's short name, safe as plotly text ("<bos>" would be read as markup)."""
    return label(tr(PATTERN_KEYS[name][0])) if name else ""


@st.fragment
def explorer(ns: str, open_by_default: bool = True) -> None:
    """The explorer section of lesson ``ns``; widget and figure keys are prefixed by ``ns``.

    ``open_by_default=False`` shows only a switch until the learner opens it: running the
    model and drawing its heads costs a few milliseconds a lesson may not have to spare.
    """
    st.subheader(tr("explorer.title"))
    if not st.toggle(tr("explorer.open_label"), value=open_by_default, key=f"{ns}.ex_open",
                     bind="query-params"):
        st.caption(tr("explorer.closed"))
        return
    dev = device()
    loaded = course_model(dev)          # None: ui.model has said why, with the rebuild command
    if loaded is None:
        return
    model, _ = loaded
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    st.markdown(tr("explorer.intro", layers=n_layers, heads=n_heads))
    prompt, layer, head, grid = explorer_controls(ns, n_layers, n_heads)
    data = traced(prompt, dev)
    tokens, weights = data["tokens"], data["weights"]                    # weights (L, H, N, N)
    if "<unk>" in tokens:
        st.info(tr("explorer.unknown", n=tokens.count("<unk>")))

    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    left, right = st.columns([3, 2])
    with left:
        what = data["dominant"][layer][head]
        title = tr("explorer.head_fig", layer=layer, head=head)
        if what:
            title += f" · {_short(what)}"
        head_weights = weights[layer, head]                                  # (N, N)
        figure(heatmap(head_weights, tokens, tokens, title=title, hover_names=hover,
                       zmax=weight_top(head_weights), colorbar_title=tr("common.weight")),
               key=f"{ns}.ex_fig_head")
        st.caption(tr("explorer.read_head", group=n_heads // data["n_kv_heads"]))
    with right:
        labels = [f"L{i}·H{j}" for i in range(n_layers) for j in range(n_heads)]
        lift = np.stack([data["lift"][k].ravel() for k in PATTERNS], axis=1)       # (L*H, patterns)
        scores = np.stack([data["scores"][k].ravel() for k in PATTERNS], axis=1)   # (L*H, patterns)
        figure(score_map(lift, scores, labels, [_short(k) for k in PATTERNS], title=tr("explorer.scores_fig"),
                         hover_names=(tr("explorer.head_word"), tr("explorer.pattern"), tr("explorer.mean_weight")),
                         height=28 * len(labels) + 170),
               key=f"{ns}.ex_fig_scores")
        st.caption(tr("explorer.read_scores"))
    standout = data["standout"]
    if standout:
        st.markdown("\n".join(
            "- " + tr("explorer.standout", layer=i, head=j, what=tr(PATTERN_KEYS[p][1]),
                      score=score, lift=lift)
            for p, i, j, score, lift in standout))
    else:
        st.markdown(tr("explorer.none_standout"))

    if grid:
        titles = [f"L{i}·H{j} {_short(data['dominant'][i][j])}".strip()
                  for i in range(n_layers) for j in range(n_heads)]
        figure(head_grid(weights.reshape(n_layers * n_heads, *weights.shape[-2:]), tokens, titles=titles,
                         cols=n_heads, hover_names=hover, height_per_row=240), key=f"{ns}.ex_fig_grid")
        st.caption(tr("explorer.read_grid"))
    with st.expander(tr("explorer.how")):
        st.markdown(tr("explorer.how_text"))
        code_panel(model_attention, head_scores, height=420)
