"""Lesson B1's controls, and its results computed once for every session per setting.
"""
from __future__ import annotations

import streamlit as st

from core.lab import toy
from core.lab.attention_lab import course_attention_steps, scaling_by_width
from core.lab.real_attention import model_attention_steps, prompt_ids
from core.lab.real_tokens import dropped_note
from core.parts.attention import entropy_by_width, scaling_experiment
from core.parts.masks import causal_mask
from ui.frame import choice, plain, ranged_slider, text_box, tr
from ui.model import course_model, layer_and_head, real_model
from viz.attention import histogram

WIDTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
HIST_N = 256                 # random queries and keys of the histogram (256 x 256 scores)
ENTROPY_KEYS = 64            # keys per row in the entropy curve (the caption's maximum is ln of it)
REAL_TOKENS = 48             # tokens SmolLM2 reads here at most: every one named on the six panels
TRAINED = ("course", "smollm2")
D = 32                       # width of the random embedding (the course model's is its config's d_model)


@st.cache_data(max_entries=64)
def scale_demo(width: int, seed: int) -> dict:
    qs, ks = toy.unit_vectors(HIST_N, width, seed)
    stats = scaling_experiment(qs, ks)
    curve = entropy_by_width(WIDTHS, n=ENTROPY_KEYS, seed=seed)
    return {name: t.numpy() for name, t in {**stats, **{f"curve_{k}": c for k, c in curve.items()}}.items()}


@st.cache_data(max_entries=64)
def steps_demo(text: str, source: str, d_k: int, d_v: int, layer: int, head: int, seed: int, dev: str) -> dict:
    """Every step of one attention call as numpy: random weights, or a trained model's real Q, K, V
    (the course model's, or SmolLM2's cut to REAL_TOKENS tokens; with the causal mask, ``masked``
    True where a query may not look). ``n_ids``: the tokens of the text before a cut."""
    mask = None
    if source == "course":
        model, tok = course_model(dev)
        steps = course_attention_steps(model, tok, text, layer, head, dev)
    elif source == "smollm2":
        model, tok = real_model(dev)
        steps, n_ids = model_attention_steps(model, tok, text, layer, head, dev, limit=REAL_TOKENS)
    else:
        steps = toy.attention_steps(text, D, d_k, seed, dev, d_v=d_v)
    if source in TRAINED:
        mask = causal_mask(len(steps.tokens))              # (N, N): the mask the kernel was given
    a = steps.attn
    return {"tokens": steps.tokens, "steps": steps, "mask": mask,
            "masked": None if mask is None else ~mask.cpu().numpy(),
            "n_ids": n_ids if source == "smollm2" else len(steps.tokens),
            **{name: t.cpu().numpy() for name, t in {"q": steps.q, "k": steps.k, "v": steps.v, "scores": a.scores,
                                                     "weights": a.weights, "output": a.output}.items()}}


# --- The page's controls (lessons/b1_attention.py lays out the sections that read them) ----------
NS = "b1"
DEFAULT_TEXT = "君不见，黄河之水天上来"
SOURCES = ["random", "course", "smollm2"]   # ids in the URL (b1.source=smollm2); "course" links still work
REAL_TEXT = "The cat sat on the mat because it was tired."   # SmolLM2 reads English: its example
BATCH = ["黄河之水天上来", "奔流到海不复回", "人生得意须尽欢"]   # three lines of one length: a batch of B = 3


def top_row():
    """The seed (a change redraws the page), a slot for the text box and one for d_k and d_v:
    both filled by the matrix section, since the box's label follows the source."""
    c1, c2, c3 = st.columns([3, 2, 1])
    with c3:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed",
                               bind="query-params", help=tr("common.seed_help"))
    return int(seed), c1.container(), c2.container()


def trained(source: str, dev: str):
    """The (model, tokenizer) of a trained source, or None (ui.model has said why)."""
    return real_model(dev) if source == "smollm2" else course_model(dev)


def text_input(source: str, dev: str) -> tuple[str, bool]:
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


def widths(slot, source: str, dev: str) -> tuple[int, int, int]:
    """d_model, d_k (queries and keys) and d_v (values, and so the output): only d_k must be
    shared. A trained model fixes them: a caption, no slider that would do nothing."""
    with slot:
        if source in TRAINED:
            cfg = trained(source, dev)[0].config
            st.caption(tr(f"{NS}.course_widths", d_head=cfg.d_head))
            return cfg.d_model, cfg.d_head, cfg.d_head
        c1, c2 = st.columns(2)
        with c1:
            d_k = st.slider("d_k", 1, 64, 8, key=f"{NS}.d_k", bind="query-params", help=tr(f"{NS}.d_k_help"))
        with c2:
            d_v = st.slider("d_v", 1, 64, 8, key=f"{NS}.d_v", bind="query-params", help=tr(f"{NS}.d_v_help"))
    return D, int(d_k), int(d_v)


def source_text(source: str, text: str, typed: bool, dev: str) -> tuple[str, int]:
    """The text a source reads and its token count. SmolLM2 knows English: on the page's Chinese
    example (the box untouched or empty) it reads its own English one."""
    if source != "smollm2":
        return text, len(text)
    text = text if typed else REAL_TEXT
    return text, min(len(prompt_ids(trained(source, dev)[1], text, REAL_TOKENS, bos=False)[0]), REAL_TOKENS)


def source_controls(text_slot, dev: str):
    """Where Q, K, V come from (the reusable model, layer and head control), the text (in its
    slot at the top), and which cell to work out."""
    c1, c2, c3, c4 = st.columns([3, 1, 1, 2])
    with c1:
        source = choice(tr(f"{NS}.source_label"), SOURCES, f"{NS}.source",
                        {"random": tr(f"{NS}.source_random"), "course": tr(f"{NS}.source_course"),
                         "smollm2": tr(f"{NS}.source_real")}, widget="segmented")
    if source == "smollm2" and trained(source, dev) is None:
        source = "course"                        # ui.model's note said why; the course model instead
    if source == "course" and trained(source, dev) is None:
        source = "random"
    layer = head = 0
    if source in TRAINED:
        layer, head = layer_and_head(NS, trained(source, dev)[0].config, c2, c3)
    with text_slot:
        text, typed = text_input(source, dev)
    read, n = source_text(source, text, typed, dev)
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


def hist_frames(seed: int, language: str) -> list:
    """The histogram at every width (the live slider's frames), from one core call."""
    raw, scaled = tr(f"{NS}.raw"), tr(f"{NS}.scaled")
    return [histogram({raw: s["scores_raw"].numpy(), scaled: s["scores_scaled"].numpy()},
                      title=tr(f"{NS}.hist_fig", d_k=w) + "<br>" + tr(f"{NS}.live.hist_entropy",
                                                                    raw=float(s["mean_entropy_raw"]),
                                                                    scaled=float(s["mean_entropy_scaled"])),
                      x_title=tr("common.score"), y_title=tr(f"{NS}.density"))
            for w, s in zip(WIDTHS, scaling_by_width(WIDTHS, HIST_N, seed), strict=True)]
