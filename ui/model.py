"""The course model and SmolLM2-135M-Instruct, loaded once per process and device and shared
by every student.

``st.cache_resource`` hands the same module to every session, so nothing per-request may
live on it: callers create their own KV cache, trace recorder and random generator.
"""
from __future__ import annotations

import os
import threading

import streamlit as st

from core.models import gguf_llama
from core.models.model import REBUILD, CourseModelUnavailable, load_course_model
from ui.frame import choice, ranged_slider, tr
from ui.memory import settle_memory, wait_until_quiet


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(device: str):
    try:
        return load_course_model(device)
    except CourseModelUnavailable as err:
        return err


def course_model_or_reason(device: str) -> tuple:
    """(model, tokenizer, None), or (None, None, why not): the same shared copy as course_model, for a
    page that says itself why the model is missing (A2)."""
    loaded = _load(device)
    if isinstance(loaded, CourseModelUnavailable):
        return None, None, str(loaded)
    return (*loaded, None)


def course_model(device: str):
    """(model, tokenizer), or None after showing why the model is unavailable."""
    loaded = _load(device)
    if isinstance(loaded, CourseModelUnavailable):
        st.error(tr("common.model_unavailable", reason=str(loaded), command=REBUILD))
        return None
    return loaded


# --- the real model: SmolLM2-135M-Instruct (issue 24) ---------------------------------------
# One copy per process, read-only, shared by every session (core/models/gguf_llama.py). Without
# the package every lesson keeps the course model; where the real one is offered, real_model()
# shows the one command that installs it.

def real_model_available() -> bool:
    """True when SmolLM2 can be loaded here (the package installed, or its cache built)."""
    return gguf_llama.available()


@st.cache_resource(show_spinner=False, max_entries=2)
def _load_real(device: str):
    try:
        loaded = gguf_llama.load_real_model(device)
    except gguf_llama.RealModelUnavailable as err:
        return err
    settle_memory()        # its tokenizer tables (~124,000 objects): out of the collector's reach
    return loaded


_BUILD_LOCK = threading.Lock()


def _build_with_progress() -> None:
    """Build the cache under a progress bar when it is missing (ui/preload.py normally built it
    before the first session). Outside the cached loader: Streamlit would replay a bar drawn
    inside it on every later call. One session builds; the others wait for it here."""
    weights, meta = gguf_llama.cache_files()
    if weights.is_file() and meta.is_file():
        return
    if not _BUILD_LOCK.acquire(blocking=False):          # ui/preload.py's thread is building it
        with st.spinner(tr("real.building")), _BUILD_LOCK:
            return
    try:
        if weights.is_file() and meta.is_file():
            return
        bar = st.progress(0.0, text=tr("real.building"))
        try:
            gguf_llama.build_cache(progress=lambda f, _what: bar.progress(min(max(f, 0.0), 1.0),
                                                                          text=tr("real.building")))
        except gguf_llama.RealModelUnavailable:
            pass                                   # the loader fails too and says why
        finally:
            bar.empty()
    finally:
        _BUILD_LOCK.release()


def warm_real(device: str = "cpu") -> None:
    """Build the cache (once per machine), load SmolLM2 into this process's cache_resource and
    with ANATOMY_PRELOAD_PATCHING=1 compute F4's built-in pairs: ui/preload.py runs it in a
    thread when the server starts."""
    with _BUILD_LOCK:
        weights, meta = gguf_llama.cache_files()
        if not (weights.is_file() and meta.is_file()):
            try:
                gguf_llama.build_cache()
            except gguf_llama.RealModelUnavailable:
                return                             # real_model() will say why
    loaded = _load_real(device)
    if isinstance(loaded, tuple):
        # One short forward: PyTorch's first call of each kernel shape sets itself up (~2 s for
        # the first student's text otherwise). Nothing is kept; the model is not changed.
        import torch

        model, tok = loaded
        with torch.inference_mode():
            model(torch.tensor([tok.encode("The cat sat on the mat.")], device=device))
        if os.environ.get("ANATOMY_PRELOAD_PATCHING", "0") == "1":
            # Off by default: with the pairs computed beside them, a class arriving soon after the first
            # page had first pages p95 1.5-2.0 s instead of 0.4-0.7 s (bench_class, 2026-12-07).
            # F4's built-in pairs (~10 s of one core for the three), each when nobody is being served
            # (a class that has arrived goes first, issue 39), this thread at the lowest CPU priority.
            from ui.f4_patching import warm_builtin  # noqa: PLC0415 (ui.f4_patching imports ui.f2_lens, which imports this)

            _background_priority()
            warm_builtin(loaded, device, ready=wait_until_quiet)


