"""Activation patching on SmolLM2 on one core: core.lab.patching's sweeps against the naive
reference of tests/test_patching.py (every patched run from the first token, the activation
replaced by a module hook), in one run, on the same machine.

    ANATOMY_MODEL_CACHE=assets/cache python -m bench.bench_patching [--per-cell] [--pairs ioi,fact]

For each pair: the fast residual sweep (L x T); the three position maps together (residual,
attention, feed-forward: ``sweeps``); the head map (L x H at the last position); the naive
residual sweep batched over positions (one forward a block with T patched copies, like the
issue's reference) and, with --per-cell, one patched run at a time. Times are CPU seconds of this
process (one thread: what the core spent, whatever else the machine runs), wall seconds beside
the fast ones; "all" is what a page waits for, the three maps and the heads (the issue's goal:
5 s for a built-in pair, 15 s for a student's pair of 16 tokens). Then the ratios naive / fast of
the residual sweep, and the largest difference between the fast and the naive logit differences.
The load average is printed before and after: on a shared machine a CPU second under load is
longer than a quiet one (caches, a core's other hyper-thread), so compare numbers of one run.
"worst" is the IOI pair with its first token changed too, so that no position can be skipped (a
student's pair that differs at the start).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.lab import patching as P  # noqa: E402
from core.models.gguf_llama import load_real_model  # noqa: E402
from tests.test_patching import naive_sweep  # noqa: E402

WORST = P.BuiltIn("When Mary and John went to the store, John gave a drink to",
                  "While Mary and John went to the store, Mary gave a drink to", " Mary", " John")


def timed(fn, *args, **kwargs):
    """fn(*args, **kwargs) -> (result, CPU seconds, wall seconds)"""
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="ioi,fact,agreement,worst")
    parser.add_argument("--per-cell", action="store_true",
                        help="also the naive sweep one run at a time (1-7 min a pair)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tok = load_real_model()
    pairs = {**P.PAIRS, "worst": WORST}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, SmolLM2-135M-Instruct float32; "
          f"CPU s (wall s); load average {load()}")
    print(f"{'pair':9} {'T':>2} {'cells':>7} {'resid':>12} {'3 maps':>12} {'heads':>11} {'all':>5}"
          f" {'naive batched':>13} {'ratio':>5}" + (f" {'naive 1 by 1':>12} {'ratio':>5}" if args.per_cell else "")
          + f" {'max|diff|':>9}")
    for name in args.pairs.split(","):
        with torch.inference_mode():                 # as the page runs them (ui/f4_patching.py)
            row(model, tok, name, pairs[name], args.per_cell)
    print(f"load average {load()}")


def row(model, tok, name: str, b: P.BuiltIn, per_cell: bool) -> None:
    """Time one pair and print its line of the table."""
    pair = P.tokenize_pair(tok, b.clean, b.corrupted, b.right, b.wrong)
    runs = P.run_pair(model, pair)
    resid, c_resid, w_resid = timed(P.sweep, model, runs, "resid_pre")
    _, c_maps, w_maps = timed(P.sweeps, model, runs)
    _, c_heads, w_heads = timed(P.head_sweep, model, runs)
    naive, c_naive, _ = timed(naive_sweep, model, pair.corrupted_ids, pair.clean_ids, pair.right, pair.wrong)
    worst = (resid.diffs - naive).abs().max().item()
    line = (f"{name:9} {len(pair.clean_ids):>2} {int(resid.run.sum()):>3}/{resid.run.numel():<3}"
            f" {c_resid:>5.2f} ({w_resid:>4.1f}) {c_maps:>5.2f} ({w_maps:>4.1f}) {c_heads:>4.2f} ({w_heads:>4.1f})"
            f" {c_maps + c_heads:>5.2f}"
            f" {c_naive:>13.1f} {c_naive / c_resid:>5.0f}")
    if per_cell:
        one, c_one, _ = timed(naive_sweep, model, pair.corrupted_ids, pair.clean_ids, pair.right, pair.wrong,
                            batched=False)
        worst = max(worst, (resid.diffs - one).abs().max().item())
        line += f" {c_one:>12.1f} {c_one / c_resid:>5.0f}"
    print(line + f" {worst:>9.1e}", flush=True)


def load() -> str:
    """The machine's load average over 1, 5 and 15 minutes: "0.52 1.10 2.31"."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
