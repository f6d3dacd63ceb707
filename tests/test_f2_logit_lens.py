"""core/lab/logit_lens.py: the lens equals the model's output after the last block, the writes
add up to the final residual, and the direct-attribution terms (and the heads' terms) add up to
the model's own logits, on small random models (tied and untied), the course model and SmolLM2."""
import numpy as np
import pytest
import torch

from core.lab.layer_trace import KeepTrace
from core.lab.logit_lens import (
    direct_attribution,
    final_scale,
    keep_name,
    lens_logits,
    logit_lens,
    read_lens,
    residual_stream,
    settles_at,
    writes,
)
from core.models.model import LlamaDecoder
from core.parts.trace import Trace
from core.text.tokenizer import CharTokenizer
from tests.toy_model import toy_decoder

TEXT = "abcabdcab"


def _toy(tied: bool, seed: int = 0) -> tuple[LlamaDecoder, CharTokenizer]:
    """A 3-block decoder with random weights from a local generator (norm gains near 1)."""
    return toy_decoder("abcdef", tied=tied, seed=seed)


def _run(model, tok, text=TEXT):
    ids = tok.encode(text)
    trace = Trace()
    with torch.no_grad():
        logits = model(torch.tensor([ids]), trace=trace)[0]                  # (N, V)
    return ids, trace, logits


@pytest.mark.parametrize("tied", [False, True])
def test_lens_after_the_last_block_is_the_models_output(tied):
    model, tok = _toy(tied)
    ids, trace, logits = _run(model, tok)
    resid = residual_stream(trace, 3)
    assert resid.shape == (4, len(ids), 16)
    torch.testing.assert_close(lens_logits(model, resid[-1]), logits, rtol=0, atol=0)   # the same modules
    grid = read_lens(model, resid, k=3)
    assert grid.top_ids.shape == grid.top_probs.shape == (4, len(ids), 3)
    assert torch.equal(grid.top_ids[-1, :, 0], logits.argmax(-1))
    assert torch.equal(grid.answer, logits.argmax(-1))
    torch.testing.assert_close(grid.top_probs[-1, :, 0], logits.softmax(-1).max(-1).values)
    assert torch.all(grid.answer_ranks[-1] == 0)
    torch.testing.assert_close(grid.answer_probs[-1], grid.top_probs[-1, :, 0])


@pytest.mark.parametrize("tied", [False, True])
def test_every_row_is_the_final_norm_and_unembedding_of_its_stream(tied):
    """Row l by hand: RMSNorm with the final weight, times U^T, softmax; ranks by sorting."""
    model, tok = _toy(tied, seed=1)
    ids, trace, _ = _run(model, tok)
    resid = residual_stream(trace, 3)
    assert read_lens(model, resid, k=50).top_ids.shape == (4, len(ids), 10)   # at most V guesses
    grid = read_lens(model, resid, k=2)
    g, u, eps = model.final_norm.weight, model.output.weight, model.config.norm_eps
    for row in range(4):
        x = resid[row]
        z = (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g) @ u.T          # (N, V)
        p = z.softmax(-1)
        top = p.sort(-1, descending=True)
        torch.testing.assert_close(grid.top_probs[row], top.values[:, :2])
        assert torch.equal(grid.top_ids[row], top.indices[:, :2])
        for j, a in enumerate(grid.answer.tolist()):
            assert int(grid.answer_ranks[row, j]) == int((z[j] > z[j, a]).sum())
            assert float(grid.answer_probs[row, j]) == pytest.approx(float(p[j, a]), rel=1e-5)
    assert torch.all(grid.top_probs >= 0) and torch.all(grid.top_probs <= 1)
    assert torch.all(grid.top_probs[..., 0] >= grid.top_probs[..., 1])


