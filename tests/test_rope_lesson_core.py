"""Lesson-level checks of RoPE (C3) and of the helpers in core/lab/rope_analysis.py."""
import math

import pytest
import torch

from core.lab.rope_analysis import (
    fixed_query_key,
    pair_path,
    rope_both_forms,
    rope_score_bound,
    rope_score_matrix,
    toeplitz_error,
)
from core.lab.toy import generator
from core.parts.positional import frequencies
from core.parts.rope import apply_rope, apply_rope_complex


def _score(q, k, m, n, base):
    qm = apply_rope(q[None], torch.tensor([m]), base)[0]
    kn = apply_rope(k[None], torch.tensor([n]), base)[0]
    return float(qm @ kn)


@pytest.mark.parametrize("trial", range(20))
def test_score_depends_only_on_distance_random(trial):
    g = generator(100 + trial)
    d = int(2 * torch.randint(2, 33, (1,), generator=g))
    q, k = fixed_query_key(d, trial)
    m, n = (int(v) for v in torch.randint(0, 200, (2,), generator=g))
    s = int(torch.randint(0, 200, (1,), generator=g))
    for base in (10000.0, 500000.0):
        assert abs(_score(q, k, m, n, base) - _score(q, k, m + s, n + s, base)) <= 1e-5


@pytest.mark.parametrize("base", [100.0, 10000.0, 500000.0])
def test_real_equals_complex_lesson(base):
    q, _ = fixed_query_key(128, 3)
    forms = rope_both_forms(q, torch.arange(257), base)
    assert forms["real"].shape == forms["complex"].shape == (257, 128)
    torch.testing.assert_close(forms["real"], apply_rope_complex(q.expand(257, -1), torch.arange(257), base))
    assert float(forms["max_abs_diff"]) <= 1e-5


def test_position_zero_is_identity_lesson():
    q, k = fixed_query_key(16, 0)
    forms = rope_both_forms(q, torch.arange(1), 10000.0)
    assert torch.equal(forms["real"][0], q) and torch.allclose(forms["complex"][0], q)
    assert rope_score_matrix(q, k, 1, 10000.0)["scores"][0, 0] == pytest.approx(float(q @ k), abs=1e-6)


def test_fixed_query_key_unit_and_seeded():
    q, k = fixed_query_key(8, 0)
    assert q.shape == k.shape == (8,)
    assert float(q.norm()) == pytest.approx(1.0) and float(k.norm()) == pytest.approx(1.0)
    assert torch.equal(q, fixed_query_key(8, 0)[0]) and not torch.equal(q, fixed_query_key(8, 1)[0])


def test_pair_path_example_and_rotation_angle():
    assert pair_path(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), 1).tolist() == [[3.0, 4.0]]
    q, _ = fixed_query_key(8, 0)
    path = pair_path(rope_both_forms(q, torch.arange(4), 100.0)["real"], 1)      # (4, 2)
    assert path.shape == (4, 2)
    theta1 = float(frequencies(8, 100.0)[1])
    z = torch.view_as_complex(path.contiguous())
    turned = torch.angle(z[3] / z[0])
    assert float(turned) == pytest.approx(3 * theta1, abs=1e-5)


@pytest.mark.parametrize("n, base", [(4, 10000.0), (64, 10000.0), (64, 100.0), (64, 1e6)])
def test_score_matrix_is_toeplitz(n, base):
    q, k = fixed_query_key(64, 7)
    out = rope_score_matrix(q, k, n, base)
    assert out["scores"].shape == (n, n) and out["q_rot"].shape == (n, 64)
    assert toeplitz_error(out["scores"]) <= 1e-5
    assert out["scores"][0, 0] == pytest.approx(float(q @ k), abs=1e-6)


def test_toeplitz_error_detects_non_toeplitz():
    assert toeplitz_error(torch.tensor([[1.0, 2.0], [3.0, 1.0]])) == 0.0
    assert toeplitz_error(torch.tensor([[1.0, 2.0], [3.0, 1.5]])) == pytest.approx(0.5)


def test_score_bound_values():
    assert rope_score_bound(torch.tensor([0]), 4, 1e4).tolist() == [1.5]
    d = 128
    r = torch.tensor([0, 10, 100, 1000, 10000])
    b = rope_score_bound(r, d, 1e4)
    assert float(b[0]) == pytest.approx((d // 2 + 1) / 2)                        # nothing cancels at 0
    assert torch.all(b[1:] < b[:-1])                                              # decays with distance
    assert float(rope_score_bound(torch.tensor([1000]), d, 5e5)[0]) > float(b[3])  # larger base: later decay
    # matches the direct sum for one distance
    theta = frequencies(d, 1e4)
    partial = [abs(sum(complex(math.cos(100 * t), math.sin(100 * t)) for t in theta[:j].tolist()))
               for j in range(1, d // 2 + 1)]
    assert float(b[2]) == pytest.approx(sum(partial) / (d // 2), rel=1e-9)


def test_score_bound_bounds_real_scores():
    """|q_m·k_n| never exceeds max|h_{i+1} - h_i| * sum|S_j| (RoFormer eq. 36), for random q, k."""
    d, base = 32, 10000.0
    g = generator(5)
    q, k = torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g, dtype=torch.float64)
    h = torch.view_as_complex(q.view(-1, 2).contiguous()) * torch.view_as_complex(k.view(-1, 2).contiguous()).conj()
    h = torch.cat([h, torch.zeros(1, dtype=h.dtype)])                 # h_{d/2} = 0 closes the summation by parts
    step = float((h[1:] - h[:-1]).abs().max())
    for r in (0, 3, 50, 700):
        score = _score(q.float(), k.float(), r, 0, base)
        assert abs(score) <= step * float(rope_score_bound(torch.tensor([r]), d, base)[0]) * (d // 2) + 1e-4


@pytest.mark.parametrize("m,n,pair", [(12, 4, 3), (0, 200, 0), (256, 256, 31), (5, 3, 10)])
def test_pair_angle_is_offset_plus_distance_times_theta(m, n, pair):
    """C3's second hand: the angle between q at m and k at n is the angle at m = n plus
    (m - n) theta_i (mod 2 pi), and the pair's score share is |q||k| cos(angle)."""
    from core.lab.rope_analysis import pair_angle
    q, k = fixed_query_key(64, 0)
    out = pair_angle(q, k, m, n, pair, 10000.0)
    theta = float(frequencies(64, 10000.0)[pair])
    want = float(out["offset"]) + (m - n) * theta
    got = float(out["angle"])
    assert math.isclose(math.remainder(got - want, 2 * math.pi), 0.0, abs_tol=1e-4)
    assert float(out["score"]) == pytest.approx(float(out["q"].norm() * out["k"].norm()) * math.cos(got), abs=1e-5)
    shifted = pair_angle(q, k, m + 17, n + 17, pair, 10000.0)
    assert math.isclose(math.remainder(float(shifted["angle"]) - got, 2 * math.pi), 0.0, abs_tol=1e-4)
    assert pair_angle(torch.tensor([1., 0.]), torch.tensor([1., 0.]), 3, 1, 0, 1e4)["angle"] == pytest.approx(2.0)
