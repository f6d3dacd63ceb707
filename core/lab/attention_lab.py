"""Small experiments for the attention lessons B2–B4, on seeded random weights.

The mechanism is the point here, so the weights are drawn from a seed (``core.lab.toy``);
the trained course model is looked at by ``core.lab.head_analysis``.

Dimension legend
    B       batch (texts of unequal length, padded to the longest)
    N       query positions (target length)
    S       key/value positions (source length; S == N for self-attention)
    D       model width
    H       heads
    d_head  D / H
"""
from __future__ import annotations

import re

import torch
from torch import nn

from core.lab import toy
from core.lab.head_analysis import is_break
from core.parts.attention import AttentionResult, scaled_dot_product_attention
from core.parts.masks import additive, causal_mask, padding_mask
from core.parts.mha import MHAConfig, MultiHeadAttention
from core.parts.trace import Trace
from core.text.tokenizer import PAD


def seeded_mha(
    d_model: int, n_heads: int, seed: int, device: str = "cpu"
) -> MultiHeadAttention:
    """A ``MultiHeadAttention`` whose w_q, w_k, w_v, w_o are drawn from
    ``seed``.

    Built on the meta device first, so that nn.Linear's own random
    initialisation (which reads the process-wide generator) never runs; the
    weights are N(0, 1/D_in), which keeps activations at unit variance.
    Each weight is then a new tensor (not ``to_empty``: on meta tensors it
    runs PyTorch's Python stand-in, which imports its compiler, 68 MB).
    """
    with torch.device("meta"):
        mha = MultiHeadAttention(MHAConfig(d_model, n_heads))   # no biases
    g = toy.generator(seed + 2)
    for linear in (mha.w_q, mha.w_k, mha.w_v, mha.w_o):
        w = torch.randn(linear.weight.shape, generator=g)      # (out, in)
        linear.weight = nn.Parameter((w * linear.in_features ** -0.5).to(device), requires_grad=False)
    return mha.eval()


def parameter_counts(d_model: int, n_heads: int) -> dict[str, dict[str, int]]:
    """Parameters of w_q, w_k, w_v, w_o for H heads of width D/H and for
    one head of width D, counted on the real modules. They are equal: the
    wide matrices are cut, not copied.

    Example: parameter_counts(32, 4)
             -> {"heads": {"w_q": 1024, ..., "total": 4096},
                 "single": {"w_q": 1024, ..., "total": 4096}}
    """
    out = {}
    for name, h in (("heads", n_heads), ("single", 1)):
        with torch.device("meta"):   # shapes only, no memory, no random numbers
            mha = MultiHeadAttention(MHAConfig(d_model, h))
        counts = {lin: sum(p.numel() for p in getattr(mha, lin).parameters())
                  for lin in ("w_q", "w_k", "w_v", "w_o")}
        out[name] = {**counts, "total": sum(counts.values())}
    return out


@torch.no_grad()
def run_heads(x: torch.Tensor, n_heads: int, seed: int, context: torch.Tensor | None = None,
              mask: torch.Tensor | None = None) -> tuple[torch.Tensor, Trace]:
    """One seeded multi-head attention on x (B, N, D), self- or cross- (``context`` (B, S, D)).
    Returns the output (B, N, D) and the trace with attn.q/k/v/scores/weights/concat/out."""
    mha = seeded_mha(x.shape[-1], n_heads, seed, str(x.device))
    trace = Trace()
    out = mha(x, context=context, mask=mask, trace=trace)            # (B, N, D)
    return out, trace


def masked_attention(
    text: str, d_k: int, seed: int, causal: bool, d_model: int = 32,
    device: str = "cpu",
) -> tuple[list[str], torch.Tensor, AttentionResult]:
    """One head of seeded attention on ``text``, with the causal mask or
    with none (full). Returns the tokens, the (N, N) boolean mask and the
    attention result."""
    tokens, x = toy.embed_text(text, d_model, seed, device)  # (N, D)
    w_q, w_k, w_v = toy.projections(d_model, d_k, d_k, seed, device)
    n = len(tokens)
    if causal:
        mask = causal_mask(n, device)                          # (N, N)
    else:
        mask = torch.ones(n, n, dtype=torch.bool, device=device)  # (N, N)
    q, k, v = x @ w_q, x @ w_k, x @ w_v                        # (N, d_k) each
    att = scaled_dot_product_attention(q, k, v, mask=mask)
    return tokens, mask, att