def _background_priority() -> None:
    """The calling thread (not the process) gets the lowest CPU priority, where the system has one
    per thread (Linux: a thread is a task of its own for setpriority)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass



def real_model(device: str):
    """(LlamaDecoder, ByteBPE) of SmolLM2, or None after a note saying how to install it or why
    it could not be loaded."""
    if not real_model_available():
        st.info(tr("real.install", command=gguf_llama.INSTALL))
        return None
    _build_with_progress()
    loaded = _load_real(device)
    if isinstance(loaded, gguf_llama.RealModelUnavailable):
        st.error(tr("real.unavailable", reason=str(loaded), command=gguf_llama.INSTALL))
        return None
    return loaded


# --- the model switch of every lesson that shows a trained model (issue 24 §4) ---------------
COURSE, REAL = "course", "smollm2"


def model_switch(ns: str, default: str = COURSE, label_key: str = "real.switch") -> str:
    """A two-way segmented switch, course model (唐诗) or SmolLM2 (English), bound to the URL as
    ``{ns}.lm`` (``?b1.lm=smollm2``). Returns COURSE or REAL.

    REAL is returned only when SmolLM2 can be shown here: without its package the switch stays
    on the page, a note gives the one command that installs it, and the lesson runs on the course
    model (never a traceback). The caller then calls ``real_model(dev)`` for the weights."""
    picked = choice(tr(label_key), [COURSE, REAL], f"{ns}.lm",
                    {COURSE: tr("real.switch_course"), REAL: tr("real.switch_real")},
                    widget="segmented", default=default)
    if picked == REAL and not real_model_available():
        st.info(tr("real.install", command=gguf_llama.INSTALL))
        return COURSE
    return picked


def layer_and_head(ns: str, config, layer_at=None, head_at=None, default: tuple[int, int] = (0, 0),
                   head: bool = True, head_help: str | None = None) -> tuple[int, int]:
    """The layer and head sliders over a model's ``config`` (4 x 4 on the course model, 30 x 9 on
    SmolLM2), bound to the URL as ``{ns}.layer`` and ``{ns}.head``, labelled by the lesson's
    ``{ns}.layer_label`` and ``{ns}.head_label``; each in its column (``layer_at``, ``head_at``)
    or where the caller is. A value beyond a smaller model's range is clamped (ranged_slider)
    and comes back on the larger one. ``head=False``: the layer alone (head 0 returned)."""
    with layer_at or st.container():
        layer = ranged_slider(tr(f"{ns}.layer_label"), 0, config.n_layers - 1, default[0], key=f"{ns}.layer")
    if not head:
        return int(layer), 0
    with head_at or st.container():
        picked = ranged_slider(tr(f"{ns}.head_label"), 0, config.n_heads - 1, default[1], key=f"{ns}.head",
                               help=head_help)
    return int(layer), int(picked)


def model_text(ns: str, real, course: tuple[str, int], smollm2: tuple[str, int, int]):
    """The text box of a page that runs either model, each model with its own text in the URL:
    ``{ns}.text`` (course: default, character limit) or ``{ns}.rtext`` (SmolLM2: default, character
    limit, token limit in its label), with a note of any bytes SmolLM2 has no token for. ``real``:
    SmolLM2's (model, tokenizer), or None. Returns ui.url's CleanText."""
    from core.lab.real_tokens import dropped_note  # noqa: PLC0415
    from ui.frame import text_box  # noqa: PLC0415

    if not real:
        return text_box(f"{ns}.text", course[0], course[1], tr(f"{ns}.text_label"))
    text = text_box(f"{ns}.rtext", smollm2[0], smollm2[1], tr(f"{ns}.rtext_label", limit=smollm2[2]))
    if note := dropped_note(real[1], text.text):          # bytes SmolLM2 has no token for
        st.warning(tr("real.dropped", **note))
    return text
