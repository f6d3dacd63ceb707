"""E2's experiment: fine-tune the course model on Song poems with LoRA, then look at what changed.

Dimension legend
    B       windows per batch
    T       positions per window
    V       vocabulary size
    r       adapter rank;  d_in, d_out the adapted matrix's widths

The course model learned 《唐诗三百首》 by heart; 《宋诗一百首》 (assets/song100.txt) is new to
it. A fine-tune trains only the adapters (core.models.lora) on the Song poems, with its own
random generator, so the same settings and seed give the same adapters on any run. It reads
the shared model and never writes it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from core.models.lora import Adapted, add_lora, load_adapter_state
from core.models.model import LlamaDecoder
from core.parts.lora import LoRALinear
from core.text.tokenizer import CharTokenizer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
SONG_FILE = "song100.txt"
SONG_STATS = "song100.json"
TANG_FILE = "tang300.txt"
ADAPTER_FILE = "lora_song100.safetensors"
ADAPTER_META = "lora_song100.json"
COMPARE_FILE = "lora_song100_compare.json"     # LoRA against a full fine-tune (scripts/train_lora.py --compare)
REBUILD = "python scripts/train_lora.py"
REBUILD_SONG = "python scripts/build_song100.py"
HELD_OUT_EVERY = 10     # every 10th Tang poem measures forgetting (31 of 313)


@dataclass(frozen=True)
class FinetuneConfig:
    r: int = 8                                   # rank of every adapter
    alpha: float = 16.0                          # the update is scaled by alpha / r
    # Every projection: on W_q, W_v alone (the paper's GPT-3 choice, sec. 7.1) this memorised
    # model learns the Song poems more slowly (loss 5.3 instead of 3.3 after 150 steps).
    targets: tuple[str, ...] = ("w_q", "w_k", "w_v", "w_o", "w1", "w2", "w3")
    steps: int = 150                             # ~20 s on one idle core
    batch_size: int = 16                         # B windows a step
    seq_len: int = 64                            # T: two or three lines of a poem
    lr: float = 1e-2                             # adapters start at zero: a large step is safe
    seed: int = 0                                # A's init and the windows drawn

    def __post_init__(self) -> None:
        if self.r <= 0 or self.steps <= 0 or self.batch_size <= 0 or self.seq_len <= 1:
            raise ValueError("r, steps, batch_size must be positive and seq_len at least 2")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["targets"] = list(self.targets)
        return d


def encode_poems(text: str, tok: CharTokenizer) -> torch.Tensor:
    """Every poem as BOS + poem + EOS, joined (as the course model was trained).

    Example: "ab\\n\\ncd" -> [BOS, a, b, EOS, BOS, c, d, EOS]
    """
    ids: list[int] = []
    for poem in text.split("\n\n"):
        if poem.strip():
            ids += tok.encode(poem.strip(), bos=True, eos=True)
    return torch.tensor(ids, dtype=torch.long)


def held_out_tang(text: str) -> str:
    """Every HELD_OUT_EVERY-th Tang poem: Song training never shows them, so their loss
    after the fine-tune measures what was forgotten."""
    poems = [p for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(poems[::HELD_OUT_EVERY])


@dataclass(frozen=True)
class Corpora:
    song: torch.Tensor     # (n_song,) token ids of song100: the fine-tune's data
    tang: torch.Tensor     # (n_tang,) token ids of the held-out Tang poems
    song_text: str


def load_corpora(tok: CharTokenizer, assets: Path | None = None) -> Corpora:
    folder = assets or ASSETS
    song_text = (folder / SONG_FILE).read_text(encoding="utf-8")
    tang_text = held_out_tang((folder / TANG_FILE).read_text(encoding="utf-8"))
    return Corpora(encode_poems(song_text, tok), encode_poems(tang_text, tok), song_text)


def windows(ids: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Non-overlapping windows of seq_len + 1 ids (input and its next-token targets).

    Example: ids 0..9, seq_len 4 -> [[0..4], [4..8]]
    """
    n = (len(ids) - 1) // seq_len
    starts = torch.arange(n) * seq_len                                      # (n,)
    return torch.stack([ids[s: s + seq_len + 1] for s in starts.tolist()])  # (n, T+1)


@torch.no_grad()
def mean_loss(model: torch.nn.Module, ids: torch.Tensor, seq_len: int = 128) -> float:
    """Cross-entropy (nats per token) over the whole text, in fixed windows."""
    w = windows(ids, seq_len)                                               # (n, T+1)
    logits = model(w[:, :-1])                                               # (n, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten()))


@dataclass
class Finetune:
    config: FinetuneConfig
    adapted: Adapted
    losses: list[float] = field(default_factory=list)   # training loss of every step


def finetune(model: LlamaDecoder, data: torch.Tensor, config: FinetuneConfig,
             on_step: Callable[[int, float], None] | None = None) -> Finetune:
    """Train adapters on ``data`` (token ids); the base model is read, never written.

    Adam on A and B only, the learning rate decayed by a cosine to a tenth. ``on_step(step,
    loss)`` is called after every step (a progress bar, a live curve).
    """
    c = config
    adapted = add_lora(model, c.targets, c.r, c.alpha, seed=c.seed)
    params = [p for p in adapted.model.parameters() if p.requires_grad]
    run = Finetune(c, adapted)
    run.losses = train_steps(adapted.model, params, data, c.steps, c.batch_size, c.seq_len, c.lr,
                             c.seed, on_step)
    return run


