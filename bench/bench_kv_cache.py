"""The KV cache on the course model (or SmolLM2): time per generated token, cached vs
recomputing the prefix.

    python -m bench.bench_kv_cache [--window 16] [--repeats 5] [--model smollm2]

Both ways are timed at 64, 128 and 256 tokens of context in this one run, on this machine,
with core.calc.flops.measure_decoding (the function lesson D2 uses for its live chart): the
last ``window`` tokens up to each context are produced one at a time; the two ways
alternate so both see the same machine load, and the best of ``repeats`` is kept.
Target: cached >= 5x faster at 256 tokens. With ``--model smollm2`` it also weighs SmolLM2's
cache (core.lab.d_real_kv.measured_cache) against 2 · 30 · 3 · 64 · b bytes a token.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.calc import configs  # noqa: E402
from core.calc.flops import decode_flops, measure_decoding  # noqa: E402
from core.calc.kv_cache import kv_cache_bytes  # noqa: E402
from core.lab.d_real_kv import measured_cache  # noqa: E402
from core.models import gguf_llama  # noqa: E402
from core.models.model import load_course_model  # noqa: E402

CONTEXTS = (64, 128, 256)
TARGET = 5.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model", choices=("course", "smollm2"), default="course")
    args = ap.parse_args()
    if args.model == "smollm2":
        model, tok = gguf_llama.load_real_model(args.device)
        ids = (tok.encode("The key and value of a past token never change. ") * 64)[: CONTEXTS[-1]]
        cfg = configs.get(configs.SMOLLM2)
        weighed = measured_cache(model, ids[:100])
        print(f"SmolLM2 cache: {weighed['bytes'] / weighed['tokens']:,.0f} bytes a token as held (float32), "
              f"{weighed['bytes_fp16'] / weighed['tokens']:,.0f} in fp16; counted: "
              f"{kv_cache_bytes(cfg, 1, 1, 4):,} and {kv_cache_bytes(cfg, 1, 1, 2):,}")
    else:
        model, tok = load_course_model(args.device)
        corpus = (ROOT / "assets" / "tang300.txt").read_text(encoding="utf-8").replace("\n", "")
        ids = tok.encode(corpus[: model.config.max_seq_len])
        cfg = configs.get("course")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}; {cfg.title} "
          f"{sum(p.numel() for p in model.parameters()):,} parameters")
    measured = measure_decoding(model, ids, list(CONTEXTS), args.window, args.repeats)
    print(f"{'context':>8} {'cached ms':>10} {'recompute ms':>13} {'measured':>9} {'FLOP ratio':>11}")
    for n, cached, full in zip(CONTEXTS, measured["cached"], measured["recomputed"], strict=True):
        flop_ratio = decode_flops(cfg, n, cache=False) / decode_flops(cfg, n)
        print(f"{n:>8} {cached * 1e3:>10.2f} {full * 1e3:>13.2f} {full / cached:>8.1f}x {flop_ratio:>10.0f}x")
    ratio = measured["recomputed"][-1] / measured["cached"][-1]
    verdict = "ok" if ratio >= TARGET else "BELOW TARGET"
    print(f"at {CONTEXTS[-1]} tokens: {ratio:.1f}x (target >= {TARGET:.0f}x): {verdict}")


if __name__ == "__main__":
    main()
