"""E2 · LoRA: freeze W, learn a low-rank ΔW = B·A, fine-tune the course model on Song poems."""
import json

import numpy as np
import streamlit as st

from core.lab import lora_finetune as lab
from core.models.lora import add_lora
from core.parts.lora import LoRALinear
from ui.figures import drawn
from ui.frame import figure, lang, tr
from ui.lesson import Lesson
from ui.live import live_figure
from ui.lora import (
    DEFAULT,
    RANKS,
    adapter_controls,
    adapter_shown,
    analysis,
    baseline,
    can_tune,
    compare_text,
    comparison,
    counts_caption,
    counts_frames,
    forget_bars,
    forget_caption,
    lines_table,
    own_opening,
    stats_caption,
)
from ui.model import course_model
from viz.attention import lines
from viz.lora import grouped_bars, spectra

NS = "e2"

lesson = Lesson(NS)
ready = course_model("cpu") is not None


@lesson.section("counts", code=(LoRALinear.forward, LoRALinear.merge, add_lora))
def counts(s):
    with s.controls:
        r, alpha, targets = adapter_controls()
        if not targets:
            st.info(tr(f"{NS}.no_targets"))
    live_figure(counts_frames, (targets, lang()), f"{NS}.counts", f"{NS}.r", RANKS, DEFAULT.r, tr(f"{NS}.rank"))
    st.caption(counts_caption(r, alpha, targets))


@lesson.section("tune", above=(), note=stats_caption)
def tune(s, ready):
    """The shipped adapter's results at once; the student's own fine-tune replaces them here only."""
    if not ready:                        # no course model: ui.model has said why
        return
    if not can_tune():
        st.warning(tr(f"{NS}.no_song", command=lab.REBUILD_SONG))
        return
    shown = adapter_shown()
    if shown is None:
        return
    cfg = json.loads(shown["config"])
    base, res, compare = baseline(), analysis(shown["config"], shown["digest"], shown["blob"]), comparison()

    left, right = st.columns(2)
    with left:
        losses = np.asarray(shown["losses"])
        figure(drawn(lines, np.arange(1, len(losses) + 1), {tr(f"{NS}.train_loss"): losses},
                     title=tr(f"{NS}.loss_fig"), x_title=tr(f"{NS}.step"), y_title=tr(f"{NS}.loss_axis")),
               key=f"{NS}.loss")
    with right:   # Tang on three lines: one did not fit
        figure(drawn(grouped_bars, [tr(f"{NS}.song"), tr(f"{NS}.tang_fig")], forget_bars(base, res, compare),
                     title=tr(f"{NS}.forget_fig"), x_title=tr(f"{NS}.loss_axis"), fmt=".2f"), key=f"{NS}.forget")
    st.caption(forget_caption(base, res))
    if compare is not None:
        st.markdown(compare_text(compare))

    st.markdown(f"**{tr(f'{NS}.lines_title')}**")
    st.caption(tr(f"{NS}.lines_note"))
    st.markdown(lines_table(base["lines"], res["lines"]))
    own_opening(shown)

    left, right = st.columns(2)
    with left:
        groups = {name: name.rsplit(".", 1)[1] for name in res["spectra"]}
        figure(drawn(spectra, res["spectra"], groups, show=min(2 * cfg["r"], 32), title=tr(f"{NS}.svd_fig", r=cfg["r"]),
                     x_title=tr(f"{NS}.svd_axis"), y_title=tr(f"{NS}.sigma_axis")), key=f"{NS}.svd")
        st.caption(tr(f"{NS}.merge_caption", gap32=res["gap32"]["abs"], rel32=res["gap32"]["rel"],
                      gap16=res["gap16"]["abs"], rel16=res["gap16"]["rel"]))
    with right:
        mem = res["memory"]
        figure(drawn(grouped_bars, [tr(f"{NS}.lora"), tr(f"{NS}.full")],
                     {tr(f"{NS}.computed"): [mem["lora"]["computed"], mem["full"]["computed"]],
                      tr(f"{NS}.measured"): [mem["lora"]["measured"], mem["full"]["measured"]]},
                     title=tr(f"{NS}.memory_fig"), x_title=tr(f"{NS}.bytes_axis"), fmt=".3s"), key=f"{NS}.memory")
        st.caption(tr(f"{NS}.memory_caption", lora=mem["lora"]["measured"], full=mem["full"]["measured"],
                      ratio=mem["full"]["measured"] / max(1, mem["lora"]["measured"])))


lesson.run(ready=ready)
lesson.quiz([("try1", 2), ("try2", 0), ("try3", 1)])