class Adam:
    """Adam (Kingma & Ba 2015) on ``params``: per parameter, two running averages of its gradient,
    m (the mean) and v (the mean square), and a step that divides one by the other's root:

        m = b1 m + (1 - b1) g        v = b2 v + (1 - b2) g^2
        p = p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

    These two tensors, each as large as the parameter, are what training holds besides the
    weights and the gradients (optimizer_bytes). The same operations, in the same order, as
    ``torch.optim.Adam`` on the CPU (no weight decay, no amsgrad): the same numbers to the last
    bit (tests/test_lora_finetune.py). Ours, not torch.optim's: constructing any torch.optim
    optimiser imports PyTorch's compiler (torch._dynamo and sympy: 68 MB a server process, and
    165,000 objects every full garbage collection walks, 100 ms holding the GIL; issue 39).
    """

    def __init__(self, params: list[torch.Tensor], betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8):
        self.params, self.betas, self.eps, self.t = params, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in params]             # each as large as its parameter
        self.v = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, lr: float) -> None:
        self.t += 1
        b1, b2 = self.betas
        first, second = 1 - b1 ** self.t, 1 - b2 ** self.t         # the bias corrections
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = p.grad
            m.lerp_(g, 1 - b1)                                      # m + (1 - b1)(g - m)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            p.addcdiv_(m, (v.sqrt() / second ** 0.5).add_(self.eps), value=-lr / first)


def train_steps(module: torch.nn.Module, params: list[torch.Tensor], data: torch.Tensor,
                steps: int, batch_size: int, seq_len: int, lr: float, seed: int,
                on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """The training loop both fine-tunes share: Adam on ``params``, the learning rate decayed
    by a cosine to a tenth, windows drawn from ``data`` by a generator seeded ``seed + 1``
    (so LoRA and a full fine-tune with the same seed see the same batches). Returns the
    training loss of every step."""
    gen = torch.Generator().manual_seed(seed + 1)
    opt = Adam(params)
    seq_len = min(seq_len, len(data) - 1)
    losses: list[float] = []
    module.train()
    for step in range(steps):
        starts = torch.randint(0, len(data) - seq_len, (batch_size,), generator=gen)  # (B,)
        batch = torch.stack([data[s: s + seq_len + 1] for s in starts.tolist()])    # (B, T+1)
        logits = module(batch[:, :-1])                                               # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        for p in params:
            p.grad = None
        loss.backward()
        opt.step(lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps))))
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step + 1, losses[-1])
    module.eval()
    return losses


# A full fine-tune changes every weight from its trained value, so it takes a smaller step
# than the adapters' 1e-2 (which move only B A, starting from 0): 1e-3, a quarter of the course
# model's own peak rate (4e-3). Probed at 30 steps: 1e-2 gave Song 4.21 / Tang 5.45 nats,
# 1e-3 Song 5.22 / Tang 3.32, 3e-4 Song 7.00 / Tang 0.61.
FULL_LR = 1e-3


def full_finetune(model: LlamaDecoder, data: torch.Tensor, config: FinetuneConfig,
                  lr: float = FULL_LR) -> tuple[torch.nn.Module, list[float]]:
    """Every weight of a copy of the course model trained on ``data``: the same steps,
    batches, schedule and optimiser as ``finetune``, only the learning rate differs. The
    shared model is only read (deep copy)."""
    import copy

    full = copy.deepcopy(model).requires_grad_(True)
    params = list(full.parameters())
    losses = train_steps(full, params, data, config.steps, config.batch_size, config.seq_len,
                         lr, config.seed)
    return full, losses


def from_state(model: LlamaDecoder, config: FinetuneConfig, state: dict[str, torch.Tensor]) -> Adapted:
    """Adapters saved by a fine-tune, put back on a fresh view of the shared model."""
    adapted = add_lora(model, config.targets, config.r, config.alpha, seed=config.seed)
    load_adapter_state(adapted, state)
    return adapted


def load_shipped(model: LlamaDecoder, assets: Path | None = None) -> tuple[Adapted, dict]:
    """The precomputed default fine-tune (assets/lora_song100.*) and its metadata."""
    from safetensors.torch import load_file

    folder = assets or ASSETS
    meta = json.loads((folder / ADAPTER_META).read_text(encoding="utf-8"))
    cfg = meta["config"]
    config = FinetuneConfig(**{**cfg, "targets": tuple(cfg["targets"])})
    return from_state(model, config, load_file(str(folder / ADAPTER_FILE))), meta


def delta_spectra(adapted: Adapted) -> dict[str, torch.Tensor]:
    """The singular values of every learned ΔW = (alpha/r) B A, largest first.

    ΔW is d_out x d_in but a product through r columns, so at most r of them are non-zero.
    """
    return {name: torch.linalg.svdvals(lora.delta().detach())               # (min(d_out, d_in),)
            for name, lora in adapted.adapters.items()}


