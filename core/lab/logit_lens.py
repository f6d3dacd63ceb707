"""The logit lens (nostalgebraist 2020) and direct logit attribution, on any LlamaDecoder (F2).

Dimension legend (as in core/models/model.py; batch B = 1)
    L       blocks
    N       prompt positions
    D       model width
    H       query heads;  d_head = D / H
    V       vocabulary size
    K       guesses kept per cell (the top K tokens)
    C       candidate answers attributed at each position (the model's top C final tokens)
    W       writes into the residual stream: the embedding, then each block's attention and
            feed-forward outputs, W = 1 + 2L

The lens. The residual stream after block l is what block l + 1 reads. Read it the way the
model reads its last one (final RMSNorm, then the unembedding, then a softmax) and it is the
model's guess at the next token had it stopped after l + 1 blocks. Row 0 reads the embedding
itself, before any block. After the last block the lens *is* the model's output: the same two
modules on the same tensor (a test checks it equals the logits the model returns).

Direct logit attribution. The final residual at a position is a sum of writes:
    x = e + sum_l (a_l + f_l)        e the token's embedding, a_l block l's attention output
                                     (``attn.out``), f_l its feed-forward output (``ffn_out``)
The final RMSNorm divides x by one number, r = sqrt(mean(x^2) + eps), and multiplies by its
weight g; the unembedding dots the result with the token's row U_t. Taking r as it is (computed
from the whole final residual), the logit is linear in x, so
    z_t = (g * x / r) . U_t = sum over the writes w of (g * w / r) . U_t      exactly.
The term of a write is its *direct* effect: what it adds to the logit read straight off the
stream. A write also changes what later blocks read; that indirect effect is in their own
writes, not in this one. Nor is a term an ablation: without the write, r would change too.
Per head: a_l = concat_l W_o^T with concat_l the H heads' outputs side by side (no bias), so
head h's write is its slice c_{l,h} (d_head columns of concat) times W_o's matching d_head
columns, and the H head terms of a block add up to its attention term. The same holds for any
direction instead of U_t: ``U_t - U_s`` gives each write's share of the logit difference.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.lab.layer_trace import KeepTrace, capped_ids
from core.parts.trace import Trace

TOKEN_LIMIT = 64     # tokens the lesson reads: SmolLM2's lens of 31 rows × 64 positions × 49,152
                     # logits is ~110 GFLOP, all in float32 so that every value shown is exact (a
                     # bfloat16 product was ~30 % faster here but off by up to 5e-3 in a probability)
TOP_K = 10           # guesses kept per cell (the hover lists 3, one chosen cell all 10)
CANDIDATES = 10      # final tokens whose logits are attributed: the answer and 9 to compare it with
KEPT = ("resid_post", "attn.out", "ffn_out", "attn.concat")


def keep_name(name: str) -> bool:
    """The trace names the lens and the attribution read; everything else is dropped.

    Example: keep_name("blocks.3.attn.out") -> True; keep_name("blocks.3.attn.weights") -> False
    """
    return name == "embed" or (name.startswith("blocks.") and name.split(".", 2)[-1] in KEPT)


def residual_stream(trace: Trace, n_layers: int) -> torch.Tensor:
    """(L + 1, N, D): the embedding, then the residual stream after each block.

    Example: residual_stream(trace, 30).shape == (31, N, 576) for SmolLM2
    """
    return torch.stack([trace["embed"][0]] +
                       [trace[f"blocks.{i}.resid_post"][0] for i in range(n_layers)])   # (L+1, N, D)


def writes(trace: Trace, n_layers: int) -> torch.Tensor:
    """(W, N, D): every write into the stream, in order: the embedding, a_0, f_0, a_1, f_1, ...
    Their sum is the final residual (up to float rounding).

    Example: writes(trace, 4).sum(0) ≈ trace["blocks.3.resid_post"][0]
    """
    parts = [trace["embed"][0]]
    for i in range(n_layers):
        parts += [trace[f"blocks.{i}.attn.out"][0], trace[f"blocks.{i}.ffn_out"][0]]
    return torch.stack(parts)                                                # (W, N, D)


def lens_logits(model: torch.nn.Module, resid: torch.Tensor) -> torch.Tensor:
    """The lens: a residual stream (..., D) read the way the model reads
    its last one, through the final RMSNorm and the unembedding -> logits
    (..., V). The model's own modules: after the last block, its output."""
    return model.output(model.final_norm(resid))                   # (..., V)


