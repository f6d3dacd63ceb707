"""Decoding speed of the MoE course model against the dense course model, with the KV cache.

    python bench/bench_moe_generate.py

Both models are measured in this one run, on this machine, interleaved, so the ratio
compares like with like. For each context length L the prompt holds L - 32 tokens of the
corpus and 32 tokens are decoded greedily; the prompt's own step (prefill) is left out.
Target: the MoE model decodes at >= 0.5x the dense model's tokens/s. Single-threaded.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.models.generate import Generation  # noqa: E402
from core.models.model import load_course_model  # noqa: E402
from core.models.moe_model import load_moe_model  # noqa: E402

NEW_TOKENS = 32
CONTEXTS = (64, 128, 256)


def decode_rate(model, tok, prompt: str, repeats: int = 5) -> float:
    """Tokens per second over the steps after the prefill, best of ``repeats``."""
    best = 0.0
    for _ in range(repeats):
        gen = Generation(model, tok, prompt, max_new_tokens=NEW_TOKENS, use_cache=True)
        gen.step()
        t, n = time.perf_counter(), 0
        while not gen.done:
            gen.step()
            n += 1
        best = max(best, n / (time.perf_counter() - t))
    return best


def main() -> None:
    torch.set_num_threads(1)
    dense, tok = load_course_model()
    moe, _ = load_moe_model()
    corpus = (ROOT / "assets" / "tang300.txt").read_text(encoding="utf-8")
    long_poem = max(corpus.split("\n\n"), key=len).replace("\n", "")
    print(f"torch {torch.__version__}, 1 thread; dense {sum(p.numel() for p in dense.parameters()):,} "
          f"parameters, MoE {sum(p.numel() for p in moe.parameters()):,}")
    print(f"{'context':>8} {'dense tok/s':>12} {'MoE tok/s':>10} {'MoE/dense':>10}")
    ratios = []
    for length in CONTEXTS:
        prompt = long_poem[: length - NEW_TOKENS]
        d1, m1 = decode_rate(dense, tok, prompt), decode_rate(moe, tok, prompt)
        d2, m2 = decode_rate(dense, tok, prompt), decode_rate(moe, tok, prompt)
        d, m = max(d1, d2), max(m1, m2)
        ratios.append(m / d)
        print(f"{length:>8} {d:>12.0f} {m:>10.0f} {m / d:>9.2f}x")
    print(f"worst MoE/dense ratio {min(ratios):.2f}x (target >= 0.5x)")


if __name__ == "__main__":
    main()
