"""E1 · Mixture of experts: a router sends each token to k of E feed-forward experts."""
import math

import streamlit as st

from core.lab.moe_lab import all_to_all, arch_of, expert_stats, memory_and_compute
from core.models.moe_model import NO_AUX_PREFIX, REBUILD, MoEModelUnavailable
from core.parts.moe import MODES, MoE, choose_experts, expert_capacity, fill_experts, switch_loss
from ui.classroom import presenting
from ui.frame import (
    beside_code,
    built_figure,
    choice,
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    plain,
    repeat_control,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure, live_value
from ui.moe import MAIN, capacity_loads, dense_training, load_cached, memory_points, routed, shipped, song_counts
from viz.attention import lines
from viz.moe import LOST_ALL, LOST_ONE, count_grid, load_bars, memory_compute, router_map

NS = "e1"
DEFAULT_PROMPT = "君不见，黄河之水天上来，奔流到海不复回。"
LIMIT = 64
CAPACITY = ["0.25", "0.5", "0.75", "1", "1.25", "1.5", "2", "3", "∞"]   # ∞: no limit (a symbol, not a word: the URL holds it)
# The modes' names as shown (the URL holds the neutral value).
MODE_NAMES = {"topk": f"{NS}.mode_topk", "noisy": f"{NS}.mode_noisy", "switch": f"{NS}.mode_switch",
              "gshard": f"{NS}.mode_gshard"}
header(NS)


def routing_controls(n_layers: int, n_experts: int):
    # The capacity factor is the load chart's own live slider (ui.live): read here, drawn there.
    capacity = live_value(f"{NS}.capacity", CAPACITY, "1.25")
    # Presenter mode: the six controls in one row, so the router map under them keeps the screen's height.
    if presenting():
        c1, c2, c3, c5, c6, c7 = st.columns([1.6, 0.8, 1.1, 1.3, 1.2, 1])
    else:
        c1, c2, c3 = st.columns(3)
        c5, c6, c7 = st.columns([2, 2, 1])
    layer = c1.slider(tr(f"{NS}.layer"), 0, n_layers - 1, 0, key=f"{NS}.layer", bind="query-params")
    k = c2.slider("k", 1, n_experts, 2, key=f"{NS}.k", bind="query-params", help=tr(f"{NS}.k_help"))
    n_used = c3.slider(tr(f"{NS}.n_used"), 1, n_experts, n_experts, key=f"{NS}.n_used", bind="query-params")
    with c5:
        mode = choice(tr(f"{NS}.mode"), MODES, f"{NS}.mode", {m: tr(MODE_NAMES[m]) for m in MODES})
    noise = c6.slider(tr(f"{NS}.noise"), 0.0, 3.0, 1.0, 0.25, key=f"{NS}.noise", bind="query-params",
                      help=tr(f"{NS}.noise_help"))
    seed = c7.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                           help=tr(f"{NS}.seed_help"))
    return layer, mode or "topk", k, n_used, capacity, noise, int(seed)


def marked_text(tokens: list[str], overflowed, partly) -> str:
    """The prompt with each token no expert took marked LOST_ALL (the residual alone carries it)
    and each token that lost one of its experts marked LOST_ONE. HTML spans, not markdown: bold
    and strike-through delimiters between adjacent characters paired up wrongly in markdown.
    The text inside is escaped by ``plain`` (markdown's backslash escapes hold inside a span)."""
    out = []
    for t, lost_all, lost_one in zip(tokens, overflowed, partly, strict=True):
        shown = plain(t)
        out.append(LOST_ALL.format(shown) if lost_all else LOST_ONE.format(shown) if lost_one else shown)
    return "".join(out)


def cell(char: str) -> str:
    """A corpus character for a markdown table cell: line breaks and spaces made visible."""
    return plain({"\n": "↵", " ": "␣"}.get(char, char))


