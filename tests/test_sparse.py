"""Sparse attention: the patterns keep what their papers say, and every kernel equals dense
attention (core.parts.attention, checked against PyTorch's SDPA in test_attention.py) with
the same mask."""
import math

import pytest
import torch
import torch.nn.functional as F

from core.lab.sparse_lab import (
    fit_slope,
    gallery,
    layers_to_connect_all,
    layers_to_reach,
    measure_one,
    peak_bytes,
    receptive_field,
)
from core.parts.attention import scaled_dot_product_attention
from core.parts.sparse import (
    PATTERNS,
    PatternConfig,
    banded_attention,
    bigbird,
    block_local,
    dense_weights,
    fixed,
    flex_kernel,
    gather_attention,
    index_sets,
    longformer,
    pattern_mask,
    strided,
    window,
    window_block_mask,
    window_index_sets,
)

TOL = 1e-5
CONFIGS = [PatternConfig(n, w, dil, g, r, seed)
           for n, w, dil, g, r, seed in [(1, 1, 1, 0, 0, 0), (7, 2, 2, 1, 2, 1), (33, 3, 3, 2, 4, 7),
                                         (64, 8, 2, 4, 8, 42), (130, 5, 1, 3, 3, 9999)]]


def _qkv(n, d=16, seed=0, lead=()):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*lead, n, d, generator=g, dtype=torch.float64) for _ in range(3))


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"N{c.n}w{c.w}")
@pytest.mark.parametrize("name", PATTERNS)
def test_every_row_keeps_itself_and_gather_equals_dense(cfg, name):
    mask = pattern_mask(name, cfg)
    assert mask.shape == (cfg.n, cfg.n) and mask.dtype == torch.bool
    assert mask.diagonal().all()                                   # no empty row: itself at least
    q, k, v = _qkv(cfg.n, seed=cfg.seed)
    dense = scaled_dot_product_attention(q, k, v, mask)
    index, valid = index_sets(mask)
    assert (valid.sum(-1) == mask.sum(-1)).all()
    got = gather_attention(q, k, v, index, valid, pairs_per_step=64)   # several steps
    assert torch.allclose(got.output, dense.output, atol=TOL)
    assert torch.allclose(dense_weights(got, cfg.n), dense.weights, atol=TOL)
    assert torch.allclose(got.weights.sum(-1), torch.ones(cfg.n, dtype=torch.float64))


@pytest.mark.parametrize("cfg", CONFIGS[1:], ids=lambda c: f"N{c.n}w{c.w}")
@pytest.mark.parametrize("name", PATTERNS)
def test_flex_attention_equals_dense(cfg, name):
    mask = pattern_mask(name, cfg)
    q, k, v = (t.float() for t in _qkv(cfg.n, seed=cfg.seed))
    dense = scaled_dot_product_attention(q, k, v, mask)
    got = flex_kernel(q, k, v, _block_mask(mask), sets=index_sets(mask))
    assert torch.allclose(got.output, dense.output, atol=TOL)
    assert torch.allclose(dense_weights(got, cfg.n), dense.weights, atol=TOL)


def _block_mask(mask):
    from core.parts.sparse import block_mask_from
    return block_mask_from(mask)


