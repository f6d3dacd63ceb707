"""The experiments behind B2–B4: seeded heads, parameter counts, masks, padding, peeking, cross-attention."""
import pytest
import torch

from core.lab import attention_lab as lab
from core.parts.masks import causal_mask
from core.parts.mha import merge_heads, split_heads


def test_seeded_mha_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    a, b = lab.seeded_mha(32, 4, seed=7), lab.seeded_mha(32, 4, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.w_q.weight, lab.seeded_mha(32, 4, seed=8).w_q.weight)


@pytest.mark.parametrize("d,h", [(16, 1), (32, 4), (128, 8), (512, 8)])
def test_parameter_counts_are_equal_and_match_torch(d, h):
    counts = lab.parameter_counts(d, h)
    assert counts["heads"] == counts["single"]
    assert counts["heads"]["total"] == 4 * d * d
    reference = torch.nn.MultiheadAttention(d, h, bias=False)
    assert sum(p.numel() for p in reference.parameters()) == counts["heads"]["total"]


def test_run_heads_shapes_and_reshapes():
    x = torch.randn(2, 5, 32)
    out, trace = lab.run_heads(x, 4, seed=0)
    assert out.shape == (2, 5, 32)
    assert trace["attn.q"].shape == (2, 4, 5, 8) and trace["attn.weights"].shape == (2, 4, 5, 5)
    assert torch.equal(merge_heads(split_heads(x, 4)), x)
    assert torch.equal(trace["attn.concat"], merge_heads(trace["attn.weights"] @ trace["attn.v"]))


def test_masked_attention_exact_zeros():
    tokens, mask, att = lab.masked_attention("君不见，黄河之水天上来", 8, 0, causal=True)
    assert torch.equal(mask, causal_mask(11))
    assert (att.weights[~mask] == 0).all()
    assert torch.allclose(att.weights.sum(-1), torch.ones(11))
    seen = lab.with_mask(att.scores, mask)
    assert torch.isinf(seen[~mask]).all() and torch.equal(seen[mask], att.scores[mask])
    check = lab.mask_check(att.weights, mask)
    assert check == {"masked": 55, "largest_masked": 0.0, "row_sum_min": pytest.approx(1.0),
                     "row_sum_max": pytest.approx(1.0)}
    _, full, att = lab.masked_attention("君不见", 8, 0, causal=False)
    assert full.all() and (att.weights > 0).all()


def test_phrases_and_padded_batch():
    assert lab.phrases("君不见，黄河之水天上来") == ["君不见", "黄河之水天上来"]
    assert lab.phrases("a b,c。d\ne", max_items=3) == ["a", "b", "c"]
    assert lab.phrases("，。") == []
    tokens, x, lengths = lab.padded_batch(["君不见", "见君"], 4, 0)
    assert tokens == [["君", "不", "见"], ["见", "君", "<pad>"]] and lengths == [3, 2]
    assert x.shape == (2, 3, 4) and (x[1, 2] == 0).all()
    assert torch.equal(x[0, 0], x[1, 1])                      # 君 has one vector in every row


@pytest.mark.parametrize("causal", [True, False])
def test_padded_attention_hides_padding(causal):
    tokens, mask, att = lab.padded_attention(["君不见", "黄河之水天上来"], 8, 0, causal)
    assert att.weights.shape == mask.shape == (2, 7, 7)
    assert (att.weights[0, :, 3:] == 0).all()
    assert torch.allclose(att.weights.sum(-1), torch.ones(2, 7))
    assert (torch.triu(att.weights[1], 1) == 0).all() == causal


def test_future_leak_exact_zero_with_the_mask_only():
    text = "君不见，黄河之水天上来"
    for p in range(1, len(text)):
        moved = lab.future_leak(text, p, 2, seed=0)
        assert (moved["causal"][:p] == 0).all()
        assert (moved["none"][:p] > 0).all()
        assert moved["causal"][p] > 0
    assert lab.change_token("明月", 1) == "明星" and lab.change_token("黄河", 1) == "黄月"


def test_cross_attention_is_rectangular():
    target = lab.word_tokens("The water of the Yellow River comes from the sky")
    source = lab.word_tokens("黄河之水天上来")
    assert len(target) == 10 and source == list("黄河之水天上来")
    out, trace = lab.cross_attention(target, source, 4, seed=0)
    assert out.shape == (1, 10, 32)
    assert trace["attn.q"].shape == (1, 4, 10, 8) and trace["attn.k"].shape == (1, 4, 7, 8)
    assert trace["attn.weights"].shape == (1, 4, 10, 7)
    assert torch.allclose(trace["attn.weights"].sum(-1), torch.ones(1, 4, 10))
    x = lab.embed_tokens(["河", "a", "河"], 4, 0)
    assert torch.equal(x[0], x[2]) and not torch.equal(x[0], x[1])


