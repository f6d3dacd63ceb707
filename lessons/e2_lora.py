"""E2 · LoRA: freeze W, learn a low-rank ΔW = B·A, fine-tune the course model on Song poems."""
import json
import time

import numpy as np
import streamlit as st

from core.calc import configs
from core.lab import lora_finetune as lab
from core.models.lora import TARGETS, add_lora
from core.parts.lora import LoRALinear
from ui.classroom import presenting
from ui.frame import (
    beside_code,
    built_figure,
    figure,
    fragment,
    header,
    lang,
    plain,
    send_now,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.lora import (
    MODELS,
    adapter_blob,
    analysis,
    baseline,
    comparison,
    counts,
    counts_at,
    digest,
    job_queue,
    own_line,
    shipped,
    song_stats,
)
from ui.model import course_model
from viz.attention import lines
from viz.lora import grouped_bars, spectra, trainable_frozen

NS = "e2"
RANKS = [1, 2, 4, 8, 16, 32, 64]
DEFAULT = lab.FinetuneConfig()
MINE = f"{NS}.mine"      # this session's own fine-tune (plain data), in its session state

header(NS)


def adapter_controls():
    # The seven pills on a row of their own: in a third of a 1024 px page they were cut off.
    # The rank is the counts chart's own live slider (ui.live): read here, drawn with the figure.
    pills = st.container()
    r = live_value(f"{NS}.r", RANKS, DEFAULT.r)
    alpha = st.slider("α", 1, 64, int(DEFAULT.alpha), key=f"{NS}.alpha", bind="query-params",
                      help=tr(f"{NS}.alpha_help"))
    targets = pills.pills(tr(f"{NS}.targets"), list(TARGETS), selection_mode="multi", default=list(DEFAULT.targets),
                       key=f"{NS}.targets", bind="query-params")
    return int(r), float(alpha), tuple(t for t in TARGETS if t in (targets or []))


def train_live(config: lab.FinetuneConfig) -> None:
    """The student's own fine-tune: wait for a free slot (place shown), then train with a
    progress bar and a live loss curve; the result goes to this session's state only."""
    send_now()   # the place in the queue and the progress bar show as they change
    model, tok = course_model("cpu")
    queue = job_queue()
    ticket = queue.join()
    status = st.empty()
    try:
        while not queue.try_start(ticket):
            status.info(tr(f"{NS}.queued", place=queue.place(ticket), running=queue.running))
            time.sleep(0.5)
        status.empty()
        bar = st.progress(0.0, text=tr(f"{NS}.progress", step=0, steps=config.steps, loss=float("nan")))
        live = st.empty()
        losses: list[float] = []

        def on_step(step: int, loss: float) -> None:
            losses.append(loss)
            bar.progress(step / config.steps, text=tr(f"{NS}.progress", step=step, steps=config.steps, loss=loss))
            if step % 5 == 0 or step == config.steps:
                live.line_chart({tr(f"{NS}.train_loss"): losses}, height=220, x_label=tr(f"{NS}.step"))

        t0 = time.time()
        run = lab.finetune(model, lab.load_corpora(tok).song, config, on_step=on_step)
        seconds = time.time() - t0
    finally:
        queue.leave(ticket)
    from core.models.lora import adapter_state

    blob = adapter_blob(adapter_state(run.adapted))
    st.session_state[MINE] = {"config": json.dumps(config.to_dict()), "blob": blob, "digest": digest(blob),
                              "losses": run.losses, "seconds": round(seconds, 1)}
    bar.empty()
    live.empty()


def compare_table(compare: dict) -> str:
    """The comparison runs as a table: who trained what, and the two losses after."""
    head = (f"| {tr(f'{NS}.method')} | {tr(f'{NS}.steps_col')} | {tr(f'{NS}.trained_col')} | {tr(f'{NS}.lr_col')} "
            f"| {tr(f'{NS}.song')} | {tr(f'{NS}.tang')} |\n|---|---:|---:|---:|---:|---:|")
    b = compare["before"]
    rows = [head, f"| {tr(f'{NS}.base_row')} | 0 | 0 | – | {b['song']:.2f} | {b['tang']:.2f} |"]
    for run in compare["runs"].values():
        c = run["config"]
        name = (tr(f"{NS}.full") if run["method"] == "full"
                else tr(f"{NS}.lora_row", r=c["r"], targets=", ".join(c["targets"])))
        rows.append(f"| {name} | {c['steps']} | {run['trainable']:,} | {run['lr']:g} "
                    f"| {run['song']:.2f} | {run['tang']:.2f} |")
    return "\n".join(rows)


def compare_numbers(compare: dict) -> dict:
    """The numbers the comparison's text quotes."""
    runs = compare["runs"]
    return {f"{name}_{what}": runs[name][what] for name in runs for what in ("song", "tang")} | {
        "uniform": compare["uniform"], "full_lr": runs["full"]["lr"], "tang0": compare["before"]["tang"]}


# ---- the page ------------------------------------------------------------------------------------
loaded = course_model("cpu")
st.subheader(tr(f"{NS}.counts_title"))
st.markdown(tr(f"{NS}.counts_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.counts_title")))
controls_slot = st.container()
counts_slot = beside_code(LoRALinear.forward, LoRALinear.merge, add_lora)


