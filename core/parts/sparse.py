"""Sparse attention: query i looks at a chosen set S_i of keys, not at all N.

Two halves. The patterns say which pairs (i, j) are kept, each as a boolean (N, N) mask for
drawing and as padded index sets for the kernels. The kernels compute only those pairs:
- ``banded_attention``: window patterns in chunks of queries against their neighbouring keys
  (Longformer's "sliding chunks", Beltagy et al. 2020): time and memory O(N·w·d).
- ``gather_attention``: any pattern given as index sets, keys copied per query: O(N·K·d).
- ``flex_kernel``: PyTorch's ``flex_attention`` with a block mask (skips empty 128×128 tiles).
Each returns the output and the weights of the pairs it touched; on the same mask they equal
dense attention (core.parts.attention) to float rounding: the softmax of a row runs over S_i
only, and a masked cell's weight is exactly 0 in the dense kernel.

Dimension legend
    N       positions (queries and keys: self-attention)
    K       keys kept per query (the widest S_i; shorter rows are padded and masked)
    C       chunks of queries in the banded kernel, c = queries per chunk, L = keys per chunk
    d_k     width of queries and keys;  d_v  width of values
    "..."   any leading axes (batch, heads)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

NEG_INF = float("-inf")


# ------------------------------------------------------------------------ patterns
def _ij(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    i = torch.arange(n).unsqueeze(1)                          # (N, 1) query positions
    return i, torch.arange(n).unsqueeze(0)                    # (1, N) key positions


def window(n: int, w: int, causal: bool = False,
           dilation: int = 1) -> torch.Tensor:
    """Sliding window: keys within w steps of the query
    (every ``dilation``-th one).

    Example: window(4, 1) ->       window(4, 1, causal=True) ->
        [[T, T, F, F],                 [[T, F, F, F],
         [T, T, T, F],                  [T, T, F, F],
         [F, T, T, T],                  [F, T, T, F],
         [F, F, T, T]]                  [F, F, T, T]]
    """
    i, j = _ij(n)
    back = i - j                      # (N, N) how far back j is
    near = back.abs() <= w * dilation
    if causal:
        near &= back >= 0
    return near & (back % dilation == 0)            # (N, N)


def strided(n: int, stride: int) -> torch.Tensor:
    """Child et al. 2019, "strided": the previous ``stride``
    positions, and every ``stride``-th position before them.
    Causal. About 2·√N keys a row when stride ≈ √N.

    Example: strided(5, 2)[4] -> [T, F, T, T, T]
             (local: 3, 4; strided: 0, 2, 4)
    """
    i, j = _ij(n)
    back = i - j                                    # (N, N)
    local = (back >= 0) & (back < stride)
    return local | ((back >= 0) & (back % stride == 0))


def fixed(n: int, stride: int, summary: int = 1) -> torch.Tensor:
    """Child et al. 2019, "fixed": the query's own block of
    ``stride`` positions, and the last ``summary`` positions of
    every block (cells that summarise their block). Causal.

    Example: fixed(6, 3)[4] -> [F, F, T, T, T, F]
             (own block: 3, 4; summary of block 0: 2)
    """
    i, j = _ij(n)
    same_block = (i // stride) == (j // stride)     # (N, N)
    summary_col = (j % stride) >= stride - summary  # (1, N)
    return (same_block | summary_col) & (j <= i)    # (N, N)


def longformer(n: int, w: int, n_global: int) -> torch.Tensor:
    """Beltagy et al. 2020: a window of w each side, plus
    ``n_global`` tokens (the first ones) that see every
    position and that every position sees.

    Example: longformer(5, 1, 1)[4] -> [T, F, F, T, T]
             longformer(5, 1, 1)[0] -> all True
    """
    i, j = _ij(n)
    glob = (i < n_global) | (j < n_global)  # (N, N) global row/col
    return window(n, w) | glob


def bigbird(n: int, w: int, n_global: int, n_random: int,
            seed: int) -> torch.Tensor:
    """Zaheer et al. 2020: Longformer's window and global
    tokens, plus ``n_random`` keys per query drawn (from
    ``seed``) among the keys it does not see yet.

    Example: bigbird(64, 2, 1, 3, seed=0)[10].sum()
             -> 5 (window) + 1 (global) + 3 (random) = 9
    """
    base = longformer(n, w, n_global)               # (N, N)
    g = torch.Generator().manual_seed(seed)
    noise = torch.rand(n, n, generator=g)   # (N, N) one per pair
    noise = noise.masked_fill(base, 2.0)    # seen keys: drawn last
    r = min(n_random, n)
    picked = noise.topk(r, dim=-1, largest=False).indices  # (N, r)
    extra = torch.zeros(n, n, dtype=torch.bool)
    extra.scatter_(1, picked, True)
    return base | (extra & (noise < 2.0))           # (N, N)


def block_local(n: int, block: int) -> torch.Tensor:
    """Block-sparse: positions in blocks of ``block``; a query
    sees its own block and the one before (the local 1-D
    attention of Parmar et al. 2018; BigBird computes in blocks).

    Example: block_local(6, 2)[4] -> [F, F, T, T, T, T]
    """
    i, j = _ij(n)
    gap = (i // block) - (j // block)       # (N, N) blocks apart
    return (gap == 0) | (gap == 1)


PATTERNS = ("window", "causal", "dilated", "strided", "fixed", "longformer", "bigbird", "block")


@dataclass(frozen=True)
class PatternConfig:
    n: int          # positions
    w: int          # window each side; also the stride and the block size
    dilation: int   # gap between the keys of the dilated window
    n_global: int   # global tokens (Longformer, BigBird)
    n_random: int   # random keys per query (BigBird)
    seed: int       # draws BigBird's random keys

    def __post_init__(self):
        if min(self.n, self.w, self.dilation) < 1 or min(self.n_global, self.n_random) < 0:
            raise ValueError(f"bad pattern config {self}")


def pattern_mask(name: str, cfg: PatternConfig) -> torch.Tensor:
    """The (N, N) boolean mask of one of ``PATTERNS``; True where query i keeps key j."""
    n, w = cfg.n, cfg.w
    masks = {
        "window": lambda: window(n, w),
        "causal": lambda: window(n, w, causal=True),
        "dilated": lambda: window(n, w, dilation=cfg.dilation),
        "strided": lambda: strided(n, w),
        "fixed": lambda: fixed(n, w, max(1, w // 8)),
        "longformer": lambda: longformer(n, w, cfg.n_global),
        "bigbird": lambda: bigbird(n, w, cfg.n_global, cfg.n_random, cfg.seed),
        "block": lambda: block_local(n, w),
    }
    return masks[name]()


def index_sets(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The sets S_i of a mask, padded to the widest row: (index, valid), both (N, K).
    Padding slots point at the query itself and are not valid.

    Example: index_sets(window(3, 1, causal=True)) ->
        index [[0, 0], [0, 1], [1, 2]], valid [[T, F], [T, T], [T, T]]
    """
    n = mask.shape[-1]
    k = int(mask.sum(-1).max())
    # Kept keys first, in position order: sort by (not kept, position).
    order = (~mask).to(torch.int64) * n + torch.arange(n)    # (N, N)
    index = order.sort(dim=-1).indices[:, :k]                  # (N, K)
    valid = mask.gather(1, index)                              # (N, K)
    self_pos = torch.arange(n).unsqueeze(1).expand(n, k)       # (N, K)
    return torch.where(valid, index, self_pos), valid


