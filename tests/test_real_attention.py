"""core/lab/real_attention.py: SmolLM2's recorded attention against plain torch recomputations."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.lab.real_attention import TOKEN_LIMIT, model_attention_steps, prompt_attention, prompt_ids, thumbnails
from core.parts.trace import Trace
from tests.real_util import real

TEXT = "The cat sat on the mat because it was tired."


def test_prompt_attention_is_softmax_of_q_k_with_the_causal_mask():
    model, tok = real()
    got = prompt_attention(model, tok, TEXT)
    n = len(tok.encode(TEXT, bos=True))
    assert got.tokens[0] == "<|im_start|>" and got.tokens[1:3] == ["The", " cat"]
    assert got.weights.shape == (30, 9, n, n) and got.n_ids == n
    assert torch.allclose(got.weights.sum(-1), torch.ones(30, 9, n), atol=1e-5)
    assert (got.weights.triu(1) == 0).all()
    # One layer, recomputed from the trace's q and k with plain torch (GQA: repeat_interleave of k).
    ids = torch.tensor([tok.encode(TEXT, bos=True)])
    trace = Trace()
    model(ids, trace=trace)
    for layer in (0, 17, 29):
        q, k = trace[f"blocks.{layer}.attn.q"][0], trace[f"blocks.{layer}.attn.k"][0]      # (9, N, 64), (3, N, 64)
        k = k.repeat_interleave(3, dim=0)                                              # (9, N, 64)
        scores = q @ k.transpose(-1, -2) / math.sqrt(64)
        scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        assert torch.allclose(got.weights[layer], scores.softmax(-1), atol=1e-5)
        # and PyTorch's own kernel agrees on the output those weights give
        v = trace[f"blocks.{layer}.attn.v"][0].repeat_interleave(3, dim=0)
        ref = F.scaled_dot_product_attention(trace[f"blocks.{layer}.attn.q"][0], k, v, is_causal=True)
        assert torch.allclose(got.weights[layer] @ v, ref, atol=1e-4)


def test_prompt_is_cut_at_the_token_limit():
    model, tok = real()
    long = "the" + " the" * 399                                     # 400 tokens
    ids, n = prompt_ids(tok, long)
    assert len(ids) == TOKEN_LIMIT and n == 401 and ids == tok.encode(long, bos=True)[:TOKEN_LIMIT]
    ids, n = prompt_ids(tok, "")
    assert ids == [tok.bos_id] and n == 1
    short = prompt_attention(model, tok, long, limit=20)
    assert short.weights.shape == (30, 9, 20, 20) and short.n_ids == 401


def test_one_head_steps_equal_the_model():
    model, tok = real()
    ids = torch.tensor([tok.encode(TEXT)])
    trace = Trace()
    model(ids, trace=trace)
    for layer, head in ((0, 0), (29, 8), (12, 4)):
        steps, n = model_attention_steps(model, tok, TEXT, layer, head)
        assert n == ids.shape[1] and steps.q.shape == (n, 64) and steps.k.shape == (n, 64)
        assert torch.allclose(steps.attn.weights, trace[f"blocks.{layer}.attn.weights"][0, head], atol=1e-5)
    steps, n = model_attention_steps(model, tok, "🙂" * 60, 0, 0, limit=48)
    assert steps.attn.weights.shape == (48, 48) and n > 48


@pytest.mark.parametrize("n, size, side", [(4, 2, 2), (57, 16, 15), (256, 16, 16), (12, 16, 12)])
def test_thumbnails(n, size, side):
    w = torch.rand(2, 3, n, n)
    t = thumbnails(w, size)
    assert t.shape == (2, 3, side, side)
    if side == n:
        assert torch.equal(t, w)
    f = -(-n // size)
    assert t[1, 2, 0, 0] == pytest.approx(float(w[1, 2, :f, :f].mean()), rel=1e-5)
    eye = thumbnails(torch.eye(4).expand(2, 3, 4, 4), 2)[0, 0]
    assert np.allclose(eye.numpy(), [[0.5, 0], [0, 0.5]])
