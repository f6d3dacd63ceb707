"""D1 · Autoregressive generation: predict, pick, append, repeat."""
import streamlit as st

from core.lab.real_generation import chat_ids
from core.models.generate import Generation, at_temperature, sampling_probs, temperature_sweep
from ui.d1_generation import branch_controls, branch_point, branch_view, course_setup, real_setup, strip, why
from ui.frame import device, sentences, tr
from ui.lesson import Lesson
from ui.model import REAL, course_model, model_switch, real_model

NS = "d1"

lesson = Lesson(NS)
# The course model (唐诗) stays the default; SmolLM2-135M-Instruct writes English (?d1.lm=smollm2).
real = real_model(device()) if model_switch(NS) == REAL else None
loaded = course_model(device()) if real is None else None
CODE = ((chat_ids, sampling_probs, Generation.step) if real is not None
        else (sampling_probs, at_temperature, temperature_sweep, Generation.step))

# Three sections without headings, each a presenter slide of its own, drawn by one fragment: a
# control moved anywhere reruns the lesson alone (the questions below are neither sent nor drawn
# again). Either model's generation is a Run (ui/d1_generation.py): the step and strip sections
# draw it the same way.
lesson.section("setup", layout_only=True, opens="classroom.slide.d1_setup", slide=False, above=(),
               text=f"{NS}.real_intro" if real is not None else f"{NS}.course_intro")
lesson.section("step", layout_only=True, opens="classroom.slide.d1_step", slide=False, above=())
lesson.section("strip", layout_only=True, opens="classroom.slide.d1_strip", slide=False, above=(), code=CODE,
               code_below=True)


@lesson.body
def body(slots, real, dev):
    with slots["setup"].figure:                  # the prompt, the sampler, the text written
        run = real_setup(*real, dev) if real is not None else course_setup(dev)
    with slots["step"].figure:                   # one step's distribution, and a branch from it
        at = run.look()                          # the step looked at (0: before the first token)
        log = st.toggle(tr(f"{NS}.log_label"), value=True, key=f"{NS}.log", bind="query-params",
                        help=tr(f"{NS}.log_help"))
        d = run.view(at)
        pos = run.n_prompt + max(at, 1) - 1      # positions count from 0
        title = tr(f"{NS}.bars_title", pos=pos) if at else tr(run.next_title, pos=pos)
        # A bar clicked names its branch's token: the branch is read before the bars, else after the why.
        branch = branch_point(run, d, at) if run.click else None
        run.bars(d, at, pos, title, log, branch)
        lines = ([why(run, d)] if at else []) + run.more(d, at)
        if lines:
            st.markdown(sentences(*lines))
        if at:
            if not run.click:
                branch = branch_point(run, d, at)
            branch_controls(d, at, branch, click=run.click)
            if branch:
                branch_view(run, branch)
    with slots["strip"].figure:                  # the same step at three temperatures
        strip(run, d, pos, log)


if real is not None or loaded is not None:
    lesson.run(real=real, dev=device())
lesson.quiz([("try1", 0), ("try2", 1), ("try3", 2)])
