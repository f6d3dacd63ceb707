"""RMSNorm/LayerNorm against torch's, RoPE's defining properties, SwiGLU's parts."""
import math

import pytest
import torch

from core.parts.ffn import SwiGLU, silu
from core.parts.norms import LayerNorm, RMSNorm, layer_norm, rms_norm
from core.parts.positional import frequencies
from core.parts.rope import apply_rope, apply_rope_complex, rope_angles, rotate_pairs
from core.parts.trace import Trace


def test_rmsnorm_equals_torch():
    torch.manual_seed(0)
    ours, ref = RMSNorm(16, eps=1e-6), torch.nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ref.weight.copy_(torch.randn(16))
        ours.weight.copy_(ref.weight)
    x = torch.randn(2, 5, 16)
    assert ours(x).shape == (2, 5, 16)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-6, rtol=1e-5)


def test_layernorm_equals_torch():
    torch.manual_seed(0)
    ours, ref = LayerNorm(16, eps=1e-5), torch.nn.LayerNorm(16, eps=1e-5)
    with torch.no_grad():
        ref.weight.copy_(torch.randn(16))
        ref.bias.copy_(torch.randn(16))
        ours.weight.copy_(ref.weight)
        ours.bias.copy_(ref.bias)
    x = torch.randn(2, 5, 16) * 3 + 1
    assert ours(x).shape == (2, 5, 16)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)


def test_norm_docstring_examples():
    torch.testing.assert_close(layer_norm(torch.tensor([1.0, 3.0]), torch.ones(2), torch.zeros(2), 0.0),
                               torch.tensor([-1.0, 1.0]))
    torch.testing.assert_close(rms_norm(torch.tensor([3.0, 4.0]), torch.ones(2), 0.0),
                               torch.tensor([0.8485, 1.1314]), atol=1e-4, rtol=0)


def test_rope_frequencies():
    """RoPE turns with the sinusoidal encoding's frequencies, rounded to float32 as it rotates."""
    torch.testing.assert_close(frequencies(4, base=100.0), torch.tensor([1.0, 0.1], dtype=torch.float64))
    assert rope_angles(torch.tensor([1]), 64).dtype == torch.float32
    torch.testing.assert_close(rope_angles(torch.tensor([1]), 64)[0], frequencies(64).float(), rtol=0, atol=0)
    theta = frequencies(64)
    assert theta.shape == (32,)
    assert theta[0] == 1.0 and math.isclose(float(theta[-1]), 10000 ** (-62 / 64), rel_tol=1e-5)
    with pytest.raises(ValueError):
        frequencies(5)


def test_rope_angles_shape():
    a = rope_angles(torch.tensor([0, 2]), 4, base=100.0)
    assert a.shape == (2, 2)
    torch.testing.assert_close(a, torch.tensor([[0.0, 0.0], [2.0, 0.2]]))


def test_rotate_pairs_quarter_turn():
    out = rotate_pairs(torch.tensor([[1.0, 0.0]]), torch.tensor([[math.pi / 2]]))
    torch.testing.assert_close(out, torch.tensor([[0.0, 1.0]]), atol=1e-6, rtol=0)


def test_position_zero_is_identity():
    x = torch.randn(2, 3, 1, 8)
    torch.testing.assert_close(apply_rope(x, torch.tensor([0])), x)


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_real_equals_complex(base):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 9, 16)                       # (B, H, N, d)
    pos = torch.arange(3, 12)
    real = apply_rope(x, pos, base)
    assert real.shape == (2, 4, 9, 16)
    torch.testing.assert_close(real, apply_rope_complex(x, pos, base), atol=1e-5, rtol=1e-5)


def test_rope_keeps_length():
    x = torch.randn(5, 32)
    out = apply_rope(x, torch.arange(5) * 7)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("m, n, s", [(3, 1, 5), (0, 7, 11), (20, 20, 100)])
def test_dot_product_depends_only_on_distance(m, n, s):
    torch.manual_seed(1)
    q, k = torch.randn(64), torch.randn(64)

    def score(a, b):
        qa = apply_rope(q[None], torch.tensor([a]))[0]
        kb = apply_rope(k[None], torch.tensor([b]))[0]
        return float(qa @ kb)

    assert abs(score(m, n) - score(m + s, n + s)) <= 1e-5 * max(1.0, abs(score(m, n)))


def test_silu_equals_torch_and_example():
    x = torch.linspace(-6, 6, 101)
    torch.testing.assert_close(silu(x), torch.nn.functional.silu(x))
    torch.testing.assert_close(silu(torch.tensor([-1.0, 0.0, 1.0])),
                               torch.tensor([-0.2689, 0.0, 0.7311]), atol=1e-4, rtol=0)


def test_swiglu_formula_and_trace():
    torch.manual_seed(0)
    ffn = SwiGLU(8, 20)
    x = torch.randn(2, 3, 8)
    trace = Trace()
    out = ffn(x, trace=trace)
    assert out.shape == (2, 3, 8)
    assert trace["ffn.gate"].shape == (2, 3, 20)
    assert trace["ffn.up"].shape == (2, 3, 20)
    f = torch.nn.functional
    want = f.linear(f.silu(f.linear(x, ffn.w1.weight)) * f.linear(x, ffn.w3.weight), ffn.w2.weight)
    torch.testing.assert_close(out, want)
