"""F1 · Heads at work: what SmolLM2's 270 heads do, scored, and the copying heads switched off."""
import functools

import numpy as np
import streamlit as st

from core.lab.head_scores import (
    SCORES,
    ablate,
    ablation_study,
    copy_losses,
    head_scores,
    induction_targets,
    repeated_probe,
    token_losses,
)
from core.parts.attention import scaled_dot_product_attention
from ui.f1_heads import (
    COURSE_TEXT,
    DEFAULT_LENGTH,
    SCORE_KEYS,
    ablation,
    ablation_controls,
    ablation_rows,
    condition_names,
    control_key,
    grid_values,
    grids,
    pattern,
    probe_controls,
    probe_heads,
    short_tokens,
    text_controls,
    text_heads,
    top_lines,
)
from ui.frame import common_mistake, device, drawn, figure, plain, tr
from ui.lesson import Lesson
from ui.model import COURSE, REAL, course_model, model_switch, real_model
from viz.attention import lines
from viz.heads_at_work import probe_losses

NS = "f1"
DEFAULT_CONTROL = (DEFAULT_LENGTH, 0, 5, "zero")   # T, seed, k, mode: the control drawn without asking

lesson = Lesson(NS)
dev = device()
# SmolLM2 by default (?f1.lm=course for the course model). Without its package the switch
# says how to install it and the lesson runs on the course model.
loaded = real_model(dev) if model_switch(NS, default=REAL) == REAL else None
name = REAL if loaded else COURSE
loaded = loaded or course_model(dev)

# The page's fixed parts (prose, code) are laid out once; one fragment (the body) refills the slots.
lesson.section("scores", layout_only=True, above=(), slide=False)
lesson.section("grids", layout_only=True, slide=False, below=("cell",))   # the grids: a slide of their own
lesson.section("pattern", layout_only=True, above=("text", "probe"), slide="text",   # a slide each
               code=(head_scores, induction_targets), height=460)
lesson.section("sink", layout_only=True, above=(), slide=False, code=(scaled_dot_product_attention,), height=420)
lesson.section("copy", layout_only=True, code=(repeated_probe, token_losses, copy_losses), height=460)
lesson.section("ablate", layout_only=True, note=functools.partial(common_mistake, f"{NS}.mistake"),
               code=(ablation_study, ablate), below=("table",))
lesson.section("course", layout_only=True, text=None, above=(), slide=False)


