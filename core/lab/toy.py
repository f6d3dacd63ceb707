"""Seeded random stand-ins for trained weights, for lessons about the mechanism itself.

Every function takes a ``seed`` and builds its own ``torch.Generator``: nothing touches
the process-wide random state, so one student's seed never changes another's figure.

Dimension legend
    N   tokens in the text
    D   model width
    d_k width of queries and keys;  d_v width of values
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import torch

from core.parts.attention import AttentionResult, scaled_dot_product_attention


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def character_seed(seed: int, char: str) -> int:
    """A stable 64-bit seed for one character under one lesson seed: a blake2b digest of both
    (Python's ``hash()`` of a string changes with every process, so it cannot be used).

    Example: character_seed(0, "之") == character_seed(0, "之") != character_seed(0, "水")
    """
    digest = hashlib.blake2b(f"{int(seed)}:{ord(char)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@functools.lru_cache(maxsize=16384)
def character_vector(seed: int, char: str, d_model: int) -> torch.Tensor:
    """The (D,) random vector of one character: N(0, 1) entries from a generator seeded by the
    character itself, so it is the same in every text, at every position. Cached (read-only)."""
    return torch.randn(d_model, generator=generator(character_seed(seed, char)))   # (D,)


def embed_text(text: str, d_model: int, seed: int, device: str = "cpu") -> tuple[list[str], torch.Tensor]:
    """Characters of ``text`` and a random (N, D) embedding matrix with unit-variance entries.

    Each row depends on the character and the seed only (``character_vector``), not on where
    the character first appears: 「床前明月光」 and 「君不见，黄」 get different rows, and 之 gets
    the same row in 「黄河之水」 and in 「之子于归」. A stand-in for a trained embedding table.

    Example: embed_text("之水之", 4, 0) -> (["之", "水", "之"], X) with X[0] == X[2]
    """
    chars = list(text)
    if not chars:
        return chars, torch.zeros(0, d_model, device=device)                 # (0, D)
    x = torch.stack([character_vector(int(seed), ch, int(d_model)) for ch in chars])   # (N, D)
    return chars, x.to(device)


def projections(d_model: int, d_k: int, d_v: int, seed: int, device: str = "cpu") -> tuple[torch.Tensor, ...]:
    """W_q, W_k (D, d_k) and W_v (D, d_v), scaled by 1/sqrt(D) so that Q, K, V keep
    unit variance when X does (the usual initialisation)."""
    g = generator(seed + 1)
    scale = d_model ** -0.5
    w_q = torch.randn(d_model, d_k, generator=g) * scale                       # (D, d_k)
    w_k = torch.randn(d_model, d_k, generator=g) * scale                       # (D, d_k)
    w_v = torch.randn(d_model, d_v, generator=g) * scale                       # (D, d_v)
    return w_q.to(device), w_k.to(device), w_v.to(device)


def unit_vectors(n: int, d: int, seed: int, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Two (n, d) matrices of independent N(0, 1) entries: queries and keys for the √d_k demo."""
    g = generator(seed)
    return torch.randn(n, d, generator=g).to(device), torch.randn(n, d, generator=g).to(device)


@dataclass(frozen=True)
class AttentionSteps:
    tokens: list[str]
    q: torch.Tensor        # (N, d_k)
    k: torch.Tensor        # (S, d_k)
    v: torch.Tensor        # (S, d_v)
    attn: AttentionResult  # scores (N, S), weights (N, S), output (N, d_v)


def attention_steps(text: str, d_model: int, d_k: int, seed: int, device: str = "cpu",
                    d_v: int | None = None) -> AttentionSteps:
    """Self-attention of a text with seeded random weights, every step kept: X -> Q, K, V ->
    scores -> weights -> weights·V (B1). ``d_v`` (default d_k) is the width of the values and
    so of the output: only queries and keys must share a width.

    Example: attention_steps("之水之", 32, 8, 0, d_v=4).attn.output has shape (3, 4);
             its weights have shape (3, 3), rows 0 and 2 equal.
    """
    d_v = d_k if d_v is None else d_v
    tokens, x = embed_text(text, d_model, seed, device)                    # (N, D)
    w_q, w_k, w_v = projections(d_model, d_k, d_v, seed, device)
    q, k = x @ w_q, x @ w_k                                                 # (N, d_k) each
    v = x @ w_v                                                             # (N, d_v)
    return AttentionSteps(tokens, q, k, v, scaled_dot_product_attention(q, k, v))


def self_attention(text: str, d_model: int, d_k: int, seed: int, device: str = "cpu") -> tuple[list[str], AttentionResult]:
    """The tokens and the attention of ``attention_steps``.

    Example: self_attention("之水之", 32, 8, 0)[1].weights has shape (3, 3); rows 0 and 2 are equal.
    """
    steps = attention_steps(text, d_model, d_k, seed, device)
    return steps.tokens, steps.attn


def batch_attention(texts: list[str], d_model: int, d_k: int, seed: int, device: str = "cpu",
                    d_v: int | None = None) -> AttentionResult:
    """B texts of one length N stacked into (B, N, D), then ONE call of the attention kernel:
    its matmuls treat the leading axis as a batch. Row b equals attention_steps(texts[b]).

    Example: batch_attention(["之水", "天上"], 32, 8, 0).weights has shape (2, 2, 2)
    """
    if len({len(t) for t in texts}) != 1:
        raise ValueError("texts of one batch must have the same length (lesson B3 pads them)")
    d_v = d_k if d_v is None else d_v
    x = torch.stack([embed_text(t, d_model, seed, device)[1] for t in texts])   # (B, N, D)
    w_q, w_k, w_v = projections(d_model, d_k, d_v, seed, device)
    q, k = x @ w_q, x @ w_k                                                 # (B, N, d_k) each
    v = x @ w_v                                                             # (B, N, d_v)
    return scaled_dot_product_attention(q, k, v)                           # weights (B, N, N), output (B, N, d_v)