def collapse_figure(runs):
    """Each expert's share of the corpus' assignments, per layer, for each training run."""
    rows, loads = [], []
    for label, info in runs:
        if info is None:
            continue
        for i, layer_stats in enumerate(info["experts"]["layers"]):
            rows.append(f"{label} · {tr(f'{NS}.layer_short')}{i}")
            loads.append([100 * e["load"] for e in layer_stats])
    return count_grid(loads, rows, expert_names, fmt=".0f", axis_titles=False,
                      names=(tr(f"{NS}.layer"), tr(f"{NS}.expert"), tr(f"{NS}.share")),
                      title=tr(f"{NS}.collapse_fig"), height=150 + 34 * len(rows))


def balance_figure(runs):
    """E · Σ fᵢ Pᵢ through training, one line per run (gaps NaN if their lengths differ)."""
    steps = sorted({p["step"] for _, info in runs if info for p in info["curve"]})
    curves = {}
    for label, info in runs:
        if info is not None:
            by_step = {p["step"]: p["balance"] for p in info["curve"]}
            curves[label] = [by_step.get(s, float("nan")) for s in steps]
    return lines(steps, curves, title=tr(f"{NS}.balance_fig"), x_title=tr(f"{NS}.step"),
                 y_title="E · Σ fᵢ Pᵢ")


def score_table(main_info: dict, noaux_info: dict | None) -> str:
    """Loss of each model on the same three texts, as the training script scored them."""
    meta = main_info["meta"]
    seen = tr(f"{NS}.seen")
    head = (f"| {tr(f'{NS}.model')} | {tr(f'{NS}.on_train', n=meta['training_split_scored'])} "
            f"| {tr(f'{NS}.on_val', n=meta['validation_scored'])} "
            f"| {tr(f'{NS}.on_song', poems=meta['song100_poems'], n=meta['song100_scored'])} |")
    rows = [head, "|---|---:|---:|---:|",
            f"| {tr(f'{NS}.dense_model')} | {meta['dense_training_split_loss']:.3f} {seen} "
            f"| {meta['dense_validation_loss']:.3f} {seen} | **{meta['dense_song100_loss']:.3f}** |"]
    for label, info in ((tr(f"{NS}.moe_with_aux"), main_info), (tr(f"{NS}.moe_without_aux"), noaux_info)):
        if info is not None:
            m = info["meta"]
            rows.append(f"| {label} | {m['training_split_loss']:.3f} | {m['validation_loss']:.3f} "
                        f"| **{m['song100_loss']:.3f}** |")
    return "\n".join(rows)


loaded = load_cached(MAIN, device())
if isinstance(loaded, MoEModelUnavailable):
    st.error(tr(f"{NS}.unavailable", reason=str(loaded), command=REBUILD))
    st.stop()
model, tok = loaded
cfg = model.config
expert_names = [f"E{e}" for e in range(cfg.n_experts)]

# The fixed parts are laid out once; the fragment refills the slots when a control moves.
st.subheader(tr(f"{NS}.route_title"))
st.markdown(tr(f"{NS}.route_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.route_title")))   # presenter mode: controls + figure
slot = {"controls": st.container()}
slot["router"] = beside_code(MoE.forward, choose_experts, height=560)
st.subheader(tr(f"{NS}.load_title"))
st.markdown(tr(f"{NS}.load_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.load_title")))
slot["load"] = beside_code(expert_capacity, fill_experts, switch_loss, height=480)
st.subheader(tr(f"{NS}.devices_title"))
st.markdown(tr(f"{NS}.devices_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.devices_title")))
slot["devices"] = beside_code(all_to_all, height=420)


