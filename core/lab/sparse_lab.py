"""The experiments of lesson B5: what each pattern keeps, how far it reaches over layers,
and what the sparse kernels cost on this machine against dense attention.

Dimension legend
    N   positions
    L   layers
    d   head width (queries, keys and values)
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from core.calc.timing import one_at_a_time
from core.parts.sparse import (
    PATTERNS,
    PatternConfig,
    banded_attention,
    flex_kernel,
    gather_attention,
    pattern_mask,
    window_block_mask,
    window_index_sets,
)


# ------------------------------------------------------------------------ the gallery
def gallery(cfg: PatternConfig, d: int = 64) -> dict[str, dict]:
    """Every pattern's mask with its cost: pairs computed, density (pairs / N²) and the
    FLOPs of q·k and weights·v (2·d each per pair) against dense attention's 4·N²·d.

    Example: gallery(PatternConfig(64, 4, 1, 0, 0, 0))["window"]["pairs"] -> 556
             (64 · 9 keys, less 2 · (4 + 3 + 2 + 1) cut off at the two ends)
    """
    out = {}
    for name in PATTERNS:
        mask = pattern_mask(name, cfg)                         # (N, N)
        pairs = int(mask.sum())
        out[name] = {"mask": mask, "pairs": pairs, "density": pairs / cfg.n ** 2,
                     "flops": 4 * pairs * d, "dense_flops": 4 * cfg.n ** 2 * d}
    return out


# ------------------------------------------------------------------------ receptive field
def receptive_field(mask: torch.Tensor, query: int,
                    layers: int) -> torch.Tensor:
    """(L, N) bool: row l - 1 marks the positions whose token
    can reach ``query`` after l layers of this pattern. Layer 1
    brings in S_query; each further layer brings in the sets of
    all positions reached so far (paths of kept pairs).

    Example: receptive_field(window(10, 2, causal=True), 9, 2)
        -> row 0: positions 7..9; row 1: positions 5..9
           (w = 2 more per layer: L·w)
    """
    reach = mask[query].clone()              # (N,) one layer
    rows = [reach]
    step = mask.to(torch.float32)            # (N, N)
    for _ in range(layers - 1):
        hops = reach.to(torch.float32) @ step  # (N,) paths
        reach = hops > 0                     # one hop further
        rows.append(reach)
    return torch.stack(rows)                 # (L, N)


def layers_to_reach(mask: torch.Tensor, query: int, key: int, max_layers: int = 512) -> int | None:
    """Fewest layers after which ``key``'s token reaches ``query`` (None: never, within
    ``max_layers``).

    Example: layers_to_reach(window(64, 4, causal=True), 63, 0) -> 16  (63 / 4, rounded up)
    """
    reach = mask[query].clone()                                # (N,)
    step = mask.to(torch.float32)                              # (N, N)
    for layer in range(1, max_layers + 1):
        if reach[key]:
            return layer
        grown = (reach.to(torch.float32) @ step) > 0           # (N,)
        if torch.equal(grown, reach):                          # nothing new: never
            return None
        reach = grown
    return None


def _hop(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Boolean matrix product: i reaches j through some k. (N, N)"""
    return (a.to(torch.float32) @ b.to(torch.float32)) > 0


def layers_to_connect_all(mask: torch.Tensor) -> int:
    """Fewest layers L after which one more layer connects no new
    pair: every token has then reached every query it ever will
    (for a window, every token every query).

    Every pattern keeps the diagonal, so L layers reach what the
    L-th boolean power of the mask does, and powers compose: the
    answer is found with about 2·log2(N) products (binary lifting),
    not one product per layer.

    Example: layers_to_connect_all(longformer(64, 2, 1)) -> 2
             (any i -> a global token -> any j)
    """
    powers = [mask]                          # mask^(2^k), (N, N)
    while not torch.equal(nxt := _hop(powers[-1], powers[-1]), powers[-1]):
        powers.append(nxt)
    closure = powers[-1]
    reach, layers = None, 0                  # mask^layers, < closure
    for k in range(len(powers) - 1, -1, -1):
        step = powers[k] if reach is None else _hop(reach, powers[k])
        if not torch.equal(step, closure):
            reach, layers = step, layers + 2 ** k
    return layers + 1


