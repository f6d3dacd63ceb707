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

import streamlit as st
import torch

from core.calc import configs
from core.calc.lora import lora_split, lora_splits
from core.lab import lora_finetune as lab
from ui.model import course_model
from ui.queue import JobQueue

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
