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