@lesson.body
def body(slots, loaded, name, dev):
    if loaded is None:
        return
    cfg = loaded[0].config
    with slots["grids"].controls:
        text, layer, head = text_controls(name, loaded, cfg.n_layers, cfg.n_heads)
    with slots["copy"].controls:
        length, seed = probe_controls()
    with slots["grids"].controls:
        with st.spinner(tr(f"{NS}.running")):
            on_text = text_heads(name, text, dev, loaded)
            probe = probe_heads(name, length, seed, dev, loaded)
        if on_text["n_ids"] > len(on_text["tokens"]):
            st.warning(tr(f"{NS}.cut", n=on_text["n_ids"], limit=len(on_text["tokens"])))
        if "<unk>" in on_text["tokens"]:
            st.info(tr(f"{NS}.unknown", n=on_text["tokens"].count("<unk>")))
    with slots["grids"].cell:
        values = {s: float((probe if s in ("induction", "duplicate") else on_text)["scores"][s][layer, head])
                  for s in SCORES}
        st.caption(tr(f"{NS}.cell_caption", layer=layer, head=head, kv=head // (cfg.n_heads // cfg.n_kv_heads),
                      **{s: (v if np.isfinite(v) else float("nan")) for s, v in values.items()}))
    with slots["grids"].figure:
        grids(grid_values(on_text["scores"], probe["scores"]), (layer, head), 2 if cfg.n_layers > 12 else 4,
              f"{NS}.grids", [tr(SCORE_KEYS[s][0]) for s in SCORES],
              tr(f"{NS}.grids_name", layers=cfg.n_layers, heads=cfg.n_heads))
        st.caption(tr(f"{NS}.grids_caption", layers=cfg.n_layers, heads=cfg.n_heads, length=length,
                      n=len(on_text["tokens"])))
    hover = (tr("common.query"), tr("common.key"), tr("common.weight"))
    # One above the other, each the page's width (side by side at 1440 px, the probe's 41 word
    # labels overlapped in a half-width chart); in presenter mode a slide each.
    for data, key, title, at in ((on_text, "text_head", f"{NS}.text_head_fig", slots["pattern"].text),
                                 (probe, "probe_head", f"{NS}.probe_head_fig", slots["pattern"].probe)):
        with at:
            figure(drawn(pattern, data["weights"][layer, head], short_tokens(data["tokens"]),
                         tr(title, layer=layer, head=head), hover, tr("common.weight")),
                   key=f"{NS}.{key}", present_height=420)
    slots["pattern"].probe.caption(tr(f"{NS}.patterns_caption", length=length, offset=length - 1))
    slots["pattern"].figure.markdown(tr(f"{NS}.top_intro") + "\n\n" + top_lines(on_text["scores"], probe["scores"]))

    with slots["sink"].figure:
        sink = on_text["scores"]["sink"]                                            # (L, H)
        figure(drawn(lines, np.arange(cfg.n_layers), {tr(f"{NS}.sink_mean"): np.nanmean(sink, 1),
                                                      tr(f"{NS}.sink_max"): np.nanmax(sink, 1)},
                     title=tr(f"{NS}.sink_fig"), x_title=tr(f"{NS}.layer_word"), y_title=tr(f"{NS}.share_word"),
                     legend_below=True, height=380), key=f"{NS}.sink")
        st.caption(tr(f"{NS}.sink_caption", first=plain(on_text["tokens"][0]), mean=float(np.nanmean(sink)),
                      top=int(np.nanargmax(np.nanmean(sink, 1)))))

    whole = probe["run"].whole
    with slots["copy"].figure:
        figure(drawn(probe_losses, {tr(f"{NS}.whole_name"): whole.losses.numpy()}, length, title=tr(f"{NS}.copy_fig"),
                     names=(tr(f"{NS}.first_copy"), tr(f"{NS}.second_copy")),
                     x_title=tr(f"{NS}.position_word"), y_title=tr(f"{NS}.loss_word")), key=f"{NS}.copy",
               present_height=260)   # presenter mode: the two metrics under it on the slide too
        c1, c2 = st.columns(2)
        c1.metric(tr(f"{NS}.first_copy"), f"{whole.first:.2f}")
        c2.metric(tr(f"{NS}.second_copy"), f"{whole.second:.2f}", delta=f"{whole.second - whole.first:.2f}",
                  delta_color="inverse")
        st.caption(tr(f"{NS}.copy_caption", first=whole.first, second=whole.second, chance=float(np.log(cfg.vocab_size)),
                      v=cfg.vocab_size, acc=100 * whole.accuracy, length=length,
                      share=100 * whole.second / whole.first))

    with slots["ablate"].controls:
        k, mode = ablation_controls(cfg.n_layers * cfg.n_heads)
    with slots["ablate"].figure:
        with st.spinner(tr(f"{NS}.running")):
            result = ablation(name, length, seed, k, mode, dev, loaded)
        study, names = result["study"], condition_names(k)
        figure(drawn(probe_losses, {names[c]: study[c].losses.numpy() for c in study}, length,
                     title=tr(f"{NS}.ablate_fig"), colours=["#31333F", "#d62728", "#1f77b4"],
                     names=(tr(f"{NS}.first_copy"), tr(f"{NS}.second_copy")),
                     x_title=tr(f"{NS}.position_word"), y_title=tr(f"{NS}.loss_word")), key=f"{NS}.ablate")
    with slots["ablate"].table:    # with the random control's draws once they exist (a button until then)
        ablation_rows(result, names, control_key(name, length, seed, k, mode, dev),
                      (length, seed, k, mode) == DEFAULT_CONTROL, loaded, whole.second)

    with slots["course"].figure:       # the same four scores for the course model (4 layers × 4 heads)
        if name == COURSE:
            st.markdown(tr(f"{NS}.course_same"))
            return
        if (course := course_model(dev)) is None:
            return
        st.markdown(tr(f"{NS}.course_text", text=plain(COURSE_TEXT)))
        on_text = text_heads(COURSE, COURSE_TEXT, dev, course)
        probe = probe_heads(COURSE, length, seed, dev, course)
        grids(grid_values(on_text["scores"], probe["scores"]), None, 4, f"{NS}.course",
              [tr(SCORE_KEYS[s][1]) for s in SCORES],
              tr(f"{NS}.course_grids_name", layers=course[0].config.n_layers, heads=course[0].config.n_heads))
        whole = probe["run"].whole
        best = np.nan_to_num(probe["scores"]["induction"], nan=-1.0)
        i, j = divmod(int(best.argmax()), course[0].config.n_heads)
        st.caption(tr(f"{NS}.course_caption", first=whole.first, second=whole.second, layer=i, head=j,
                      score=float(best[i, j]), length=length))


lesson.run(loaded=loaded, name=name, dev=dev)
lesson.quiz([("try1", 1), ("try2", 0), ("try3", 2)])
