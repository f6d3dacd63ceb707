"""Fine-tune the course model on 《宋诗一百首》 with LoRA and ship the adapter (lesson E2).

    python scripts/build_song100.py     # once: assets/song100.txt
    python scripts/train_lora.py        # ~15 s on one idle core

The lesson shows this run at once (a class cannot train 30 adapters on one server); a
student may train one of their own on the button. Seeded, one thread, deterministic on
CPU: the same command gives the same adapter on the same machine and torch version. Writes

    lora_song100.safetensors    every adapter's A and B, float32 (~60 KB at the defaults)
    lora_song100.json           the settings, the loss curve, the Song and Tang losses
                                before and after, and a short-run check for the tests
    lora_song100_compare.json   with --compare: LoRA against a full fine-tune of the same
                                budget (same steps, batches, schedule, Adam; the full one at
                                learning rate FULL_LR), at 150 and 30 steps, a rank-1
                                LoRA on W_q, W_v, and LoRA at FULL_LR: Song and Tang losses
                                only (~3 KB)

The Tang poems scored are every 10th poem of tang300: in the base model's training, not in
the fine-tune's, so their loss after the fine-tune measures what it forgot.

    python scripts/train_lora.py --compare   # ~5 min of CPU time on one thread
    python scripts/train_lora.py --compare --only lora_lr_full   # one run, merged into the file
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

from core.lab.lora_finetune import (  # noqa: E402
    ADAPTER_FILE,
    ADAPTER_META,
    COMPARE_FILE,
    FULL_LR,
    FinetuneConfig,
    finetune,
    full_finetune,
    load_corpora,
    mean_loss,
)
from core.models.lora import adapter_state  # noqa: E402
from core.models.model import load_course_model  # noqa: E402

CHECK_STEPS = 5   # the tests repeat this short run and compare it with the numbers stored here


def norms(state: dict[str, torch.Tensor]) -> dict[str, float]:
    """One number per tensor, stored for the tests: |A|, |B| of every adapter."""
    return {name: float(t.norm()) for name, t in state.items()}


def train(config: FinetuneConfig, assets: Path | None = None) -> dict:
    """The fine-tune and its before/after losses, as the script writes them."""
    model, tok = load_course_model("cpu", assets)
    corpora = load_corpora(tok, assets)
    before = {"song": mean_loss(model, corpora.song), "tang": mean_loss(model, corpora.tang)}
    t0, cpu0 = time.time(), time.process_time()
    run = finetune(model, corpora.song, config)
    seconds, cpu_seconds = time.time() - t0, time.process_time() - cpu0
    after = {"song": mean_loss(run.adapted.model, corpora.song),
             "tang": mean_loss(run.adapted.model, corpora.tang)}
    return {"state": adapter_state(run.adapted), "losses": run.losses, "before": before,
            "after": after, "seconds": seconds, "cpu_seconds": cpu_seconds, "trainable": run.adapted.trainable}


# The comparison: (name, method, settings). Same seed, data and batches throughout.
COMPARISON = (
    ("lora", "lora", {}),
    ("full", "full", {}),
    ("lora_30", "lora", {"steps": 30}),
    ("full_30", "full", {"steps": 30}),
    ("lora_r1_qv", "lora", {"r": 1, "alpha": 2.0, "targets": ("w_q", "w_v")}),
    ("lora_lr_full", "lora", {"lr": FULL_LR}),     # LoRA at the full fine-tune's learning rate
)


def compare(seed: int, assets: Path | None = None, only: list[str] | None = None) -> dict:
    """LoRA against a full fine-tune of the same budget: Song and Tang losses after each
    (``only``: just these runs; each run is seeded on its own, so runs made apart are the
    same as runs made together)."""
    model, tok = load_course_model("cpu", assets)
    corpora = load_corpora(tok, assets)
    before = {"song": round(mean_loss(model, corpora.song), 4), "tang": round(mean_loss(model, corpora.tang), 4)}
    runs = {}
    for name, method, settings in COMPARISON:
        if only and name not in only:
            continue
        config = FinetuneConfig(seed=seed, **settings)
        t0 = time.process_time()
        if method == "lora":
            run = finetune(model, corpora.song, config)
            tuned, losses, trained = run.adapted.model, run.losses, run.adapted.trainable
        else:
            tuned, losses = full_finetune(model, corpora.song, config)
            trained = sum(p.numel() for p in tuned.parameters())
        runs[name] = {"method": method, "config": config.to_dict(), "trainable": trained,
                      "lr": config.lr if method == "lora" else FULL_LR,
                      "song": round(mean_loss(tuned, corpora.song), 4),
                      "tang": round(mean_loss(tuned, corpora.tang), 4),
                      "final_train_loss": round(losses[-1], 4),
                      "cpu_seconds": round(time.process_time() - t0, 1)}
        print(name, runs[name], flush=True)
    return {"before": before, "runs": runs, "uniform": round(math.log(len(tok)), 4),
            "torch": torch.__version__, "threads": torch.get_num_threads()}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description="Train the shipped LoRA adapter of lesson E2.")
    ap.add_argument("--out", type=Path, default=ROOT / "assets")
    ap.add_argument("--steps", type=int, default=FinetuneConfig.steps)
    ap.add_argument("--seed", type=int, default=FinetuneConfig.seed)
    ap.add_argument("--threads", type=int, default=1, help="fixed: the thread count can change float sums")
    ap.add_argument("--compare", action="store_true", help="only the LoRA / full fine-tune comparison")
    ap.add_argument("--only", nargs="*", default=None, help="with --compare: these runs, merged into the file")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    if args.compare:
        path = args.out / COMPARE_FILE
        out = compare(args.seed, only=args.only)
        if args.only:             # merge into the file, in COMPARISON's order
            old = json.loads(path.read_text(encoding="utf-8"))
            runs = {**old["runs"], **out["runs"]}
            out["runs"] = {name: runs[name] for name, _, _ in COMPARISON if name in runs}
        path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return out

    config = FinetuneConfig(steps=args.steps, seed=args.seed)
    result = train(config)
    check_config = FinetuneConfig(steps=CHECK_STEPS, seed=args.seed)
    check = train(check_config)

    from safetensors.torch import save_file
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / ADAPTER_FILE
    save_file({k: v.contiguous() for k, v in result["state"].items()}, str(path))
    path.chmod(0o644)
    b, a = result["before"], result["after"]
    meta = {
        "config": config.to_dict(),
        "trainable": result["trainable"],
        "losses": [round(x, 4) for x in result["losses"]],
        "before": {k: round(v, 4) for k, v in b.items()},
        "after": {k: round(v, 4) for k, v in a.items()},
        "seconds": round(result["seconds"], 1),          # wall clock: depends on the machine's load
        "cpu_seconds": round(result["cpu_seconds"], 1),  # CPU time of the process: what one idle core would take
        "threads": args.threads,
        "torch": torch.__version__,
        "check": {"config": check_config.to_dict(), "norms": norms(check["state"])},
    }
    (args.out / ADAPTER_META).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    fell, rose = b["song"] - a["song"], a["tang"] - b["tang"]
    print(f"{config}\ntrained {result['trainable']:,} parameters in {result['seconds']:.1f}s "
          f"({result['cpu_seconds']:.1f} s of CPU time, {args.threads} thread)")
    print(f"Song loss {b['song']:.3f} -> {a['song']:.3f} (fell {fell:.3f}, {fell / b['song']:.0%}); "
          f"Tang (base model's training, not the fine-tune's) {b['tang']:.3f} -> {a['tang']:.3f} (rose {rose:.3f})")
    print(f"{path.stat().st_size / 1e3:.1f} KB -> {path}")
    return meta


if __name__ == "__main__":
    main()
