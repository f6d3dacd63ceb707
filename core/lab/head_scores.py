"""What a trained model's heads do, measured (lesson F1): four scores for every head, a probe
that shows copying, and the ablation that tests it.

Dimension legend (as in core/models/model.py)
    L       layers (blocks)
    H       query heads per layer
    N       positions read (the start token first); causal, so keys S == N
    T       length of one copy of the probe: the probe is <bos>, r_1 .. r_T, r_1 .. r_T (N = 2T + 1)
    V       vocabulary size
    d_head  width of one head

The scores are means of attention weights the model itself recorded (``blocks.{i}.attn.weights``,
core/parts/trace.py); nothing re-computes attention. Each is a number in [0, 1]:

    previous    w[t, t-1]                                    over queries t >= 1
    sink        w[t, 0], the share given to the first token  over queries t >= 1
    induction   sum of w[t, j+1] over earlier j with ids[j] == ids[t]
                (the token that followed an earlier copy of the current one; Olsson et al. 2022)
                                                             over queries that have such a j
    duplicate   sum of w[t, j] over earlier j with ids[j] == ids[t]
                                                             over queries that have such a j

A score with no query to average over (no repeated token in a text) is NaN.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from core.lab.layer_trace import KeepTrace

SCORES = ("previous", "sink", "induction", "duplicate")
MODES = ("zero", "mean")      # what an ablated head writes: nothing, or its mean over the probe
DRAWS = 20                    # random control groups an ablation is set against: one draw alone can
                              # hold a head every computation needs, and rise half as much as the
                              # induction heads; the spread of many shows what "random" does
KEEP_OUT = 20                 # the top induction heads no control group draws (at most half the heads)


def earlier_copies(ids: list[int]) -> torch.Tensor:
    """(N, N) bool: key j < t holds the same token as query t.

    Example: earlier_copies([5, 7, 5])[2] -> [True, False, False]
    """
    x = torch.tensor(ids)                                                # (N,)
    same = x[:, None] == x[None, :]                                      # (N, N)
    return same.tril(diagonal=-1)                                        # keys before the query only


def induction_targets(ids: list[int]) -> torch.Tensor:
    """(N, N) bool: key s follows an earlier copy of query t's token
    (ids[s-1] == ids[t], s <= t).

    Example: induction_targets([5, 7, 5])[2] -> [False, True, False]
             ("5 was followed by 7")
    """
    copies = earlier_copies(ids)              # (N, N): key j is a copy of t
    n = len(ids)
    targets = torch.zeros(n, n, dtype=torch.bool)
    targets[:, 1:] = copies[:, :-1]           # key j+1 for every copy j
    return targets


def _mean_over(values: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """values (..., N), one number per query, averaged over the queries flagged in rows (N,)."""
    if not bool(rows.any()):
        return torch.full(values.shape[:-1], float("nan"), device=values.device)
    return values[..., rows].mean(-1)


def head_scores(weights: torch.Tensor,
                ids: list[int]) -> dict[str, torch.Tensor]:
    """The four scores of every head of ``weights`` (..., N, N), causal,
    on the tokens ``ids``.

    Example: a head that attends only to the previous position (query 0
             to itself) has previous 1.0; one that attends only to
             position 0 has sink 1.0.
    """
    n = weights.shape[-1]
    device = weights.device
    pos = torch.arange(n, device=device)                      # (N,)
    later = pos >= 1                          # query 0 has no choice
    previous = torch.zeros(weights.shape[:-1], device=device)  # (..., N)
    previous[..., 1:] = weights[..., pos[1:], pos[:-1]]       # w[t, t-1]
    copies = earlier_copies(ids).to(device)                   # (N, N)
    targets = induction_targets(ids).to(device)               # (N, N)
    return {
        "previous": _mean_over(previous, later),
        "sink": _mean_over(weights[..., :, 0], later),
        "induction": _mean_over((weights * targets).sum(-1),
                                targets.any(-1)),
        "duplicate": _mean_over((weights * copies).sum(-1),
                                copies.any(-1)),
    }                                                         # each (...)


def word_like(token: str) -> bool:
    """A token that reads as a word or a character: letters only, a leading space allowed.

    Example: [word_like(t) for t in [" cat", "君", "<|im_start|>", "，", "\\ufffd", " "]]
             -> [True, True, False, False, False, False]
    """
    return token.strip().isalpha()


def repeated_probe(tokenizer, length: int, seed: int) -> list[int]:
    """<bos>, then ``length`` distinct random word-like tokens, then the
    same tokens again (Olsson et al. 2022's probe: nothing in it can be
    predicted except by copying). Drawn with a seeded generator of its
    own: the same probe for every student with that seed.

    Example: repeated_probe(tok, 3, 0) -> [bos, a, b, c, a, b, c]
             for three random tokens a, b, c
    """
    g = torch.Generator().manual_seed(int(seed))
    picked: list[int] = []
    order = torch.randperm(tokenizer.vocab_size, generator=g).tolist()
    for i in order:
        if word_like(tokenizer.tokens([i])[0]):
            picked.append(i)
            if len(picked) == length:
                break
    return [tokenizer.bos_id, *picked, *picked]


def token_losses(logits: torch.Tensor, ids: list[int]) -> torch.Tensor:
    """(N - 1,) cross-entropy of each next token, in nats: entry t is
    -log p(ids[t+1] | ids[0..t]).

    Example: logits that give every token the same score on V = 4
             -> every loss is log 4 = 1.386
    """
    logp = torch.log_softmax(logits.float(), dim=-1)          # (N, V)
    nxt = torch.tensor(ids[1:], device=logits.device)         # (N - 1,)
    return -logp[:-1].gather(-1, nxt[:, None])[:, 0]          # (N - 1,)


def copy_losses(losses: torch.Tensor, length: int) -> tuple[float, float]:
    """Mean loss on the first copy and on the second, from the
    ``token_losses`` of a probe.

    The first token of each copy is left out: nothing before it says what
    it will be (the second copy's first token is where the repeat begins).
    So the first copy's mean is over the targets at positions 2 .. T, the
    second's over T + 2 .. 2T.

    Example: length 3, losses [9, 8, 8, 9, 1, 1] -> (8.0, 1.0)
    """
    first = losses[1:length]                         # targets 2 .. T
    second = losses[length + 1:2 * length]           # targets T+2 .. 2T
    return float(first.mean()), float(second.mean())


@dataclass(frozen=True)
class Outcome:
    heads: list[tuple[int, int]]  # the (layer, head) pairs switched off (none for the whole model)
    losses: torch.Tensor          # (N - 1,) next-token loss at each position
    first: float                  # mean loss on the first copy (copy_losses)
    second: float                 # mean loss on the second copy
    accuracy: float               # share of the second copy's tokens that are the top guess
    logits_cue: torch.Tensor      # (V,) the guess for the probe's last token, from all before it


def second_copy_accuracy(logits: torch.Tensor, ids: list[int], length: int) -> float:
    """Share of the second copy's targets (positions T + 2 .. 2T) that are the model's top guess.

    Example: logits whose argmax at every position is the next id -> 1.0
    """
    guess = logits[length + 1:2 * length].argmax(-1).cpu()             # (T - 1,) at positions T+1 .. 2T-1
    truth = torch.tensor(ids[length + 2:2 * length + 1])                 # (T - 1,)
    return float((guess == truth).float().mean())


def outcome(logits: torch.Tensor, ids: list[int], off: list[tuple[int, int]]) -> Outcome:
    """What a forward pass on a probe did: its losses on both copies and its guesses."""
    length = (len(ids) - 1) // 2
    losses = token_losses(logits, ids)                                   # (N - 1,)
    first, second = copy_losses(losses, length)
    return Outcome(list(off), losses.cpu(), first, second, second_copy_accuracy(logits, ids, length),
                   logits[-2].to("cpu", torch.float32, copy=True))   # its own (V,), not a view of (N, V)


@dataclass(frozen=True)
class ProbeRun:
    ids: list[int]             # N = 2T + 1 ids of the probe
    weights: torch.Tensor      # (L, H, N, N) every head's attention on it
    head_means: torch.Tensor   # (L, H, d_head) each head's output averaged over the probe's positions
    whole: Outcome             # the whole model on it, no head switched off


@torch.no_grad()
def run_probe(model: torch.nn.Module, ids: list[int], device: str = "cpu") -> ProbeRun:
    """One forward pass on ``ids`` keeping the attention weights and each head's output.

    Example (SmolLM2, T = 32): run_probe(m, ids).weights.shape == (30, 9, 65, 65)
    """
    c = model.config
    trace = KeepTrace(lambda name: name.endswith(("attn.weights", "attn.concat")))
    logits = model(torch.tensor([ids], device=device), trace=trace)[0]   # (N, V)
    n = len(ids)
    weights = torch.stack([trace[f"blocks.{i}.attn.weights"][0] for i in range(c.n_layers)])    # (L, H, N, N)
    concat = torch.stack([trace[f"blocks.{i}.attn.concat"][0] for i in range(c.n_layers)])      # (L, N, H*d_head)
    means = concat.view(c.n_layers, n, c.n_heads, c.d_head).mean(1)                             # (L, H, d_head)
    return ProbeRun(ids, weights, means, outcome(logits, ids, []))


def top_heads(scores: torch.Tensor, k: int) -> list[tuple[int, int]]:
    """The k (layer, head) pairs of highest score, best first; NaN counts as lowest.

    Example: top_heads(torch.tensor([[0.1, 0.9], [0.5, 0.2]]), 2) -> [(0, 1), (1, 0)]
    """
    flat = torch.nan_to_num(scores.float(), nan=-1.0).flatten()          # (L*H,)
    best = flat.argsort(descending=True, stable=True)[:k].tolist()
    return [divmod(i, scores.shape[1]) for i in best]


def control_groups(n_layers: int, n_heads: int, k: int, seed: int, draws: int,
                   exclude: list[tuple[int, int]] = ()) -> list[list[tuple[int, int]]]:
    """``draws`` control groups of k distinct (layer, head) pairs, none in ``exclude``, drawn one
    after another from one seeded generator of its own: the same groups for every student with
    that seed. One group alone can hold a head every computation needs (switching off one early
    head can cost more than the induction heads); many groups show what "random" does.

    Example: control_groups(2, 2, 2, 0, 3, exclude=[(0, 0)]) -> three pairs of (0, 1), (1, 0), (1, 1)
    """
    g = torch.Generator().manual_seed(int(seed))
    skip = set(exclude)
    groups = []
    for _ in range(draws):
        pool = [divmod(i, n_heads) for i in torch.randperm(n_layers * n_heads, generator=g).tolist()]
        groups.append([p for p in pool if p not in skip][:k])
    return groups


def random_heads(n_layers: int, n_heads: int, k: int, seed: int,
                 exclude: list[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """k distinct (layer, head) pairs drawn at random (a seeded generator of its own), none in
    ``exclude``: the control group of an ablation, the first of ``control_groups``.

    Example: random_heads(2, 2, 2, 0, exclude=[(0, 0)]) -> two of (0, 1), (1, 0), (1, 1)
    """
    return control_groups(n_layers, n_heads, k, seed, 1, exclude)[0]


def head_mask(n_layers: int, n_heads: int, off: list[tuple[int, int]]) -> torch.Tensor:
    """(L, H) ones, with 0 at each (layer, head) in ``off``: the model's ``head_mask`` argument.

    Example: head_mask(2, 2, [(1, 0)]) -> [[1, 1], [0, 1]]
    """
    mask = torch.ones(n_layers, n_heads)
    for layer, head in off:
        mask[layer, head] = 0.0
    return mask


@torch.no_grad()
def ablate(model: torch.nn.Module, run: ProbeRun,
           off: list[tuple[int, int]], mode: str,
           device: str = "cpu") -> Outcome:
    """The probe again with the heads in ``off`` switched off: their
    output (before w_o) set to zero (``mode`` "zero") or to its mean over
    the probe ("mean": what the head writes on average stays, only what
    depends on the tokens goes).

    Example (SmolLM2): ablate(m, run, [(18, 6)], "zero").second
                       > run.whole.second
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    c = model.config
    mask = head_mask(c.n_layers, c.n_heads, off).to(device)   # (L, H)
    fill = run.head_means.to(device) if mode == "mean" else None
    ids = torch.tensor([run.ids], device=device)              # (1, N)
    logits = model(ids, head_mask=mask, head_fill=fill)[0]    # (N, V)
    return outcome(logits, run.ids, off)


def kept_out(scores: torch.Tensor, k: int) -> list[tuple[int, int]]:
    """The heads no control group may draw: the top ``KEEP_OUT`` by induction score (at most
    half of all heads, and never fewer than the k switched off).

    Example: kept_out(scores of SmolLM2's 30 x 9 heads, 5) -> its 20 best induction heads
    """
    n = scores.shape[0] * scores.shape[1]
    return top_heads(scores, max(k, min(KEEP_OUT, n // 2)))


@torch.no_grad()
def ablation_study(model: torch.nn.Module, run: ProbeRun, k: int,
                   mode: str, seed: int,
                   device: str = "cpu") -> dict[str, Outcome]:
    """A pattern is a correlation; removing the head is the test. The
    probe with every head ("none"), without the k heads of highest
    induction score ("top"), and without k heads drawn at random from
    those outside the top induction heads ("random", the first group of
    ``control_study``). If those k heads do the copying, "top" loses far
    more on the second copy than "random".
    """
    c = model.config
    weights = run.weights.float()             # (L, H, N, N), kept as fp16
    scores = head_scores(weights, run.ids)["induction"]       # (L, H)
    top = top_heads(scores, k)
    control = random_heads(c.n_layers, c.n_heads, k, seed, exclude=kept_out(scores, k))
    return {"none": run.whole,
            "top": ablate(model, run, top, mode, device),
            "random": ablate(model, run, control, mode, device)}


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median, lowest and highest of ``values`` (the median of an even count is the mean of
    the two middle values).

    Example: spread([0.3, -0.1, 2.0, 0.1]) -> (0.2, -0.1, 2.0)
    """
    ordered = sorted(values)
    n = len(ordered)
    mid = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return mid, ordered[0], ordered[-1]


@dataclass(frozen=True)
class ControlSpread:
    groups: list[list[tuple[int, int]]]   # each draw's (layer, head) pairs switched off
    rises: list[float]                    # each draw's second-copy loss minus the whole model's
    accuracy: list[float]                 # each draw's share of the second copy guessed right
    median: float                         # spread(rises)
    low: float
    high: float
    kept_out: int                         # top induction heads no draw could pick


@torch.no_grad()
def control_study(model: torch.nn.Module, run: ProbeRun, k: int, mode: str, seed: int,
                  draws: int = DRAWS, device: str = "cpu",
                  progress: Callable[[float], None] | None = None) -> ControlSpread:
    """The random control, drawn ``draws`` times: k heads outside the top induction heads
    switched off, one forward pass a draw (the first draw is ablation_study's "random").
    A single draw can rise far more than the others; their median and range say what
    switching off k heads that are not induction heads costs.

    Example (SmolLM2, T = 20, k = 5, zero): median rise ~0.1 nats, range ~-0.8 .. 1.3,
             against ~7 nats without the top 5 induction heads
    """
    c = model.config
    scores = head_scores(run.weights.float(), run.ids)["induction"]   # (L, H)
    out = kept_out(scores, k)
    groups = control_groups(c.n_layers, c.n_heads, k, seed, draws, exclude=out)
    done = []
    for g in groups:                                   # one forward pass a draw
        done.append(ablate(model, run, g, mode, device))
        if progress is not None:
            progress(len(done) / len(groups))
    rises = [o.second - run.whole.second for o in done]
    return ControlSpread(groups, rises, [o.accuracy for o in done], *spread(rises), len(out))