def test_without_writes_every_row_reads_the_embedding():
    """Blocks whose w_o and w2 are zero write nothing: every row of the lens is row 0."""
    model, tok = _toy(False, seed=2)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.w_o.weight.zero_()
            block.ffn.w2.weight.zero_()
    _, trace, logits = _run(model, tok)
    grid = read_lens(model, residual_stream(trace, 3))
    for row in range(1, 4):
        assert torch.equal(grid.top_ids[row], grid.top_ids[0])
        torch.testing.assert_close(grid.top_probs[row], grid.top_probs[0])
    assert torch.all(grid.answer_ranks == 0)
    terms, heads = direct_attribution(model, trace, model.output.weight[grid.answer])
    assert torch.all(terms[1:] == 0) and torch.all(heads == 0)
    torch.testing.assert_close(terms[0], logits.gather(-1, grid.answer[:, None])[:, 0])


@pytest.mark.parametrize("tied", [False, True])
def test_writes_add_up_to_the_final_residual(tied):
    model, tok = _toy(tied, seed=3)
    ids, trace, _ = _run(model, tok)
    w = writes(trace, 3)
    assert w.shape == (7, len(ids), 16)                                        # embed + 2 per block
    torch.testing.assert_close(w.sum(0), trace["blocks.2.resid_post"][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w[0], trace["embed"][0])
    torch.testing.assert_close(w[3], trace["blocks.1.attn.out"][0])
    torch.testing.assert_close(w[6], trace["blocks.2.ffn_out"][0])


@pytest.mark.parametrize("tied", [False, True])
def test_attribution_terms_add_up_to_every_logit(tied):
    """For every token of the vocabulary at every position: the 1 + 2L terms sum to the logit
    the model returned, the H head terms of a block to its attention term, and one term is
    (g ⊙ w / r) · U_t written out."""
    model, tok = _toy(tied, seed=4)
    ids, trace, logits = _run(model, tok)
    n, v = len(ids), model.config.vocab_size
    u = model.output.weight                                                    # (V, D)
    terms, heads = direct_attribution(model, trace, u[:, None, :].expand(v, n, 16))
    assert terms.shape == (v, 7, n) and heads.shape == (v, 3, 4, n)
    torch.testing.assert_close(terms.sum(1), logits.T, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(heads.sum(2), terms[:, 1::2], rtol=1e-5, atol=1e-5)
    x = trace["blocks.2.resid_post"][0]
    r = torch.sqrt(x.pow(2).mean(-1) + model.config.norm_eps)                 # (N,)
    f1 = trace["blocks.1.ffn_out"][0]
    by_hand = ((model.final_norm.weight * f1 / r[:, None]) * u[5]).sum(-1)     # token 5 at every position
    torch.testing.assert_close(terms[5, 4], by_hand, rtol=1e-5, atol=1e-6)
    # One head by hand: its slice of concat through its columns of W_o.
    c = trace["blocks.0.attn.concat"][0][:, 8:12]                              # head 2 of 4, d_head 4
    write = c @ model.blocks[0].attn.w_o.weight[:, 8:12].T                     # (N, D)
    by_hand = ((model.final_norm.weight * write / r[:, None]) * u[2]).sum(-1)
    torch.testing.assert_close(heads[2, 0, 2], by_hand, rtol=1e-5, atol=1e-6)


def test_a_difference_is_the_difference_of_two_attributions():
    model, tok = _toy(True, seed=5)
    _, trace, logits = _run(model, tok)
    u = model.output.weight
    a, b = u[3].expand(len(TEXT), 16), u[7].expand(len(TEXT), 16)
    ta, ha = direct_attribution(model, trace, a)
    tb, hb = direct_attribution(model, trace, b)
    td, hd = direct_attribution(model, trace, a - b)
    torch.testing.assert_close(td, ta - tb, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(hd, ha - hb, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(td.sum(0), logits[:, 3] - logits[:, 7], rtol=1e-5, atol=1e-4)


def test_final_scale_is_one_over_the_rms():
    model, _ = _toy(False)
    model.final_norm.eps = 0.0
    assert final_scale(model, torch.tensor([[3.0, 4.0]])).tolist() == pytest.approx([1 / 3.5355339], rel=1e-6)
    model.final_norm.eps = 1e-5


def test_helpers():
    assert settles_at([9, 0, 3, 0, 0]) == 3 and settles_at([5, 2, 0]) == 2 and settles_at([0, 0]) == 0
    assert settles_at(np.array([4, 1])) == 1                                   # not yet the answer: the last row
    assert keep_name("embed") and keep_name("blocks.3.attn.out") and keep_name("blocks.0.attn.concat")
    assert not keep_name("blocks.3.attn.weights") and not keep_name("logits") and not keep_name("final_norm")


@pytest.mark.parametrize("tied", [False, True])
def test_logit_lens_in_one_call(tied):
    """The lesson's one call: kept names only, C candidates best first, attribution of each."""
    model, tok = _toy(tied, seed=6)
    r = logit_lens(model, tok, TEXT, limit=5, k=2, candidates=4)
    assert r.tokens == list("abcab") and r.n_ids == 9 and r.ids == tok.encode("abcab")
    _, _, logits = _run(model, tok, "abcab")
    best = logits.topk(4, dim=-1)
    assert torch.equal(r.candidates, best.indices) and torch.equal(r.candidates[:, 0], r.grid.answer)
    torch.testing.assert_close(r.cand_logits, best.values)
    assert r.terms.shape == (4, 7, 5) and r.heads.shape == (4, 3, 4, 5)
    torch.testing.assert_close(r.terms.sum(1), best.values.T, rtol=1e-5, atol=1e-4)
    assert torch.all(r.cand_logits[:, :-1] >= r.cand_logits[:, 1:])
    trace = KeepTrace(keep_name)
    with torch.no_grad():
        model(torch.tensor([r.ids]), trace=trace)
    assert len(trace.names()) == 1 + 4 * 3                                    # embed + 4 names a block


def test_logit_lens_of_an_empty_text_reads_the_start_token():
    model, tok = _toy(False)
    r = logit_lens(model, tok, "", limit=24)
    assert r.ids == [tok.bos_id] and r.grid.top_ids.shape == (4, 1, 10)          # k = 10 = the toy's V


# --- the trained models -------------------------------------------------------------------
def test_course_model_lens_and_attribution():
    from core.models.model import load_course_model
    model, tok = load_course_model("cpu")
    text = "床前明月光，疑是地上霜"
    ids, trace, logits = _run(model, tok, text)
    r = logit_lens(model, tok, text)
    assert r.grid.top_ids.shape == (5, 11, 10) and r.heads.shape == (10, 4, 4, 11)
    torch.testing.assert_close(lens_logits(model, residual_stream(trace, 4)[-1]), logits, rtol=0, atol=0)
    assert tok.tokens(r.grid.answer[5:10].tolist()) == list("疑是地上霜")      # it has memorised the line
    torch.testing.assert_close(r.terms.sum(1), r.cand_logits.T, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(r.heads.sum(2), r.terms[:, 1::2], rtol=1e-5, atol=1e-5)


def test_smollm2_paris_and_mary():
    """SmolLM2: " Paris" after "The capital of France is" (p 0.77), found by the plain lens only
    after the last block; " Mary" after the IOI sentence, its lead over " John" carried most by
    late heads; every attribution adds up to the model's logit."""
    from tests.real_util import real
    model, tok = real()
    text = "The capital of France is"
    ids, trace, logits = _run(model, tok, text)
    resid = residual_stream(trace, 30)
    torch.testing.assert_close(lens_logits(model, resid[-1]), logits, rtol=0, atol=0)
    r = logit_lens(model, tok, text)
    assert r.tokens == ["The", " capital", " of", " France", " is"] and r.grid.top_ids.shape == (31, 5, 10)
    assert tok.tokens([int(r.grid.answer[-1])]) == [" Paris"]
    assert float(r.grid.answer_probs[-1, -1]) == pytest.approx(float(logits[-1].softmax(-1).max()), rel=1e-5)
    assert 0.7 < float(r.grid.answer_probs[-1, -1]) < 0.85
    assert settles_at(r.grid.answer_ranks[:, -1]) == 30                     # the top guess after block 29 only
    assert float(r.grid.answer_probs[:20, -1].max()) < 0.01
    assert tok.tokens(r.grid.top_ids[0, :, 0].tolist())[:3] == ["The", " capital", " of"]   # tied: read back
    torch.testing.assert_close(r.terms.sum(1), r.cand_logits.T, rtol=1e-5, atol=2e-4)
    torch.testing.assert_close(r.heads.sum(2), r.terms[:, 1::2], rtol=1e-4, atol=1e-5)
    assert r.heads.shape == (10, 30, 9, 5)

    r = logit_lens(model, tok, "When Mary and John went to the store, John gave a drink to")
    names = tok.tokens(r.candidates[-1].tolist())
    assert names[0] == " Mary" and " John" in names
    john = names.index(" John")
    lead = r.heads[0, :, :, -1] - r.heads[john, :, :, -1]                   # (L, H)
    assert float(lead.sum() + (r.terms[0, 0::2, -1] - r.terms[john, 0::2, -1]).sum()) == pytest.approx(
        float(r.cand_logits[-1, 0] - r.cand_logits[-1, john]), abs=2e-4)
    layer, head = divmod(int(lead.argmax()), 9)
    assert layer >= 20 and float(lead.max()) > 1.0
    # What the lesson's text says of it: block 23's heads and one of block 29 lead the attention's
    # share; the feed-forward networks add more than all attention together.
    top = [divmod(int(i), 9)[0] for i in lead.flatten().topk(5).indices]
    assert top.count(23) >= 3 and 29 in top[:2]
    share = r.terms[0, :, -1] - r.terms[john, :, -1]                        # (W,)
    assert float(share[2::2].sum()) > float(share[1::2].sum()) > 0


def test_every_lens_value_is_the_exact_float32_one():
    """Issue 38: what the grid, its hover and the answer curve show (the top guesses, their
    probabilities, the answer's probability and rank) equal the softmax of the final norm and
    the unembedding computed in float64, to float32's rounding, at every row of SmolLM2's lens."""
    from tests.real_util import real

    model, tok = real()
    r = logit_lens(model, tok, "The capital of France is")
    trace = KeepTrace(keep_name)
    with torch.no_grad():
        model(torch.tensor([r.ids]), trace=trace)
        resid = residual_stream(trace, model.config.n_layers)                       # (31, N, D)
        # float64 from the same normed stream: the exact value that float32 rounds
        logits = model.final_norm(resid).double() @ model.output.weight.double().T  # (31, N, V)
    probs = logits.softmax(-1).float()
    top = probs.topk(r.grid.top_ids.shape[-1], dim=-1)
    # float32's own rounding of the 576-term dot products: ~1e-5 of a probability, relative (the
    # bfloat16 read this replaces was off by up to 1.1 %); two float32 summation orders differ by ~5e-6
    torch.testing.assert_close(r.grid.top_probs, top.values, atol=1e-7, rtol=5e-5)
    assert torch.equal(r.grid.top_ids[..., 0], top.indices[..., 0])
    answer = r.grid.answer                                                           # (N,)
    mine = probs.gather(-1, answer.expand(probs.shape[:-1])[..., None])[..., 0]     # (31, N)
    torch.testing.assert_close(r.grid.answer_probs, mine, atol=1e-7, rtol=5e-5)
    above = (logits > logits.gather(-1, answer.expand(probs.shape[:-1])[..., None])).sum(-1)
    assert torch.equal(r.grid.answer_ranks, above)
