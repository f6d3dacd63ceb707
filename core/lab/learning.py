"""A model learning (F3): the course model's checkpoints along its training, and what each knew.

Dimension legend (as in core/models/model.py)
    C       checkpoints, in step order (0, 50, ..., the end)
    B, T    batch and window length of training (32 x 128)
    N       characters the model reads of the opening
    H       query heads;  V vocabulary size
    K       candidate characters shown, plus one column for the rest of the vocabulary

scripts/train_course_model.py saves the weights after 0, 50, 100, 200, 400 and 1,000 updates
(float16, like the shipped model) and the final weights are the shipped course model itself.
``assets/course_model_checkpoints.json`` lists each with its sha256 and its loss: the loss of the
batch the next update trained on, computed with exactly these weights before that update. The
same file holds every step's batch loss; its means over 25 steps are the logged curve
``assets/course_model_loss.json`` (tests/test_f3_learning.py replays the batches and checks both).

The reference points of the lesson are two counting models of the same corpus: the character
frequencies (a unigram model: every guess the same) and the pair counts (a bigram model: the
next character given only the one before). A fresh model is worse than both, passes the first
within ~50 updates, the second within ~200, and then goes far below either: it has learned
whole lines, which no pair count can hold.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from core.models.generate import generate
from core.models.model import (
    ASSETS,
    CONFIG_FILE,
    WEIGHTS_FILE,
    CourseModelUnavailable,
    LlamaDecoder,
    ModelConfig,
    load_course_tokenizer,
    sha256_file,
)
from core.parts.trace import Trace
from core.text.tokenizer import CharTokenizer

CHECKPOINTS_FILE = "course_model_checkpoints.json"
CORPUS_FILE = "tang300.txt"
REBUILD = "python scripts/train_course_model.py"


# --- the training data and its batches (the training script uses these very functions) --------

def encode_corpus(text: str, tok: CharTokenizer) -> torch.Tensor:
    """Every poem as BOS + poem + EOS, all joined: BOS marks "a poem starts here".

    Example (vocab of "ab"): encode_corpus("a\\n\\nb", tok) -> [1, 4, 2, 1, 5, 2]
    """
    ids: list[int] = []
    for poem in text.split("\n\n"):
        if poem.strip():
            ids += tok.encode(poem.strip(), bos=True, eos=True)
    return torch.tensor(ids, dtype=torch.long)


def init_weights(model: LlamaDecoder, n_layers: int, gen: torch.Generator) -> None:
    """Small normal init (std 0.02, GPT-2/LLaMA style); the projections that write into
    the residual stream (w_o, w2) are scaled down by sqrt(2 * layers) so the stream's
    variance does not grow with depth."""
    for name, p in model.named_parameters():
        if p.dim() == 2:
            std = 0.02 / math.sqrt(2 * n_layers) if name.endswith(("w_o.weight", "w2.weight")) else 0.02
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=gen) * std)


def draw_batch(data: torch.Tensor, seq_len: int, batch_size: int, gen: torch.Generator) -> torch.Tensor:
    """``batch_size`` windows of ``seq_len + 1`` tokens at random places: inputs and, one
    place on, the targets. Each call moves ``gen`` on by one draw.

    Example: data 0..9, seq_len 3, batch_size 2 -> e.g. [[4, 5, 6, 7], [0, 1, 2, 3]]
    """
    starts = torch.randint(0, len(data) - seq_len, (batch_size,), generator=gen)  # (B,)
    return torch.stack([data[s: s + seq_len + 1] for s in starts.tolist()])       # (B, T+1)


def batch_loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each window's next token: the training loss.
    (B, T+1) -> scalar."""
    logits = model(batch[:, :-1])                               # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())