def with_mask(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The scores the softmax actually sees: scores + additive(mask), -inf
    where masked.

    Example: with_mask(torch.ones(2, 2), causal_mask(2)) -> [[1, -inf], [1, 1]]
    """
    return scores + additive(mask)


def mask_check(weights: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """What the figure should show after a masked softmax: the masked weights (exactly 0)
    and the smallest and largest row sum (1).

    Example: mask_check(torch.tensor([[1., 0.], [.5, .5]]), causal_mask(2))
             -> {"masked": 1, "largest_masked": 0.0, "row_sum_min": 1.0, "row_sum_max": 1.0}
    """
    blocked = ~mask.expand_as(weights)                                   # (..., N, S)
    sums = weights.sum(-1)                                               # (..., N)
    return {
        "masked": int(blocked.sum()),
        "largest_masked": float(weights[blocked].abs().max()) if bool(blocked.any()) else 0.0,
        "row_sum_min": float(sums.min()),
        "row_sum_max": float(sums.max()),
    }


def phrases(text: str, max_items: int = 4) -> list[str]:
    """The pieces of ``text`` between punctuation, line breaks and spaces: a batch of
    texts of unequal length.

    Example: phrases("君不见，黄河之水天上来") -> ["君不见", "黄河之水天上来"]
    """
    pieces, current = [], ""
    for ch in text:
        if is_break(ch) or ch.isspace():
            if current:
                pieces.append(current)
            current = ""
        else:
            current += ch
    if current:
        pieces.append(current)
    return pieces[:max_items]


def padded_batch(texts: list[str], d_model: int, seed: int, device: str = "cpu"
                 ) -> tuple[list[list[str]], torch.Tensor, list[int]]:
    """Texts of unequal length as one (B, N_max, D) batch, padded at the end with zero vectors.

    All texts are embedded with one seeded table, so a character has the same vector in
    every row of the batch. Returns the tokens of each row (padding shown as ``<pad>``),
    the batch and the true lengths.

    Example: padded_batch(["君不见", "黄河"], 4, 0)[0] -> [["君", "不", "见"], ["黄", "河", "<pad>"]]
    """
    _, table = toy.embed_text("".join(texts), d_model, seed, device)      # (sum of lengths, D)
    lengths = [len(t) for t in texts]
    n = max(lengths)
    batch = torch.zeros(len(texts), n, d_model, device=device)            # (B, N_max, D)
    start = 0
    for b, length in enumerate(lengths):
        batch[b, :length] = table[start:start + length]
        start += length
    tokens = [list(t) + [PAD] * (n - len(t)) for t in texts]
    return tokens, batch, lengths


def padded_attention(
    texts: list[str], d_k: int, seed: int, causal: bool, d_model: int = 32,
    device: str = "cpu",
) -> tuple[list[list[str]], torch.Tensor, AttentionResult]:
    """One head of seeded attention on a padded batch. The padding mask
    (B, 1, N) hides the padding keys from every query; with ``causal`` the
    causal mask (N, N) is combined with it. Returns the tokens of each row,
    the (B, N, N) mask and the attention result."""
    tokens, x, lengths = padded_batch(texts, d_model, seed, device)  # (B, N, D)
    n = x.shape[1]
    w_q, w_k, w_v = toy.projections(d_model, d_k, d_k, seed, device)
    mask = padding_mask(lengths, n, device)             # (B, 1, N)
    if causal:
        mask = mask & causal_mask(n, device)            # (B, N, N)
    mask = mask.expand(len(texts), n, n)                # (B, N, N)
    q, k, v = x @ w_q, x @ w_k, x @ w_v                 # (B, N, d_k) each
    att = scaled_dot_product_attention(q, k, v, mask=mask)  # weights (B, N, N)
    return tokens, mask, att


def change_token(text: str, position: int) -> str:
    """``text`` with the character at ``position`` (0-based) replaced by
    another one.

    Example: change_token("黄河之水", 3) -> "黄河之月"
             change_token("明月", 1) -> "明星"
    """
    new = "星" if text[position] == "月" else "月"
    return text[:position] + new + text[position + 1:]


@torch.no_grad()
def future_leak(
    text: str, position: int, n_heads: int, seed: int, d_model: int = 32,
    device: str = "cpu",
) -> dict[str, torch.Tensor]:
    """How much the attention output at every position moves when the
    token at ``position`` changes, with the causal mask and without any
    mask (a decoder allowed to peek).

    Both texts are embedded with one table, so only that one token differs.
    Returns the L2 norm of the change of each output row, (N,) for "causal"
    and for "none". With the causal mask the rows before ``position`` do
    not move at all: exactly 0.

    Example: future_leak("君不见黄河", 3, 2, 0)["causal"][:3] -> [0., 0., 0.]
    """
    changed = change_token(text, position)
    n = len(text)
    tokens = list(text) + list(changed)
    both = embed_tokens(tokens, d_model, seed, device)            # (2N, D)
    # Two separate runs, not one batch of two: a batched matmul may sum in
    # a different order for the second item, and a rounding difference of
    # 1e-7 would hide the exact zeros.
    x = both[:n].unsqueeze(0).clone()                             # (1, N, D)
    x_changed = both[n:].unsqueeze(0).clone()                     # (1, N, D)
    out = {}
    for name, mask in (("causal", causal_mask(n, device)), ("none", None)):
        y, _ = run_heads(x, n_heads, seed, mask=mask)             # (1, N, D)
        y_changed, _ = run_heads(x_changed, n_heads, seed, mask=mask)
        out[name] = (y_changed[0] - y[0]).norm(dim=-1)            # (N,)
    return out


WORD = re.compile(r"[A-Za-z0-9'’\-]+|\S")


def word_tokens(text: str) -> list[str]:
    """Words for alphabetic scripts, one token per character for Chinese and punctuation.

    Example: word_tokens("The Yellow River's 黄河。") -> ["The", "Yellow", "River's", "黄", "河", "。"]
    """
    return WORD.findall(text)


def embed_tokens(tokens: list[str], d_model: int, seed: int, device: str = "cpu") -> torch.Tensor:
    """(N, D) rows of a seeded table over the distinct tokens; the same token, the same row.

    Example: embed_tokens(["河", "a", "河"], 4, 0) -> X with X[0] == X[2]
    """
    vocab = {tok: i for i, tok in enumerate(dict.fromkeys(tokens))}
    ids = torch.tensor([vocab[t] for t in tokens], dtype=torch.long)          # (N,)
    table = torch.randn(len(vocab), d_model, generator=toy.generator(seed))   # (V, D)
    return table[ids].to(device)                                              # (N, D)


def cross_attention(target: list[str], source: list[str], n_heads: int, seed: int,
                    d_model: int = 32, device: str = "cpu") -> tuple[torch.Tensor, Trace]:
    """Queries from the target tokens, keys and values from the source tokens.

    Both texts share one embedding table (one vocabulary for the two). Returns the output
    (1, N_target, D) and the trace; its attn.weights is (1, H, N_target, N_source).
    """
    both = embed_tokens(target + source, d_model, seed, device)              # (N + S, D)
    x = both[: len(target)].unsqueeze(0)                                     # (1, N, D) decoder side
    context = both[len(target):].unsqueeze(0)                                # (1, S, D) encoder side
    return run_heads(x, n_heads, seed, context=context)


def cell_arithmetic(steps: toy.AttentionSteps, r: int, c: int,
                    mask: torch.Tensor | None = None) -> dict[str, float]:
    """One cell of the attention matrix, step by step, read from the call that drew the matrix:
    the dot product q_r·k_c, divided by √d_k (the score), then the softmax over row r as the
    kernel takes it: ``mask`` (N, S), True where a query may look (the one the call was given;
    None: every key), puts −∞ on the closed keys first. So the row maximum m, each e^(s_j − m)
    and their sum Σ are those of the keys row r may see, and e / Σ is the framed weight; a
    closed cell has e = 0 and weight 0 ("masked" True).

    Example: for q = k = [[1, 0], [0, 1]], cell (0, 0): dot 1, score 0.707, max 0.707, shift 0,
             exp 1, row_sum 1.493, weight 0.670; with causal_mask(2), cell (0, 1): shift −inf,
             exp 0, row_sum 1, weight 0
    """
    d_k = steps.q.shape[-1]
    row = steps.attn.scores[r]                                          # (S,) before the mask
    seen = row if mask is None else with_mask(row, mask[r])             # (S,) what the softmax reads
    top = seen.max()
    exps = torch.exp(seen - top)                                        # (S,) 0 on a closed key
    return {"dot": float(steps.q[r] @ steps.k[c]), "sqrt_d_k": d_k ** 0.5, "score": float(row[c]),
            "max": float(top), "shift": float(seen[c] - top), "exp": float(exps[c]), "row_sum": float(exps.sum()),
            "weight": float(steps.attn.weights[r, c]), "masked": bool(mask is not None and not mask[r, c]),
            "seen": int(torch.isfinite(seen).sum())}


def course_attention_steps(model: torch.nn.Module, tokenizer, text: str, layer: int, head: int,
                           device: str = "cpu") -> toy.AttentionSteps:
    """The course model's real Q, K, V for one layer and query head (after RoPE), put through
    the lesson's own kernel with the causal mask the model uses. Its weights equal the model's
    (a test checks it), so B1's picture of the mechanism is also a picture of the trained model.
    """
    from core.lab.block_anatomy import trace_prompt

    tokens, trace = trace_prompt(model, tokenizer, text, device)
    n_rep = model.config.n_heads // model.config.n_kv_heads
    q = trace[f"blocks.{layer}.attn.q"][0, head]                          # (N, d_head)
    k = trace[f"blocks.{layer}.attn.k"][0, head // n_rep]                 # (N, d_head) its KV head
    v = trace[f"blocks.{layer}.attn.v"][0, head // n_rep]                 # (N, d_head)
    return toy.AttentionSteps(tokens, q, k, v, scaled_dot_product_attention(q, k, v, causal_mask(len(tokens))))


def scaling_by_width(widths: list[int], n: int, seed: int) -> list[dict[str, torch.Tensor]]:
    """``scaling_experiment`` on ``n`` random queries and keys at each width, in one call: B1's
    live d_k slider sends the histogram of every width with the page. Entry i is exactly
    ``scaling_experiment(*toy.unit_vectors(n, widths[i], seed))``, plus the mean row entropies.
    Example: scaling_by_width([1, 512], 256, 0)[1]["mean_entropy_raw"] is near 0 (one-hot rows)."""
    from core.parts.attention import scaling_experiment
    out = []
    for width in widths:
        stats = scaling_experiment(*toy.unit_vectors(n, width, seed))       # (n, n) scores, (n,) entropies
        out.append({**stats, "mean_entropy_raw": stats["entropy_raw"].mean(),
                    "mean_entropy_scaled": stats["entropy_scaled"].mean()})
    return out


def future_leaks(text: str, positions: list[int], n_heads: int, seed: int, d_model: int = 32,
                 device: str = "cpu") -> list[dict[str, torch.Tensor]]:
    """``future_leak`` at every changed position in one call (B3's live slider sends them all with
    the page). Each entry is computed as ``future_leak`` computes it, run by run, so the exact
    zeros before the changed position stay exact.
    Example: future_leaks("君不见黄河", [1, 3], 2, 0)[1]["causal"][:3] -> [0., 0., 0.]"""
    return [future_leak(text, p, n_heads, seed, d_model, device) for p in positions]
