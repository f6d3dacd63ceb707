"""Wall-clock timing of LayerNorm against RMSNorm, both as written out in core/parts/norms.py.

Dimension legend
    T   token vectors normalised per call
    D   their width

Zhang & Sennrich (2019) report RMSNorm 7%–64% faster than LayerNorm depending on the
model; the saving is the mean and the subtraction. Numbers measured here depend on the
machine and on what else runs on it: compare the two rows of one run, not runs.
"""
from __future__ import annotations

import functools
import statistics
import threading
import time
from collections.abc import Callable

import torch

from core.parts.norms import layer_norm, rms_norm

# One live measurement at a time in this process. A class shares one server: two students pressing
# "measure" together would each time the other's work too, and torch.compile (B5's flex kernel)
# must not compile in two threads at once. The second waits for the first.
_LIVE = threading.RLock()


def one_at_a_time(fn: Callable) -> Callable:
    """``fn`` (a live measurement) runs while no other live measurement of this process does."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with _LIVE:
            return fn(*args, **kwargs)
    return run


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@one_at_a_time
def time_norms(tokens: int, d: int, repeats: int, device: str = "cpu", seed: int = 0,
               on_step: Callable[[float], None] | None = None) -> dict[str, float]:
    """Median milliseconds of one call of each norm on a (T, D) batch; the calls alternate,
    so both see the same machine load. ``on_step(fraction_done)`` drives a progress bar.

    Example: time_norms(1024, 512, 5) -> {"layer_ms": ..., "rms_ms": ..., "ratio": layer / rms}
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, d, generator=g).to(device)                 # (T, D)
    weight, bias = torch.ones(d, device=device), torch.zeros(d, device=device)
    runs = {"layer": lambda: layer_norm(x, weight, bias, 1e-5), "rms": lambda: rms_norm(x, weight, 1e-5)}
    for fn in runs.values():                                           # warm-up: allocator, kernels
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    with torch.no_grad():
        for step in range(repeats):
            for name, fn in runs.items():
                _sync(device)
                t0 = time.perf_counter()
                fn()
                _sync(device)
                times[name].append((time.perf_counter() - t0) * 1000)
            if on_step is not None:
                on_step((step + 1) / repeats)
    layer_ms, rms_ms = statistics.median(times["layer"]), statistics.median(times["rms"])
    return {"layer_ms": layer_ms, "rms_ms": rms_ms, "ratio": layer_ms / rms_ms,
            "saving": 1 - rms_ms / layer_ms}
