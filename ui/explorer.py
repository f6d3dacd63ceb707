"""The attention explorer: every head of a trained model on a prompt the learner types.

Used as the last section of the attention lessons (B1, B2, B3): ``explorer(NS)``. A switch
(``ui.model.model_switch``, ``{ns}.ex.lm`` in the URL) picks the course model (the default) or
SmolLM2-135M, whose 30 layers × 9 heads are shown as one map with the chosen head large. The
models come from ``ui.model`` (one ``st.cache_resource`` copy per device, shared by every
student, so nothing per-request lives on them); the traced weights of a prompt are cached as
numpy arrays, for every session.
"""
from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from core.lab.head_analysis import PATTERNS, dominant_pattern, head_scores, model_attention, profile, standout_heads
from core.lab.real_attention import TOKEN_LIMIT, prompt_attention, thumbnails
from core.lab.real_tokens import dropped_note
from ui.frame import choice, code_panel, device, figure, ranged_slider, text_box, tr
from ui.model import REAL, course_model, model_switch, real_model
from viz.attention import head_grid, head_mosaic, heatmap, layer_head_map, score_map, weight_top
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
# SmolLM2 reads English in byte-level BPE tokens: its own default prompt, token-worded names.
REAL_PROMPT = "The cat sat on the mat because it was tired."
REAL_CHARS = 2000        # characters the box keeps; the model reads the first TOKEN_LIMIT tokens
REAL_STATS = ("previous", "first", "self", "punctuation")     # the map's choice, in the URL
# Pattern -> (the choice's label, the map's title words, what a standout head looks at).
REAL_KEYS = {
    "previous": ("explorer.real_short_previous", "explorer.real_on_previous", "explorer.real_what_previous"),
    "first": ("explorer.real_short_first", "explorer.real_on_first", "explorer.real_what_first"),
    "self": ("explorer.real_short_self", "explorer.real_on_self", "explorer.real_what_self"),
    "punctuation": ("explorer.real_short_punctuation", "explorer.real_on_punctuation",
                    "explorer.real_what_punctuation"),
    "previous_line": (None, None, "explorer.real_what_previous_line"),
}
REAL_DEFAULT = (16, 0)   # layer 16 head 0 puts ~80 % of its weight on the previous token
THUMB = 12               # a head's thumbnail in the mosaic: at most 12 × 12 cells (270 of them < 300 KB)


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


@st.cache_resource(max_entries=16, show_spinner=False)
def traced_real(prompt: str, dev: str, _loaded) -> dict:
    """SmolLM2 on one prompt, for every session: tokens, the (L, H, N, N) weights as float16
    (35 MB at the 256-token limit, 0.1 MB at 12 tokens), each head's scores and its thumbnail.
    ``_loaded`` is ``real_model(dev)`` (not hashed: one model per device). Shared: only read."""
    model, tokenizer = _loaded
    got = prompt_attention(model, tokenizer, prompt, dev)
    prof = profile(got.weights, got.tokens)
    return {
        "tokens": got.tokens,
        "n_ids": got.n_ids,
        "weights": got.weights.cpu().numpy().astype(np.float16),
        "scores": {k: prof.scores[k].cpu().numpy() for k in PATTERNS},
        "standout": [(n.pattern, n.layer, n.head, n.score, n.lift) for n in standout_heads(prof)],
        "thumbs": thumbnails(got.weights, THUMB).cpu().numpy(),
        "n_kv_heads": model.config.n_kv_heads,
    }


def explorer_controls(ns: str, n_layers: int, n_heads: int) -> tuple[str, int, int, bool]:
    text = text_box(f"{ns}.ex_text", DEFAULT_PROMPT, LIMIT, tr("explorer.prompt_label"))
    c1, c2, c3 = st.columns([2, 2, 1])
    with c1:
        layer = ranged_slider(tr("explorer.layer"), 0, n_layers - 1, n_layers - 1, key=f"{ns}.ex_layer")
    with c2:
        head = ranged_slider(tr("explorer.head"), 0, n_heads - 1, 0, key=f"{ns}.ex_head")
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
    # Its own switch ({ns}.ex.lm): a page may have a model switch of its own ({ns}.lm).
    if model_switch(f"{ns}.ex") == REAL:
        loaded = real_model(dev)        # None: ui.model has said why; the course model follows
        if loaded is not None:
            real_explorer(ns, dev, loaded)
            return
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
    _standout(data["standout"], lambda p: PATTERN_KEYS[p][1], "explorer.none_standout")

    if grid:
        titles = [f"L{i}·H{j} {_short(data['dominant'][i][j])}".strip()
                  for i in range(n_layers) for j in range(n_heads)]
        figure(head_grid(weights.reshape(n_layers * n_heads, *weights.shape[-2:]), tokens, titles=titles,
                         cols=n_heads, hover_names=hover, height_per_row=240), key=f"{ns}.ex_fig_grid",
               name=tr("explorer.grid_name", n=n_layers * n_heads))
        st.caption(tr("explorer.read_grid"))
    with st.expander(tr("explorer.how")):
        st.markdown(tr("explorer.how_text"))
        code_panel(model_attention, head_scores, height=420)