def test_b1_steps_cell_and_batch():
    """Issue 16: B1's walk through Q, K, V, scores, weights, output, one cell's arithmetic, and a
    batch in one call equal to each text alone."""
    import math

    import torch

    from core.lab import toy
    from core.lab.attention_lab import cell_arithmetic
    steps = toy.attention_steps("君不见黄河之水", 32, 8, 0)
    assert steps.q.shape == steps.k.shape == steps.v.shape == (7, 8) and steps.attn.output.shape == (7, 8)
    ref = torch.nn.functional.scaled_dot_product_attention(steps.q, steps.k, steps.v)
    assert torch.allclose(steps.attn.output, ref, atol=1e-6)
    cell = cell_arithmetic(steps, 2, 5)
    assert cell["score"] == pytest.approx(cell["dot"] / math.sqrt(8), rel=1e-5)
    assert cell["weight"] == pytest.approx(cell["exp"] / cell["row_sum"], rel=1e-5)
    assert cell["weight"] == pytest.approx(float(steps.attn.weights[2, 5]))
    batch = toy.batch_attention(["黄河之水天上来", "奔流到海不复回", "人生得意须尽欢"], 32, 8, 0)
    assert batch.weights.shape == (3, 7, 7)
    for b, text in enumerate(["黄河之水天上来", "奔流到海不复回", "人生得意须尽欢"]):
        assert torch.allclose(batch.output[b], toy.attention_steps(text, 32, 8, 0).attn.output, atol=1e-6)
    with pytest.raises(ValueError):
        toy.batch_attention(["ab", "abc"], 32, 8, 0)


def test_course_attention_steps_equal_the_models_own_weights():
    from core.lab.attention_lab import course_attention_steps
    from core.models.model import load_course_model
    model, tok = load_course_model("cpu")
    for layer, head in ((0, 0), (3, 3)):
        steps = course_attention_steps(model, tok, "君不见，黄河之水", layer, head)
        from core.lab.block_anatomy import trace_prompt
        _, trace = trace_prompt(model, tok, "君不见，黄河之水")
        assert torch.allclose(steps.attn.weights, trace[f"blocks.{layer}.attn.weights"][0, head], atol=1e-5)


def chain_holds(cell: dict) -> None:
    """Issue 38: B1's worked cell, recomputed from the numbers as the page prints them (dot and
    score .3f, √d_k .2f, m and the exponent .3f, e and Σ .4f, the weight .3f), gives the framed
    weight to display precision. A masked cell prints e = 0."""
    import math
    shown = {k: float(f"{cell[k]:.{p}f}") for k, p in (("dot", 3), ("sqrt_d_k", 2), ("score", 3), ("max", 3),
                                                      ("row_sum", 4), ("weight", 3))}
    # the score is the dot over √d_k: the printed ones agree to the rounding of the three
    assert abs(shown["dot"] / cell["sqrt_d_k"] - shown["score"]) <= 0.0005 + 0.0005 / cell["sqrt_d_k"] + 1e-6
    e = 0.0 if cell["masked"] else float(f"{cell['exp']:.4f}")
    exact = 0.0 if cell["masked"] else cell["exp"]
    if not cell["masked"]:
        shift = float(f"{cell['shift']:.3f}")
        assert abs(shift - (shown["score"] - shown["max"])) <= 0.0011            # e^{s - m}: s - m as printed
        assert abs(math.exp(shift) - e) <= 0.0005 * math.exp(shift) + 0.00005 + 1e-6   # e^{shift} = e
    # e / Σ is the framed weight: within half a unit of the weight's last digit, plus what
    # rounding e and Σ to 4 places can move the quotient
    assert abs(e / shown["row_sum"] - shown["weight"]) <= 0.0005 + 0.0001 + 1e-6
    assert exact / cell["row_sum"] == pytest.approx(cell["weight"], rel=1e-4, abs=1e-6)   # float32, before printing


def _every_cell(steps, mask) -> int:
    from core.lab.attention_lab import cell_arithmetic
    n = len(steps.tokens)
    closed = 0
    for r in range(n):
        for c in range(n):
            cell = cell_arithmetic(steps, r, c, mask)
            assert cell["weight"] == float(steps.attn.weights[r, c])            # the kernel's own number
            assert cell["masked"] == (mask is not None and c > r)
            assert cell["seen"] == (r + 1 if mask is not None else n)
            chain_holds(cell)
            closed += cell["masked"]
    return closed


def test_b1_cell_chain_adds_up_random_and_course():
    """Every cell, random weights (no mask) and the course model (causal): the printed chain
    gives the framed weight, masked cells included (issue 38 §1)."""
    from core.lab import toy
    from core.lab.attention_lab import course_attention_steps
    from core.models.model import load_course_model
    from core.parts.masks import causal_mask
    steps = toy.attention_steps("君不见，黄河之水天上来", 32, 8, 0)
    assert _every_cell(steps, None) == 0
    model, tok = load_course_model("cpu")
    for layer, head in ((0, 0), (3, 3)):
        steps = course_attention_steps(model, tok, "君不见，黄河之水天上来", layer, head)
        assert _every_cell(steps, causal_mask(len(steps.tokens))) == 11 * 10 // 2


def test_b1_cell_chain_adds_up_smollm2():
    """The lecturer's case: SmolLM2, row 3, column 0 printed 0.469/3.838 = 0.385 with the masked
    future keys in Σ. Now Σ holds row 3's four keys only, and every cell adds up."""
    from core.lab.attention_lab import cell_arithmetic
    from core.lab.real_attention import model_attention_steps
    from core.parts.masks import causal_mask
    from tests.real_util import real
    model, tok = real()
    for layer, head in ((0, 0), (16, 0), (29, 8)):
        steps, _ = model_attention_steps(model, tok, "The cat sat on the mat because it was tired.", layer, head)
        n = len(steps.tokens)
        mask = causal_mask(n)
        assert _every_cell(steps, mask) == n * (n - 1) // 2
        cell = cell_arithmetic(steps, 3, 0, mask)
        row = steps.attn.scores[3, :4]                                           # the keys row 3 may see
        assert cell["row_sum"] == pytest.approx(float(torch.exp(row - row.max()).sum()), rel=1e-6)
        assert cell["row_sum"] <= 4
