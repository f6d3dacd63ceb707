"""A1 in both languages: every control to its minimum and maximum, figure and table data checked."""
import pytest

from core.text.bpe import SAMPLE_CORPUS, ByteBPE, corpora
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "a1_tokens.py"


def _counts(at) -> list[int]:
    return [int(v) for v in trace_array(figure_by_key(at, "a1.counts"), 0, "y")]


TABLES = ("a1.id_table", "a1.merge_table")   # in page order


def _table(at, key):
    assert len(at.dataframe) == len(TABLES)
    return at.dataframe[TABLES.index(key)].value


def _chips(at) -> list[str]:
    text = figure_by_key(at, "a1.chips")["data"][0]["text"]
    return [cell for row in text for cell in row if cell]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a1_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    chars, n_bytes, n_bpe = _counts(at)
    assert (chars, n_bytes) == (11, 33)                        # 「君不见，黄河之水天上来」: 3 bytes a character
    assert chars <= n_bpe <= n_bytes
    assert len(_chips(at)) == 13                               # BOS + 11 + EOS
    assert _table(at, "a1.id_table").shape[0] == 13

    for k in (0, 256):
        at.slider(key="a1.merges").set_value(k).run()
        assert_ok(at)
        merges = _table(at, "a1.merge_table")
        assert merges.shape[0] == min(k, len(ByteBPE.train(SAMPLE_CORPUS, 256).merges))
        chars, n_bytes, n_bpe = _counts(at)
        if k == 0:
            assert n_bpe == n_bytes                            # no merge yet: BPE is the byte tokenizer
        curve = figure_by_key(at, "a1.curve")
        assert trace_array(curve, 1, "x")[0] == k

    for scheme, n in (("char", 13), ("byte", 35), ("bpe", None)):
        at.segmented_control(key="a1.scheme").set_value(scheme).run()
        assert_ok(at)
        got = len(_chips(at))
        assert got == (n if n else _counts(at)[2] + 2)

    for corpus in corpora():
        at.segmented_control(key="a1.corpus").set_value(corpus).run()
        assert_ok(at)
        assert _table(at, "a1.merge_table").shape[0] == 256

    at.text_input(key="a1.text").set_value("黄河之水天上来").run()
    assert_ok(at)
    chars, n_bytes, _ = _counts(at)
    assert n_bytes == 3 * chars == 21


@pytest.mark.parametrize("text", ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽ <b>x</b>"])
def test_a1_bad_text(text):
    at = open_lesson(PAGE, "en")
    at.text_input(key="a1.text").set_value(text).run()
    assert_ok(at)
    chips = _chips(at)
    assert 3 <= len(chips) <= 66
    assert not any("<script" in c or "<b>" in c for c in chips)       # markup is drawn as text
    if not text.strip():
        assert at.info, "empty input must say so"
    if len(text) > 64:
        assert at.warning, "cut input must say so"
    if "🙂" in text:
        assert any("<unk>" in c or "&lt;unk&gt;" in c for c in chips)  # the char tokenizer does not know it
        at.segmented_control(key="a1.scheme").set_value("bpe").run()
        assert_ok(at)                                                   # bytes, never unknown


def test_a1_malformed_url_params():
    at = open_lesson(PAGE, "zh", {"a1.merges": "abc", "a1.scheme": "<b>", "a1.corpus": "nope", "a1.text": "%%%"})
    assert_ok(at)
    assert _table(at, "a1.merge_table").shape[0] == 40
    at = open_lesson(PAGE, "en", {"a1.merges": "99999"})
    assert _table(at, "a1.merge_table").shape[0] == 40
