"""The MoE course models and what training wrote beside them, loaded once per process and
shared by every student (E1). Cached functions live here, not in the page: a decorator in a
page is applied again on every run of the page, and Streamlit reads the function's source
each time to key its cache.

Nothing per-request lives on the models: callers pass their own routing, generator and trace.
"""
from __future__ import annotations

import json

import streamlit as st

from core.calc import configs
from core.lab.lora_finetune import SONG_STATS
from core.lab.moe_lab import all_to_all, arch_of, memory_and_compute, route_prompt, route_prompt_at
from core.models.model import ASSETS
from core.models.moe_model import NO_AUX_PREFIX, MoEConfig, MoEModelUnavailable, load_moe_model
from core.parts.moe import MODES, Routing
from ui.classroom import presenting
from ui.frame import choice, plain, tr
from ui.live import live_value
from viz.attention import lines
from viz.moe import LOST_ALL, LOST_ONE, count_grid, load_bars, memory_compute, router_map

MAIN = "moe_model"
NS = "e1"
DEFAULT_PROMPT = "君不见，黄河之水天上来，奔流到海不复回。"
LIMIT = 64
CAPACITY = ["0.25", "0.5", "0.75", "1", "1.25", "1.5", "2", "3", "∞"]   # ∞: no limit (a symbol, not a word: the URL holds it)
# The modes' names as shown (the URL holds the neutral value).
MODE_NAMES = {"topk": f"{NS}.mode_topk", "noisy": f"{NS}.mode_noisy", "switch": f"{NS}.mode_switch",
              "gshard": f"{NS}.mode_gshard"}


@st.cache_resource(show_spinner=False, max_entries=4)
def load_cached(prefix: str, dev: str):
    """(model, tokenizer), or the MoEModelUnavailable error to show."""
    try:
        return load_moe_model(dev, prefix=prefix)
    except MoEModelUnavailable as err:
        return err


@st.cache_resource(max_entries=4, show_spinner=False)
def shipped(prefix: str) -> dict | None:
    """What training wrote beside the weights: config, losses, curve, expert statistics.
    Read once and shared (cache_resource: no copy per run); the page never changes it."""
    try:
        return {name: json.loads((ASSETS / f"{prefix}{suffix}").read_text(encoding="utf-8"))
                for name, suffix in (("meta", "_config.json"), ("curve", "_loss.json"),
                                     ("experts", "_experts.json"))}
    except (OSError, ValueError):
        return None


@st.cache_resource(max_entries=1, show_spinner=False)
def dense_training() -> dict:
    """The dense course model's training settings (steps, batch size), for the E1 caption."""
    return json.loads((ASSETS / "course_model_config.json").read_text(encoding="utf-8"))["training"]


@st.cache_resource(max_entries=1, show_spinner=False)
def song_counts() -> dict:
    """What building song100.txt kept and dropped (scripts/build_song100.py)."""
    return json.loads((ASSETS / SONG_STATS).read_text(encoding="utf-8"))


@st.cache_data(max_entries=128, show_spinner=False)
def routed(prompt: str, mode: str, k: int, n_used: int, capacity: str, noise: float,
           seed: int, dev: str) -> dict:
    """One forward pass of the prompt with these routing settings, as plain arrays per layer."""
    model, tok = load_cached(MAIN, dev)
    routing = Routing(mode=mode, k=k, n_experts=n_used, noise_scale=noise,
                      capacity_factor=None if capacity == "∞" else float(capacity))
    run = route_prompt(model, tok, prompt, routing, seed)
    layers = []
    for r in run.results:
        layers.append({
            "probs": r.probs.float().cpu().numpy(), "experts": r.experts.cpu().numpy(),
            "fits": r.fits.cpu().numpy(), "dispatched": r.dispatched.cpu().numpy(),
            "wanted": r.wanted.cpu().numpy(), "load": r.load.cpu().numpy(), "capacity": r.capacity,
            "overflowed": r.overflowed_tokens.cpu().numpy(), "partly": r.partly_overflowed.cpu().numpy(),
            "aux": float(r.aux_loss), "z": float(r.z_loss), "balance": float(r.aux_loss) / routing.aux_weight,
            "traffic": all_to_all(r.experts, r.fits, n_used).cpu().numpy(),
        })
    return {"tokens": run.tokens, "layers": layers, "hits": run.hits, "k": routing.top(model.config.n_experts)}