@fragment
def routing_section():
    with slot["controls"]:
        text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, LIMIT, tr(f"{NS}.prompt_label"))
        prompt = DEFAULT_PROMPT if text.empty else text.text
        layer, mode, k, n_used, capacity, noise, seed = routing_controls(cfg.n_layers, cfg.n_experts)
    settings = (prompt, mode, k, n_used, capacity, noise, seed, device())
    run = routed(*settings)
    shown = (*settings, layer, lang())     # everything the three figures below show
    r = run["layers"][layer]
    n = len(run["tokens"])
    beyond = int((r["wanted"] - r["capacity"]).clip(min=0).sum()) if r["capacity"] is not None else 0

    with slot["router"]:
        notes = []
        if mode in ("switch", "gshard") or k > n_used:
            notes.append(tr(f"{NS}.k_note", k=run["k"]))
        if mode != "noisy" and noise != 1.0:
            notes.append(tr(f"{NS}.noise_note"))
        for note in notes:
            st.caption(note)
        across = presenting()     # a wide slide: a token a column
        figure(built_figure(("router", across, *shown), lambda: router_map(
            r["probs"], run["tokens"], r["experts"], r["fits"], r["dispatched"],
            expert_names=expert_names,
            names=(tr(f"{NS}.token"), tr(f"{NS}.expert"), tr(f"{NS}.prob")),
            marks=(tr(f"{NS}.mark_ran"), tr(f"{NS}.mark_full"), tr(f"{NS}.mark_skipped")),
            title=tr(f"{NS}.router_fig", layer=layer, mode=tr(MODE_NAMES[mode]), k=run["k"]),
            height=max(380, 140 + 22 * n), across=across)),
            key=f"{NS}.router")
        st.markdown(tr(f"{NS}.losses", aux=r["aux"], balance=r["balance"], z=r["z"]))
    with slot["load"]:
        # presenter mode: the capacity again, on this figure's slide
        repeat_control(st.select_slider, tr(f"{NS}.capacity"), CAPACITY, key=f"{NS}.capacity",
                       help=tr(f"{NS}.capacity_help"))
        cap_text = tr(f"{NS}.no_limit") if r["capacity"] is None else str(r["capacity"])

        def load_frames():   # the load at every capacity factor (the live slider's frames), one core call
            return [load_bars(at["wanted"], at["load"], at["capacity"], expert_names=expert_names,
                              names=(tr(f"{NS}.processed"), tr(f"{NS}.turned_away"), tr(f"{NS}.capacity_line")),
                              title=tr(f"{NS}.load_fig", layer=layer,
                                       cap=tr(f"{NS}.no_limit") if at["capacity"] is None else str(at["capacity"])),
                              y_title=tr(f"{NS}.assignments"))
                    for at in capacity_loads(prompt, mode, k, n_used, CAPACITY, noise, seed, layer, device())]

        live_figure(load_frames, ("e1.load", prompt, mode, k, n_used, noise, seed, layer, device(), lang()),
                    f"{NS}.load", f"{NS}.capacity", CAPACITY, "1.25", tr(f"{NS}.capacity"),
                    help=tr(f"{NS}.capacity_help"))
        st.markdown(tr(f"{NS}.overflow_count", n=beyond, tokens=int(r["overflowed"].sum()), total=n,
                       partly=int(r["partly"].sum()), cap=cap_text)
                    + "\n\n" + marked_text(run["tokens"], r["overflowed"], r["partly"]), unsafe_allow_html=True)
        st.caption(tr(f"{NS}.hits", hits=run["hits"], total=max(0, n - 1)))
    with slot["devices"]:
        repeat_control(st.slider, tr(f"{NS}.n_used"), 1, cfg.n_experts, key=f"{NS}.n_used")   # presenter mode
        traffic = r["traffic"]
        crossing = int(traffic.sum() - traffic.trace())
        gpus = [f"GPU {g}" for g in range(n_used)]
        figure(built_figure(("devices", *shown), lambda: count_grid(
            traffic, gpus, expert_names[:n_used],
            names=(tr(f"{NS}.from_device"), tr(f"{NS}.to_device"), tr(f"{NS}.tokens_sent")),
            title=tr(f"{NS}.devices_fig", layer=layer, n=n_used),
            height=max(300, 150 + 34 * n_used))),
            key=f"{NS}.devices")
        st.markdown(tr(f"{NS}.crossing", n=crossing, total=int(traffic.sum()), back=2 * crossing))


routing_section()