# ------------------------------------------------------------------------ measuring
def peak_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes of the tensors ``fn`` allocates, on the CPU.

    The Python tools do not see tensors (tracemalloc only tracks Python's own allocator;
    the process's peak RSS only ever grows). PyTorch's profiler with ``profile_memory``
    records every allocation and free of its CPU allocator, with its size, inside each
    op too: summed in time order, their running maximum is the peak. Only the events under
    this call's own marker are summed, so other threads (other students) are not counted.

    The profiler of ``torch.autograd.profiler`` (the one ``torch.profiler.profile`` wraps),
    not the wrapper: the wrapper's start asks ``hasattr(torch, "_inductor")``, which imports
    the compiler (torch._inductor, torch._dynamo, sympy: 822 modules, 68 MB a process) for
    a CUDA-graphs flag a CPU measurement never reads (issue 39).
    """
    from torch._C._profiler import _EventType
    from torch.autograd.profiler import profile, record_function

    with profile(use_cpu=True, profile_memory=True) as prof:
        with record_function("b5.measured"):
            result = fn()
        del result
    roots = prof.kineto_results.experimental_event_tree()
    marker = next(e for e in _walk(roots) if e.name == "b5.measured")
    sizes = sorted((e.start_time_ns, e.extra_fields.alloc_size) for e in _walk(marker.children)
                   if e.tag == _EventType.Allocation)
    level = peak = 0
    for _, size in sizes:
        level += size
        peak = max(peak, level)
    return peak


def _walk(nodes):
    for node in nodes:
        yield node
        yield from _walk(node.children)


def time_ms(fn: Callable[[], object], budget_ms: float = 150.0, max_runs: int = 15) -> tuple[float, float]:
    """The fastest of several runs of ``fn`` in milliseconds of this thread's CPU time, and
    the wall-clock milliseconds of its first (warm-up) run, which also pays for one-time work
    such as compiling. At least 3 timed runs, more while they fit in ``budget_ms``.

    Why CPU time, and the fastest: on a shared classroom server other programs take turns on
    the cores, and a wall-clock median measured their work too (B5's review: banded at N = 256
    slower than at N = 4,096). ``measure_one`` runs the kernel on one thread, so this thread's
    CPU time is all of its work and none of anyone else's; a run can only be slowed (caches
    evicted by a neighbour), never sped up, so the fastest run is the kernel's own cost."""
    t0 = time.perf_counter()
    fn()
    first = (time.perf_counter() - t0) * 1000
    times: list[float] = []
    while len(times) < 3 or (sum(times) < budget_ms and len(times) < max_runs):
        t0 = time.thread_time()
        fn()
        times.append((time.thread_time() - t0) * 1000)
    return min(times), first


@contextlib.contextmanager
def one_thread():
    """PyTorch on the calling thread only, for a measurement (then back as it was)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


KERNELS = ("dense", "fused", "banded", "gather", "flex")


def _band_mask(n: int, w: int) -> torch.Tensor:
    """``window(n, w)`` built from booleans only (no N² integer temporaries): (N, N)."""
    return torch.ones(n, n, dtype=torch.bool).triu(-w).tril(w)


def dense_bytes(n: int) -> int:
    """What dense SDPA with a boolean mask holds at once: the mask (1 byte a pair) and its
    float copy that SDPA adds to the scores (4 bytes a pair)."""
    return 5 * n * n


def available_bytes() -> int:
    """Memory the operating system could give now (Linux), or a cautious 2 GiB elsewhere."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2 << 30


_COMPILED: dict[str, Callable] = {}


def compiled_flex() -> Callable:
    """``torch.compile(flex_attention)``, made once per process (compiling takes tens of
    seconds on this CPU; the compiled kernel is then shared, it holds no per-call state)."""
    if "flex" not in _COMPILED:
        from torch.nn.attention.flex_attention import flex_attention
        _COMPILED["flex"] = torch.compile(flex_attention)
    return _COMPILED["flex"]


@one_at_a_time
def measure_one(kernel: str, n: int, w: int, d: int = 64, seed: int = 0,
                memory_cap: int | None = None) -> dict[str, float] | None:
    """Time (ms) and peak bytes of one kernel on one sliding window (w each side) over N
    positions, d wide; None when dense attention at this N would not fit in ``memory_cap``
    bytes (default: a quarter of the memory free now). The inputs (and for ``dense`` its
    boolean mask, for ``flex`` its block mask) are made before the measurement; what the
    kernel allocates is measured. ``first_ms`` is the warm-up call (flex: compilation).
    """
    cap = available_bytes() // 4 if memory_cap is None else memory_cap
    if kernel == "dense" and dense_bytes(n) > cap:
        return None
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))           # (N, d) each
    # SDPA takes (B, H, N, d): on 2-D input the CPU falls back to its plain kernel.
    q4, k4, v4 = q[None, None], k[None, None], v[None, None]               # (1, 1, N, d)
    if kernel == "dense":
        mask = _band_mask(n, w)                                            # (N, N)
        run = lambda: F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask)  # noqa: E731
    elif kernel == "fused":    # no mask: all N² pairs, in tiles, never holding them all
        run = lambda: F.scaled_dot_product_attention(q4, k4, v4)            # noqa: E731
    elif kernel == "banded":
        run = lambda: banded_attention(q, k, v, w)                         # noqa: E731
    elif kernel == "gather":
        sets = window_index_sets(n, w)                                     # (N, 2w+1) each
        run = lambda: gather_attention(q, k, v, *sets)                     # noqa: E731
    elif kernel == "flex":
        block_mask, attend = window_block_mask(n, w), compiled_flex()
        run = lambda: flex_kernel(q, k, v, block_mask, attend=attend)      # noqa: E731
    else:
        raise ValueError(kernel)
    with torch.no_grad(), one_thread():
        ms, first_ms = time_ms(run)
        return {"ms": ms, "first_ms": first_ms, "bytes": float(peak_bytes(run))}


def fit_slope(ns: list[int], values: list[float]) -> float:
    """Slope of log(value) against log(N), least squares: 2 for a cost that grows as N²,
    1 for one that grows as N.

    Example: fit_slope([256, 512, 1024], [1.0, 4.0, 16.0]) -> 2.0
    """
    xs, ys = [math.log(n) for n in ns], [math.log(v) for v in values]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den if den else float("nan")
