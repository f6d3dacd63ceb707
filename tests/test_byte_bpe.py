"""Our byte-level BPE: the GPT-2 byte map, the smollm pre-tokenizer, merges in rank order, special
tokens, the ChatML template, and decode(encode(s)) == s for any Unicode."""
import random

import pytest

from core.text.byte_bpe import DEFAULT_SYSTEM, ByteBPE, bpe, byte_to_char, char_to_byte, pre_tokenize
from tests.real_util import real


def test_byte_map_is_gpt2s():
    table = byte_to_char()
    assert len(set(table.values())) == 256
    assert table[ord("a")] == "a" and table[32] == "Ġ" and table[10] == "Ċ" and table[0] == "Ā"
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert all(char_to_byte()[c] == b for b, c in table.items())


def test_pre_tokenize_smollm():
    assert pre_tokenize("Hi  you 2024!") == ["Hi", " ", " you", " ", "2", "0", "2", "4", "!"]
    assert pre_tokenize("a  1") == ["a", "  ", "1"]            # digits split first: the spaces stay together
    assert pre_tokenize("a  1", "gpt2") == ["a", " ", " 1"]
    assert pre_tokenize("it's") == ["it", "'s"]
    assert pre_tokenize("x\n\n  y") == ["x", "\n\n ", " y"]
    assert pre_tokenize("中文，很好") == ["中文", "，", "很好"]
    assert "".join(pre_tokenize("٣ ½ Ⅻ x²")) == "٣ ½ Ⅻ x²"         # every \p{N} is a piece, nothing lost
    with pytest.raises(ValueError):
        pre_tokenize("x", "llama3")


def test_bpe_applies_merges_by_rank_not_by_position():
    assert bpe(["a", "b", "c"], {("b", "c"): 0, ("a", "bc"): 1}) == ["abc"]
    assert bpe(["a", "b", "c"], {("a", "b"): 1, ("b", "c"): 0}) == ["a", "bc"]      # rank 0 first
    assert bpe(["a", "a", "a", "a"], {("a", "a"): 0}) == ["aa", "aa"]
    assert bpe(["x"], {}) == ["x"]


def _toy() -> ByteBPE:
    chars = list(byte_to_char().values())
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *chars, "he", "hel", "Ġhe"]
    return ByteBPE(tokens, ["h e", "he l", "Ġ he"], ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                   bos_id=1, eos_id=2)


def test_toy_vocabulary():
    tok = _toy()
    ids = tok.encode("<|im_start|>hello he<|im_end|>")
    assert ids[0] == 1 and ids[-1] == 2
    assert tok.tokens(ids) == ["<|im_start|>", "hel", "l", "o", " he", "<|im_end|>"]
    assert tok.decode(ids) == "<|im_start|>hello he<|im_end|>"
    assert tok.encode("x", bos=True, eos=True) == [1, tok.ids["x"], 2]
    assert tok.merge(1).joined == "hel" and tok.merge(1).rank == 1
    assert tok.is_known("😀") and len(tok) == 3 + 256 + 3


def _random_text(rng: random.Random, n: int) -> str:
    pools = ["abc XYZ", " \n\t\r", "0123456789", "中文字词元", "😀🎉👩‍💻", "éüßñ", "<|>_'",
             "\u0000\u001f\u007f\u200b\ufeff", "٣½Ⅻ²"]
    out = []
    for _ in range(n):
        if rng.random() < 0.15:
            out.append(chr(rng.randrange(0x20, 0x2FFFF)))                # any plane-0..2 code point
        else:
            out.append(rng.choice(rng.choice(pools)))
    return "".join(c for c in out if not 0xD800 <= ord(c) <= 0xDFFF)      # no lone surrogates in str->UTF-8


def test_round_trip_toy():
    tok, rng = _toy(), random.Random(0)
    for _ in range(200):
        s = _random_text(rng, rng.randrange(0, 40))
        assert tok.decode(tok.encode(s)) == s


def test_round_trip_smollm2():
    _, tok = real()
    rng = random.Random(24)
    for _ in range(300):
        s = _random_text(rng, rng.randrange(0, 60))
        ids = tok.encode(s)
        assert all(0 <= i < len(tok) for i in ids)
        assert tok.decode(ids) == s


def test_smollm2_known_ids():
    _, tok = real()
    assert tok.encode("Hello world") == [19556, 905]
    assert tok.tokens([19556, 905]) == ["Hello", " world"]
    assert tok.encode("Hello world 2024") == [19556, 905, 216, 34, 32, 34, 36]
    assert tok.encode("<|im_start|>user\nhi<|im_end|>") == [1, 4093, 198, 6004, 2]
    assert len(tok.encode("中")) == 1 and len("中".encode()) == 3                  # 3 bytes, 1 token here
    assert (tok.bos_id, tok.eos_id) == (1, 2) and tok.pre == "smollm"
    assert {"<|im_start|>", "<|im_end|>", "<|endoftext|>"} <= set(tok.special)
    assert tok.merge(0).left == "Ġ" and tok.merge(0).right == "t"
    assert len(tok.merges) == 48_900 and len(tok) == 49_152