def replay_batches(config: ModelConfig, data: torch.Tensor, seq_len: int, batch_size: int, seed: int,
                   steps: set[int]) -> dict[int, torch.Tensor]:
    """The batches training drew at the given steps (0 = the first update's), by drawing the
    seeded generator in the training script's order: the initial weights, then one batch a step."""
    gen = torch.Generator().manual_seed(seed)
    init_weights(LlamaDecoder(config), config.n_layers, gen)    # moves gen on exactly as training did
    out = {}
    for step in range(max(steps) + 1):
        batch = draw_batch(data, seq_len, batch_size, gen)
        if step in steps:
            out[step] = batch
    return out


# --- the checkpoints -------------------------------------------------------------------------

@dataclass(frozen=True)
class Checkpoint:
    step: int       # updates made before these weights (0: the random start)
    file: str       # in assets/; the last one is course_model.safetensors
    sha256: str
    loss: float     # the loss of the next batch training drew, with these weights


@dataclass(frozen=True)
class Checkpoints:
    models: list[LlamaDecoder]       # C models in eval mode, float32, step order
    entries: list[Checkpoint]
    tokenizer: CharTokenizer
    step_loss: list[float]           # every step's batch loss, before its update

    @property
    def steps(self) -> list[int]:
        return [e.step for e in self.entries]


def read_manifest(assets: Path | str | None = None) -> dict:
    folder = Path(assets) if assets is not None else ASSETS
    return json.loads((folder / CHECKPOINTS_FILE).read_text(encoding="utf-8"))


def load_checkpoints(device: str | torch.device = "cpu", assets: Path | str | None = None) -> Checkpoints:
    """Every checkpoint of the manifest, each file checked against its sha256 before it is read.

    Raises CourseModelUnavailable when a file is missing, damaged or does not fit the config.
    """
    folder = Path(assets) if assets is not None else ASSETS
    try:
        from safetensors.torch import load_file

        manifest = read_manifest(folder)
        config = ModelConfig.from_dict(json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))["config"])
        tok = load_course_tokenizer(folder)
        entries = [Checkpoint(int(e["step"]), str(e["file"]), str(e["sha256"]), float(e["loss"]))
                   for e in manifest["checkpoints"]]
        models = []
        for e in entries:
            path = folder / e.file
            if sha256_file(path) != e.sha256:
                raise ValueError(f"{e.file} does not match its checksum in {CHECKPOINTS_FILE}")
            model = LlamaDecoder(config)
            model.load_state_dict({k: v.float() for k, v in load_file(str(path)).items()}, strict=True)
            models.append(model.to(device).eval())
    except CourseModelUnavailable:
        raise
    except Exception as err:  # missing file, bad JSON, wrong shapes, a changed byte
        raise CourseModelUnavailable(f"The course model's checkpoints in {folder} cannot be loaded ({err}). "
                                     f"Rebuild them with `{REBUILD}`.") from err
    if entries[-1].file != WEIGHTS_FILE:
        raise CourseModelUnavailable(f"the last checkpoint is {entries[-1].file}, not {WEIGHTS_FILE}")
    return Checkpoints(models, entries, tok, [float(v) for v in manifest["step_loss"]])


def window_means(values: list[float], every: int) -> list[tuple[int, float]]:
    """(step, mean) over each run of ``every`` steps, and over the last,
    shorter run: what the training script logs.

    Example: window_means([4, 2, 3, 1, 5], 2) -> [(2, 3.0), (4, 2.0), (5, 5.0)]
    """
    out = []
    for end in range(every, len(values) + every, every):
        part = values[end - every: min(end, len(values))]
        if part:
            out.append((min(end, len(values)), sum(part) / len(part)))
    return out


def first_below(points: list[tuple[int, float]], level: float) -> int | None:
    """The first step whose value is below ``level`` (None if none is).

    Example: first_below([(25, 7.0), (50, 5.5), (75, 4.3)], 5.0) -> 75
    """
    return next((step for step, value in points if value < level), None)


# --- counting models: what "character frequencies" and "common pairs" predict ----------------

