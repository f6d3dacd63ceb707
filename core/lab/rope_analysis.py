"""What RoPE does to scores: the experiments of lesson C3, built on core/parts/rope.py.

Dimension legend
    d       width of one query/key vector (d_head); even
    P       rotated pairs, d / 2
    N       positions 0 .. N-1
    R       relative distances m - n at which the bound is evaluated
    H       query heads, H_kv key/value heads of a trained model's block (real q and k)

Every function calls ``apply_rope`` / ``apply_rope_complex`` / ``frequencies`` from
core/parts/rope.py; nothing here re-implements the rotation.
"""
from __future__ import annotations

import torch

from core.lab.layer_trace import trace_text
from core.lab.toy import generator
from core.parts.mha import split_heads
from core.parts.positional import frequencies
from core.parts.rope import apply_rope, apply_rope_complex


def fixed_query_key(
    d: int, seed: int, device: str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """One random query and one random key of length 1, so that q·k is a
    cosine in [-1, 1].

    Example: q, k = fixed_query_key(8, 0) -> q.shape == (8,), q.norm() == 1
    """
    g = generator(seed)
    q, k = torch.randn(2, d, generator=g)                      # (d,) each
    return (q / q.norm()).to(device), (k / k.norm()).to(device)


def rope_both_forms(
    x: torch.Tensor, positions: torch.Tensor, base: float
) -> dict[str, torch.Tensor]:
    """Rotate the same vector x (d,) to every position, with sines and
    cosines and with complex numbers, and how far apart the two answers are.

    Example: rope_both_forms(torch.tensor([1.0, 0.0]), torch.arange(2),
                             base=1.0)
             -> real [[1, 0], [0.5403, 0.8415]], max_abs_diff ≈ 0
    """
    xs = x.expand(len(positions), -1)     # (N, d): x placed at every position
    real = apply_rope(xs, positions, base)                # (N, d)
    as_complex = apply_rope_complex(xs, positions, base)  # (N, d)
    gap = (real - as_complex).abs().max()                 # ()
    return {"real": real, "complex": as_complex, "max_abs_diff": gap}


def pair_path(rotated: torch.Tensor, pair: int) -> torch.Tensor:
    """Coordinates (2i, 2i+1) of pair i at every position: the points of one turning hand.

    Example: pair_path(torch.tensor([[1., 2., 3., 4.]]), 1) -> [[3., 4.]]
    """
    return rotated[..., 2 * pair: 2 * pair + 2]                 # (N, 2)


def rope_score_matrix(
    q: torch.Tensor, k: torch.Tensor, n: int, base: float
) -> dict[str, torch.Tensor]:
    """The score q_m · k_n of one fixed query q (d,) placed at m and one
    fixed key k (d,) at n, for all m, n < n: RoPE makes it a function of
    m - n, so the matrix is Toeplitz.

    Example: rope_score_matrix(q, k, 4, 1e4)["scores"][2, 1]
             == ...["scores"][3, 2]
    """
    positions = torch.arange(n, device=q.device)          # (N,)
    # Row m is q at position m; row n is k at position n.
    q_rot = apply_rope(q.expand(n, -1), positions, base)  # (N, d)
    k_rot = apply_rope(k.expand(n, -1), positions, base)  # (N, d)
    scores = q_rot @ k_rot.T                              # (N, N)
    return {"q_rot": q_rot, "k_rot": k_rot, "scores": scores}


def toeplitz_error(matrix: torch.Tensor) -> float:
    """The largest spread (max - min) along any diagonal: 0 for a Toeplitz matrix.

    Example: toeplitz_error(torch.tensor([[1., 2.], [3., 1.]])) -> 0.0
    """
    n = matrix.shape[0]
    spreads = [matrix.diagonal(offset) for offset in range(-(n - 1), n)]
    return max(float(s.max() - s.min()) for s in spreads)


def rope_score_bound(
    distances: torch.Tensor, d: int, base: float
) -> torch.Tensor:
    """RoFormer's relative upper bound of |q_m · k_n| at distance r = m - n
    (Su et al. 2021, sec. 3.4.3): with S_j = sum_{i<j} e^{i r theta_i},
    |score| <= max_i |h_{i+1} - h_i| * sum_j |S_j|, and the factor
    (1 / P) sum_{j=1..P} |S_j| decays as r grows.

    Computed in float64: e^{i r theta} at r in the tens of thousands needs
    the precision.

    Example: rope_score_bound(torch.tensor([0]), 4, 1e4) -> [1.5]
             ((1 + 2) / 2: nothing cancels at r = 0)
    """
    theta = frequencies(d, base)                          # (P,) float64
    angles = distances.double()[:, None] * theta          # (R, P)
    turns = torch.polar(torch.ones_like(angles), angles)  # (R, P) e^{i r theta}
    partial = turns.cumsum(dim=-1)                        # (R, P): S_1 .. S_P
    return partial.abs().mean(dim=-1)                     # (R,)


def pair_angle(
    q: torch.Tensor, k: torch.Tensor, m: int, n: int, pair: int, base: float
) -> dict[str, torch.Tensor]:
    """Pair i of q turned to position m and of k turned to position n, and
    the angle from the k hand to the q hand.

    That angle is the angle between the two unrotated pairs plus (m - n)
    theta_i, wrapped to (-pi, pi]: it moves with m - n only, and the pair's
    share of the score, q_pair . k_pair = |q_pair| |k_pair| cos(angle),
    with it.
    Example: pair_angle(torch.tensor([1., 0.]), torch.tensor([1., 0.]),
                        3, 1, 0, 1e4)["angle"] -> 2.0  ((3 - 1) * 1 rad)
    """
    positions = torch.tensor([m, n], device=q.device)      # (2,)
    q_m = pair_path(apply_rope(q[None], positions[:1], base), pair)[0]  # (2,)
    k_n = pair_path(apply_rope(k[None], positions[1:], base), pair)[0]  # (2,)
    start = pair_path(q, pair), pair_path(k, pair)         # (2,) each
    # Angle of q's hand measured from k's hand, via the complex ratio.
    angle = torch.atan2(k_n[0] * q_m[1] - k_n[1] * q_m[0], k_n @ q_m)  # ()
    offset = torch.atan2(start[1][0] * start[0][1] - start[1][1] * start[0][0],
                         start[1] @ start[0])              # (): the angle at m = n
    theta = frequencies(q.shape[-1], base).float()[pair]   # (): as apply_rope turns
    return {"q": q_m, "k": k_n, "angle": angle, "offset": offset, "theta": theta,
            "score": q_m @ k_n}                            # score: this pair's share of q_m . k_n


def pair_angles(
    q: torch.Tensor, k: torch.Tensor, ms: list[int], n: int, pair: int, base: float
) -> dict[str, torch.Tensor]:
    """``pair_angle`` for every query position in ``ms`` at once (C3's live slider sends them all
    with the page): "q" (M, 2), "angle" (M,), "score" (M,); "k", "offset", "theta" as there.
    Example: pair_angles(torch.tensor([1., 0.]), torch.tensor([1., 0.]), [1, 3], 1, 0, 1e4)["angle"]
             -> [0.0, 2.0]
    """
    positions = torch.tensor(ms, device=q.device)                                   # (M,)
    q_m = pair_path(apply_rope(q.expand(len(ms), -1), positions, base), pair)      # (M, 2)
    k_n = pair_path(apply_rope(k[None], torch.tensor([n], device=q.device), base), pair)[0]   # (2,)
    start = pair_path(q, pair), pair_path(k, pair)                                 # (2,) each
    angle = torch.atan2(k_n[0] * q_m[:, 1] - k_n[1] * q_m[:, 0], q_m @ k_n)         # (M,)
    offset = torch.atan2(start[1][0] * start[0][1] - start[1][1] * start[0][0], start[1] @ start[0])
    theta = frequencies(q.shape[-1], base).float()[pair]
    return {"q": q_m, "k": k_n, "angle": angle, "offset": offset, "theta": theta, "score": q_m @ k_n}


def pair_angles_by_key(
    q: torch.Tensor, k: torch.Tensor, m: int, ns: list[int], pair: int,
    base: float,
) -> dict[str, torch.Tensor]:
    """``pair_angle`` for every key position in ``ns`` at once, the query
    fixed at ``m`` (C3's live key slider: the score against m - n).
    "k" (N, 2), "angle" (N,), "score" (N,) this pair's share, "total" (N,)
    the whole q_m . k_n of all pairs; "q", "offset", "theta" as there.

    Example: pair_angles_by_key(torch.tensor([1., 0.]),
                                torch.tensor([1., 0.]), 3, [1, 3], 0, 1e4)
             ["angle"] -> [2.0, 0.0]
    """
    positions = torch.tensor(ns, device=q.device)         # (N,)
    at_m = torch.tensor([m], device=q.device)             # (1,)
    k_all = apply_rope(k.expand(len(ns), -1), positions, base)  # (N, d)
    q_all = apply_rope(q[None], at_m, base)[0]            # (d,)
    q_m = pair_path(q_all, pair)                          # (2,)
    k_n = pair_path(k_all, pair)                          # (N, 2)
    start = pair_path(q, pair), pair_path(k, pair)        # (2,) each
    # Angle of q's hand measured from each k hand, via the complex ratio.
    cross = k_n[:, 0] * q_m[1] - k_n[:, 1] * q_m[0]       # (N,)
    angle = torch.atan2(cross, k_n @ q_m)                 # (N,)
    offset = torch.atan2(
        start[1][0] * start[0][1] - start[1][1] * start[0][0],
        start[1] @ start[0])                              # (): at m = n
    theta = frequencies(q.shape[-1], base).float()[pair]  # ()
    return {"q": q_m, "k": k_n, "angle": angle, "offset": offset,
            "theta": theta, "score": k_n @ q_m,           # (N,)
            "total": k_all @ q_all}                       # (N,)


# --- a trained model's own q and k (the real-model section of C3) -----------------------------

@torch.no_grad()
def real_query_key(model: torch.nn.Module, tokenizer, text: str, layer: int, limit: int,
                   device: str = "cpu") -> dict:
    """The queries and keys of block ``layer`` for ``text``, before RoPE and after it.

    The trace records q and k after RoPE (blocks.{i}.attn.q, .attn.k). Before RoPE they are
    the block's own projections of its normalised input, h W_q and h W_k split into heads,
    recomputed here from the trace's attn_norm with the block's weights; rotated with the
    model's base they are the trace's q and k again (tests/test_lesson_c3.py).

    Example: out = real_query_key(smollm2, tok, "Hello world", 3, 256)
             -> out["q_pre"].shape == (9, 2, 64), out["k_pre"].shape == (3, 2, 64)
    """
    names = {f"blocks.{layer}.{p}" for p in ("attn_norm", "attn.q", "attn.k")}
    tokens, n_all, trace = trace_text(model, tokenizer, text, names.__contains__, limit, device)
    attn = model.blocks[layer].attn
    h = trace[f"blocks.{layer}.attn_norm"]                                 # (1, N, D)
    q_pre = split_heads(attn.w_q(h), attn.config.n_heads)[0]               # (H, N, d)
    k_pre = split_heads(attn.w_k(h), attn.config.n_kv_heads)[0]            # (H_kv, N, d)
    return {"tokens": tokens, "n_all": n_all, "q_pre": q_pre, "k_pre": k_pre,
            "q": trace[f"blocks.{layer}.attn.q"][0], "k": trace[f"blocks.{layer}.attn.k"][0]}


def score_by_distance(
    q: torch.Tensor, k: torch.Tensor, distances: torch.Tensor, base: float
) -> torch.Tensor:
    """The score q_m . k_n / sqrt(d) of one query q (d,) and one key k (d,),
    both before RoPE, rotated with ``base``, the query r = m - n positions
    after the key, for each r in ``distances``. RoPE makes it a function
    of r alone, so the key may sit at position 0 (angle 0, unrotated).

    Example: score_by_distance(torch.tensor([1., 0.]), torch.tensor([1., 0.]),
                               torch.tensor([0, 1]), 1.0)
             -> [0.7071, 0.3821]   (cos r / sqrt 2)
    """
    q_r = apply_rope(q.expand(len(distances), -1), distances, base)  # (R, d)
    return q_r @ k / q.shape[-1] ** 0.5                              # (R,)


def rope_wavelengths(d: int, base: float) -> torch.Tensor:
    """Positions pair i needs for one full turn, 2 pi / theta_i.

    Example: rope_wavelengths(4, 100.0) -> [6.2832, 62.832]
    """
    return 2 * torch.pi / frequencies(d, base)                         # (P,)
