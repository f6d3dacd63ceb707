"""Train the encoder-decoder of C1 and B4 to read dates written in words, and write it to assets/.

    python scripts/train_date_model.py        # about 2 minutes of one CPU core (it uses one thread)

Seeded and deterministic on CPU (one thread, deterministic algorithms): the same command gives
the same weights on the same machine and torch version. Every batch is drawn fresh from the
generator in core/text/dates.py (seed 0, training split: every tenth day is held out). Writes

    date_model.safetensors     weights (float32, about 1 MB)
    date_model_config.json     EncDecConfig, sha256 of the weights, how training went, accuracy
    date_model_loss.json       the training-loss curve
    date_model_step{N}.safetensors   the weights after N updates (--checkpoints), float16
    date_model_checkpoints.json      their steps, sha256, losses and accuracy (C1's unsure decoder)

and prints the exact-match accuracy on 1,000 held-out dates of every style (generator seed
EVAL_SEED, never used in training).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.models.dates import accuracy, encode_batch, training_batches  # noqa: E402
from core.models.encdec import (  # noqa: E402
    CHECKPOINTS_FILE,
    CONFIG_FILE,
    LOSS_FILE,
    WEIGHTS_FILE,
    EncDecConfig,
    EncoderDecoder,
    checkpoint_file,
)
from core.models.model import sha256_file  # noqa: E402
from core.text.dates import STYLES, generate, source_tokenizer, target_tokenizer  # noqa: E402

TRAIN_SEED, EVAL_SEED = 0, 20261130
WARMUP = 100
# Steps whose weights C1's decoding section offers beside the final model (assets/DATE_MODEL.md).
# On C1's default example: at 40 it writes a malformed date ("202-0-07-0", no digit above 90 %),
# at 80 a well-formed wrong one ("2036-10-23", down to 18 % on a digit), at 150 the final model's
# one mistake ("2026-10-30"), and at 300 the right date, which the final model gets wrong.
# Exact match on the held-out dates: 0 %, 2 %, 64 %, 90 % (100 % at the end).
CHECKPOINTS = (40, 80, 150, 300)


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up (post-norm Transformers need it, Vaswani et al. sec. 5.3), then cosine to 10 %."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def save_checkpoint(model: EncoderDecoder, path: Path, step: int) -> dict:
    """float16 weights of the model as they are now; returns the manifest entry (loss filled later)."""
    from safetensors.torch import save_file

    save_file({k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}, str(path))
    path.chmod(0o644)
    return {"step": step, "file": path.name, "sha256": sha256_file(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--ffn", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "assets")
    ap.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)),
                    help="comma-separated steps whose weights are saved along the way (C1); '' for none")
    args = ap.parse_args()
    keep = sorted({int(s) for s in args.checkpoints.split(",") if s.strip()} - {args.steps})

    torch.set_num_threads(1)                   # deterministic, and leaves the other core free
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(TRAIN_SEED)              # the initial weights
    src_tok, tgt_tok = source_tokenizer(), target_tokenizer()
    config = EncDecConfig(src_vocab=len(src_tok), tgt_vocab=len(tgt_tok), d_model=args.d_model,
                          n_heads=4, n_layers=args.layers, ffn_hidden=args.ffn, max_len=32)
    model = EncoderDecoder(config)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{n_params:,} parameters; {args.steps} steps of {args.batch} dates")

    losses, t0, cpu0 = [], time.time(), time.process_time()
    stream = training_batches(TRAIN_SEED, args.batch)
    saved: list[dict] = []
    args.out.mkdir(parents=True, exist_ok=True)
    for step in range(args.steps):
        if step in keep:   # the weights after `step` updates; saving reads them and draws nothing
            saved.append(save_checkpoint(model, args.out / checkpoint_file(step), step))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, warmup=WARMUP)
        src, tgt_in, tgt_out = encode_batch(next(stream), src_tok, tgt_tok)
        logits = model(src, tgt_in)                                        # (B, L, V_tgt)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(round(loss.item(), 5))
        if step % 250 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  {time.time() - t0:6.1f} s", flush=True)
    seconds, cpu_seconds = time.time() - t0, time.process_time() - cpu0

    model.eval()
    per_style = {s: accuracy(model, generate(1000, EVAL_SEED, styles=(s,), split="held_out"), src_tok, tgt_tok)
                 for s in STYLES}
    mixed = accuracy(model, generate(1000, EVAL_SEED, split="held_out"), src_tok, tgt_tok)
    print(f"exact match on 1,000 held-out dates (seed {EVAL_SEED}): {mixed:.1%}")
    for s, a in per_style.items():
        print(f"  {s:15s} {a:.1%} (1,000 dates in this style)")

    from safetensors.torch import save_file

    weights = args.out / WEIGHTS_FILE
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    meta = {
        "config": config.to_dict(),
        "weights_sha256": sha256_file(weights),
        "parameters": n_params,
        "training": {"steps": args.steps, "batch_size": args.batch, "lr": args.lr, "warmup": WARMUP,
                     "optimizer": "AdamW(betas=(0.9, 0.98), weight_decay=0.01), grad clip 1.0",
                     "seed": TRAIN_SEED, "split": "train (every tenth day held out)", "threads": 1,
                     "final_loss": losses[-1], "seconds": round(seconds, 1),
                     "cpu_seconds": round(cpu_seconds, 1), "torch": torch.__version__},
        "evaluation": {"seed": EVAL_SEED, "split": "held_out", "dates": 1000, "exact_match": mixed,
                       "exact_match_by_style": per_style},
    }
    (args.out / CONFIG_FILE).write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / LOSS_FILE).write_text(json.dumps({"step": list(range(len(losses))), "loss": losses}) + "\n",
                                      encoding="utf-8")
    if keep:
        # Each checkpoint's loss is the one logged at its step: the batch the next update trained on,
        # computed with exactly these weights (in float32) before that update. Its accuracy is measured
        # on the float16 file the lesson reads, on the same 1,000 held-out dates as the final model.
        from safetensors.torch import load_file

        for entry in saved:
            entry["loss"] = losses[entry["step"]]
            ck = EncoderDecoder(config)
            ck.load_state_dict({k: v.float() for k, v in load_file(str(args.out / entry["file"])).items()})
            entry["exact_match"] = accuracy(ck.eval(), generate(1000, EVAL_SEED, split="held_out"), src_tok, tgt_tok)
            print(f"checkpoint {entry['step']:5d}  loss {entry['loss']:.4f}  exact match {entry['exact_match']:.1%}")
        saved.append({"step": args.steps, "file": WEIGHTS_FILE, "sha256": meta["weights_sha256"],
                      "loss": losses[-1], "exact_match": mixed})
        manifest = {"steps": args.steps, "seed": TRAIN_SEED, "threads": 1, "checkpoints": saved}
        (args.out / CHECKPOINTS_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {weights} ({weights.stat().st_size / 1e6:.2f} MB) after {seconds:.0f} s of training "
          f"({cpu_seconds:.0f} s of CPU time: the wall time on a quiet core)")


if __name__ == "__main__":
    main()