def _picked(ns: str) -> None:
    """A click on the map (before the rerun): that cell's layer and head move the sliders."""
    value = st.session_state.get(f"{ns}.ex_fig_map")
    picked = value.get("select") if hasattr(value, "get") else None
    parts = picked.split(",") if isinstance(picked, str) else []
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        st.session_state[f"{ns}.ex_layer"], st.session_state[f"{ns}.ex_head"] = int(parts[0]), int(parts[1])


def real_explorer(ns: str, dev: str, loaded) -> None:
    """The explorer on SmolLM2: one number per head for all 30 × 9 heads (click one, or use the
    sliders), the chosen head large, the heads that stand out, and every head small on request."""
    cfg = loaded[0].config
    n_layers, n_heads, group = cfg.n_layers, cfg.n_heads, cfg.n_heads // cfg.n_kv_heads
    st.markdown(tr("explorer.real_intro", layers=n_layers, heads=n_heads, kv=cfg.n_kv_heads, group_last=group - 1,
                   limit=TOKEN_LIMIT))
    text = text_box(f"{ns}.ex_rtext", REAL_PROMPT, REAL_CHARS, tr("explorer.real_prompt_label"))
    if note := dropped_note(loaded[1], text.text):                     # bytes SmolLM2 has no token for
        st.warning(tr("real.dropped", **note))
    with st.spinner(tr("explorer.running")):
        data = traced_real(text.text if not text.empty else REAL_PROMPT, dev, loaded)
    tokens, weights = data["tokens"], data["weights"]                   # weights (L, H, N, N) float16
    if data["n_ids"] > len(tokens):
        st.warning(tr("explorer.real_cut", n=data["n_ids"], limit=len(tokens)))
    # Two rows: four options and a toggle's label do not fit beside two sliders at 1024 px.
    c1, c4 = st.columns([5, 2], vertical_alignment="bottom")
    with c1:
        stat = choice(tr("explorer.real_stat"), REAL_STATS, f"{ns}.ex_stat",
                      {k: tr(REAL_KEYS[k][0]) for k in REAL_STATS}, widget="segmented")
    with c4:
        grid = st.toggle(tr("explorer.grid_label", n=n_layers * n_heads), value=False, key=f"{ns}.ex_grid",
                         bind="query-params")
    c2, c3 = st.columns(2)
    with c2:
        layer = ranged_slider(tr("explorer.layer"), 0, n_layers - 1, REAL_DEFAULT[0], key=f"{ns}.ex_layer")
    with c3:
        head = ranged_slider(tr("explorer.head"), 0, n_heads - 1, REAL_DEFAULT[1], key=f"{ns}.ex_head")

    values = data["scores"][stat]                                         # (L, H)
    words = (tr("explorer.layer_word"), tr("explorer.head_word"))
    # A click on a cell picks that layer and head (on_select).
    figure(layer_head_map(values, selected=(layer, head), title=tr("explorer.map_fig", what=tr(REAL_KEYS[stat][1])),
                          axis_titles=words, hover_names=(*words, tr("explorer.mean_weight")),
                          colorbar_title=tr("explorer.mean_weight"), zmax=weight_top(values)),
           f"{ns}.ex_fig_map", present_height=None, on_select=functools.partial(_picked, ns))
    st.caption(tr("explorer.read_map", group=group, group_minus=group - 1, last_layer=n_layers - 1,
                  last_head=n_heads - 1))

    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    left, right = st.columns([3, 2])
    with left:
        head_weights = weights[layer, head].astype(np.float32)            # (N, N)
        figure(heatmap(head_weights, tokens, tokens, hover_names=hover,
                       title=tr("explorer.real_head_fig", layer=layer, head=head, kv=head // group),
                       zmax=weight_top(head_weights), colorbar_title=tr("common.weight")),
               key=f"{ns}.ex_fig_head")
    with right:
        st.caption(tr("explorer.read_real_head", group=group, kv=head // group, first=head // group * group,
                      last=head // group * group + group - 1, n=len(tokens)))
        _standout(data["standout"], lambda p: REAL_KEYS[p][2], "explorer.real_none_standout")

    if grid:
        thumbs = data["thumbs"]
        figure(head_mosaic(thumbs, title=tr("explorer.mosaic_fig", n=n_layers * n_heads, m=thumbs.shape[-1]),
                           axis_titles=words, hover_names=(*words, tr("common.weight")),
                           colorbar_title=tr("common.weight"), zmax=weight_top(thumbs)),
               key=f"{ns}.ex_fig_grid")
        st.caption(tr("explorer.read_mosaic", n=len(tokens), m=thumbs.shape[-1]))
    with st.expander(tr("explorer.how")):
        st.markdown(tr("explorer.real_how_text"))
        code_panel(prompt_attention, head_scores, height=420)


def _standout(rows, what_key, none_key: str) -> None:
    """The heads that stand out, one line each ((pattern, layer, head, score, lift) rows; the
    pattern's name through ``what_key``), or a line saying none does."""
    if not rows:
        st.markdown(tr(none_key))
        return
    st.markdown("\n".join("- " + tr("explorer.standout", layer=i, head=j, what=tr(what_key(p)), score=score, lift=lift)
                          for p, i, j, score, lift in rows))
