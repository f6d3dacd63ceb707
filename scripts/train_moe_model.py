"""Train the MoE course model on 《唐诗三百首》 and write it to assets/.

    python scripts/train_moe_model.py            # with the load-balancing loss -> moe_model.*
    python scripts/train_moe_model.py --no-aux   # without it (routing collapse) -> moe_model_noaux.*
    python scripts/train_moe_model.py [--no-aux] --evaluate   # only re-score the shipped weights

Both shipped checkpoints: 800 steps, seed 1234, one thread; training.seconds in the configs
says how long each took on the shared 2-core machine (the main run 2,640 s under heavy load,
the no-aux run 367 s at load ~2.5); runs from now on also record training.load_average.

The course model (scripts/train_course_model.py) with every feed-forward replaced by 8
SwiGLU experts, 2 per token. Training routes with noisy top-2 gating (Shazeer et al.
2017: the learned noise spreads tokens over experts early on); at inference the noise is
off (softmax top-2, Mixtral). Every 20th poem is held out as the validation split.

Scored like for like: the dense course model was trained on every Tang poem, the held-out
ones included, so on them its number is a training-set number. 《宋诗一百首》
(assets/song100.txt, built by scripts/build_song100.py) is text that neither model saw:
both are scored on it, the same windows, the same vocabulary. All scores are of the
weights as shipped (float16, read back as float32), in fixed windows of 128 characters.

Seeded and deterministic on CPU (one thread, deterministic algorithms). Writes

    <prefix>.safetensors      weights, float16 (loaded back as float32)
    <prefix>_config.json      MoEConfig, sha256 of the weights, training settings, losses
    <prefix>_loss.json        the training-loss curve (cross-entropy, aux loss)
    <prefix>_experts.json     over the whole corpus, per layer: each expert's load and the
                              characters it takes most often (the E1 lesson reads it)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.lab.lora_finetune import SONG_FILE, SONG_STATS, encode_poems  # noqa: E402
from core.lab.moe_lab import expert_stats, loss_windows, mean_loss  # noqa: E402
from core.models.model import VOCAB_FILE, load_course_model, sha256_file  # noqa: E402
from core.models.moe_model import MoEConfig, MoEModel  # noqa: E402
from core.parts.moe import Routing  # noqa: E402
from core.text.tokenizer import CharTokenizer  # noqa: E402

CHECKS = ["君不见，黄河之水", "床前明月光，", "白日依山尽，", "春眠不觉晓，"]
HOLD_OUT_EVERY = 20


def split_poems(text: str) -> tuple[list[str], list[str]]:
    """Training and validation poems: every 20th poem (index 19, 39, ...) is held out.

    Example: 40 poems -> 38 for training, 2 (the 20th and the 40th) for validation
    """
    poems = [p.strip() for p in text.split("\n\n") if p.strip()]
    val = [p for i, p in enumerate(poems) if i % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1]
    train = [p for i, p in enumerate(poems) if i % HOLD_OUT_EVERY != HOLD_OUT_EVERY - 1]
    return train, val


def encode(poems: list[str], tok: CharTokenizer) -> torch.Tensor:
    """Every poem as BOS + poem + EOS, all joined (as the dense course model was trained)."""
    ids: list[int] = []
    for poem in poems:
        ids += tok.encode(poem, bos=True, eos=True)
    return torch.tensor(ids, dtype=torch.long)


def evaluate(model: torch.nn.Module, tok: CharTokenizer, train_poems: list[str],
             val_poems: list[str], seq_len: int) -> dict:
    """The MoE model and the dense course model scored on the same texts: the MoE's
    training split, its held-out Tang poems (the dense model trained on them), and
    《宋诗一百首》, which neither model saw."""
    dense, _ = load_course_model()
    song = encode_poems((ROOT / "assets" / SONG_FILE).read_text(encoding="utf-8"), tok)
    texts = {"training_split": encode(train_poems, tok), "validation": encode(val_poems, tok), "song100": song}
    out = {}
    for name, ids in texts.items():
        out[f"{name}_loss"] = round(mean_loss(model, ids, seq_len), 4)
        out[f"dense_{name}_loss"] = round(mean_loss(dense, ids, seq_len), 4)
        out[f"{name}_scored"] = len(loss_windows(ids, seq_len)) * seq_len   # characters predicted
    song_stats = json.loads((ROOT / "assets" / SONG_STATS).read_text(encoding="utf-8"))
    out["song100_poems"] = song_stats["poems"]
    out["dense_note"] = ("the dense course model was trained on every Tang poem, the held-out ones "
                         "included; neither model saw song100")
    return out


def rescore(prefix: str, args: argparse.Namespace, tok: CharTokenizer, train_poems: list[str],
            val_poems: list[str], seq_len: int) -> dict:
    """Score the checkpoint as shipped and write the numbers into its config."""
    from safetensors.torch import load_file

    path = args.out / f"{prefix}_config.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    weights = args.out / f"{prefix}.safetensors"
    if sha256_file(weights) != meta["weights_sha256"]:
        raise SystemExit(f"{weights} does not match its checksum")
    model = MoEModel(MoEConfig.from_dict(meta["config"]))
    model.load_state_dict({k: v.float() for k, v in load_file(str(weights)).items()})
    model.eval()
    scores = evaluate(model, tok, train_poems, val_poems, seq_len)
    meta.pop("dense_validation_loss", None)
    meta.update(scores)
    path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{prefix}: " + ", ".join(f"{k} {v}" for k, v in scores.items() if k.endswith("loss")), flush=True)
    return meta


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak (as the dense model)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def init_weights(model: MoEModel, n_layers: int, gen: torch.Generator) -> None:
    """std 0.02, the residual-writing w_o and w2 scaled by 1/sqrt(2 L); the noise
    projection starts at 0 (softplus(0) = ln 2 of noise for every expert)."""
    for name, p in model.named_parameters():
        if p.dim() != 2:
            continue
        with torch.no_grad():
            if name.endswith("w_noise.weight"):
                p.zero_()
            else:
                std = 0.02 / math.sqrt(2 * n_layers) if name.endswith(("w_o.weight", "w2.weight")) else 0.02
                p.copy_(torch.randn(p.shape, generator=gen) * std)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description="Train the MoE course model.")
    ap.add_argument("--corpus", type=Path, default=ROOT / "assets" / "tang300.txt")
    ap.add_argument("--out", type=Path, default=ROOT / "assets")
    ap.add_argument("--no-aux", action="store_true", help="train without the load-balancing loss")
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--aux-weight", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--max-chars", type=int, default=None, help="first N characters only (quick tests)")
    ap.add_argument("--evaluate", action="store_true", help="only re-score the checkpoint in --out")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    prefix = "moe_model_noaux" if args.no_aux else "moe_model"

    text = args.corpus.read_text(encoding="utf-8")
    if args.max_chars:
        text = text[: args.max_chars]
    # The dense model's vocabulary, so both models read the same ids.
    tok = CharTokenizer.from_json((ROOT / "assets" / VOCAB_FILE).read_text(encoding="utf-8"))
    train_poems, val_poems = split_poems(text)
    data, val = encode(train_poems, tok), encode(val_poems, tok)
    seq_len = min(args.seq_len, len(val) - 1, len(data) - 1)
    if args.evaluate:
        return rescore(prefix, args, tok, train_poems, val_poems, seq_len)
    config = MoEConfig(vocab_size=len(tok))
    model = MoEModel(config)
    init_weights(model, config.n_layers, gen)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(train_poems)} training poems ({len(data)} tokens), {len(val_poems)} held out "
          f"({len(val)} tokens); {n_params:,} parameters; {config}", flush=True)

    routing = Routing(mode="noisy", k=config.experts_per_token,
                      aux_weight=0.0 if args.no_aux else args.aux_weight)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, min(50, args.steps // 10))
    curve: list[dict] = []
    window: list[tuple[float, float]] = []
    model.train()
    for step in range(args.steps):
        starts = torch.randint(0, len(data) - seq_len, (args.batch_size,), generator=gen)  # (B,)
        batch = torch.stack([data[s: s + seq_len + 1] for s in starts.tolist()])        # (B, T+1)
        results: list = []
        logits = model(batch[:, :-1], routing=routing, rng=gen, results=results)         # (B, T, V)
        ce = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        balance = sum(r.aux_loss + r.z_loss for r in results)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps, args.lr, warmup)
        opt.zero_grad(set_to_none=True)
        (ce + balance).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        # The Switch loss without alpha, per layer, is what shows balance (1 = even), with or without training on it.
        spread = sum(_unweighted(r, config.n_experts) for r in results) / len(results)
        window.append((ce.item(), spread))
        if (step + 1) % args.log_every == 0 or step == args.steps - 1:
            mean_ce = sum(w[0] for w in window) / len(window)
            mean_b = sum(w[1] for w in window) / len(window)
            curve.append({"step": step + 1, "loss": round(mean_ce, 4), "balance": round(mean_b, 4),
                          "seconds": round(time.time() - t0, 1)})
            window = []
            print(f"step {step + 1:5d}/{args.steps}  loss {mean_ce:.4f}  E*sum(fP) {mean_b:.3f}  "
                  f"{time.time() - t0:6.1f}s", flush=True)
    train_seconds = time.time() - t0
    model.eval()

    from core.models.generate import generate
    samples = {p: generate(model, tok, p, max_new_tokens=16) for p in CHECKS}
    for p, s in samples.items():
        print(f"greedy: {p} -> {s!r}", flush=True)
    stats = expert_stats(model, tok, loss_windows(encode(train_poems + val_poems, tok), seq_len)[:, :-1])

    from safetensors.torch import save_file
    args.out.mkdir(parents=True, exist_ok=True)
    weights_path = args.out / f"{prefix}.safetensors"
    save_file({k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()},
              str(weights_path))
    weights_path.chmod(0o644)
    meta = {
        "config": config.to_dict(),
        "weights_sha256": sha256_file(weights_path),
        "parameters": n_params,
        "training": {
            "steps": args.steps, "batch_size": args.batch_size, "seq_len": seq_len, "lr": args.lr,
            "routing": "noisy top-2", "aux_weight": routing.aux_weight, "z_weight": routing.z_weight,
            "seed": args.seed, "threads": args.threads, "max_chars": args.max_chars,
            "final_loss": curve[-1]["loss"], "seconds": round(train_seconds, 1),
            "torch": torch.__version__, "corpus": args.corpus.name,
            "validation": f"every {HOLD_OUT_EVERY}th poem held out ({len(val_poems)} poems)",
            "load_average": round(os.getloadavg()[0], 2),
        },
        "greedy_samples": samples,
    }
    (args.out / f"{prefix}_config.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    (args.out / f"{prefix}_loss.json").write_text(json.dumps(curve), encoding="utf-8")
    (args.out / f"{prefix}_experts.json").write_text(json.dumps(stats, ensure_ascii=False), encoding="utf-8")
    meta = rescore(prefix, args, tok, train_poems, val_poems, seq_len)   # the weights as shipped
    print(f"done in {time.time() - t0:.0f}s (training {train_seconds:.0f}s), "
          f"{weights_path.stat().st_size / 1e6:.1f} MB -> {weights_path}", flush=True)
    return meta


def _unweighted(r, n_experts: int) -> float:
    from core.parts.moe import switch_loss
    return switch_loss(r.probs.detach(), r.experts, n_experts).item()


if __name__ == "__main__":
    main()