@fragment
def counts_section() -> None:
    with controls_slot:
        r, alpha, targets = adapter_controls()
        if not targets:
            st.info(tr(f"{NS}.no_targets"))
    c = counts(r, targets)
    with counts_slot:
        titles = [tr(f"{NS}.course") if name == "course" else configs.get(name).title for name in MODELS]

        def counts_frames():   # the counts at every rank (the live slider's frames), one core call a model
            return [trainable_frozen(titles, at["trainable"], at["frozen"],
                                     names=(tr(f"{NS}.trainable"), tr(f"{NS}.frozen")),
                                     title=tr(f"{NS}.counts_fig"), x_title=tr(f"{NS}.params_axis"))
                    for at in counts_at(RANKS, targets)]

        live_figure(counts_frames, ("e2.counts", targets, lang()), f"{NS}.counts", f"{NS}.r", RANKS, DEFAULT.r,
                    tr(f"{NS}.rank"))
        st.caption(tr(f"{NS}.counts_caption", r=r, alpha=alpha, scale=alpha / r,
                      course=c["trainable"][0], course_frozen=c["frozen"][0],
                      llama=c["trainable"][MODELS.index("llama-2-7b")],
                      gpt3=c["trainable"][MODELS.index("gpt3-175b")]))


counts_section()

st.subheader(tr(f"{NS}.tune_title"))
stats = song_stats()
st.markdown(tr(f"{NS}.tune_text"))
if stats:                       # what the corpus holds: with the prose, on its slide
    body, whole = stats["body"], stats["whole"]
    st.caption(tr(f"{NS}.song_stats", poems=stats["poems"], chars=body["characters"], lines=body["lines"],
                  unknown=body["unknown"], share=body["unknown"] / max(1, body["characters"]),
                  touched=stats["poems_with_unknown"], whole=whole["characters"],
                  whole_unknown=whole["unknown"]))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.tune_title")))


def prompt_controls() -> str:
    text = text_box(f"{NS}.prompt", lab.SONG_OPENINGS[0][0], 60, tr(f"{NS}.prompt_label"))
    return lab.SONG_OPENINGS[0][0] if text.empty else text.text