@dataclass(frozen=True)
class Counts:
    unigram: torch.Tensor     # (V,) how often each token is a target, as a probability
    pairs: torch.Tensor       # (V, V) sparse: how often b follows a (a count; most pairs never occur)
    firsts: torch.Tensor      # (V,) how often each token is followed by another (pairs' row sums)
    unigram_loss: float       # cross-entropy of the corpus under each, nats (in-sample)
    bigram_loss: float

    def bigram(self, prev: torch.Tensor) -> torch.Tensor:
        """The bigram model's next-token distribution after each id of ``prev`` (any shape):
        (..., V). Row a: how often each token follows a, as a probability; a token never
        followed by another (never a first) gets the unigram frequencies. Built row by row
        from the counts: the dense (V, V) table (25 MB for our 2,582 characters) is never kept.

        Example: data [1, 4, 4, 5], V 6: bigram(tensor([4])) -> [[0, 0, 0, 0, 1/2, 1/2]]
        """
        flat = prev.reshape(-1)                                         # (M,)
        seen = self.pairs.index_select(0, flat).to_dense()              # (M, V) counts
        total = self.firsts[flat, None]                                 # (M, 1)
        rows = torch.where(total > 0, seen / total.clamp(min=1), self.unigram.double())
        return rows.float().reshape(*prev.shape, -1)


