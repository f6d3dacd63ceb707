"""F1 · Heads at work: what SmolLM2's 270 heads do, scored, and the copying heads switched off."""
import functools

import numpy as np
import streamlit as st

from core.lab.head_scores import (
    DRAWS,
    MODES,
    SCORES,
    ablate,
    ablation_study,
    copy_losses,
    head_scores,
    induction_targets,
    repeated_probe,
    token_losses,
)
from core.lab.real_tokens import dropped_note
from core.parts.attention import scaled_dot_product_attention
from ui.f1_heads import (
    TEXT_TOKENS,
    ablation,
    control_key,
    probe_heads,
    random_controls,
    random_controls_ready,
    text_heads,
)
from ui.frame import (
    beside_code,
    built_figure,
    choice,
    common_mistake,
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
from ui.model import COURSE, REAL, course_model, model_switch, real_model
from viz.attention import heatmap, lines, weight_top
from viz.heads_at_work import probe_losses, score_panels

NS = "f1"
REAL_TEXT = "The cat sat on the mat. The dog sat on the log. The cat saw the dog."
COURSE_TEXT = "君不见，黄河之水天上来，奔流到海不复回。君不见，高堂明镜悲白发，朝如青丝暮成雪。"
REAL_CHARS = 1000          # characters the box keeps; the model reads the first TEXT_TOKENS tokens
COURSE_CHARS = 128
DEFAULT_CELL = (18, 6)     # SmolLM2's strongest induction head on the default probes
LENGTHS = (4, 48)          # tokens in one copy of the probe: 9 .. 97 positions
DEFAULT_LENGTH = 20
DEFAULT_CONTROL = (DEFAULT_LENGTH, 0, 5, "zero")   # T, seed, k, mode: the control drawn without asking
K_MAX = 20                 # heads switched off at most (of 270)
# Score -> (its grid's title, its short name); mode -> its label.
SCORE_KEYS = {"previous": (f"{NS}.grid_previous", f"{NS}.short_previous"),
              "sink": (f"{NS}.grid_sink", f"{NS}.short_sink"),
              "induction": (f"{NS}.grid_induction", f"{NS}.short_induction"),
              "duplicate": (f"{NS}.grid_duplicate", f"{NS}.short_duplicate")}
MODE_KEYS = {"zero": f"{NS}.mode_zero", "mean": f"{NS}.mode_mean"}

header(NS)
dev = device()

# SmolLM2 by default (?f1.lm=course for the course model). Without its package the switch
# says how to install it and the lesson runs on the course model.
loaded = real_model(dev) if model_switch(NS, default=REAL) == REAL else None
name = REAL if loaded else COURSE
loaded = loaded or course_model(dev)


def text_controls(n_layers: int, n_heads: int):
    """The text, and the cell chooser: the head whose pattern is shown large (its ranges follow
    the model, 30 × 9 or 4 × 4)."""
    c1, c2, c3 = st.columns([3, 1.2, 1.2])
    with c1:
        if name == REAL:
            text = text_box(f"{NS}.rtext", REAL_TEXT, REAL_CHARS, tr(f"{NS}.rtext_label", limit=TEXT_TOKENS))
            if note := dropped_note(loaded[1], text.text):       # bytes SmolLM2 has no token for
                st.warning(tr("real.dropped", **note))
            default = REAL_TEXT
        else:
            text = text_box(f"{NS}.text", COURSE_TEXT, COURSE_CHARS, tr(f"{NS}.text_label"))
            default = COURSE_TEXT
    with c2:
        layer = ranged_slider(tr(f"{NS}.layer_label"), 0, n_layers - 1, DEFAULT_CELL[0], key=f"{NS}.layer")
    with c3:
        head = ranged_slider(tr(f"{NS}.head_label"), 0, n_heads - 1, DEFAULT_CELL[1], key=f"{NS}.head")
    return (default if text.empty else text.text), layer, head


def probe_controls():
    """The probe's length T and seed: beside the losses along it (the induction grids above follow)."""
    c1, c2 = st.columns([3, 1])
    with c1:
        length = st.slider(tr(f"{NS}.length_label"), *LENGTHS, DEFAULT_LENGTH, key=f"{NS}.length",
                           bind="query-params", help=tr(f"{NS}.length_help"))
    with c2:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr(f"{NS}.seed_help"))
    return int(length), int(seed)