def window_index_sets(n: int, w: int, causal: bool = False,
                      dilation: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """``index_sets(window(n, w, causal, dilation))`` built in O(N·w), with no (N, N) mask,
    for long sequences.

    Example: window_index_sets(3, 1)[0] -> [[0, 0, 1], [0, 1, 2], [1, 2, 2]]
    """
    steps = torch.arange(-w, 1 if causal else w + 1) * dilation   # (K,) offsets j - i
    i = torch.arange(n).unsqueeze(1)                               # (N, 1)
    index = i + steps                                              # (N, K)
    valid = (index >= 0) & (index < n)
    return torch.where(valid, index, i), valid


# ------------------------------------------------------------------------ kernels
@dataclass(frozen=True)
class SparseResult:
    output: torch.Tensor   # (..., N, d_v)
    weights: torch.Tensor  # (..., R, K) softmax over the K keys of each row; 0 on unused slots
    index: torch.Tensor    # (R, K) key position of each weight (R = N, or N padded to chunks)


def banded_attention(q: torch.Tensor, k: torch.Tensor,
                     v: torch.Tensor, w: int, causal: bool = False,
                     dilation: int = 1) -> SparseResult:
    """Window attention in chunks: c = w·dilation queries meet
    the keys of their own chunk and of one chunk on each side
    (only the one before, if causal): L = 3c or 2c keys, never
    all N. Scores (C, c, L), not (N, N): time, memory O(N·w·d).

    Example: N = 4096, w = 128 -> 32 chunks of 128 queries
    × 384 keys: 1.6 M scores instead of 16.8 M.
    """
    n, d_k = q.shape[-2], q.shape[-1]
    c = w * dilation                # farthest key; also the chunk
    n_chunks = -(-n // c)
    pad = n_chunks * c - n
    after = 0 if causal else c
    span = c + c + after                       # L keys per chunk
    q_chunks = F.pad(q, (0, 0, 0, pad))
    q_chunks = q_chunks.unflatten(-2, (n_chunks, c))  # (.., C, c, d)
    # Overlapping windows of keys: views of the padded keys.
    k_win = F.pad(k, (0, 0, c, pad + after))
    k_win = k_win.unfold(-2, span, c)             # (.., C, d_k, L)
    v_win = F.pad(v, (0, 0, c, pad + after))
    v_win = v_win.unfold(-2, span, c)             # (.., C, d_v, L)
    scores = q_chunks @ k_win                     # (.., C, c, L)
    scores /= math.sqrt(d_k)       # in place, as every step below
    # Query s of a chunk and its key slot t: s + c - t apart.
    s, t = torch.arange(c), torch.arange(span)
    back = s.unsqueeze(1) + c - t                 # (c, L)
    keep = (back.abs() <= c) & (back % dilation == 0)
    if causal:
        keep &= back >= 0
    key_pos = torch.arange(-c, n_chunks * c + after)
    key_pos = key_pos.unfold(0, span, c)          # (C, L)
    outside = (key_pos < 0) | (key_pos >= n)
    scores.masked_fill_(~keep, NEG_INF)
    scores.masked_fill_(outside.unsqueeze(-2), NEG_INF)
    # Softmax in place: the scores' buffer becomes the weights
    # (one (C, c, L) tensor, not two). A padding row with no key
    # gets all zeros, not NaN.
    top = scores.amax(-1, keepdim=True).clamp_(min=-1e30)
    weights = scores.sub_(top).exp_()             # (.., C, c, L)
    total = weights.sum(-1, keepdim=True).clamp_(min=1e-30)
    weights.div_(total)
    out = weights @ v_win.transpose(-2, -1)       # (.., C, c, d_v)
    out = out.flatten(-3, -2)[..., :n, :]         # (.., N, d_v)
    index = key_pos.unsqueeze(1).expand(n_chunks, c, span)
    return SparseResult(output=out,
                        weights=weights.flatten(-3, -2),  # (C·c, L)
                        index=index)                      # (C, c, L)


def gather_attention(q: torch.Tensor, k: torch.Tensor,
                     v: torch.Tensor, index: torch.Tensor,
                     valid: torch.Tensor,
                     pairs_per_step: int = 1 << 14) -> SparseResult:
    """Any pattern as index sets (``index_sets``): each query's
    K keys and values are gathered next to it, then one small
    dot product per kept pair. Queries go in groups of about
    ``pairs_per_step`` pairs: the gathered copies stay small.

    Example: index [[0, 0], [0, 1]], valid [[T, F], [T, T]]
    -> query 0 sees key 0 only (weight 1); query 1 keys 0, 1.
    """
    n, width = index.shape
    d_k = q.shape[-1]
    rows = max(1, pairs_per_step // width)
    out = q.new_empty(*q.shape[:-1], v.shape[-1])  # (.., N, d_v)
    weights = q.new_empty(*q.shape[:-1], width)    # (.., N, K)
    for a in range(0, n, rows):
        idx = index[a:a + rows]                    # (r, K)
        flat = idx.flatten()                       # (r·K,)
        k_sets = k.index_select(-2, flat)
        k_sets = k_sets.unflatten(-2, idx.shape)   # (.., r, K, d_k)
        v_sets = v.index_select(-2, flat)
        v_sets = v_sets.unflatten(-2, idx.shape)   # (.., r, K, d_v)
        q_rows = q[..., a:a + rows, :].unsqueeze(-2)  # (.., r, 1, d)
        scores = q_rows @ k_sets.transpose(-2, -1)    # (.., r, 1, K)
        scores = scores.squeeze(-2) / math.sqrt(d_k)  # (.., r, K)
        scores.masked_fill_(~valid[a:a + rows], NEG_INF)
        w = torch.softmax(scores, dim=-1)          # (.., r, K)
        weights[..., a:a + rows, :] = w
        mixed = w.unsqueeze(-2) @ v_sets           # (.., r, 1, d_v)
        out[..., a:a + rows, :] = mixed.squeeze(-2)
    return SparseResult(output=out, weights=weights, index=index)


def dense_weights(result: SparseResult, n: int) -> torch.Tensor:
    """The sparse weights written into a full (..., N, N) matrix: what the dense kernel's
    weights are, zeros where no pair was computed.

    Example: banded_attention(q, k, v, 2) on N = 5 -> a (5, 5) band, each row sums to 1
    """
    width = result.weights.shape[-1]
    lead = result.output.shape[:-2]
    weights = result.weights.reshape(*lead, -1, width)[..., :n, :]     # (..., N, K)
    index = result.index.reshape(-1, width)[:n]                        # (N, K)
    inside = (index >= 0) & (index < n)
    dense = weights.new_zeros(*lead, n, n)                             # (..., N, N)
    spots = index.clamp(0, n - 1).expand_as(weights)
    return dense.scatter_add_(-1, spots, weights * inside)


# ------------------------------------------------------------------------ flex_attention
def block_mask_from(mask: torch.Tensor, block: int = 128):
    """A ``flex_attention`` BlockMask of a boolean (N, N) mask: the tiles of block × block
    pairs with any kept pair, and the mask itself for the cells inside them."""
    from torch.nn.attention.flex_attention import create_block_mask

    def keep(b, h, q_idx, kv_idx):
        return mask[q_idx, kv_idx]

    n = mask.shape[-1]
    return create_block_mask(keep, None, None, n, n, device="cpu", BLOCK_SIZE=block)


def window_block_mask(n: int, w: int, causal: bool = False, dilation: int = 1,
                      block: int = 128):
    """The BlockMask of ``window(n, w, causal, dilation)`` built from its tiles in O(N/block)
    rows, without evaluating all N² pairs: tile (r, s) is kept when some |i - j| <= w·dilation."""
    from torch.nn.attention.flex_attention import BlockMask

    reach = w * dilation
    rows = -(-n // block)
    steps = -(-reach // block)                          # key tiles on each side that can meet
    r, s = torch.arange(rows).unsqueeze(1), torch.arange(rows).unsqueeze(0)
    gap = r - s                                                           # (R, R) tiles apart
    tile_kept = (gap <= steps) & (gap >= (0 if causal else -steps))       # (R, R)
    # Kept tiles first, in order; flex reads the first kv_num_blocks of each row.
    order = ((~tile_kept).to(torch.int64) * rows + s).sort(dim=-1).indices
    kv_indices = order.to(torch.int32)[None, None]                        # (1, 1, R, R)
    kv_num = tile_kept.sum(-1).to(torch.int32)[None, None]                # (1, 1, R)

    def keep(b, h, q_idx, kv_idx):
        back = q_idx - kv_idx
        near = (back <= reach) & (back >= (0 if causal else -reach))
        return near & (back % dilation == 0) if dilation > 1 else near

    return BlockMask.from_kv_blocks(kv_num, kv_indices, BLOCK_SIZE=block, mask_mod=keep,
                                    seq_lengths=(n, n))


def flex_kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask,
                sets: tuple[torch.Tensor, torch.Tensor] | None = None,
                attend=None) -> SparseResult:
    """``flex_attention`` on (N, d) tensors with a BlockMask. Flex keeps no weights, only
    the log-sum-exp of each row (the softmax's denominator, in logs); given the index
    ``sets`` the kept pairs' weights follow from it (``weights_from_lse``). ``attend`` is
    flex_attention (eager: computes every tile) or its ``torch.compile``d form (skips the
    empty tiles; on the CPU it cannot return the log-sum-exp, so no ``sets`` then)."""
    from torch.nn.attention.flex_attention import AuxRequest, flex_attention

    attend = attend or flex_attention
    q4, k4, v4 = q[None, None], k[None, None], v[None, None]   # (1, 1, N, d)
    if sets is None:
        out = attend(q4, k4, v4, block_mask=block_mask)[0, 0]  # (N, d_v)
        none = torch.zeros(q.shape[0], 0, dtype=torch.long)
        return SparseResult(output=out, weights=none.to(q.dtype), index=none)
    out, aux = attend(q4, k4, v4, block_mask=block_mask,
                      return_aux=AuxRequest(lse=True))
    out, lse = out[0, 0], aux.lse[0, 0]                        # (N, d_v), (N,)
    index, valid = sets
    weights = weights_from_lse(q, k, lse, index, valid)        # (N, K)
    return SparseResult(output=out, weights=weights, index=index)


def weights_from_lse(q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor,
                     index: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The weights of the kept pairs, from flex_attention's log-sum-exp: (N, K).

    Example: a row whose only key is itself has lse = q·q/√d, so its weight is exp(0) = 1
    """
    scores = (q.unsqueeze(-2) @ k[index].transpose(-2, -1)).squeeze(-2)  # (N, K)
    weights = torch.exp(scores / math.sqrt(q.shape[-1]) - lse.unsqueeze(-1))
    return weights * valid