def count_models(data: torch.Tensor, vocab_size: int) -> Counts:
    """Unigram and bigram models of ``data`` by counting, and their loss on
    the same data (the model trains on all of it: in-sample is fair).

    Example: data [1, 4, 4, 5], V 6: unigram of 4 = 2/3;
             bigram row 4 = {4: 1/2, 5: 1/2}
    """
    V = vocab_size
    prev, nxt = data[:-1], data[1:]                             # (M,), (M,)
    uni = torch.bincount(nxt, minlength=V).double()             # (V,)
    unigram = uni / uni.sum()
    pair_ids, seen = torch.unique(prev * V + nxt, return_counts=True)   # every pair that occurs
    pairs = torch.sparse_coo_tensor(torch.stack([pair_ids // V, pair_ids % V]), seen.double(),
                                    (V, V), check_invariants=True).coalesce()   # (V, V), sparse
    firsts = torch.bincount(prev, minlength=V).double()         # (V,) = pairs' row sums
    uni_loss = -unigram[nxt].log().mean()
    pair_p = seen[torch.searchsorted(pair_ids, prev * V + nxt)] / firsts[prev]   # (M,) p(next | prev)
    bi_loss = -pair_p.log().mean()
    return Counts(unigram.float(), pairs, firsts, float(uni_loss), float(bi_loss))


@torch.no_grad()
def resemblance(models: list[torch.nn.Module], counts: Counts,
                windows: torch.Tensor) -> dict[str, list[float]]:
    """Each checkpoint's guesses over the positions of ``windows`` (W, T+1),
    one value a checkpoint:

    - unigram, bigram: 1 - total variation distance between the model's
      distribution and theirs (1: the same, 0: no overlap), mean over positions;
    - truth: the mean probability given to the character that comes next;
    - loss: the cross-entropy on these windows.
    """
    x, y = windows[:, :-1], windows[:, 1:]                      # (W, T) each
    uni = counts.unigram                                        # (V,)
    bi = counts.bigram(x)                                       # (W, T, V)
    out: dict[str, list[float]] = {"unigram": [], "bigram": [],
                                   "truth": [], "loss": []}
    for model in models:
        logits = model(x.to(_device(model))).float().cpu()      # (W, T, V)
        logp = torch.log_softmax(logits, -1)
        p = logp.exp()
        true_logp = logp.gather(-1, y[..., None])               # (W, T, 1)
        out["unigram"].append(float(1 - 0.5 * (p - uni).abs().sum(-1).mean()))
        out["bigram"].append(float(1 - 0.5 * (p - bi).abs().sum(-1).mean()))
        out["truth"].append(float(true_logp.exp().mean()))
        out["loss"].append(float(-true_logp.mean()))
    return out


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


# --- what each checkpoint does with one opening ----------------------------------------------

@dataclass(frozen=True)
class NextChar:
    chars: list[str]          # K candidates: every checkpoint's likeliest few, the final model's order
    probs: torch.Tensor       # (C, K + 1) their probabilities at each checkpoint; the last column the rest
    entropy_bits: list[float]  # C: entropy of the whole distribution, bits (log2 V at the start)
    top_char: list[str]       # C: each checkpoint's likeliest character
    top_prob: list[float]     # C: and its probability
    target: str | None        # the character that follows in the opening (None at its end)
    unigram: torch.Tensor     # (K + 1,) the corpus frequencies of the same columns
    bigram: torch.Tensor      # (K + 1,) the pair counts after the character read last


@torch.no_grad()
def next_char_at(models: list[torch.nn.Module], tok: CharTokenizer,
                 counts: Counts, ids: list[int], read: int,
                 per_checkpoint: int = 3, most: int = 10) -> NextChar:
    """Each checkpoint's next-character distribution after ``read`` ids.

    Columns: every checkpoint's ``per_checkpoint`` likeliest characters and
    the one that truly follows, at most ``most``, in the final model's order;
    a last column holds the rest of the vocabulary: each row sums to 1.
    Example: the end, after 「床前明月光，疑是地上」 -> top_char[-1] == "霜"
    """
    x = torch.tensor([ids[:read]])                              # (1, N)
    probs = torch.stack([
        torch.softmax(m(x.to(_device(m)))[0, -1].float().cpu(), -1)
        for m in models])                                       # (C, V)
    target = ids[read] if read < len(ids) else None
    picked = [target] if target is not None else []
    for row in probs:
        picked += torch.topk(row, per_checkpoint).indices.tolist()
    picked = sorted(set(picked), key=lambda i: -float(probs[-1, i]))[:most]
    if target is not None and target not in picked:
        picked[-1] = target
    cols = torch.tensor(picked)                                 # (K,)

    def with_rest(p: torch.Tensor) -> torch.Tensor:  # (.., V) -> (.., K+1)
        shown = p[..., cols]
        rest = (1 - shown.sum(-1, keepdim=True)).clamp(min=0)
        return torch.cat([shown, rest], -1)

    entropy = -(probs * probs.clamp(min=1e-30).log2()).sum(-1)  # (C,) bits
    top = probs.max(-1)                                         # (C,) each
    return NextChar(
        chars=tok.tokens(picked), probs=with_rest(probs),
        entropy_bits=entropy.tolist(),
        top_char=tok.tokens(top.indices.tolist()),
        top_prob=top.values.tolist(),
        target=None if target is None else tok.tokens([target])[0],
        unigram=with_rest(counts.unigram),
        bigram=with_rest(counts.bigram(torch.tensor(ids[read - 1]))))


@torch.no_grad()
def head_at_checkpoints(models: list[torch.nn.Module], ids: list[int],
                        layer: int, head: int) -> torch.Tensor:
    """One head's attention weights (block ``layer``, query head ``head``) on
    the same ids at every checkpoint: (C, N, N); rows sum to 1, causal."""
    out = []
    for m in models:
        trace = Trace()
        m(torch.tensor([ids], device=_device(m)), trace=trace)  # logits unused
        w = trace[f"blocks.{layer}.attn.weights"]               # (1, H, N, N)
        out.append(w[0, head].float().cpu())                    # (N, N)
    return torch.stack(out)                                     # (C, N, N)


def continuations(models: list[torch.nn.Module], tok: CharTokenizer,
                  opening: str, n_new: int, seed: int,
                  temperature: float = 1.0) -> list[dict[str, str]]:
    """What each checkpoint writes after ``opening``: greedy (always its
    likeliest character) and sampled (drawn from its own distribution at
    ``temperature`` with ``seed``: the same text every time).

    Example: the end, after "床前明月光，" (6 new) -> greedy "疑是地上霜。"
    """
    return [{"greedy": generate(m, tok, opening, n_new, temperature=0.0),
             "sampled": generate(m, tok, opening, n_new,
                                 temperature=temperature, seed=seed)}
            for m in models]