@fragment
def tune_section() -> None:
    r = st.session_state.get(f"{NS}.r", DEFAULT.r)
    alpha = float(st.session_state.get(f"{NS}.alpha", DEFAULT.alpha))
    targets = tuple(t for t in TARGETS if t in (st.session_state.get(f"{NS}.targets") or []))
    c1, c2 = st.columns([3, 2])
    steps = c1.slider(tr(f"{NS}.steps_label"), 10, 300, DEFAULT.steps, 10, key=f"{NS}.steps",
                      bind="query-params", help=tr(f"{NS}.steps_help"))
    c2.write("")
    pressed = c2.button(tr(f"{NS}.train"), key=f"{NS}.train_btn", type="primary", disabled=not targets)
    if pressed and targets:
        train_live(lab.FinetuneConfig(r=int(r), alpha=alpha, targets=targets, steps=int(steps)))

    mine = st.session_state.get(MINE)
    ship, compare = shipped(), comparison()
    shown = mine or ship
    if shown is None:
        st.warning(tr(f"{NS}.no_adapter", command=lab.REBUILD))
        return
    cfg = json.loads(shown["config"])
    which = f"{NS}.showing_mine" if mine else f"{NS}.showing_shipped"
    # Presenter mode: one line of small print, so the two charts under it keep the screen's height.
    (st.caption if presenting() else st.info)(tr(which, r=cfg["r"], alpha=cfg["alpha"], targets=", ".join(cfg["targets"]),
                                                 steps=cfg["steps"], seconds=shown["seconds"]))
    if mine and ship is not None:
        st.button(tr(f"{NS}.back_to_shipped"), key=f"{NS}.back_btn",
                  on_click=lambda: st.session_state.pop(MINE, None))

    base, res = baseline(), analysis(shown["config"], shown["digest"], shown["blob"])
    tag = f"{shown['digest']}:{lang()}"   # the results figures depend on the adapter and the language

    left, right = st.columns(2)
    with left:
        losses = shown["losses"]
        figure(built_figure(f"loss:{tag}", lambda: lines(
            np.arange(1, len(losses) + 1), {tr(f"{NS}.train_loss"): np.asarray(losses)},
            title=tr(f"{NS}.loss_fig"), x_title=tr(f"{NS}.step"), y_title=tr(f"{NS}.loss_axis"))),
               key=f"{NS}.loss")
    with right:
        song, tang = tr(f"{NS}.song"), tr(f"{NS}.tang_fig")   # on three lines: one did not fit
        bars = {tr(f"{NS}.before"): [base["song"], base["tang"]],
                tr(f"{NS}.after_lora"): [res["song"], res["tang"]]}
        if compare is not None:
            full = compare["runs"]["full"]
            bars[tr(f"{NS}.after_full", steps=full["config"]["steps"])] = [full["song"], full["tang"]]
        figure(built_figure(f"forget:{tag}:{compare is None}", lambda: grouped_bars(
            [song, tang], bars, title=tr(f"{NS}.forget_fig"), x_title=tr(f"{NS}.loss_axis"), fmt=".2f")),
               key=f"{NS}.forget")
    uniform = float(np.log(len(course_model("cpu")[1])))
    forgot = (res["tang"] - base["tang"]) / (uniform - base["tang"])   # 0: remembers all, 1: guesses evenly
    st.caption(tr(f"{NS}.forget_caption", song0=base["song"], song1=res["song"], tang0=base["tang"],
                  tang1=res["tang"], uniform=uniform, forgot=forgot)
               + (("" if lang() == "zh" else " ") + tr(f"{NS}.forget_most") if forgot > 0.5 else ""))
    if compare is not None:
        st.markdown(tr(f"{NS}.compare_title") + "\n\n" + compare_table(compare) + "\n\n"
                    + tr(f"{NS}.compare_text", **compare_numbers(compare)))

    st.markdown(f"**{tr(f'{NS}.lines_title')}**")
    st.caption(tr(f"{NS}.lines_note"))
    # Three columns, the opening and the poet's half in one (the half in bold, as the continuations
    # below): with the opening and the poet's half apart, four columns of Chinese at 1024 px broke
    # every half-line over two rows.
    head = f"| {tr(f'{NS}.real')} | {tr(f'{NS}.before')} | {tr(f'{NS}.after_col')} |\n|---|---|---|\n"
    rows = [f"| {o}**{real}** | {plain(b) or '∅'} | {plain(a) or '∅'} |"
            for (o, real), b, a in zip(lab.SONG_OPENINGS, base["lines"], res["lines"], strict=True)]
    st.markdown(head + "\n".join(rows))
    opening = prompt_controls()
    own = own_line(shown["config"], shown["digest"], shown["blob"], opening)
    if own["unknown"]:
        st.warning(tr(f"{NS}.unknown_note", n=own["unknown"]))
    st.markdown(tr(f"{NS}.own_line", opening=plain(opening), before=plain(own["before"]) or "∅",
                   after=plain(own["after"]) or "∅"))

    left, right = st.columns(2)
    with left:
        groups = {name: name.rsplit(".", 1)[1] for name in res["spectra"]}
        figure(built_figure(f"svd:{tag}", lambda: spectra(
            res["spectra"], groups, show=min(2 * cfg["r"], 32), title=tr(f"{NS}.svd_fig", r=cfg["r"]),
            x_title=tr(f"{NS}.svd_axis"), y_title=tr(f"{NS}.sigma_axis"))), key=f"{NS}.svd")
        st.caption(tr(f"{NS}.merge_caption", gap32=res["gap32"]["abs"], rel32=res["gap32"]["rel"],
                      gap16=res["gap16"]["abs"], rel16=res["gap16"]["rel"]))
    with right:
        mem = res["memory"]
        figure(built_figure(f"memory:{tag}", lambda: grouped_bars(
            [tr(f"{NS}.lora"), tr(f"{NS}.full")],
            {tr(f"{NS}.computed"): [mem["lora"]["computed"], mem["full"]["computed"]],
             tr(f"{NS}.measured"): [mem["lora"]["measured"], mem["full"]["measured"]]},
            title=tr(f"{NS}.memory_fig"), x_title=tr(f"{NS}.bytes_axis"), fmt=".3s")),
               key=f"{NS}.memory")
        st.caption(tr(f"{NS}.memory_caption", lora=mem["lora"]["measured"], full=mem["full"]["measured"],
                      ratio=mem["full"]["measured"] / max(1, mem["lora"]["measured"])))


if loaded is not None and stats and (lab.ASSETS / lab.SONG_FILE).exists():
    tune_section()
elif loaded is not None:
    st.warning(tr(f"{NS}.no_song", command=lab.REBUILD_SONG))

try_this(NS, [("try1", 2), ("try2", 0), ("try3", 1)])
