import pytest

from core.text.clean import clean_text
from core.text.tokenizer import CharTokenizer

TEXTS = ["君不见，黄河之水天上来", "Attention is all you need.", "🙂🚀 emoji 👍🏽", "混合 mixed テキスト 🙂 <b>x</b>", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_char_round_trip(text):
    tok = CharTokenizer.from_text(text)
    ids = tok.encode(text)
    assert len(ids) == len(text)
    assert tok.decode(ids) == text
    assert tok.decode(tok.encode(text, bos=True, eos=True)) == text


def test_specials_and_unknown():
    tok = CharTokenizer.from_text("ab")
    assert tok.encode("abz", bos=True) == [1, 4, 5, 3]
    assert tok.tokens([1, 4, 3]) == ["<bos>", "a", "<unk>"]
    assert tok.decode([4, 3, 2]) == "a\ufffd"


def test_json_round_trip():
    tok = CharTokenizer.from_text("黄河之水天上来")
    again = CharTokenizer.from_json(tok.to_json())
    assert again.itos == tok.itos


def test_clean_text():
    c = clean_text("a\x00b" + "c" * 10, 3)
    assert (c.text, c.truncated, c.original_len, c.empty) == ("abc", True, 12, False)
    assert clean_text("   ", 5).empty and clean_text(None, 5).empty
