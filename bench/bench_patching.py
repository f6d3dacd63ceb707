"""Activation patching on SmolLM2 on one core: a pair's every map (the residual, attention and
feed-forward maps and the head map, what the page waits for) with core.lab.patching as it is, and
as it was at an older commit (``--before``), in one run, on the same machine.

    ANATOMY_MODEL_CACHE=assets/cache python -m bench.bench_patching [--before REV] [--naive] [--pairs ioi,fact]
        [--server-start]

Times are CPU seconds of this process on one PyTorch thread (as the server runs, ui/preload.py),
wall seconds beside them; the issue's goals: 5 s for a built-in pair, 15 s for a student's pair of
16 tokens. "own16" is a pair of 16 tokens that differs in the middle (the IOI sentence, longer);
"worst16" the same with its first token changed too, so that no position can be skipped: every
patched run recomputes from position 0. "max|diff|" is the largest difference between the two
versions' logit differences, over every cell of every map. With --naive, the naive reference of
tests/test_patching.py (every patched run from the first token, the activation replaced by a module
hook; the residual map only, batched over positions) is timed too, with its ratio to the residual
map alone. The load average is printed before and after: on a shared machine a CPU second under
load is longer than a quiet one (caches, memory bandwidth), so compare numbers of one run.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.lab import patching as P  # noqa: E402
from core.models.gguf_llama import load_real_model  # noqa: E402
from tests.test_patching import naive_sweep  # noqa: E402

BEFORE = "46c0426"               # the sweeps before issue 44's second pass (one position a batch, both plain runs)
OWN16 = P.BuiltIn("When Mary and John went to the big store, John gave a cold drink to",
                  "When Mary and John went to the big store, Mary gave a cold drink to", " Mary", " John")
WORST16 = P.BuiltIn(OWN16.clean, "While Mary and John went to the big store, Mary gave a cold drink to",
                    " Mary", " John")


def timed(fn, *args, **kwargs):
    """fn(*args, **kwargs) -> (result, CPU seconds, wall seconds)"""
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def older(rev: str):
    """core/lab/patching.py as it was at ``rev``, imported as its own module."""
    source = subprocess.run(["git", "show", f"{rev}:core/lab/patching.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / f"patching_{rev}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module                  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def every_map(M, model, runs) -> dict:
    """Every map the page shows, {site: Sweep}, with either version's API."""
    if hasattr(M, "head_sweep"):                     # before: the heads in a pass of their own
        return {**M.sweeps(model, runs), "head": M.head_sweep(model, runs)}
    return M.sweeps(model, runs, (*M.SITES, "head"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="ioi,fact,agreement,own16,worst16")
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with (default %(default)s)")
    parser.add_argument("--naive", action="store_true", help="also the naive residual map (20-60 s a pair)")
    parser.add_argument("--server-start", action="store_true",
                        help="also what a server computes when it starts: every built-in pair, as the page does")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tok = load_real_model()
    before = older(args.before)
    pairs = {**P.PAIRS, "own16": OWN16, "worst16": WORST16}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, SmolLM2-135M-Instruct float32; "
          f"CPU s (wall s); before = {args.before}; load average {load()}")
    print(f"{'pair':9} {'T':>2} {'cells run':>10} {'before':>12} {'now':>12} {'ratio':>5} {'max|diff|':>9}"
          + (f" {'naive resid':>11} {'ratio':>5}" if args.naive else ""))
    for name in args.pairs.split(","):
        with torch.inference_mode():                 # as the page runs them (ui/f4_patching.py)
            row(model, tok, name, pairs[name], before, args.naive)
    if args.server_start:
        from ui.f4_patching import warm_builtin  # noqa: PLC0415 (Streamlit's caches, outside a server)

        _, cpu, wall = timed(warm_builtin, (model, tok))
        print(f"server start: the {len(P.PAIRS)} built-in pairs' maps ready {cpu:.2f} CPU s ({wall:.1f} wall s) "
              "after SmolLM2's load (ui.model.warm_real -> ui.f4_patching.warm_builtin)")
    print(f"load average {load()}")


def row(model, tok, name: str, b: P.BuiltIn, before, naive: bool) -> None:
    """Time one pair both ways and print its line of the table."""
    got = {}
    for label, M in (("before", before), ("now", P)):
        runs = M.run_pair(model, M.tokenize_pair(tok, b.clean, b.corrupted, b.right, b.wrong))
        got[label] = timed(every_map, M, model, runs)
    (old, c_old, w_old), (new, c_new, w_new) = got["before"], got["now"]
    worst = max((new[s].diffs - old[s].diffs).abs().max().item() for s in new)
    ran = sum(int(m.run.sum()) for m in new.values())
    cells = sum(m.run.numel() for m in new.values())
    T = new["resid_pre"].diffs.shape[1]
    line = (f"{name:9} {T:>2} {ran:>4}/{cells:<5} {c_old:>5.2f} ({w_old:>4.1f}) {c_new:>5.2f} ({w_new:>4.1f})"
            f" {c_old / c_new:>5.2f} {worst:>9.1e}")
    if naive:
        pair = P.tokenize_pair(tok, b.clean, b.corrupted, b.right, b.wrong)
        _, c_resid, _ = timed(P.sweep, model, P.run_pair(model, pair), "resid_pre")
        _, c_naive, _ = timed(naive_sweep, model, pair.corrupted_ids, pair.clean_ids, pair.right, pair.wrong)
        line += f" {c_naive:>11.1f} {c_naive / c_resid:>5.0f}"
    print(line, flush=True)


def load() -> str:
    """The machine's load average over 1, 5 and 15 minutes: "0.52 1.10 2.31"."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
