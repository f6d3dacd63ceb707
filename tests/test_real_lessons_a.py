"""The core code of A1 and A2 on SmolLM2 (core/lab/real_tokens.py, core/lab/embedding.py's
whole-table helpers) against the real tokenizer and against torch references."""
import numpy as np
import pytest
import torch

from core.lab.embedding import nearest_to, pca_2d, row_lengths, word_list, word_vectors
from core.lab.real_tokens import count_tokens, merge_steps, readable, symbol_text, tokens_of_chars
from core.text.byte_bpe import bpe, pre_tokenize
from tests.real_util import real

TEXTS = ["君不见，黄河之水天上来", "Tokenization of the river in 2024!", "🙂 <b>x</b> ﷽\n\tend",
         "the king and the queen", "  spaces   and\nlines", "<|im_start|>user\nhi<|im_end|>"]


def test_merge_steps_small():
    start, steps = merge_steps("abc", {("b", "c"): 0, ("a", "bc"): 1})
    assert start == ["a", "b", "c"]
    assert [(s.rank, s.left, s.right, s.count, s.after) for s in steps] == [(0, "b", "c", 1, ("a", "bc")),
                                                                             (1, "a", "bc", 1, ("abc",))]
    _, steps = merge_steps("aaaa", {("a", "a"): 0})
    assert steps[0].count == 2 and steps[0].after == ("aa", "aa")


@pytest.mark.parametrize("text", TEXTS)
def test_merge_steps_give_the_tokens_of_encode(text):
    """The replay ends where ByteBPE ends: the same tokens as core.text.byte_bpe.bpe, so the same
    ids as encode; ranks rise step by step (lowest rank first)."""
    _, tok = real()
    ids = []
    for segment, special in tok.split(text):
        if special:
            ids.append(tok.special[segment])
            continue
        for piece in pre_tokenize(segment, tok.pre):
            start, steps = merge_steps(piece, tok.ranks)
            final = list(steps[-1].after) if steps else start
            assert final == bpe(start, tok.ranks)
            assert [s.rank for s in steps] == sorted(s.rank for s in steps)
            for s in steps:
                assert tok.merge(s.rank).left == s.left and tok.merge(s.rank).right == s.right
            ids += [tok.ids[t] for t in final]
    assert ids == tok.encode(text)


def test_a_chinese_character_is_three_bytes_and_several_tokens():
    _, tok = real()
    text = "君不见，黄河之水天上来"
    ids = tok.encode(text)
    chars = tokens_of_chars(text, tok, ids)
    assert [len(c.utf8) for c in chars] == [3] * 11
    assert chars[4].char == "黄" and chars[4].utf8 == b"\xe9\xbb\x84" and len(chars[4].tokens) == 3
    assert [tok.token_bytes(ids[t]) for t in chars[4].tokens] == [b"\xe9", b"\xbb", b"\x84"]
    assert chars[0].tokens == (0, 1) and ids[:2] == [16357, 245]      # 君: two bytes merged, one left
    assert chars[1].char == "不" and len(chars[1].tokens) == 1           # a common one has its own token
    # every token is somewhere, and the bytes add up
    assert sorted({t for c in chars for t in c.tokens}) == list(range(len(ids)))
    c = count_tokens(text, list(range(11)), ids)
    assert c == {"chars": 11, "course": 11, "smollm2": 22, "bytes": 33, "course_per_char": 1.0,
                 "smollm2_per_char": 2.0}


def test_a_token_across_two_characters_counts_for_both():
    _, tok = real()
    ids = tok.encode(" 黄")                                               # " \xe9" is one token
    chars = tokens_of_chars(" 黄", tok, ids)
    assert chars[0].tokens == (0,) and 0 in chars[1].tokens


def test_readable():
    assert readable(" king".encode()) == " king"
    assert readable("君".encode()[:2]) == "\\xe5\\x90"
    assert symbol_text("Ġt") == " t"


def test_row_lengths_and_nearest_to_equal_torch():
    """Cosine top-k over SmolLM2's whole table against torch.nn.functional.cosine_similarity."""
    model, tok = real()
    table = model.embed.weight.detach()
    lengths = row_lengths(table)
    assert lengths.shape == (len(table),)
    assert torch.allclose(lengths, torch.linalg.vector_norm(table, dim=-1))
    king = tok.encode(" king")
    assert king == [4197]
    ids, sims = nearest_to(table, lengths, table[king[0]], 10, king)
    ref = torch.nn.functional.cosine_similarity(table, table[king[0]][None], dim=-1)
    ref[king[0]] = -2
    top = ref.topk(10)
    assert ids.tolist() == top.indices.tolist()
    assert torch.allclose(sims, top.values, atol=1e-5)
    assert {" queen", " kings", " King"} <= set(tok.tokens(ids.tolist()))


def test_word_vectors_mean_and_pca_equal_svd_reference():
    model, tok = real()
    table = model.embed.weight.detach()
    words = ["king", "queen", "man", "woman", "tangerine", "Paris", "France"]
    pieces = [tok.encode(" " + w) for w in words]
    assert len(pieces[4]) == 3                                            # " t" "anger" "ine"
    x = word_vectors(table, pieces)
    assert x.shape == (7, 576)
    assert torch.allclose(x[4], table[pieces[4]].mean(dim=0))
    assert torch.equal(x[0], table[4197])
    pca = pca_2d(x)
    xc = x - x.mean(dim=0)
    _, s, v = torch.pca_lowrank(x, q=6, center=True, niter=10)          # q = rank: exact
    ref = xc @ v[:, :2]
    evals = torch.linalg.eigvalsh(xc.T.double() @ xc.double()).flip(0)   # covariance, another way
    assert np.allclose(pca.explained.numpy(), (evals[:2] / evals.sum()).numpy(), atol=1e-4)
    signs = torch.sign((pca.coords * ref).sum(dim=0))                     # components: up to sign
    assert np.allclose(pca.coords.numpy(), (ref * signs).numpy(), atol=1e-4)


def test_word_list():
    assert word_list("king, queen king  man", 2) == (["king", "queen"], True)
    assert word_list("国王、王后，男人", 9) == (["国王", "王后", "男人"], False)
    assert word_list("  ", 5) == ([], False)