@pytest.mark.parametrize("n", [1, 5, 64, 100, 300])
@pytest.mark.parametrize("w", [1, 3, 16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dilation", [1, 3])
def test_banded_equals_dense(n, w, causal, dilation):
    q, k, v = _qkv(n, seed=n + w)
    mask = window(n, w, causal, dilation)
    dense = scaled_dot_product_attention(q, k, v, mask)
    got = banded_attention(q, k, v, w, causal, dilation)
    assert got.output.shape == (n, 16)
    c = w * dilation
    chunks = -(-n // c)
    assert got.weights.shape == (chunks * c, (2 if causal else 3) * c)    # (C·c, L): never (N, N)
    assert torch.allclose(got.output, dense.output, atol=TOL)
    assert torch.allclose(dense_weights(got, n), dense.weights, atol=TOL)
    # The index sets of the same window, built without a mask, give the same answer.
    sets = window_index_sets(n, w, causal, dilation)
    assert torch.equal(sets[1].sum(-1), mask.sum(-1))
    assert torch.allclose(gather_attention(q, k, v, *sets).output, dense.output, atol=TOL)


def test_kernels_take_leading_axes():
    q, k, v = _qkv(50, lead=(2, 3))                                 # (B, H, N, d)
    mask = window(50, 4)
    dense = scaled_dot_product_attention(q, k, v, mask)
    assert torch.allclose(banded_attention(q, k, v, 4).output, dense.output, atol=TOL)
    assert torch.allclose(gather_attention(q, k, v, *index_sets(mask)).output, dense.output, atol=TOL)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # PyTorch's own
    assert torch.allclose(dense.output, ref, atol=TOL)


@pytest.mark.parametrize("n,w,causal", [(256, 16, False), (300, 40, True), (1000, 128, False)])
def test_flex_window_block_mask_equals_dense(n, w, causal):
    q, k, v = (t.float() for t in _qkv(n))
    mask = window(n, w, causal)
    got = flex_kernel(q, k, v, window_block_mask(n, w, causal), sets=index_sets(mask))
    dense = scaled_dot_product_attention(q, k, v, mask)
    assert torch.allclose(got.output, dense.output, atol=TOL)
    assert torch.allclose(dense_weights(got, n), dense.weights, atol=TOL)


def test_pattern_definitions():
    assert window(4, 1).int().tolist() == [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    assert window(4, 1, causal=True).int().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    assert window(9, 2, dilation=2)[4].int().tolist() == [1, 0, 1, 0, 1, 0, 1, 0, 1]
    assert strided(5, 2)[4].int().tolist() == [1, 0, 1, 1, 1]
    assert fixed(6, 3)[4].int().tolist() == [0, 0, 1, 1, 1, 0]
    assert longformer(5, 1, 1)[4].int().tolist() == [1, 0, 0, 1, 1] and longformer(5, 1, 1)[0].all()
    assert block_local(6, 2)[4].int().tolist() == [0, 0, 1, 1, 1, 1]
    for m in (strided(40, 6), fixed(40, 6, 2), window(40, 3, causal=True)):
        assert not m.triu(1).any()                                   # Child et al.'s are causal


def test_pattern_sizes_follow_their_formulas():
    n, w, d = 64, 4, 3
    assert int(window(n, w).sum()) == n * (2 * w + 1) - w * (w + 1)
    assert int(window(n, w, causal=True).sum()) == n * (w + 1) - w * (w + 1) // 2
    assert int(window(n, w, dilation=d).sum()) == n + 2 * sum(max(0, n - r * d) for r in range(1, w + 1))
    assert int(block_local(n, 8).sum()) == (2 * (n // 8) - 1) * 64
    # strided, causal: the last row keeps its stride-1 predecessors and every stride-th before
    assert int(strided(n, 8)[-1].sum()) == 8 + (n - 8) // 8
    g = 2
    lf = longformer(n, w, g)
    glob = 2 * g * n - g * g
    assert int(lf.sum()) == glob + int(window(n, w)[g:, g:].sum())


def test_bigbird_reproduces_from_its_seed():
    a, b = bigbird(96, 3, 2, 5, seed=11), bigbird(96, 3, 2, 5, seed=11)
    assert torch.equal(a, b)
    assert not torch.equal(a, bigbird(96, 3, 2, 5, seed=12))
    extra = a & ~longformer(96, 3, 2)
    assert (extra[2:].sum(-1) == 5).all()                          # r new keys for every local row
    assert not extra[:2].any()                                     # global rows already see all


def test_index_sets_example():
    index, valid = index_sets(window(3, 1, causal=True))
    assert index.tolist() == [[0, 0], [0, 1], [1, 2]]
    assert valid.tolist() == [[True, False], [True, True], [True, True]]


@pytest.mark.parametrize("w", [1, 2, 5])
@pytest.mark.parametrize("layers", [1, 2, 3, 7])
def test_receptive_field_of_one_sided_window_is_L_times_w(w, layers):
    n, i = 128, 100
    reach = receptive_field(window(n, w, causal=True), i, layers)
    assert reach.shape == (layers, n)
    for ell in range(1, layers + 1):
        seen = reach[ell - 1].nonzero().flatten()
        assert seen.max() == i and seen.min() == max(0, i - ell * w)   # spans ell·w positions
        assert len(seen) == min(i, ell * w) + 1


def test_layers_to_connect():
    n, w = 64, 4
    assert layers_to_reach(window(n, w, causal=True), n - 1, 0) == math.ceil((n - 1) / w)
    assert layers_to_reach(window(n, w, causal=True), 0, n - 1) is None   # causal: never backwards
    assert layers_to_connect_all(window(n, w)) == math.ceil((n - 1) / w)
    assert layers_to_connect_all(longformer(n, w, 1)) == 2                # two hops via a global token
    assert layers_to_connect_all(bigbird(n, w, 1, 3, 0)) == 2


def test_gallery_counts():
    table = gallery(PatternConfig(64, 4, 1, 0, 0, 0))
    assert table["window"]["pairs"] == 556
    assert table["window"]["density"] == pytest.approx(556 / 64 ** 2)
    assert table["window"]["dense_flops"] / table["window"]["flops"] == pytest.approx(64 ** 2 / 556)


def test_peak_bytes_sees_the_tensors_inside_an_op():
    n = 512
    def make_and_drop():
        x = torch.ones(n, n)                                       # 1 MiB
        y = x * 2                                                  # another MiB, both alive
        return float(y.sum())
    peak = peak_bytes(make_and_drop)
    assert 2 * n * n * 4 <= peak < 3 * n * n * 4
    q, k, v = (t.float() for t in _qkv(1024, d=64))
    # The plain dense kernel holds at least the (N, N) scores; the banded one O(N·w).
    dense = peak_bytes(lambda: scaled_dot_product_attention(q, k, v, window(1024, 32)))
    band = peak_bytes(lambda: banded_attention(q, k, v, 32))
    assert dense >= 1024 * 1024 * 4 and band < dense / 4


def test_measure_one_and_skip():
    row = measure_one("banded", 256, 16)
    assert row["ms"] > 0 and row["bytes"] > 256 * 48 * 4
    assert measure_one("dense", 256, 16, memory_cap=1000) is None     # would not fit: skipped
    assert measure_one("dense", 256, 16)["bytes"] >= 256 * 256 * 4


def test_fit_slope():
    assert fit_slope([256, 512, 1024], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    assert fit_slope([256, 512, 1024], [3.0, 6.0, 12.0]) == pytest.approx(1.0)


def test_bench_doubling_times_measure_every_size():
    """bench/bench_sparse.doubling_times: one CPU and one wall time per size, both positive
    (the bench's time(2N) / time(N) check reads them)."""
    import math

    from bench.bench_sparse import doubling_times
    cpu, wall = doubling_times([64, 128], w=16, rounds=2, repeats=2)
    assert set(cpu) == set(wall) == {64, 128}
    assert all(0 < t < math.inf for t in (*cpu.values(), *wall.values()))