def capacity_loads(prompt: str, mode: str, k: int, n_used: int, capacities: list[str], noise: float,
                   seed: int, layer: int, dev: str) -> list[dict]:
    """The load of ``layer`` at every capacity factor (E1's live slider), from one
    ``route_prompt_at`` call: what ``routed(..., capacity, ...)["layers"][layer]`` holds of it.
    Run inside ``ui.live.built_frames``: once per distinct input for every session."""
    model, tok = load_cached(MAIN, dev)
    routings = [Routing(mode=mode, k=k, n_experts=n_used, noise_scale=noise,
                        capacity_factor=None if c == "∞" else float(c)) for c in capacities]
    return [{"wanted": run.results[layer].wanted.cpu().numpy(), "load": run.results[layer].load.cpu().numpy(),
             "capacity": run.results[layer].capacity}
            for run in route_prompt_at(model, tok, prompt, routings, seed)]


@st.cache_resource(max_entries=4, show_spinner=False)
def memory_points(prefix: str, title: str, _cfg: MoEConfig) -> list[dict]:
    """Every registry model and the MoE course model ``prefix`` (config ``_cfg``, named
    ``title``): memory to hold against FLOPs per token. Keyed on the two strings: hashing
    the config dataclass cost more than the rest of the lookup."""
    cfg = _cfg
    ours = arch_of(cfg, title=title)
    archs = [configs.get(name) for name in configs.names()] + [ours]
    # Dense models are named by their hover only, except these, so that the labels do not pile up
    # (LLaMA-2 7B, Mistral 7B and Llama-3 8B sit within 20 % of each other).
    spots = {"course": "top right", "gpt2-small": "middle right", ours.name: "bottom right",
             "llama-2-7b": "top left", "llama-3-8b": "bottom right", "llama-2-70b": "top left"}
    return [{**memory_and_compute(c), "moe": c.is_moe, "position": spots.get(c.name, "middle right"),
             "label": c.title if c.is_moe or c.name in spots else ""} for c in archs]




# --- E1's controls and figures (lessons/e1_moe.py lays out the sections that show them) ----------
def expert_names(dev: str) -> list[str]:
    return [f"E{e}" for e in range(load_cached(MAIN, dev)[0].config.n_experts)]


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


def router_figure(settings: tuple, layer: int, across: bool, language: str):
    """The router's probabilities and choices of ``layer`` (``settings``: ``routed``'s arguments);
    ``across``: a token a column (a wide slide)."""
    run = routed(*settings)
    r, n = run["layers"][layer], len(run["tokens"])
    mode = settings[1]
    return router_map(r["probs"], run["tokens"], r["experts"], r["fits"], r["dispatched"],
                      expert_names=expert_names(settings[-1]),
                      names=(tr(f"{NS}.token"), tr(f"{NS}.expert"), tr(f"{NS}.prob")),
                      marks=(tr(f"{NS}.mark_ran"), tr(f"{NS}.mark_full"), tr(f"{NS}.mark_skipped")),
                      title=tr(f"{NS}.router_fig", layer=layer, mode=tr(MODE_NAMES[mode]), k=run["k"]),
                      height=max(380, 140 + 22 * n), across=across)


def load_frames(prompt: str, mode: str, k: int, n_used: int, noise: float, seed: int, layer: int, dev: str,
                language: str) -> list:
    """The load at every capacity factor (the live slider's frames), from one core call."""
    return [load_bars(at["wanted"], at["load"], at["capacity"], expert_names=expert_names(dev),
                      names=(tr(f"{NS}.processed"), tr(f"{NS}.turned_away"), tr(f"{NS}.capacity_line")),
                      title=tr(f"{NS}.load_fig", layer=layer,
                               cap=tr(f"{NS}.no_limit") if at["capacity"] is None else str(at["capacity"])),
                      y_title=tr(f"{NS}.assignments"))
            for at in capacity_loads(prompt, mode, k, n_used, CAPACITY, noise, seed, layer, dev)]


