"""How much the KV cache buys: decoding speed of the course model with and without it.

    python bench/bench_generate.py

Everything is measured in this one run, on this machine, so the ratios compare like
with like. For each context length L the prompt holds L - 32 tokens of the corpus and
32 tokens are decoded greedily; the prompt's own step (prefill) is left out, so the
numbers are per generated token with about L tokens of context.
Runs single-threaded by default (--threads to change). Targets: cached decoding >= 500 tokens/s; at L = 256, cached >= 5x faster than
recomputing the whole prefix every step.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.models.generate import Generation  # noqa: E402
from core.models.model import load_course_model  # noqa: E402

NEW_TOKENS = 32
CONTEXTS = (64, 128, 256)


def time_load(repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        load_course_model()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def decode_rate(model, tok, prompt: str, use_cache: bool, repeats: int = 3) -> float:
    """Tokens per second over the steps after the first, best of ``repeats`` (least disturbed by other load)."""
    best = 0.0
    for _ in range(repeats):
        gen = Generation(model, tok, prompt, max_new_tokens=NEW_TOKENS, use_cache=use_cache)
        gen.step()                                  # the prompt: prefill, not counted
        t = time.perf_counter()
        n = 0
        while not gen.done:
            gen.step()
            n += 1
        best = max(best, n / (time.perf_counter() - t))
    return best


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser(description="Decoding speed with and without the KV cache.")
    ap.add_argument("--threads", type=int, default=1,
                    help="one token's matmuls are tiny; extra threads mostly add synchronisation, "
                         "and on a shared machine they wait for each other")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load_s = time_load()
    model, tok = load_course_model()
    corpus = (ROOT / "assets" / "tang300.txt").read_text(encoding="utf-8")
    # The longest poem, so greedy decoding does not reach the end of a poem (EOS) early.
    long_poem = max(corpus.split("\n\n"), key=len).replace("\n", "")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; model load {load_s * 1000:.0f} ms "
          f"({sum(p.numel() for p in model.parameters()):,} parameters)")
    print(f"{'context':>8} {'cached tok/s':>13} {'no cache tok/s':>15} {'speed-up':>9}")
    for length in CONTEXTS:
        prompt = long_poem[: length - NEW_TOKENS]
        cached = decode_rate(model, tok, prompt, use_cache=True)
        full = decode_rate(model, tok, prompt, use_cache=False)
        print(f"{length:>8} {cached:>13.0f} {full:>15.0f} {cached / full:>8.1f}x")


if __name__ == "__main__":
    main()