# What training did: balanced against collapsed ------------------------------------------------
st.subheader(tr(f"{NS}.collapse_title"))
st.markdown(tr(f"{NS}.collapse_text"))
main_info, noaux_info = shipped(MAIN), shipped(NO_AUX_PREFIX)
left, right = st.columns([3, 2])
with left:
    if main_info is None:
        st.info(tr(f"{NS}.no_stats", command=REBUILD))
    else:
        runs = ((tr(f"{NS}.with_aux"), main_info), (tr(f"{NS}.without_aux"), noaux_info))
        figure(built_figure(("collapse", noaux_info is None, lang()), lambda: collapse_figure(runs)),
               key=f"{NS}.collapse")
        if noaux_info is None:
            st.info(tr(f"{NS}.no_noaux", command=f"{REBUILD} --no-aux"))
        figure(built_figure(("balance", noaux_info is None, lang()), lambda: balance_figure(runs)),
               key=f"{NS}.balance")
        if noaux_info is not None:
            st.caption(tr(f"{NS}.runs", a=main_info["meta"]["training"]["steps"],
                          b=noaux_info["meta"]["training"]["steps"]))
        st.markdown(score_table(main_info, noaux_info))
        song, dense_run, moe_run = song_counts(), dense_training(), main_info["meta"]["training"]
        st.caption(tr(f"{NS}.scores_caption", v=cfg.vocab_size, uniform=math.log(cfg.vocab_size),
                      dropped=song["whole"]["unknown"], chars=song["whole"]["characters"],
                      moe_steps=moe_run["steps"], moe_batch=moe_run["batch_size"],
                      dense_steps=dense_run["steps"], dense_batch=dense_run["batch_size"]))
        st.markdown(tr(f"{NS}.overfit", train=main_info["meta"]["training_split_loss"],
                       val=main_info["meta"]["validation_loss"]))
with right:
    code_panel(switch_loss, height=420)

# What the experts learned ----------------------------------------------------------------------
st.subheader(tr(f"{NS}.learned_title"))
st.markdown(tr(f"{NS}.learned_text"))
learned_slot = beside_code(expert_stats, height=480)


@fragment
def learned_section():
    with learned_slot:
        if main_info is None:
            st.info(tr(f"{NS}.no_stats", command=REBUILD))
            return
        stats = main_info["experts"]
        layer = st.slider(tr(f"{NS}.learned_layer"), 0, len(stats["layers"]) - 1, 0,
                          key=f"{NS}.learned_layer", bind="query-params")
        head = f"| {tr(f'{NS}.expert')} | {tr(f'{NS}.share')} | {tr(f'{NS}.often')} | {tr(f'{NS}.exclusive')} |"
        rows = [head, "|---|---:|---|---|"]
        for e, ex in enumerate(stats["layers"][layer]):
            often = " ".join(cell(c) for c, _ in ex["often"][:8])
            own = " ".join(f"{cell(c)}&nbsp;{100 * s:.0f}%" for c, s in ex["exclusive"][:6])
            rows.append(f"| E{e} | {100 * ex['load']:.1f}% | {often} | {own} |")
        st.markdown("\n".join(rows))
        st.caption(tr(f"{NS}.learned_caption", tokens=stats["tokens"], min=stats["min_count"]))


learned_section()

# Memory against compute --------------------------------------------------------------------------
st.subheader(tr(f"{NS}.memory_title"))
st.markdown(tr(f"{NS}.memory_text"))
memory_slot = beside_code(memory_and_compute, arch_of, height=420)


with memory_slot:
    points = memory_points(MAIN, tr(f"{NS}.moe_course"), cfg)
    figure(built_figure(("memory", lang()), lambda: memory_compute(
        points, names=(tr(f"{NS}.memory_axis"), tr(f"{NS}.flops_axis")),
        series=(tr(f"{NS}.dense"), tr(f"{NS}.moe"), tr(f"{NS}.dense_line")), title=tr(f"{NS}.memory_fig"))),
        key=f"{NS}.memory")
    head = f"| {tr(f'{NS}.model')} | {tr(f'{NS}.total')} | {tr(f'{NS}.active')} | {tr(f'{NS}.ratio')} |"
    rows = [head, "|---|---:|---:|---:|"]
    for p in points:
        if p["moe"]:
            rows.append(f"| {p['title']} | {p['total']:,} | {p['active']:,} | {p['total'] / p['active']:.2f}× |")
    st.markdown("\n".join(rows))
    st.caption(tr(f"{NS}.memory_caption"))

try_this(NS, [("try1", 2), ("try2", 0), ("try3", 1)])
