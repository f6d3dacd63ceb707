"""SmolLM2-135M-Instruct in our LlamaDecoder: load, cache speed-up, decode against the memory
bandwidth bound, a traced forward, memory. Ratios are taken in one run, on one machine.

    python -m bench.bench_real_model            (--context 256 --repeats 5 --threads N)

Rows:
  load             load_real_model() from the cache (CRC-32 checked), target <= 2 s
  step, cache      one new token with 256 tokens in the KV cache
  step, no cache   the same token recomputing all 257 positions; ratio target >= 8x
  weight read      copying a float32 tensor of the model's bytes (every weight read once):
                   the memory-bandwidth bound on decode tokens/s; ratio target >= 0.5
  forward + trace  64 new tokens, every intermediate recorded (what a lesson draws), <= 1 s
  RSS              this process with the course model and SmolLM2 loaded
"""
from __future__ import annotations

import argparse
import time

import torch

from core.calc.timing import copy_seconds, median_seconds, weight_bytes
from core.models import gguf_llama
from core.models.model import load_course_model
from core.parts.trace import Trace


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    rss0 = _rss_mib()
    gguf_llama.load_real_model("cpu")                      # builds the cache on the first run
    t = time.perf_counter()
    model, tok = gguf_llama.load_real_model("cpu")
    load_s = time.perf_counter() - t
    course, _ = load_course_model("cpu")
    rss_models = _rss_mib()

    n = args.context
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(300, tok.vocab_size, (1, n + 1), generator=g)   # (1, n + 1)

    with torch.inference_mode():
        cache = model.new_cache()
        model(ids[:, :n], cache=cache)                                   # 256 positions cached

        def step_cached():
            model(ids[:, n:], cache=cache)                               # (1, 1) new
            for layer in cache.layers:                                   # drop it again: same length each time
                layer.k, layer.v = layer.k[:, :, :n], layer.v[:, :, :n]

        def step_uncached():
            model(ids)                                                   # (1, n + 1) all again

        cached_s = median_seconds(step_cached, args.repeats)
        uncached_s = median_seconds(step_uncached, max(2, args.repeats // 2))

        weights = [p for p in model.parameters()]
        n_bytes = weight_bytes(model)
        read_s = copy_seconds(n_bytes, args.repeats)

        prompt = torch.randint(300, tok.vocab_size, (1, 64), generator=g)
        trace_s = median_seconds(lambda: model(prompt, trace=Trace()), max(2, args.repeats // 2))
    rss_end = _rss_mib()

    decode_tps, bound_tps = 1 / cached_s, 1 / read_s
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; SmolLM2 weights "
          f"{n_bytes / 2**20:.0f} MiB float32 ({sum(p.numel() for p in weights):,} parameters)")
    print(f"{'measure':<34}{'value':>14}  target")
    rows = [
        ("load from the cache", f"{load_s:.2f} s", "<= 2 s"),
        (f"step, cache ({n} cached)", f"{cached_s * 1e3:.1f} ms", ""),
        (f"step, no cache ({n + 1} positions)", f"{uncached_s * 1e3:.1f} ms", ""),
        ("  cache speed-up", f"{uncached_s / cached_s:.1f}x", ">= 8x"),
        ("decode tokens/s (cache)", f"{decode_tps:.1f}", ""),
        ("weight read (copy of same bytes)", f"{read_s * 1e3:.1f} ms", ""),
        ("  bandwidth bound tokens/s", f"{bound_tps:.1f}", ""),
        ("  decode / bound", f"{decode_tps / bound_tps:.2f}", ">= 0.5"),
        ("  copy bandwidth", f"{2 * n_bytes / read_s / 1e9:.1f} GB/s", "(read + write)"),
        ("forward + trace, 64 tokens", f"{trace_s * 1e3:.0f} ms", "<= 1 s"),
        ("RSS before loading", f"{rss0:.0f} MiB", ""),
        ("RSS, course model + SmolLM2", f"{rss_models:.0f} MiB", ""),
        ("RSS after the runs", f"{rss_end:.0f} MiB", "<= 1.5 GB with 30 sessions"),
    ]
    for name, value, target in rows:
        print(f"{name:<34}{value:>14}  {target}")
    del course


if __name__ == "__main__":
    main()