def test_chat_template():
    _, tok = real()
    text = tok.chat([{"role": "user", "content": "hi"}])
    assert text == (f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
                    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert tok.chat([{"role": "system", "content": "S"}], add_generation_prompt=False) == \
        "<|im_start|>system\nS<|im_end|>\n"
    assert DEFAULT_SYSTEM in tok.chat_template                          # the template the GGUF carries


# Issue 38: SmolLM2's vocabulary has no symbol for 21 byte values; encode drops them (as Hugging
# Face's byte-level BPE does on the same vocabulary) and dropped() says which characters lost them.
SMOLLM2_NO_TOKEN = {0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)}


def _char_with_byte(b: int) -> str | None:
    """A character whose UTF-8 holds byte ``b``; None for the 13 bytes no UTF-8 text holds."""
    starts = [*range(0x800), *range(0x800, 0x10000, 0x40), *range(0x10000, 0x110000, 0x1000)]
    return next((chr(cp) for cp in starts if not 0xD800 <= cp <= 0xDFFF and b in chr(cp).encode()), None)


def test_toy_drops_a_byte_it_has_no_symbol_for():
    chars = [c for b, c in byte_to_char().items() if b != 0xF1]
    tok = ByteBPE(["<|endoftext|>", *chars, "ab"], ["a b"], ["<|endoftext|>"])
    assert tok.no_token == {0xF1}
    assert tok.encode("a\U00050000b") == [tok.ids["a"], *(tok.ids[byte_to_char()[b]] for b in b"\x90\x80\x80"),
                                         tok.ids["b"]]
    assert tok.encode_bytes(b"a\xf1b") == [tok.ids["ab"]]                # dropped first, then merged
    assert tok.dropped("a\U00050000b\U00050000") == [("\U00050000", b"\xf1")]
    assert tok.dropped("abc 中文 😀") == [] and not tok.is_known("\U00050000") and tok.is_known("😀")


def test_smollm2_every_byte_value():
    _, tok = real()
    table = byte_to_char()
    assert tok.no_token == SMOLLM2_NO_TOKEN
    for b in range(256):
        want = [] if b in SMOLLM2_NO_TOKEN else [tok.ids[table[b]]]
        assert tok.encode_bytes(bytes([b])) == want, hex(b)
        ch = _char_with_byte(b)
        assert (ch is None) == (b in {0xC0, 0xC1, *range(0xF5, 0x100)}), hex(b)
        if ch is None:
            continue
        text = f"x{ch}y {ch}"
        ids = tok.encode(text)                                            # no KeyError
        assert all(0 <= i < len(tok) for i in ids)
        lost = bytes(c for c in ch.encode() if c in SMOLLM2_NO_TOKEN)
        assert tok.dropped(text) == ([(ch, lost)] if lost else [])
        if lost:        # the character is gone; bytes of it that have tokens decode to U+FFFD
            assert tok.decode(ids).replace("\ufffd", "") == text.replace(ch, ""), hex(b)
        else:
            assert tok.decode(ids) == text, hex(b)


def test_smollm2_drops_where_reported():
    _, tok = real()
    text = "hello \U00050000 world"
    assert tok.encode(text) == [28120, 216, 234, 218, 218, 905]            # the F1 byte gone, its 3 others kept
    assert tok.dropped(text) == [("\U00050000", b"\xf1")]
    assert tok.encode("!\x04!") == tok.encode("!!") == [10095]
    assert tok.dropped("ordinary text, 中文, 😀") == []


@pytest.fixture(scope="module")
def hf_tokenizer():
    """transformers' tokenizer of the same GGUF, with SmolLM2's own pre-tokenizer (as in
    tests/test_real_reference.py); skipped where transformers is not installed."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import pre_tokenizers

    from core.models import gguf_llama
    real()
    path = gguf_llama.gguf_path()
    ref = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    ref.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return ref


def test_every_byte_value_id_for_id_with_hugging_face(hf_tokenizer):
    _, tok = real()
    table, model = byte_to_char(), hf_tokenizer.backend_tokenizer.model
    for b in range(256):
        for raw in (bytes([b]), b"!" + bytes([b]) + b"!", b"." + bytes([b]) + b".."):   # alone, and between bytes that merge
            want = [t.id for t in model.tokenize("".join(table[c] for c in raw))]
            assert tok.encode_bytes(raw) == want, raw
        ch = _char_with_byte(b)
        if ch is not None:
            for text in (ch, f"a{ch}b", f"hello {ch} world", f"中{ch}文"):
                assert tok.encode(text) == hf_tokenizer.encode(text, add_special_tokens=False), (hex(b), text)
