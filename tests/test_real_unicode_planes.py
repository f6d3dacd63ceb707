"""Issue 38: a character of every Unicode plane through SmolLM2's tokenizer and through every
lesson that tokenizes a student's text with it. SmolLM2's vocabulary has no token for the UTF-8
lead bytes 0xF1 and 0xF2 (U+40000-U+BFFFF, planes 4 to 11): the tokenizer drops them, as Hugging
Face's does, and each lesson says so in a notice (real.dropped) instead of raising KeyError."""
import pytest

from core.lab.real_tokens import dropped_note
from tests.apptest_util import assert_ok, open_lesson
from tests.real_util import real

# One character of each plane 0-16 (the first code point of plane p is U+p0000; plane 0 gets 中).
PLANES = "中" + "".join(chr(p << 16) for p in range(1, 17))
LOST = [chr(p << 16) for p in range(4, 12)]          # planes 4-11: lead byte 0xF1 or 0xF2
SAMPLE = 97                                           # code points a plane, evenly spaced


def _sample(plane: int) -> list[str]:
    lo = plane << 16
    return [chr(cp) for cp in range(lo, lo + 0x10000, 0x10000 // SAMPLE) if not 0xD800 <= cp <= 0xDFFF]


@pytest.mark.parametrize("plane", range(17))
def test_every_plane_encodes_and_reports_what_it_drops(plane):
    _, tok = real()
    chars = _sample(plane)
    assert len(chars) >= 90
    text = " ".join(chars)
    ids = tok.encode(text)                                              # no KeyError
    assert all(0 <= i < len(tok) for i in ids)
    lost = tok.dropped(text)
    if 4 <= plane <= 11:
        assert [c for c, _ in lost] == chars and {b for _, b in lost} == {b"\xf1" if plane < 8 else b"\xf2"}
        # each loses its lead byte; its 3 other bytes stay, as tokens that decode to U+FFFD
        assert tok.decode(ids).replace("\ufffd", "") == " " * (len(chars) - 1)
    else:
        assert lost == [] and tok.decode(ids) == text


def test_every_plane_id_for_id_with_hugging_face():
    transformers = pytest.importorskip("transformers")
    from tokenizers import pre_tokenizers

    from core.models import gguf_llama
    _, tok = real()
    path = gguf_llama.gguf_path()
    ref = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    ref.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    for plane in range(17):
        text = "a" + "b".join(_sample(plane)[::8]) + " end"
        assert tok.encode(text) == ref.encode(text, add_special_tokens=False), plane
    assert tok.encode(PLANES) == ref.encode(PLANES, add_special_tokens=False)


def test_the_notice_fields():
    _, tok = real()
    note = dropped_note(tok, PLANES)
    assert note["n"] == 8 and note["k"] == 2 and note["bytes"] == "0xF1, 0xF2"
    assert note["chars"].startswith("U+40000, U+50000") and note["chars"].endswith(", …")   # 6 shown of 8
    assert dropped_note(tok, "plain English, 中文, 😀") is None


# (page, URL parameters, (widget kind, key) of each text box that SmolLM2 reads)
LESSONS = [
    ("a1_tokens.py", {"a1.lm": "smollm2"}, [("text_area", "a1.text")]),
    ("a2_embeddings.py", {"a2.lm": "smollm2"}, [("text_input", "a2.text"), ("text_input", "a2.word"),
                                                 ("text_area", "a2.words")]),
    ("b1_attention.py", {"b1.source": "smollm2"}, [("text_input", "b1.text")]),
    ("b2_heads.py", {"b2.lm": "smollm2"}, [("text_input", "b2.text")]),
    ("b2_heads.py", {"b2.ex_open": "true", "b2.ex.lm": "smollm2"}, [("text_input", "b2.ex_rtext")]),
    ("c2_llama_block.py", {"c2.lm": "smollm2"}, [("text_input", "c2.rtext")]),
    ("c3_rope.py", {"c3.lm": "smollm2"}, [("text_input", "c3.rtext")]),
    ("d1_generation.py", {"d1.lm": "smollm2", "d1.mode": "text"}, [("text_area", "d1.text")]),
    ("d1_generation.py", {"d1.lm": "smollm2", "d1.mode": "chat"}, [("text_area", "d1.chat")]),
    ("d4_gqa.py", {"d4.lm": "smollm2"}, [("text_input", "d4.real_prompt")]),
    ("f1_heads.py", {}, [("text_input", "f1.rtext")]),
    ("f2_logit_lens.py", {}, [("text_input", "f2.prompt")]),
]


@pytest.mark.parametrize("page, params, boxes", LESSONS, ids=[f"{p}-{b[0][1]}" for p, _, b in LESSONS])
def test_every_plane_through_each_lesson(page, params, boxes):
    """One run a box, the text holding a character of every plane at once: no exception, and
    the notice names the first dropped character and both dropped bytes."""
    real()
    at = open_lesson(page, "en", params)
    for kind, key in boxes:
        getattr(at, kind)(key=key).set_value(PLANES).run()
        assert_ok(at)
        notices = [w.value for w in at.warning if "U+40000" in w.value]
        assert notices and all("0xF1, 0xF2" in n for n in notices), key
        getattr(at, kind)(key=key).set_value("").run()                 # back to the example: no notice
        assert_ok(at)
        assert not any("U+40000" in w.value for w in at.warning)