@torch.no_grad()
def merge_gap(adapted: Adapted, ids: torch.Tensor, dtype: torch.dtype = torch.float32) -> dict[str, float]:
    """How far the model with Ŵ = W + (alpha/r) B A (merged) is from W x + (alpha/r) B A x
    (unmerged), both computed in ``dtype``: the largest |logit difference| ("abs"), and that
    divided by the largest |logit| ("rel"), since rounding grows with the size of the numbers."""
    x = ids[None, :]                                                         # (1, T)
    model = adapted.model
    if dtype != torch.float32:
        model = _cast(adapted, dtype)
    unmerged = model(x)                                                      # (1, T, V)
    loras = [m for m in model.modules() if isinstance(m, LoRALinear)]
    for lora in loras:
        lora.merge()
    merged = model(x)                                                        # (1, T, V)
    for lora in loras:
        lora.unmerge()
    gap = float((merged.float() - unmerged.float()).abs().max())
    return {"abs": gap, "rel": gap / float(unmerged.float().abs().max())}


def _cast(adapted: Adapted, dtype: torch.dtype) -> torch.nn.Module:
    """A copy of the adapted view in ``dtype`` (weights copied: the shared ones stay float32)."""
    import copy

    return copy.deepcopy(adapted.model).to(dtype)


def optimizer_bytes(params: int, bytes_per_value: int = 4) -> dict[str, int]:
    """What training holds per learned parameter besides the weight: its gradient and Adam's
    two moving averages (Kingma & Ba 2015), each one value per parameter.

    Example: optimizer_bytes(14_336) -> {"gradients": 57_344, "adam": 114_688, "total": 172_032}
    """
    grads, adam = params * bytes_per_value, 2 * params * bytes_per_value
    return {"gradients": grads, "adam": adam, "total": grads + adam}


def measured_optimizer_bytes(model: torch.nn.Module, ids: torch.Tensor) -> dict[str, int]:
    """The same, measured: one Adam step on ``model``'s trainable parameters, then the bytes
    of every .grad and every tensor in the optimiser's state (its step counters excluded)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = Adam(params)
    x = ids[None, :]                                                         # (1, T+1)
    logits = model(x[:, :-1])                                                # (1, T, V)
    F.cross_entropy(logits.flatten(0, 1), x[0, 1:]).backward()
    opt.step(1e-9)
    grads = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
    adam = sum(t.numel() * t.element_size() for t in opt.m + opt.v)
    for p in params:
        p.grad = None
    return {"gradients": grads, "adam": adam, "total": grads + adam}


def memory_report(model: LlamaDecoder, targets: tuple[str, ...], r: int, alpha: float,
                  ids: torch.Tensor) -> dict[str, dict[str, int]]:
    """Optimiser memory (gradients + Adam) of LoRA against a full fine-tune of the same model,
    computed from the counts and measured on throwaway copies (the shared model is only read)."""
    import copy

    lora = add_lora(model, targets, r, alpha)
    full = copy.deepcopy(model).requires_grad_(True)
    n_full = sum(p.numel() for p in full.parameters())
    return {
        "lora": {"computed": optimizer_bytes(lora.trainable)["total"],
                 "measured": measured_optimizer_bytes(lora.model, ids)["total"]},
        "full": {"computed": optimizer_bytes(n_full)["total"],
                 "measured": measured_optimizer_bytes(full, ids)["total"]},
    }


# First halves of Song lines (all in the course model's vocabulary) and their real second
# halves: before the fine-tune the model answers with Tang habits, after it with what it learned.
SONG_OPENINGS: tuple[tuple[str, str], ...] = (
    ("今年寒食在商山，", "山里风光亦可怜"),
    ("马穿山径菊初黄，", "信马悠悠野兴长"),
    ("高楼聊引望，", "杳杳一川平"),
    ("春云如兽复如禽，", "日照风吹浅又深"),
)
LINE_ENDS = "。！？；："


@torch.no_grad()
def continue_line(model: torch.nn.Module, tok: CharTokenizer, opening: str, max_new: int = 12) -> str:
    """Greedy continuation of ``opening`` up to the end of its sentence (a full stop, EOS
    or ``max_new`` characters); a line break is written as "/".

    Example (the course model): continue_line(m, tok, "君不见，黄河之水") -> "天上来，"...
    """
    ids = tok.encode(opening) if opening else [tok.bos_id]
    ids = ids[-(model.config.max_seq_len - max_new):]
    x = torch.tensor([ids])                                                  # (1, N)
    out: list[int] = []
    cache = model.new_cache()
    for _ in range(max_new):
        logits = model(x, cache=cache)[0, -1]                                # (V,)
        nxt = int(logits.argmax())
        if nxt == tok.eos_id:
            break
        out.append(nxt)
        if tok.decode([nxt]) in LINE_ENDS:
            break
        x = torch.tensor([[nxt]])                                            # (1, 1)
    return tok.decode(out).replace("\n", "/")
