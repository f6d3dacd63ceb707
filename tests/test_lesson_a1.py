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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a1_names_an_id_on_screen_and_translates_its_choices(lang):
    """Review A1 #1: the id named as a row of A2's table is one of the chips (君 -> 32); the
    tokenizer and corpus choices show translated labels, and the URL keeps the neutral id."""
    at = open_lesson(PAGE, lang)
    ids = [int(c.split("<br>")[1]) for c in _chips(at)]
    first = ids[1]                                               # after BOS
    row = [c.value for c in at.caption if "君" in c.value]
    assert row and str(first) in row[0] and first == 32
    scheme = at.segmented_control(key="a1.scheme")
    labels = list(scheme.options)
    assert labels == (["char", "byte", "BPE"] if lang == "en" else ["按字", "按字节", "字节对编码"])
    scheme.set_value("bpe").run()
    assert_ok(at)
    assert at.query_params["a1.scheme"] in ("bpe", ["bpe"])
    chips = _chips(at)
    k = 40
    assert chips[0].endswith(f"<br>{256 + k}") and chips[-1].endswith(f"<br>{257 + k}")   # V = 258 + M
    title = figure_by_key(at, "a1.chips")["layout"]["title"]["text"]
    assert "«" not in title and ("BPE" in title if lang == "en" else "字节对编码" in title)
    if lang == "zh":
        assert "唐诗三百首" in list(at.segmented_control(key="a1.corpus").options) or len(corpora()) == 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a1_english_example(lang):
    """Improvement (a): an English example beside 君不见. The course vocabulary has no Latin
    letters (all <unk>), bytes are one per letter, and BPE merges cross the spaces."""
    at = open_lesson(PAGE, lang)
    at.button(key="a1.example_en").click().run()
    assert_ok(at)
    text = "the river comes down from the sky"
    assert at.text_input(key="a1.text").value == text
    chars, n_bytes, n_bpe = _counts(at)
    assert chars == n_bytes == len(text) and n_bpe < n_bytes
    assert sum("unk" in c for c in _chips(at)) == len(text)
    at.segmented_control(key="a1.scheme").set_value("bpe").run()
    at.slider(key="a1.merges").set_value(256).run()
    tokens = [c.split("<br>")[0] for c in _chips(at)]
    assert any(" " in t.strip() for t in tokens)                 # a merge across a word boundary
    at.button(key="a1.example_zh").click().run()
    assert at.text_input(key="a1.text").value == "君不见，黄河之水天上来"
