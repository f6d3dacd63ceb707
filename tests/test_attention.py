import math

import pytest
import torch
import torch.nn.functional as F

from core.parts.attention import entropy_by_width, row_entropy, scaled_dot_product_attention, scaling_experiment
from core.parts.masks import additive, causal_mask, padding_mask


def _qkv(*shape, d_v=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    *lead, n, d = shape
    q = torch.randn(*lead, n, d, generator=g)
    k = torch.randn(*lead, n, d, generator=g)
    v = torch.randn(*lead, n, d_v or d, generator=g)
    return q, k, v


@pytest.mark.parametrize("shape", [(5, 8), (2, 7, 16), (2, 3, 9, 4)])
def test_equals_torch_sdpa_without_mask(shape):
    q, k, v = _qkv(*shape)
    got = scaled_dot_product_attention(q, k, v)
    assert (got.output - F.scaled_dot_product_attention(q, k, v)).abs().max() <= 1e-6
    assert got.weights.shape == (*shape[:-1], shape[-2])
    assert got.scores.shape == got.weights.shape


@pytest.mark.parametrize("shape", [(6, 8), (2, 4, 11, 16)])
def test_equals_torch_sdpa_with_causal_mask(shape):
    q, k, v = _qkv(*shape)
    n = shape[-2]
    got = scaled_dot_product_attention(q, k, v, causal_mask(n))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (got.output - ref).abs().max() <= 1e-6
    assert torch.all(got.weights.triu(1) == 0)
    assert torch.allclose(got.weights.sum(-1), torch.ones(shape[:-1]))


def test_value_width_may_differ():
    q, k, v = _qkv(2, 5, 8, d_v=3)
    got = scaled_dot_product_attention(q, k, v)
    assert got.output.shape == (2, 5, 3)
    assert (got.output - F.scaled_dot_product_attention(q, k, v)).abs().max() <= 1e-6


def test_worked_example_in_docstring():
    q = k = torch.eye(2)
    got = scaled_dot_product_attention(q, k, k)
    assert torch.allclose(got.scores, torch.eye(2) / math.sqrt(2))
    assert torch.allclose(got.weights[0], torch.tensor([0.670, 0.330]), atol=1e-3)


def test_padding_mask_matches_torch_and_zeroes_padding():
    q, k, v = _qkv(2, 4, 8)
    mask = padding_mask([2, 4], 4)                                  # (B, 1, N)
    assert mask.shape == (2, 1, 4)
    got = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert (got.output - ref).abs().max() <= 1e-6
    assert torch.all(got.weights[0, :, 2:] == 0)


def test_fully_masked_row_is_zero_not_nan():
    q, k, v = _qkv(3, 4)
    mask = torch.tensor([[False, False, False], [True, True, False], [True, True, True]])
    got = scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(got.weights[0] == 0) and not torch.isnan(got.output).any()


def test_causal_mask_and_additive_form():
    m = causal_mask(3)
    assert m.dtype == torch.bool and m.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    add = additive(causal_mask(2))
    assert add[0, 1] == float("-inf") and add[1, 0] == 0


def test_unscaled_scores_have_variance_d_k():
    g = torch.Generator().manual_seed(0)
    for d in (16, 256):
        q, k = torch.randn(512, d, generator=g), torch.randn(512, d, generator=g)
        stats = scaling_experiment(q, k)
        assert stats["scores_raw"].var().item() == pytest.approx(d, rel=0.1)
        assert stats["scores_scaled"].var().item() == pytest.approx(1.0, rel=0.1)


def test_entropy():
    e = row_entropy(torch.tensor([[0.5, 0.5], [1.0, 0.0]]))
    assert torch.allclose(e, torch.tensor([math.log(2), 0.0]))
    curve = entropy_by_width([1, 1024])
    assert curve["raw"][1] < 0.5 * curve["raw"][0]
    assert abs(curve["scaled"][1] - curve["scaled"][0]) < 0.5
