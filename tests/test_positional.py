"""Sinusoidal positional encoding against the formula; attention's permutation equivariance."""
import math

import pytest
import torch
import torch.nn.functional as F

from core.lab import toy
from core.lab.permutation import equivariance, reverse_order
from core.parts.attention import scaled_dot_product_attention
from core.parts.positional import (
    dimension_waves,
    first_block_input,
    frequencies,
    offset_similarity,
    sinusoidal,
    sinusoidal_at,
    wavelengths,
)


@pytest.mark.parametrize("n,d", [(1, 2), (10, 4), (50, 16), (128, 128), (7, 6)])
def test_sinusoidal_is_the_formula(n, d):
    pe = sinusoidal(n, d)
    assert pe.shape == (n, d) and pe.dtype == torch.float32
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_known_numbers_and_errors():
    assert torch.allclose(sinusoidal(2, 4)[1], torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]))
    assert torch.allclose(frequencies(4, base=100.0), torch.tensor([1.0, 0.1], dtype=torch.float64))
    assert wavelengths(4, base=100.0).tolist() == pytest.approx([2 * math.pi, 2 * math.pi, 20 * math.pi, 20 * math.pi])
    assert torch.allclose(sinusoidal_at(torch.tensor([3.0]), 8), sinusoidal(4, 8)[3:])
    with pytest.raises(ValueError):
        sinusoidal(4, 5)


def test_dot_product_depends_on_distance_only():
    pe = sinusoidal(100, 32)
    omegas = frequencies(32)
    ref = torch.stack([torch.cos(k * omegas).sum() for k in range(100)]).float()  # sum_i cos(k w_i)
    assert torch.allclose(offset_similarity(pe, 0), ref, atol=1e-4)
    assert torch.allclose(offset_similarity(pe, 37), ref[: 100 - 37], atol=1e-4)
    assert offset_similarity(pe, 10)[0].item() == pytest.approx(16.0, abs=1e-5)   # D/2 at k = 0


def test_waves_sample_the_table():
    x_smooth, smooth, x, samples = dimension_waves(10, 16, [0, 5])
    assert smooth.shape == (73, 2) and samples.shape == (10, 2)
    assert torch.allclose(samples, sinusoidal(10, 16)[:, [0, 5]])
    assert torch.allclose(smooth[::8], samples, atol=1e-6)      # every 8th smooth point is an integer position


def test_first_block_input_adds_the_table():
    emb = torch.randn(5, 12, generator=torch.Generator().manual_seed(0))
    pe, x0 = first_block_input(emb)
    assert torch.equal(pe, sinusoidal(5, 12)) and torch.allclose(x0, emb + pe)


def test_attention_is_permutation_equivariant():
    g = torch.Generator().manual_seed(3)
    tokens, x = toy.embed_text("我和你他她它", 16, seed=1)
    w_q, w_k, w_v = toy.projections(16, 8, 8, seed=1)
    for _ in range(5):
        perm = torch.randperm(len(tokens), generator=g).tolist()
        check = equivariance(x, perm, w_q, w_k, w_v)
        assert check.error <= 1e-6
        ref = F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)    # PyTorch's own kernel
        assert torch.allclose(check.output, ref, atol=1e-5)
        assert torch.allclose(check.difference, check.matched - check.output_permuted)


def test_positions_break_the_symmetry():
    tokens, x = toy.embed_text("我和你", 8, seed=0)
    w = toy.projections(8, 8, 8, seed=0)
    perm = reverse_order(3)
    assert perm == [2, 1, 0]
    assert equivariance(x, perm, *w).error <= 1e-6
    assert equivariance(x, perm, *w, positions=sinusoidal(3, 8)).error > 1e-2
    out = scaled_dot_product_attention(x @ w[0], x @ w[1], x @ w[2]).output
    assert torch.equal(equivariance(x, perm, *w).output, out)


def test_repeated_character_rows_differ_by_pe_only():
    """A3: the two rows of x0 for a repeated character differ by PE(p) - PE(p') exactly."""
    from core.lab import toy
    from core.lab.first_block import first_repeat, repeated_rows
    from core.parts.positional import first_block_input, sinusoidal

    assert first_repeat(list("明月光明月")) == (0, 3) and first_repeat(list("我和你")) is None
    tokens, emb = toy.embed_text("床前明月光，疑是地上霜。举头望明月", 64, 0)
    pe, x0 = first_block_input(emb)
    found = repeated_rows(tokens, emb, pe, x0)
    assert found.token == "明" and found.positions == (2, 15)
    assert found.embedding_gap == 0.0 and found.pe_gap < 1e-6
    table = sinusoidal(16, 64)
    torch.testing.assert_close(found.difference, table[2] - table[15], atol=1e-6, rtol=0)
    assert float(found.difference.abs().max()) > 0.5                 # the two copies now differ
    assert repeated_rows(list("我和你"), emb[:3], pe[:3], x0[:3]) is None