def final_scale(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """1 / r at each position of the final residual x (N, D), where
    r = sqrt(mean(x^2) + eps) is what the final RMSNorm divides by -> (N,).

    Example: final_scale(m, tensor([[3., 4.]])) -> [0.2828]  (eps 0)
    """
    rms2 = x.float().pow(2).mean(-1)                                 # (N,)
    return torch.rsqrt(rms2 + model.final_norm.eps)                  # (N,)


@dataclass(frozen=True)
class LensGrid:
    top_ids: torch.Tensor        # (L+1, N, K) each layer's K likeliest next tokens, best first
    top_probs: torch.Tensor      # (L+1, N, K) their probabilities
    answer: torch.Tensor         # (N,) the model's final answer at each position (its top token)
    answer_probs: torch.Tensor   # (L+1, N) probability of the final answer at each layer
    answer_ranks: torch.Tensor   # (L+1, N) its rank at each layer, 0 = the top guess


@torch.no_grad()
def read_lens(model: torch.nn.Module, resid: torch.Tensor,
              k: int = TOP_K) -> LensGrid:
    """Every row of ``resid`` (L + 1, N, D) read through the lens in float32,
    one at a time (one (N, V) block of logits in memory: 12.6 MB for 64
    SmolLM2 tokens). The last row is read first: its top token is the final
    answer every earlier row is measured against.

    Example: read_lens(m, residual_stream(tr, 30)).top_ids[-1, :, 0]
             == the model's argmax at each position
    """
    rows = resid.shape[0]
    last = lens_logits(model, resid[-1]).float()                    # (N, V)
    answer = last.argmax(-1)                                        # (N,)
    k = min(k, last.shape[-1])
    top_ids, top_probs, a_probs, a_ranks = [], [], [], []
    for i in range(rows):
        logits = (last if i == rows - 1
                  else lens_logits(model, resid[i]).float())        # (N, V)
        probs = logits.softmax(-1)                                  # (N, V)
        top = probs.topk(k, dim=-1)                           # (N, K) each
        top_ids.append(top.indices)
        top_probs.append(top.values)
        mine = logits.gather(-1, answer[:, None])                   # (N, 1)
        a_probs.append(probs.gather(-1, answer[:, None])[:, 0])       # (N,)
        a_ranks.append((logits > mine).sum(-1))     # (N,) tokens above it
    return LensGrid(torch.stack(top_ids), torch.stack(top_probs), answer,
                    torch.stack(a_probs), torch.stack(a_ranks))


def settles_at(ranks) -> int:
    """The first row from which a token stays the top guess (rank 0) to the last row: where
    the lens "finds" the answer. ``ranks`` (R,) as in LensGrid.answer_ranks[:, position].

    Example: settles_at([9, 0, 3, 0, 0]) -> 3; settles_at([5, 2, 0]) -> 2
    """
    first = len(ranks) - 1
    while first > 0 and int(ranks[first - 1]) == 0:
        first -= 1
    return first


@torch.no_grad()
def direct_attribution(model: torch.nn.Module, trace: Trace,
                       direction: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each write's direct share of the final logit along ``direction``
    (..., N, D): a row per position, U_t of the token to explain there
    (U_t - U_s for a difference), leading axes (C candidates) kept. Read
    with the final norm's weight g and its scale 1/r of the final residual
    (see the module's docstring).

    Returns terms (..., W, N): [0] the embedding's, [1 + 2l] block l's
    attention, [2 + 2l] its feed-forward; and heads (..., L, H, N), whose
    sum over H is block l's attention term. terms.sum(-2) is the logit.

    Example: direct_attribution(m, tr, m.output.weight[ids])[0].sum(0)
             ≈ the model's logits of ids
    """
    c = model.config
    final = trace[f"blocks.{c.n_layers - 1}.resid_post"][0]         # (N, D)
    scale = final_scale(model, final)[:, None]                      # (N, 1)
    read = direction * model.final_norm.weight * scale         # (..., N, D)
    stream = writes(trace, c.n_layers)                            # (W, N, D)
    terms = torch.einsum("wnd,...nd->...wn", stream, read)     # (..., W, N)
    heads = []
    for i, block in enumerate(model.blocks):
        # Head h writes c_h W_o[:, h]^T; read . that = c_h . (read W_o)[h].
        back = read @ block.attn.w_o.weight            # (..., N, H*d_head)
        back = back.unflatten(-1, (c.n_heads, c.d_head))  # (..., N, H, d_h)
        concat = trace[f"blocks.{i}.attn.concat"][0]       # (N, H*d_head)
        concat = concat.unflatten(-1, (c.n_heads, c.d_head))  # (N, H, d_h)
        heads.append((concat * back).sum(-1).transpose(-1, -2))  # (.., H, N)
    return terms, torch.stack(heads, dim=-3)    # (..., W, N), (..., L, H, N)


@dataclass(frozen=True)
class LensResult:
    tokens: list[str]            # the N tokens the model read
    n_ids: int                   # tokens of the whole text before the cut (> N when it was cut)
    ids: list[int]               # their ids
    grid: LensGrid
    candidates: torch.Tensor     # (N, C) the model's C likeliest next tokens at each position, best first
    cand_logits: torch.Tensor    # (N, C) their logits, as the model's forward returned them
    terms: torch.Tensor          # (C, W, N) direct attribution of every write to each candidate's logit
    heads: torch.Tensor          # (C, L, H, N) the same, per head


@torch.no_grad()
def logit_lens(model: torch.nn.Module, tokenizer, text: str, limit: int = TOKEN_LIMIT,
               k: int = TOP_K, candidates: int = CANDIDATES, device: str = "cpu") -> LensResult:
    """One forward pass over ``text`` (cut to ``limit`` tokens) that keeps only the residual
    stream and the writes into it; then the lens at every layer and position, and the direct
    attribution of every write and head to the logits of the model's ``candidates`` likeliest
    tokens at every position (the first is the final answer). Attribution is linear in the
    direction, so a logit difference is a difference of two rows: terms[0] - terms[c].

    Example (SmolLM2): r = logit_lens(m, tok, "The capital of France is")
             -> tok.tokens([r.grid.answer[-1]]) == [" Paris"]; r.heads.shape == (10, 30, 9, 5)
    """
    ids, n_ids = capped_ids(tokenizer, text, min(limit, model.config.max_seq_len))
    trace = KeepTrace(keep_name)
    logits = model(torch.tensor([ids], device=device), trace=trace)[0].float()   # (N, V)
    grid = read_lens(model, residual_stream(trace, model.config.n_layers), k)
    best = logits.topk(min(candidates, logits.shape[-1]), dim=-1)            # (N, C) each
    rows = model.output.weight[best.indices.T]                               # (C, N, D) each candidate's U_t
    terms, heads = direct_attribution(model, trace, rows)                    # (C, W, N), (C, L, H, N)
    return LensResult(tokenizer.tokens(ids), n_ids, ids, grid, best.indices, best.values, terms, heads)
