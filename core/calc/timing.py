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


# --- Decoding against the memory bandwidth (D3, bench/bench_real_model.py) -------------------
# A decoding step at batch 1 reads every weight once and does 2 FLOPs with each: it cannot be
# faster than the time the memory takes to deliver those bytes. That time is measured here in the
# same process as the decoding, as one large tensor copy of the same number of bytes.

def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeats`` calls, after one untimed warm-up.

    Example: median_seconds(lambda: time.sleep(0.01), 3) -> ≈ 0.01
    """
    fn()                                                   # warm-up: allocator, first calls
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_seconds(n_bytes: int, repeats: int, device: str = "cpu",
                 seed: int = 0) -> float:
    """Median seconds to copy one float32 tensor of ``n_bytes``: every byte
    read once (and written once), the floor under any step that has to read
    that many bytes.

    Example: copy_seconds(538_060_032, 5) -> ≈ 0.05 s on a desktop
    """
    g = torch.Generator().manual_seed(seed)
    src = torch.empty(n_bytes // 4).uniform_(generator=g)  # (n_bytes / 4,)
    src = src.to(device)
    dst = torch.empty_like(src)

    def copy():
        dst.copy_(src)
        _sync(device)
    return median_seconds(copy, repeats)


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of a built model's weights as it holds them (a tied tensor once).

    Example: SmolLM2-135M dequantised to float32: 134,515,008 · 4 = 538,060,032
    """
    return sum(p.numel() * p.element_size() for p in model.parameters())


@one_at_a_time
@torch.inference_mode()
def decode_against_bandwidth(model: torch.nn.Module, context: int = 64,
                             repeats: int = 5, seed: int = 0) -> dict:
    """One cached decoding step of ``model`` (a LlamaDecoder) with
    ``context`` tokens in its cache, and one copy of its weights' bytes,
    timed in the same call:

    decode_s    median seconds of one new token (the cache cut back after
                each, so every step sees ``context`` tokens)
    read_s      median seconds to copy weight_bytes(model) bytes
    decode_tps  1 / decode_s;  bound_tps  1 / read_s
    ratio       decode_tps / bound_tps
    gbps        weight bytes / read_s / 1e9: the bandwidth one read sees

    Example: SmolLM2 on a laptop -> decode_tps ≈ 25, bound_tps ≈ 40
    """
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    vocab = model.embed.weight.shape[0]
    ids = torch.randint(0, vocab, (1, context + 1), generator=g)  # (1, T+1)
    ids = ids.to(device)
    cache = model.new_cache()
    model(ids[:, :context], cache=cache)                  # T positions cached

    def step():
        model(ids[:, context:], cache=cache)              # (1, 1) new
        for layer in cache.layers:                        # back to T rows
            layer.k = layer.k[:, :, :context]
            layer.v = layer.v[:, :, :context]
        _sync(str(device))
    decode_s = median_seconds(step, repeats)
    n_bytes = weight_bytes(model)
    read_s = copy_seconds(n_bytes, repeats, str(device), seed)
    return {"decode_s": decode_s, "read_s": read_s, "weight_bytes": n_bytes,
            "decode_tps": 1 / decode_s, "bound_tps": 1 / read_s,
            "ratio": read_s / decode_s, "gbps": n_bytes / read_s / 1e9}