def ablation_controls(n_heads_all: int):
    """k and what a switched-off head writes. At most half the heads go (the random control
    group is drawn from the other half): 20 of SmolLM2's 270, 8 of the course model's 16."""
    c1, c2 = st.columns([3, 2])
    with c1:
        k = ranged_slider(tr(f"{NS}.k_label"), 1, min(K_MAX, n_heads_all // 2), 5, key=f"{NS}.k")
    with c2:
        mode = choice(tr(f"{NS}.mode_label"), MODES, f"{NS}.mode",
                      {m: tr(MODE_KEYS[m]) for m in MODES}, widget="segmented")
    return int(k), mode


def short_tokens(tokens: list[str]) -> list[str]:
    """The start token named short, so that a column of labels fits."""
    return ["bos" if i == 0 else t for i, t in enumerate(tokens)]


# The page's fixed parts (prose, code) are laid out once; the fragment refills the slots.
st.subheader(tr(f"{NS}.scores_title"))
st.markdown(tr(f"{NS}.scores_text"))
st.subheader(tr(f"{NS}.grids_title"))         # the grids on a slide of their own in presenter mode
slot = {"controls": st.container(), "grids": st.container(), "cell": st.container()}
st.subheader(tr(f"{NS}.pattern_title"))       # a slide of its own in presenter mode
slot["text_pattern"] = st.container()
slide(tr("classroom.slide.continued", title=tr(f"{NS}.pattern_title")))   # presenter mode: the probe's pattern
slot["probe_pattern"] = st.container()
slot["top"] = beside_code(head_scores, induction_targets, height=460)
st.subheader(tr(f"{NS}.sink_title"))
st.markdown(tr(f"{NS}.sink_text"))
slot["sink"] = beside_code(scaled_dot_product_attention, height=420)
st.subheader(tr(f"{NS}.copy_title"))
st.markdown(tr(f"{NS}.copy_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.copy_title")))   # presenter mode: the controls, losses and metrics
slot["probe_controls"] = st.container()
slot["copy"] = beside_code(repeated_probe, token_losses, copy_losses, height=460)
st.subheader(tr(f"{NS}.ablate_title"))
st.markdown(tr(f"{NS}.ablate_text"))
common_mistake(f"{NS}.mistake")
slide(tr("classroom.slide.continued", title=tr(f"{NS}.ablate_title")))   # presenter mode: the controls with the losses
slot["ablate_controls"] = st.container()
slot["ablate"] = beside_code(ablation_study, ablate, height=520)
slot["ablate_table"] = st.container()
st.subheader(tr(f"{NS}.course_title"))
slot["course"] = st.container()


def grids(scores: dict, probe_scores: dict, selected, cols: int, key: str, titles: list[str], inputs: tuple):
    """The four scores as four layer × head grids: two on the text, two on the probe. Built once
    per ``inputs`` (the model, the text, the probe) and chosen cell, for every session. With a
    chosen cell, a click on any cell chooses that head (the sliders follow)."""
    values = [scores["previous"], scores["sink"], probe_scores["induction"], probe_scores["duplicate"]]
    words = (tr(f"{NS}.layer_word"), tr(f"{NS}.head_word"))
    fig = built_figure((key, *inputs, selected, lang()), lambda: score_panels(
        values, titles=titles, selected=selected, cols=cols, axis_titles=words, value_name=tr(f"{NS}.score_word"),
        colorbar_title=tr(f"{NS}.score_word"), cell_px=15 if cols == 2 else 22))
    if selected is None:
        figure(fig, key=key)
        return
    # A click on a cell picks that layer and head (on_select).
    figure(fig, key, present_height=None, on_select=functools.partial(picked, key))


def picked(key: str) -> None:
    """A click on a grid (before the rerun): that cell's layer and head move the sliders."""
    value = st.session_state.get(key)
    cell = value.get("select") if hasattr(value, "get") else None
    parts = cell.split(",") if isinstance(cell, str) else []
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        st.session_state[f"{NS}.layer"], st.session_state[f"{NS}.head"] = int(parts[0]), int(parts[1])


def pattern(data: dict, title: str, layer: int, head: int, hover: tuple[str, str, str]):
    """One head's weights, large, a token on every row and column, the masked future grey."""
    w = data["weights"][layer, head].astype(np.float32)                             # (N, N)
    tokens = short_tokens(data["tokens"])
    n = len(tokens)
    return heatmap(w, tokens, tokens, title=tr(title, layer=layer, head=head), hover_names=hover,
                   zmax=weight_top(w), colorbar_title=tr("common.weight"), height=460, least_font=11,
                   masked=np.triu(np.ones((n, n), dtype=bool), 1))


def top_lines(scores: dict, probe_scores: dict) -> str:
    """The three heads of highest score, per score, as a list."""
    rows = []
    for s in SCORES:
        values = (probe_scores if s in ("induction", "duplicate") else scores)[s]
        flat = np.nan_to_num(values, nan=-1.0).ravel()
        best = np.argsort(-flat, kind="stable")[:3]
        heads = tr(f"{NS}.sep").join(tr(f"{NS}.head_at", layer=int(i) // values.shape[1],
                                        head=int(i) % values.shape[1], score=float(flat[i]))
                                     for i in best if flat[i] >= 0)
        rows.append("- " + tr(f"{NS}.top_row", name=tr(SCORE_KEYS[s][1]), heads=heads or tr(f"{NS}.none")))
    return "\n".join(rows)


@fragment
def lesson_body():
    if loaded is None:
        return
    model, _ = loaded
    cfg = model.config
    with slot["controls"]:
        text, layer, head = text_controls(cfg.n_layers, cfg.n_heads)
    with slot["probe_controls"]:
        length, seed = probe_controls()
    with slot["controls"]:
        with st.spinner(tr(f"{NS}.running")):
            on_text = text_heads(name, text, dev, loaded)
            probe = probe_heads(name, length, seed, dev, loaded)
        if on_text["n_ids"] > len(on_text["tokens"]):
            st.warning(tr(f"{NS}.cut", n=on_text["n_ids"], limit=len(on_text["tokens"])))
        if "<unk>" in on_text["tokens"]:
            st.info(tr(f"{NS}.unknown", n=on_text["tokens"].count("<unk>")))
    with slot["cell"]:
        values = {s: float((probe if s in ("induction", "duplicate") else on_text)["scores"][s][layer, head])
                  for s in SCORES}
        st.caption(tr(f"{NS}.cell_caption", layer=layer, head=head, kv=head // (cfg.n_heads // cfg.n_kv_heads),
                      **{s: (v if np.isfinite(v) else float("nan")) for s, v in values.items()}))
    with slot["grids"]:
        grids(on_text["scores"], probe["scores"], (layer, head), 2 if cfg.n_layers > 12 else 4, f"{NS}.grids",
              [tr(SCORE_KEYS[s][0]) for s in SCORES], (name, text, length, seed))
        st.caption(tr(f"{NS}.grids_caption", layers=cfg.n_layers, heads=cfg.n_heads, length=length,
                      n=len(on_text["tokens"])))
    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    # One above the other, each the page's width (side by side at 1440 px, the probe's 41 word
    # labels overlapped in a half-width chart); in presenter mode a slide each.
    for data, key, title, inputs in ((on_text, "text_head", f"{NS}.text_head_fig", (text,)),
                                     (probe, "probe_head", f"{NS}.probe_head_fig", (length, seed))):
        with slot["text_pattern" if key == "text_head" else "probe_pattern"]:
            figure(built_figure((f"{NS}.{key}", name, *inputs, layer, head, lang()),
                                lambda data=data, title=title: pattern(data, title, layer, head, hover)),
                   key=f"{NS}.{key}", present_height=420)
    with slot["probe_pattern"]:
        st.caption(tr(f"{NS}.patterns_caption", length=length, offset=length - 1))
    with slot["top"]:
        st.markdown(tr(f"{NS}.top_intro") + "\n\n" + top_lines(on_text["scores"], probe["scores"]))

    with slot["sink"]:
        sink = on_text["scores"]["sink"]                                            # (L, H)
        layers = np.arange(cfg.n_layers)
        figure(built_figure((f"{NS}.sink", name, text, lang()), lambda: lines(
            layers, {tr(f"{NS}.sink_mean"): np.nanmean(sink, 1), tr(f"{NS}.sink_max"): np.nanmax(sink, 1)},
            title=tr(f"{NS}.sink_fig"), x_title=tr(f"{NS}.layer_word"), y_title=tr(f"{NS}.share_word"),
            legend_below=True, height=380)), key=f"{NS}.sink")
        st.caption(tr(f"{NS}.sink_caption", first=plain(on_text["tokens"][0]), mean=float(np.nanmean(sink)),
                      top=int(np.nanargmax(np.nanmean(sink, 1)))))

    whole = probe["run"].whole
    with slot["copy"]:
        figure(built_figure((f"{NS}.copy", name, length, seed, lang()), lambda: probe_losses(
            {tr(f"{NS}.whole_name"): whole.losses.numpy()}, length, title=tr(f"{NS}.copy_fig"),
            names=(tr(f"{NS}.first_copy"), tr(f"{NS}.second_copy")),
            x_title=tr(f"{NS}.position_word"), y_title=tr(f"{NS}.loss_word"))), key=f"{NS}.copy",
            present_height=260)   # presenter mode: the two metrics under it on the slide too
        c1, c2 = st.columns(2)
        c1.metric(tr(f"{NS}.first_copy"), f"{whole.first:.2f}")
        c2.metric(tr(f"{NS}.second_copy"), f"{whole.second:.2f}", delta=f"{whole.second - whole.first:.2f}",
                  delta_color="inverse")
        st.caption(tr(f"{NS}.copy_caption", first=whole.first, second=whole.second, chance=float(np.log(cfg.vocab_size)),
                      v=cfg.vocab_size, acc=100 * whole.accuracy, length=length,
                      share=100 * whole.second / whole.first))

    with slot["ablate_controls"]:
        k, mode = ablation_controls(cfg.n_layers * cfg.n_heads)
    with slot["ablate"]:
        with st.spinner(tr(f"{NS}.running")):
            result = ablation(name, length, seed, k, mode, dev, loaded)
        study, guesses = result["study"], result["guesses"]
        names = {"none": tr(f"{NS}.cond_none"), "top": tr(f"{NS}.cond_top", k=k),
                 "random": tr(f"{NS}.cond_random", k=k, draws=DRAWS)}
        figure(built_figure((f"{NS}.ablate", name, length, seed, k, mode, lang()), lambda: probe_losses(
            {names[c]: study[c].losses.numpy() for c in study}, length, title=tr(f"{NS}.ablate_fig"),
            colours=["#31333F", "#d62728", "#1f77b4"],
            names=(tr(f"{NS}.first_copy"), tr(f"{NS}.second_copy")),
            x_title=tr(f"{NS}.position_word"), y_title=tr(f"{NS}.loss_word"))), key=f"{NS}.ablate")
    with slot["ablate_table"]:
        head_list = {c: tr(f"{NS}.sep").join(f"{i}.{j}" for i, j in study[c].heads) or "—" for c in study}
        table = [f"| {tr(f'{NS}.col_cond')} | {tr(f'{NS}.col_heads')} | {tr(f'{NS}.col_second')} | "
                 f"{tr(f'{NS}.col_acc')} | {tr(f'{NS}.col_guess')} | "
                 f"{tr(f'{NS}.col_answer', answer=plain(result['answer']))} |",
                 "|---|---|---:|---:|---|---:|"]
        for c in study:
            token, p, p_answer = guesses[c]
            table.append(f"| {names[c]} | {head_list[c]} | {study[c].second:.2f} | {100 * study[c].accuracy:.0f} % | "
                         f"“{plain(token)}” ({100 * p:.0f} %) | {100 * p_answer:.1f} % |")
        key = control_key(name, length, seed, k, mode, dev)
        spread = random_controls_ready(key)
        if spread is None and (length, seed, k, mode) == DEFAULT_CONTROL:
            with st.spinner(tr(f"{NS}.running")):           # the default: computed once, for everyone
                spread = random_controls(key, loaded)
        if spread is None:
            ask = st.empty()           # one draw and a button, until the draws exist
            with ask.container():
                st.markdown("\n".join(table))
                st.caption(tr(f"{NS}.ablate_caption_top", k=k, mode=tr(MODE_KEYS[mode]),
                              top=study["top"].second - whole.second, first=study["random"].second - whole.second))
                pressed = st.button(tr(f"{NS}.draw_button", draws=DRAWS, k=k), key=f"{NS}.draw_btn",
                                    help=tr(f"{NS}.draw_help", draws=DRAWS))
            if pressed:
                bar = st.progress(0.0, text=tr(f"{NS}.drawing", draws=DRAWS))
                spread = random_controls(key, loaded, progress=lambda f: bar.progress(
                    min(f, 1.0), text=tr(f"{NS}.drawing", draws=DRAWS)))
                bar.empty()
                ask.empty()
        if spread is not None:
            acc = sorted(spread.accuracy)
            table.append(f"| {tr(f'{NS}.cond_draws', k=k, draws=len(spread.rises))} | {tr(f'{NS}.draws_heads', n=spread.kept_out)} | "
                         f"{tr(f'{NS}.draws_loss', median=whole.second + spread.median, low=whole.second + spread.low, high=whole.second + spread.high)} | "
                         f"{tr(f'{NS}.draws_acc', low=100 * acc[0], high=100 * acc[-1])} | — | — |")
            st.markdown("\n".join(table))
            worst = spread.rises.index(spread.high)
            st.caption(tr(f"{NS}.ablate_caption", k=k, mode=tr(MODE_KEYS[mode]), top=study["top"].second - whole.second,
                          median=spread.median, low=spread.low, high=spread.high, draws=len(spread.rises),
                          first=spread.rises[0], kept=spread.kept_out,
                          worst=tr(f"{NS}.sep").join(f"{i}.{j}" for i, j in spread.groups[worst])))

    with slot["course"]:
        course_section(length, seed)


def course_section(length: int, seed: int) -> None:
    """The same four scores for the course model (4 layers × 4 heads): on a poem, and on a probe of
    random characters of the same length and seed."""
    if name == COURSE:
        st.markdown(tr(f"{NS}.course_same"))
        return
    course = course_model(dev)
    if course is None:
        return
    cfg = course[0].config
    st.markdown(tr(f"{NS}.course_text", text=plain(COURSE_TEXT)))
    on_text = text_heads(COURSE, COURSE_TEXT, dev, course)
    probe = probe_heads(COURSE, length, seed, dev, course)
    grids(on_text["scores"], probe["scores"], None, 4, f"{NS}.course", [tr(SCORE_KEYS[s][1]) for s in SCORES],
          (COURSE, length, seed))
    whole = probe["run"].whole
    best = np.nan_to_num(probe["scores"]["induction"], nan=-1.0)
    i, j = divmod(int(best.argmax()), cfg.n_heads)
    st.caption(tr(f"{NS}.course_caption", first=whole.first, second=whole.second, layer=i, head=j,
                  score=float(best[i, j]), length=length))


lesson_body()

try_this(NS, [("try1", 1), ("try2", 0), ("try3", 2)])
