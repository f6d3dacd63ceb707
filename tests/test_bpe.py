"""Byte-level BPE: a merge sequence worked out by hand, the tie rule, round trips for any Unicode."""
import pytest

from core.text.bpe import (
    SAMPLE_CORPUS,
    ByteBPE,
    Merge,
    best_pair,
    byte_tokens,
    corpora,
    corpus_lengths,
    load_corpus,
    merge,
    pair_counts,
    tokenize,
)
from core.text.tokenizer import CharTokenizer

A, B, C, D = 97, 98, 99, 100
TEXTS = ["君不见，黄河之水天上来，奔流到海不复回。", "Attention is all you need.", "🙂🚀👍🏽🇨🇳",
         "混合 mixed テキスト 🙂 <script>alert(1)</script>", "", " ", "\n\n", "﷽ ẞ é e\u0301"]


def test_merges_worked_out_by_hand():
    # "aaabdaaabac" = a a a b d a a a b a c (11 bytes)
    # step 1: (a,a) occurs 4 times counting overlaps -> 256;  256 a b d 256 a b a c   (9 tokens)
    # step 2: (256,a) and (a,b) both occur twice; (256,a) is seen first -> 257;  257 b d 257 b a c  (7)
    # step 3: (257,b) twice -> 258;  258 d 258 a c  (5)
    # step 4: every pair once; (258,d) comes first -> 259;  259 258 a c  (4)
    bpe = ByteBPE.train("aaabdaaabac", 4)
    assert bpe.merges == (
        Merge(1, (A, A), 4, 256, 9),
        Merge(2, (256, A), 2, 257, 7),
        Merge(3, (257, B), 2, 258, 5),
        Merge(4, (258, D), 1, 259, 4),
    )
    assert bpe.pieces[258] == b"aaab" and bpe.pieces[259] == b"aaabd"
    assert bpe.encode("aaabdaaabac") == [259, 258, A, C]
    assert bpe.encode("aaab") == [258]
    assert corpus_lengths("aaabdaaabac", bpe) == [11, 9, 7, 5, 4]
    # With nothing left to merge, training stops early instead of failing.
    assert len(ByteBPE.train("ab", 10).merges) == 1


def test_pure_helpers_match_their_examples():
    assert pair_counts([[1, 2, 3, 1, 2]]) == {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    assert pair_counts([[A, A, A]]) == {(A, A): 2}
    assert merge([A, A, A, B], (A, A), 256) == [256, A, B]
    assert best_pair({(5, 1): 2, (1, 2): 2, (2, 3): 1}) == ((5, 1), 2)     # tie: first seen wins
    assert best_pair({(2, 3): 1, (1, 2): 3}) == ((1, 2), 3)
    with pytest.raises(ValueError):
        best_pair({})


def test_ties_do_not_depend_on_id_values():
    # "ba" is seen before "ab" in the text, so it wins although (98, 97) > (97, 98).
    assert ByteBPE.train("baab", 1).merges[0].pair == (B, A)
    assert ByteBPE.train("abba", 1).merges[0].pair == (A, B)


@pytest.mark.parametrize("n_merges", [0, 1, 40, 256])
@pytest.mark.parametrize("text", TEXTS)
def test_round_trip_any_unicode(text, n_merges):
    bpe = ByteBPE.train(SAMPLE_CORPUS, n_merges)
    ids = bpe.encode(text)
    assert bpe.decode(ids) == text
    assert len(ids) <= len(text.encode("utf-8"))
    assert all(0 <= i < len(bpe) for i in ids)


def test_more_merges_never_more_tokens_and_prefix_property():
    full = ByteBPE.train(SAMPLE_CORPUS, 120)
    assert ByteBPE.train(SAMPLE_CORPUS, 30).merges == full.truncated(30).merges
    text = "君不见，黄河之水天上来 the river"
    lengths = [len(full.truncated(k).encode(text)) for k in range(0, 121, 10)]
    assert lengths == sorted(lengths, reverse=True)


def test_encoding_the_training_text_agrees_with_training():
    bpe = ByteBPE.train(SAMPLE_CORPUS, 80)
    encoded = sum(len(bpe.encode(line)) for line in SAMPLE_CORPUS.split("\n") if line)
    assert encoded == bpe.merges[-1].tokens_after == corpus_lengths(SAMPLE_CORPUS, bpe)[-1]


def test_utf8_sizes():
    assert byte_tokens("黄河") == list("黄河".encode("utf-8")) and len(byte_tokens("黄河")) == 6
    assert len(byte_tokens("a")) == 1 and len(byte_tokens("🙂")) == 4


def test_token_text_shows_partial_characters_as_hex():
    bpe = ByteBPE.train("", 0)
    assert bpe.token_text(A) == "a"
    assert bpe.token_text(0xE9) == "\\xe9"
    assert bpe.decode([0xE9]) == "\ufffd"              # a lone byte of a character is not text


def test_tokenize_three_ways():
    chars = CharTokenizer.from_text(SAMPLE_CORPUS)
    bpe = ByteBPE.train(SAMPLE_CORPUS, 50)
    text = "黄河🙂"
    char_view = tokenize(text, "char", chars, bpe)
    assert char_view.tokens == ["<bos>", "黄", "河", "<unk>", "<eos>"]
    assert char_view.special == [True, False, False, True, True]
    byte_view = tokenize(text, "byte", chars, bpe)
    assert len(byte_view.ids) == 2 + 3 + 3 + 4
    assert byte_view.ids[0] == 256 and byte_view.ids[-1] == 257
    bpe_view = tokenize(text, "bpe", chars, bpe)
    assert bpe_view.ids[0] == len(bpe) and bpe_view.ids[-1] == len(bpe) + 1
    assert bpe.decode(bpe_view.ids[1:-1]) == text
    assert tokenize("", "bpe", chars, bpe).tokens == ["<bos>", "<eos>"]


def test_corpora():
    assert corpora()[0] == "sample"
    assert load_corpus("sample") == SAMPLE_CORPUS
    assert load_corpus("no such corpus") == SAMPLE_CORPUS
    if "tang300" in corpora():
        assert "黄河" in load_corpus("tang300") or len(load_corpus("tang300")) > 1000
