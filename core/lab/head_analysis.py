"""What does each head look at? Simple, nameable scores for every head of a model.

A trained head often has a pattern one can put a name to: it looks at the previous
character, at itself, at the start token, at punctuation, or at the same place in the
previous line of a poem. Each score below is the mean attention weight a head puts on
such a key; each is compared with the same score of a head that spreads its weight
evenly over the keys it may see (the "chance" level), so that a score of 0.3 on the
previous token reads as "3 × chance" in a long prompt and as nothing special in a short one.

Dimension legend
    L   layers
    H   heads per layer
    N   query positions
    S   key positions (S == N: causal self-attention over the prompt)
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import torch

from core.lab.block_anatomy import trace_prompt

PATTERNS = ("previous", "self", "first", "punctuation", "previous_line")
SPECIAL = ("<pad>", "<bos>", "<eos>", "<unk>")


def is_break(token: str) -> bool:
    """Punctuation or a line break: the marks that end a line of a poem.

    Example: [is_break(t) for t in ["，", "。", "\\n", "河", "<bos>", "!"]] -> [True, True, True, False, False, True]
    """
    return len(token) == 1 and (token == "\n" or unicodedata.category(token).startswith("P"))


def previous_line_targets(tokens: list[str]) -> list[int]:
    """For each position, the position at the same offset in the previous line, or -1.

    Lines are the runs of ordinary tokens between breaks (punctuation, newlines, special
    tokens). Offset o of line j points at offset o of line j - 1 when that line is long enough.

    Example: previous_line_targets(["<bos>", "a", "b", "，", "c", "d", "。"])
             -> [-1, -1, -1, -1, 1, 2, -1]
    """
    lines: list[list[int]] = []
    current: list[int] = []
    for pos, tok in enumerate(tokens):
        if is_break(tok) or tok in SPECIAL:
            if current:
                lines.append(current)
            current = []
        else:
            current.append(pos)
    if current:
        lines.append(current)
    targets = [-1] * len(tokens)
    for prev, line in zip(lines, lines[1:], strict=False):
        for offset, pos in enumerate(line):
            if offset < len(prev):
                targets[pos] = prev[offset]
    return targets


def head_scores(weights: torch.Tensor, tokens: list[str]) -> dict[str, torch.Tensor]:
    """Mean weight each head puts on five kinds of key. ``weights`` is (..., N, N), causal.

    previous       w[t, t-1], over t >= 1
    self           w[t, t]
    first          w[t, 0] (the start token, where idle heads often park), over t >= 1
    punctuation    total weight on punctuation and line breaks, over queries that can see one
    previous_line  w[t, same offset in the previous line], over queries that have one
    A score with no query to average over (no punctuation in the prompt) is NaN.

    Example: for an exact previous-token head on 4 tokens,
             w = [[1,0,0,0],[1,0,0,0],[0,1,0,0],[0,0,1,0]] -> previous 1.0, self 0.25, first 1/3
    """
    n = weights.shape[-1]
    device = weights.device
    pos = torch.arange(n, device=device)                                     # (N,)
    nan = torch.full(weights.shape[:-2], float("nan"), device=device)        # (...)

    def mean_over(rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        # values (..., N): one number per query; average over the queries flagged in rows
        return values[..., rows].mean(-1) if bool(rows.any()) else nan

    diag = torch.diagonal(weights, dim1=-2, dim2=-1)                         # (..., N)
    previous = torch.zeros_like(diag)
    previous[..., 1:] = weights[..., pos[1:], pos[:-1]]                      # (..., N) w[t, t-1]

    breaks = torch.tensor([is_break(t) for t in tokens], device=device)      # (N,) bool
    on_breaks = (weights * breaks).sum(-1)                                   # (..., N)
    sees_break = torch.cumsum(breaks.long(), 0) > 0                          # (N,) a break at or before t

    targets = torch.tensor(previous_line_targets(tokens), device=device)     # (N,)
    has_target = targets >= 0
    on_target = weights[..., pos, targets.clamp_min(0)]                      # (..., N)

    return {
        "previous": mean_over(pos >= 1, previous),
        "self": diag.mean(-1),
        "first": mean_over(pos >= 1, weights[..., :, 0]),
        "punctuation": mean_over(sees_break, on_breaks),
        "previous_line": mean_over(has_target, on_target),
    }                                                                        # each (...)


def uniform_causal(n: int, device: str | torch.device = "cpu") -> torch.Tensor:
    """(N, N) weights of a head that spreads evenly over the keys it may see.

    Example: uniform_causal(3) -> [[1, 0, 0], [1/2, 1/2, 0], [1/3, 1/3, 1/3]]
    """
    allowed = torch.ones(n, n, device=device).tril()                        # (N, N)
    return allowed / allowed.sum(-1, keepdim=True)


@dataclass(frozen=True)
class HeadProfile:
    scores: dict[str, torch.Tensor]   # pattern -> (L, H) mean weight on that kind of key
    chance: dict[str, float]          # pattern -> the same score for an evenly spread head
    lift: dict[str, torch.Tensor]     # pattern -> (L, H) scores / chance


def profile(weights: torch.Tensor, tokens: list[str]) -> HeadProfile:
    """Scores of every head of an (L, H, N, N) stack, and how far above chance they are."""
    scores = head_scores(weights, tokens)
    chance_scores = head_scores(uniform_causal(weights.shape[-1], weights.device), tokens)
    chance = {k: float(v) for k, v in chance_scores.items()}
    lift = {k: scores[k] / chance[k] if chance[k] > 0 else torch.full_like(scores[k], float("nan"))
            for k in PATTERNS}
    return HeadProfile(scores=scores, chance=chance, lift=lift)


@dataclass(frozen=True)
class NamedHead:
    pattern: str    # one of PATTERNS
    layer: int
    head: int
    score: float    # mean weight on that kind of key
    chance: float   # the same for an evenly spread head
    lift: float     # score / chance


def standout_heads(prof: HeadProfile, min_lift: float = 1.5, min_score: float = 0.15) -> list[NamedHead]:
    """For each pattern, the head with the highest lift, if it stands out enough to name.

    Example: a stack whose layer 1 head 0 is an exact previous-token head on a 12-token
    prompt -> [NamedHead("previous", 1, 0, score=1.0, chance≈0.21, lift≈4.8), ...]
    """
    out = []
    for name in PATTERNS:
        lift = torch.nan_to_num(prof.lift[name], nan=-1.0)                   # (L, H)
        best = int(lift.argmax())
        layer, head = divmod(best, lift.shape[-1])
        score = float(prof.scores[name][layer, head])
        if float(lift[layer, head]) >= min_lift and score >= min_score:
            out.append(NamedHead(name, layer, head, score, prof.chance[name], float(lift[layer, head])))
    return out


def dominant_pattern(prof: HeadProfile, min_lift: float = 2.0) -> list[list[str]]:
    """(L, H) nested list: the pattern each head is most above chance at ('' if none is 2 ×).

    Example: for an exact previous-token head, dominant_pattern(...)[l][h] == "previous"
    """
    lifts = torch.stack([torch.nan_to_num(prof.lift[k], nan=0.0) for k in PATTERNS])   # (P, L, H)
    best_lift, best = lifts.max(0)                                                     # (L, H) each
    n_layers, n_heads = best.shape
    return [[PATTERNS[int(best[i, j])] if float(best_lift[i, j]) >= min_lift else ""
             for j in range(n_heads)] for i in range(n_layers)]


@torch.no_grad()
def model_attention(model: torch.nn.Module, tokenizer, text: str, device: str = "cpu", bos: bool = True
                    ) -> tuple[list[str], torch.Tensor]:
    """Run the course model on ``<bos>`` + text and return its tokens and the attention
    weights of every layer, stacked: (L, H, N, N), read from the trace the model records
    under ``blocks.{i}.attn.weights``."""
    tokens, trace = trace_prompt(model, tokenizer, text, device, bos=bos)
    n_layers = len(model.blocks)
    weights = torch.stack([trace[f"blocks.{i}.attn.weights"][0] for i in range(n_layers)])  # (L, H, N, N)
    return tokens, weights
