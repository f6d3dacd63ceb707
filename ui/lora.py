"""E2's results, computed once per server and shared by every student: parameter counts, the
course model before any fine-tune, and everything shown about one adapter (keyed on its
settings and the SHA-256 of its bytes). Plain data only; the adapters themselves are rebuilt
on a fresh view of the shared model for each computation (core.models.lora).

The cached functions live here rather than in the page: a page's module reruns on every
press, and re-creating each cache decorator there costs a source lookup every time.
"""
from __future__ import annotations

import hashlib
import json
import os
import time

import numpy as np
import streamlit as st
import torch

from core.calc import configs
from core.calc.lora import lora_split, lora_splits
from core.lab import lora_finetune as lab
from core.models.lora import TARGETS, adapter_state
from ui.batching import send_now
from ui.classroom import presenting
from ui.live import live_value
from ui.model import course_model
from ui.queue import JobQueue
from ui.url import text_box
from ui.words import lang, plain, tr
from viz.lora import trainable_frozen

MODELS = ["course", "gpt2-small", "llama-2-7b", "llama-3-8b", "mistral-7b", "mixtral-8x7b",
          "llama-2-70b", "gpt3-175b"]
# Fine-tunes running at once on this server: one per four cores (two for a class server of
# eight), so that a class pressing the button together leaves cores for everyone's lessons.
SLOTS = max(1, (os.cpu_count() or 2) // 4)


@st.cache_resource(show_spinner=False)
def job_queue() -> JobQueue:
    return JobQueue(SLOTS)


@st.cache_data(max_entries=64, show_spinner=False)
def counts(r: int, targets: tuple[str, ...]) -> dict:
    rows = [lora_split(configs.get(name), r, targets) for name in MODELS]
    return {"trainable": [int(x["trainable"]) for x in rows], "frozen": [int(x["frozen"]) for x in rows]}


def counts_at(ranks: list[int], targets: tuple[str, ...]) -> list[dict]:
    """``counts`` at every rank (E2's live slider), from one ``lora_splits`` call per model."""
    rows = [lora_splits(configs.get(name), ranks, targets) for name in MODELS]      # model, rank
    return [{"trainable": [int(m[i]["trainable"]) for m in rows], "frozen": [int(m[i]["frozen"]) for m in rows]}
            for i in range(len(ranks))]


def adapter_blob(state: dict[str, torch.Tensor]) -> bytes:
    from safetensors.torch import save

    return save({k: v.contiguous() for k, v in state.items()})


def digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def _config(data: dict) -> lab.FinetuneConfig:
    return lab.FinetuneConfig(**{**data, "targets": tuple(data["targets"])})


@st.cache_data(max_entries=2, show_spinner=False)
def baseline() -> dict:
    """The course model before any fine-tune: losses and line continuations."""
    model, tok = course_model("cpu")
    corpora = lab.load_corpora(tok)
    return {"song": lab.mean_loss(model, corpora.song), "tang": lab.mean_loss(model, corpora.tang),
            "lines": [lab.continue_line(model, tok, o) for o, _ in lab.SONG_OPENINGS]}


def _adapted(config_json: str, blob: bytes):
    from safetensors.torch import load

    model, _ = course_model("cpu")
    return lab.from_state(model, _config(json.loads(config_json)), load(blob))


@st.cache_data(max_entries=16, show_spinner=False)
def analysis(config_json: str, sha256: str, _blob: bytes) -> dict:
    """Everything the results show for one adapter, as plain data (keyed on its sha256; the bytes are not hashed again)."""
    blob = _blob
    model, tok = course_model("cpu")
    config = _config(json.loads(config_json))
    adapted = _adapted(config_json, blob)
    corpora = lab.load_corpora(tok)
    probe = corpora.song[:65]
    spectra_ = {name: s.numpy() for name, s in lab.delta_spectra(adapted).items()}
    return {
        "song": lab.mean_loss(adapted.model, corpora.song), "tang": lab.mean_loss(adapted.model, corpora.tang),
        "lines": [lab.continue_line(adapted.model, tok, o) for o, _ in lab.SONG_OPENINGS],
        "spectra": spectra_, "trainable": adapted.trainable, "frozen": adapted.frozen,
        "gap32": lab.merge_gap(adapted, probe), "gap16": lab.merge_gap(adapted, probe, torch.float16),
        "memory": lab.memory_report(model, config.targets, config.r, config.alpha, probe),
    }


@st.cache_data(max_entries=64, show_spinner=False)
def own_line(config_json: str, sha256: str, _blob: bytes, opening: str) -> dict:
    model, tok = course_model("cpu")
    blob = _blob
    return {"before": lab.continue_line(model, tok, opening),
            "after": lab.continue_line(_adapted(config_json, blob).model, tok, opening),
            "unknown": sum(1 for ch in opening if not tok.is_known(ch))}


@st.cache_resource(show_spinner=False)
def shipped() -> dict | None:
    """The shipped adapter's file, read once (shared, never changed)."""
    try:
        meta = json.loads((lab.ASSETS / lab.ADAPTER_META).read_text(encoding="utf-8"))
        blob = (lab.ASSETS / lab.ADAPTER_FILE).read_bytes()
    except (OSError, ValueError):
        return None
    return {"config": json.dumps(meta["config"]), "blob": blob, "digest": digest(blob),
            "losses": meta["losses"], "seconds": meta.get("cpu_seconds", meta["seconds"])}


@st.cache_resource(show_spinner=False)
def comparison() -> dict | None:
    """LoRA against a full fine-tune of the same budget, as scripts/train_lora.py --compare
    measured it (losses only; read once, shared)."""
    try:
        return json.loads((lab.ASSETS / lab.COMPARE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def song_stats() -> dict:
    try:
        return json.loads((lab.ASSETS / lab.SONG_STATS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


# --- The page's controls and text (lessons/e2_lora.py lays out the sections that show them) -------
NS = "e2"
RANKS = [1, 2, 4, 8, 16, 32, 64]
DEFAULT = lab.FinetuneConfig()
MINE = f"{NS}.mine"      # this session's own fine-tune (plain data), in its session state


def adapter_controls() -> tuple[int, float, tuple[str, ...]]:
    """The rank, α and the projections with adapters. The rank is the counts chart's own live
    slider (ui.live): read here, drawn with the figure."""
    # The seven pills on a row of their own: in a third of a 1024 px page they were cut off.
    pills = st.container()
    r = live_value(f"{NS}.r", RANKS, DEFAULT.r)
    alpha = st.slider("α", 1, 64, int(DEFAULT.alpha), key=f"{NS}.alpha", bind="query-params",
                      help=tr(f"{NS}.alpha_help"))
    targets = pills.pills(tr(f"{NS}.targets"), list(TARGETS), selection_mode="multi", default=list(DEFAULT.targets),
                          key=f"{NS}.targets", bind="query-params")
    return int(r), float(alpha), tuple(t for t in TARGETS if t in (targets or []))


def chosen_adapter() -> tuple[int, float, tuple[str, ...]]:
    """The rank, α and projections as the counts section last set them (its fragment's widgets)."""
    r = st.session_state.get(f"{NS}.r", DEFAULT.r)
    alpha = float(st.session_state.get(f"{NS}.alpha", DEFAULT.alpha))
    return r, alpha, tuple(t for t in TARGETS if t in (st.session_state.get(f"{NS}.targets") or []))


def counts_frames(targets: tuple[str, ...], language: str) -> list:
    """The counts chart at every rank (the live slider's frames), one core call a model."""
    titles = [tr(f"{NS}.course") if name == "course" else configs.get(name).title for name in MODELS]
    return [trainable_frozen(titles, at["trainable"], at["frozen"], names=(tr(f"{NS}.trainable"), tr(f"{NS}.frozen")),
                             title=tr(f"{NS}.counts_fig"), x_title=tr(f"{NS}.params_axis"))
            for at in counts_at(RANKS, targets)]


def counts_caption(r: int, alpha: float, targets: tuple[str, ...]) -> str:
    c = counts(r, targets)
    return tr(f"{NS}.counts_caption", r=r, alpha=alpha, scale=alpha / r, course=c["trainable"][0],
              course_frozen=c["frozen"][0], llama=c["trainable"][MODELS.index("llama-2-7b")],
              gpt3=c["trainable"][MODELS.index("gpt3-175b")])


def stats_caption() -> None:
    """What the Song corpus holds: with the section's prose, on its slide."""
    if stats := song_stats():
        body, whole = stats["body"], stats["whole"]
        st.caption(tr(f"{NS}.song_stats", poems=stats["poems"], chars=body["characters"], lines=body["lines"],
                      unknown=body["unknown"], share=body["unknown"] / max(1, body["characters"]),
                      touched=stats["poems_with_unknown"], whole=whole["characters"],
                      whole_unknown=whole["unknown"]))


def can_tune() -> bool:
    return bool(song_stats()) and (lab.ASSETS / lab.SONG_FILE).exists()


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
    blob = adapter_blob(adapter_state(run.adapted))
    st.session_state[MINE] = {"config": json.dumps(config.to_dict()), "blob": blob, "digest": digest(blob),
                              "losses": run.losses, "seconds": round(seconds, 1)}
    bar.empty()
    live.empty()


def adapter_shown() -> dict | None:
    """The steps and the train button (a press trains this session's own adapter), then which
    adapter the results show: the student's own, else the shipped one (None, with a warning,
    when there is neither)."""
    r, alpha, targets = chosen_adapter()
    c1, c2 = st.columns([3, 2])
    steps = c1.slider(tr(f"{NS}.steps_label"), 10, 300, DEFAULT.steps, 10, key=f"{NS}.steps",
                      bind="query-params", help=tr(f"{NS}.steps_help"))
    c2.write("")
    pressed = c2.button(tr(f"{NS}.train"), key=f"{NS}.train_btn", type="primary", disabled=not targets)
    if pressed and targets:
        train_live(lab.FinetuneConfig(r=int(r), alpha=alpha, targets=targets, steps=int(steps)))
    mine, ship = st.session_state.get(MINE), shipped()
    shown = mine or ship
    if shown is None:
        st.warning(tr(f"{NS}.no_adapter", command=lab.REBUILD))
        return None
    cfg = json.loads(shown["config"])
    which = f"{NS}.showing_mine" if mine else f"{NS}.showing_shipped"
    # Presenter mode: one line of small print, so the two charts under it keep the screen's height.
    (st.caption if presenting() else st.info)(tr(which, r=cfg["r"], alpha=cfg["alpha"], targets=", ".join(cfg["targets"]),
                                                 steps=cfg["steps"], seconds=shown["seconds"]))
    if mine and ship is not None:
        st.button(tr(f"{NS}.back_to_shipped"), key=f"{NS}.back_btn",
                  on_click=lambda: st.session_state.pop(MINE, None))
    return shown


def forget_bars(base: dict, res: dict, compare: dict | None) -> dict[str, list[float]]:
    """The Song and Tang losses before, after this adapter and after the full fine-tune (shipped)."""
    bars = {tr(f"{NS}.before"): [base["song"], base["tang"]], tr(f"{NS}.after_lora"): [res["song"], res["tang"]]}
    if compare is not None:
        full = compare["runs"]["full"]
        bars[tr(f"{NS}.after_full", steps=full["config"]["steps"])] = [full["song"], full["tang"]]
    return bars


def forget_caption(base: dict, res: dict) -> str:
    uniform = float(np.log(len(course_model("cpu")[1])))
    forgot = (res["tang"] - base["tang"]) / (uniform - base["tang"])   # 0: remembers all, 1: guesses evenly
    return (tr(f"{NS}.forget_caption", song0=base["song"], song1=res["song"], tang0=base["tang"],
               tang1=res["tang"], uniform=uniform, forgot=forgot)
            + (("" if lang() == "zh" else " ") + tr(f"{NS}.forget_most") if forgot > 0.5 else ""))


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


def compare_text(compare: dict) -> str:
    """The comparison's title, its table and the text that quotes its numbers."""
    runs = compare["runs"]
    numbers = {f"{name}_{what}": runs[name][what] for name in runs for what in ("song", "tang")} | {
        "uniform": compare["uniform"], "full_lr": runs["full"]["lr"], "tang0": compare["before"]["tang"]}
    return tr(f"{NS}.compare_title") + "\n\n" + compare_table(compare) + "\n\n" + tr(f"{NS}.compare_text", **numbers)


def lines_table(before: list[str], after: list[str]) -> str:
    """The Song openings continued greedily before and after the fine-tune."""
    # Three columns, the opening and the poet's half in one (the half in bold, as the continuations
    # below): with the opening and the poet's half apart, four columns of Chinese at 1024 px broke
    # every half-line over two rows.
    head = f"| {tr(f'{NS}.real')} | {tr(f'{NS}.before')} | {tr(f'{NS}.after_col')} |\n|---|---|---|\n"
    return head + "\n".join(f"| {o}**{real}** | {plain(b) or '∅'} | {plain(a) or '∅'} |"
                             for (o, real), b, a in zip(lab.SONG_OPENINGS, before, after, strict=True))


def own_opening(shown: dict) -> None:
    """The student's own opening, continued before and after this adapter."""
    text = text_box(f"{NS}.prompt", lab.SONG_OPENINGS[0][0], 60, tr(f"{NS}.prompt_label"))
    opening = lab.SONG_OPENINGS[0][0] if text.empty else text.text
    own = own_line(shown["config"], shown["digest"], shown["blob"], opening)
    if own["unknown"]:
        st.warning(tr(f"{NS}.unknown_note", n=own["unknown"]))
    st.markdown(tr(f"{NS}.own_line", opening=plain(opening), before=plain(own["before"]) or "∅",
                   after=plain(own["after"]) or "∅"))
