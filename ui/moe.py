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
from core.models.moe_model import MoEConfig, MoEModelUnavailable, load_moe_model
from core.parts.moe import Routing

MAIN = "moe_model"


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