def devices_figure(settings: tuple, layer: int, language: str):
    """Tokens sent from each device to each expert's device in ``layer``."""
    traffic, n_used = routed(*settings)["layers"][layer]["traffic"], settings[3]
    return count_grid(traffic, [f"GPU {g}" for g in range(n_used)], expert_names(settings[-1])[:n_used],
                      names=(tr(f"{NS}.from_device"), tr(f"{NS}.to_device"), tr(f"{NS}.tokens_sent")),
                      title=tr(f"{NS}.devices_fig", layer=layer, n=n_used), height=max(300, 150 + 34 * n_used))


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
    """A corpus character for a markdown table cell: line breaks and spaces made visible.

    Example: cell("\\n") -> "↵"; cell(" ") -> "␣" """
    return plain({"\n": "↵", " ": "␣"}.get(char, char))


def training_runs() -> tuple:
    """(label, what training wrote) for the run with the balancing loss and the one without."""
    return ((tr(f"{NS}.with_aux"), shipped(MAIN)), (tr(f"{NS}.without_aux"), shipped(NO_AUX_PREFIX)))


def collapse_figure(noaux_missing: bool, dev: str, language: str):
    """Each expert's share of the corpus' assignments, per layer, for each training run."""
    rows, loads = [], []
    for label, info in training_runs():
        if info is None:
            continue
        for i, layer_stats in enumerate(info["experts"]["layers"]):
            rows.append(f"{label} · {tr(f'{NS}.layer_short')}{i}")
            loads.append([100 * e["load"] for e in layer_stats])
    return count_grid(loads, rows, expert_names(dev), fmt=".0f", axis_titles=False,
                      names=(tr(f"{NS}.layer"), tr(f"{NS}.expert"), tr(f"{NS}.share")),
                      title=tr(f"{NS}.collapse_fig"), height=150 + 34 * len(rows))


def balance_figure(noaux_missing: bool, language: str):
    """E · Σ fᵢ Pᵢ through training, one line per run (gaps NaN if their lengths differ)."""
    runs = training_runs()
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


def learned_table(stats: dict, layer: int) -> str:
    """Each expert of ``layer``: its share, the characters it sees most, those it has nearly alone."""
    head = f"| {tr(f'{NS}.expert')} | {tr(f'{NS}.share')} | {tr(f'{NS}.often')} | {tr(f'{NS}.exclusive')} |"
    rows = [head, "|---|---:|---|---|"]
    for e, ex in enumerate(stats["layers"][layer]):
        often = " ".join(cell(c) for c, _ in ex["often"][:8])
        own = " ".join(f"{cell(c)}&nbsp;{100 * s:.0f}%" for c, s in ex["exclusive"][:6])
        rows.append(f"| E{e} | {100 * ex['load']:.1f}% | {often} | {own} |")
    return "\n".join(rows)


def memory_figure(dev: str, language: str):
    """Memory to hold against FLOPs per token: every registry model and the MoE course model."""
    points = memory_points(MAIN, tr(f"{NS}.moe_course"), load_cached(MAIN, dev)[0].config)
    return memory_compute(points, names=(tr(f"{NS}.memory_axis"), tr(f"{NS}.flops_axis")),
                          series=(tr(f"{NS}.dense"), tr(f"{NS}.moe"), tr(f"{NS}.dense_line")),
                          title=tr(f"{NS}.memory_fig"))


def memory_table(points: list[dict]) -> str:
    """The mixtures of experts' total and active parameters."""
    head = f"| {tr(f'{NS}.model')} | {tr(f'{NS}.total')} | {tr(f'{NS}.active')} | {tr(f'{NS}.ratio')} |"
    rows = [head, "|---|---:|---:|---:|"]
    for p in points:
        if p["moe"]:
            rows.append(f"| {p['title']} | {p['total']:,} | {p['active']:,} | {p['total'] / p['active']:.2f}× |")
    return "\n".join(rows)
