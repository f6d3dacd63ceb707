"""Train the course model on 《唐诗三百首》 and write it to assets/.

    python scripts/build_corpus.py            # once: assets/tang300.txt
    python scripts/train_course_model.py --threads 1   # the shipped files; 1,511 s on 2 shared cores (load ~5)

Seeded and deterministic on CPU (fixed thread count, deterministic algorithms): the
same command gives the same weights on the same machine and torch version (a re-run with
--threads 1 on 2026-12-02 gave the shipped weights and loss curve bit for bit). Writes

    course_model.safetensors     weights, stored as float16 (loaded back as float32)
    course_model_config.json     ModelConfig, sha256 of the weights, how training went
    course_model_vocab.json      the CharTokenizer (one character, one token)
    course_model_loss.json       the training-loss curve
    course_model_step{N}.safetensors   the weights after N updates (--checkpoints), float16
    course_model_checkpoints.json      their steps, sha256 and losses, and every step's loss (F3)

The goal is memorisation, which the lessons want: greedy decoding of a famous first
line should continue as in the corpus (「君不见，黄河之水」 -> 「天上来」).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.lab.learning import CHECKPOINTS_FILE, batch_loss, draw_batch, encode_corpus, init_weights  # noqa: E402
from core.models.model import (  # noqa: E402
    CONFIG_FILE,
    LOSS_FILE,
    VOCAB_FILE,
    WEIGHTS_FILE,
    LlamaDecoder,
    ModelConfig,
    sha256_file,
)
from core.text.tokenizer import CharTokenizer  # noqa: E402

# Steps whose weights F3 shows (the end is course_model.safetensors itself). Seven files of
# ~2.8 MB: character frequencies by 50, common pairs by 100-200, whole lines by 400.
CHECKPOINTS = (0, 50, 100, 200, 400, 1000)
CHECKS = ["君不见，黄河之水", "床前明月光，", "白日依山尽，", "春眠不觉晓，", "国破山河在，", "千山鸟飞绝，"]


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def greedy(model: LlamaDecoder, tok: CharTokenizer, prompt: str, n: int) -> str:
    from core.models.generate import generate
    return generate(model, tok, prompt, max_new_tokens=n, temperature=0.0)


def checkpoint_file(step: int) -> str:
    return f"course_model_step{step:04d}.safetensors"


def save_checkpoint(model: LlamaDecoder, path: Path, step: int) -> dict:
    """float16 weights of the model as they are now; returns the manifest entry (loss filled later)."""
    from safetensors.torch import save_file
    save_file({k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()},
              str(path))
    path.chmod(0o644)
    return {"step": step, "file": path.name, "sha256": sha256_file(path)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description="Train the course model.")
    ap.add_argument("--corpus", type=Path, default=ROOT / "assets" / "tang300.txt")
    ap.add_argument("--out", type=Path, default=ROOT / "assets", help="folder for the four output files")
    ap.add_argument("--steps", type=int, default=1400)
    ap.add_argument("--max-chars", "--corpus-slice", dest="max_chars", type=int, default=None,
                    help="train on the first N characters only (quick tests)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-layers", type=int, default=4)
    ap.add_argument("--n-heads", type=int, default=4)
    ap.add_argument("--n-kv-heads", type=int, default=2)
    ap.add_argument("--ffn-hidden", type=int, default=344)
    ap.add_argument("--max-seq-len", type=int, default=256,
                    help="context the model accepts; RoPE is relative, so it reaches past the training windows")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2, help="fixed, because the thread count can change float sums")
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)),
                    help="comma-separated steps whose weights are saved along the way (F3); '' for none")
    args = ap.parse_args(argv)
    keep = sorted({int(s) for s in args.checkpoints.split(",") if s.strip()} - {args.steps})

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.time()

    if not args.corpus.exists():
        raise SystemExit(f"{args.corpus} not found; run python scripts/build_corpus.py first")
    text = args.corpus.read_text(encoding="utf-8")
    if args.max_chars:
        text = text[: args.max_chars]
    tok = CharTokenizer.from_text(text)
    data = encode_corpus(text, tok)
    seq_len = min(args.seq_len, len(data) - 1)
    config = ModelConfig(
        vocab_size=len(tok), d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads,
        n_kv_heads=args.n_kv_heads, ffn_hidden=args.ffn_hidden, max_seq_len=max(seq_len, args.max_seq_len),
    )
    model = LlamaDecoder(config)
    init_weights(model, config.n_layers, gen)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"corpus {len(text)} chars, {len(data)} tokens, vocab {len(tok)}; "
          f"model {n_params:,} parameters; {config}", flush=True)

    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, min(50, args.steps // 10))
    curve: list[dict] = []
    window: list[float] = []
    every_loss: list[float] = []    # each step's batch loss, before that step's update
    saved: list[dict] = []
    args.out.mkdir(parents=True, exist_ok=True)
    model.train()
    for step in range(args.steps):
        if step in keep:   # the weights after `step` updates; saving reads them, draws nothing
            saved.append(save_checkpoint(model, args.out / checkpoint_file(step), step))
        batch = draw_batch(data, seq_len, args.batch_size, gen)                         # (B, T+1)
        loss = batch_loss(model, batch)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps, args.lr, warmup)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window.append(loss.item())
        every_loss.append(window[-1])
        if (step + 1) % args.log_every == 0 or step == args.steps - 1:
            mean = sum(window) / len(window)
            curve.append({"step": step + 1, "loss": round(mean, 4), "seconds": round(time.time() - t0, 1)})
            window = []
            print(f"step {step + 1:5d}/{args.steps}  loss {mean:.4f}  "
                  f"lr {opt.param_groups[0]['lr']:.2e}  {time.time() - t0:6.1f}s", flush=True)
    train_seconds = time.time() - t0
    model.eval()

    from safetensors.torch import save_file
    weights_path = args.out / WEIGHTS_FILE
    save_file({k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()},
              str(weights_path))
    weights_path.chmod(0o644)   # save_file writes owner-only; the app's server user must read it
    samples = {p: greedy(model, tok, p, 16) for p in CHECKS if all(tok.is_known(c) for c in p)}
    meta = {
        "config": config.to_dict(),
        "weights_sha256": sha256_file(weights_path),
        "parameters": n_params,
        "training": {
            "steps": args.steps, "batch_size": args.batch_size, "seq_len": seq_len, "lr": args.lr,
            "seed": args.seed, "threads": args.threads, "max_chars": args.max_chars,
            "final_loss": curve[-1]["loss"], "seconds": round(train_seconds, 1),
            "torch": torch.__version__, "corpus": args.corpus.name,
        },
        "greedy_samples": samples,
    }
    (args.out / CONFIG_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    (args.out / VOCAB_FILE).write_text(tok.to_json(), encoding="utf-8")
    (args.out / LOSS_FILE).write_text(json.dumps(curve), encoding="utf-8")
    if keep:
        # The end is the shipped model; its loss is taken on the batch a next step would draw.
        with torch.no_grad():
            end_loss = batch_loss(model, draw_batch(data, seq_len, args.batch_size, gen)).item()
        saved.append({"step": args.steps, "file": WEIGHTS_FILE, "sha256": meta["weights_sha256"],
                      "loss": round(end_loss, 5)})
        for entry in saved[:-1]:
            entry["loss"] = round(every_loss[entry["step"]], 5)
        manifest = {"steps": args.steps, "seed": args.seed, "threads": args.threads,
                    "checkpoints": saved, "step_loss": [round(v, 5) for v in every_loss]}
        (args.out / CHECKPOINTS_FILE).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    for p, s in samples.items():
        print(f"greedy: {p} -> {s!r}", flush=True)
    print(f"done in {train_seconds:.0f}s, final loss {curve[-1]['loss']:.4f}, "
          f"{weights_path.stat().st_size / 1e6:.1f} MB -> {args.out}", flush=True)
    return meta


if __name__ == "__main__":
    main()
