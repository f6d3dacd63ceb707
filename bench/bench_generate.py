"""How much the KV cache buys: decoding speed of the course model with and without it.

    python bench/bench_generate.py            (the course model)
    python bench/bench_generate.py --real     (SmolLM2-135M-Instruct, as D1 runs it)

Everything is measured in this one run, on this machine, so the ratios compare like
with like. For each context length L the prompt holds L - 32 tokens of the corpus and
32 tokens are decoded greedily; the prompt's own step (prefill) is left out, so the
numbers are per generated token with about L tokens of context.
Runs single-threaded by default (--threads to change). Targets: cached decoding >= 500 tokens/s; at L = 256, cached >= 5x faster than
recomputing the whole prefix every step.

--real: the same on SmolLM2 through D1's own loop (Generation.step: the forward, the softmax over
49,152 tokens, the cut and the draw, at T = 0.8 and top-p 0.95), with L = 256 tokens of context
(a prompt of 256 - 16 tokens, 16 decoded). bench/bench_real_model.py times the bare forward step.
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


def real_rows(contexts: tuple[int, ...], new_tokens: int = 16) -> None:
    """D1's loop on SmolLM2: tokens/s with the KV cache and without it, at each context length."""
    from core.models.gguf_llama import load_real_model
    model, tok = load_real_model("cpu")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    corpus = tok.encode(text) * 4                   # English text, long enough for any context here
    print(f"SmolLM2-135M-Instruct, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'context':>8} {'cached tok/s':>13} {'no cache tok/s':>15} {'speed-up':>9}  prefill")
    for length in contexts:
        ids = corpus[: length - new_tokens]
        rates, prefill = {}, 0.0
        for use_cache in (True, False):
            best = 0.0
            for _ in range(2):
                gen = Generation(model, tok, "", new_tokens, 0.8, None, 0.95, 0, use_cache=use_cache, ids=ids,
                                 stop=set())   # <|im_end|> alone ends it (rare inside a README)
                t = time.perf_counter()
                gen.step()                          # the prompt: prefill, not counted
                prefill = time.perf_counter() - t
                t, n = time.perf_counter(), 0
                while not gen.done:
                    gen.step()
                    n += 1
                best = max(best, n / (time.perf_counter() - t))
            rates[use_cache] = best
        print(f"{length:>8} {rates[True]:>13.1f} {rates[False]:>15.1f} {rates[True] / rates[False]:>8.1f}x"
              f"  {prefill * 1e3:.0f} ms")


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser(description="Decoding speed with and without the KV cache.")
    ap.add_argument("--threads", type=int, default=1,
                    help="one token's matmuls are tiny; extra threads mostly add synchronisation, "
                         "and on a shared machine they wait for each other")
    ap.add_argument("--real", action="store_true", help="SmolLM2-135M-Instruct through D1's loop instead")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.real:
        real_rows((64, 256))
        return
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
