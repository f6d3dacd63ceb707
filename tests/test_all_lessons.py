"""Every lesson that exists, in both languages: it opens inside the frame without an
exception or a missing string, every chart stays within 300 KB, and nonsense in the URL
falls back to defaults."""
import pytest

from tests.apptest_util import chart_bytes, open_lesson
from ui.course import existing_lessons

LESSONS = existing_lessons()
MAX_CHART_BYTES = 300 * 1024


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_lesson_opens_small_and_translated(lesson, lang):
    at = open_lesson(lesson.file, lang)
    assert at.title and at.title[0].value, "every lesson has a title"
    sizes = chart_bytes(at)
    assert all(size <= MAX_CHART_BYTES for size in sizes), sizes
    if lang == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in at.title[0].value), "the Chinese page has a Chinese title"


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_lesson_survives_malformed_url(lesson):
    junk = {"lang": "<script>", "device": "tpu"}
    for key in ("d_k", "seed", "text", "prompt", "steps", "layer", "head", "model", "n", "position"):
        junk[f"{lesson.ns}.{key}"] = "💥' OR 1=1 --"
    at = open_lesson(lesson.file, "en", junk)
    assert at.title[0].value


# Values a shared link can carry that no widget expects: non-finite and huge numbers, a
# fraction for an int, markup and emoji, an empty value, a list of many digits.
JUNK = ["1e309", "-inf", "nan", "-1e30", "2.5", "💥<b>x</b>", "", "9" * 400]
WIDGETS = ("slider", "select_slider", "number_input", "selectbox", "radio", "text_input", "text_area",
           "checkbox", "toggle", "segmented_control", "multiselect", "pills")


def _widget_keys(at, ns: str) -> list[str]:
    keys = []
    for kind in WIDGETS:
        for w in getattr(at, kind, []):
            key = getattr(w, "key", None)
            if key and key.startswith(f"{ns}."):
                keys.append(key)
    return sorted(set(keys))


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_every_control_survives_every_junk_value_in_the_url(lesson):
    """Each of the lesson's own widget keys gets each junk value once (rotated so that one
    run carries several): the lesson opens, with no exception, in both languages."""
    keys = _widget_keys(open_lesson(lesson.file, "en"), lesson.ns)
    assert keys, "the lesson has controls"
    for r in range(len(JUNK)):
        params = {key: JUNK[(i + r) % len(JUNK)] for i, key in enumerate(keys)}
        at = open_lesson(lesson.file, "zh" if r % 2 else "en", params)
        assert at.title[0].value


# The smallest and largest inputs a text box can get, and text that looks like markup.
TEXTS = ["", "a", "ab", "君", "🙂" * 3, "x" * 5000, "将进酒" * 400, "<b>**[x](y)**</b>\n$x$ `c` |a|", "\n\n\t "]


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_every_text_box_survives_its_smallest_and_largest_input(lesson):
    at = open_lesson(lesson.file, "en")
    keys = sorted({w.key for kind in ("text_input", "text_area") for w in getattr(at, kind)
                   if w.key and w.key.startswith(f"{lesson.ns}.")})
    if not keys:
        pytest.skip("no text box")
    for i, text in enumerate(TEXTS):
        at = open_lesson(lesson.file, "zh" if i % 2 else "en", {key: text for key in keys})
        assert at.title[0].value
        for kind in ("slider", "number_input"):     # every control drawn keeps a value inside its range
            for w in getattr(at, kind):
                lo, hi = getattr(w, "min", None), getattr(w, "max", None)
                if lo is not None and hi is not None and isinstance(w.value, (int, float)):
                    assert lo <= w.value <= hi, (w.key, lo, w.value, hi)


def _answers(lesson) -> list[tuple[str, int]]:
    import ast
    from pathlib import Path
    tree = ast.parse((Path(__file__).resolve().parent.parent / "lessons" / lesson.file).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "try_this":
            return [(e.elts[0].value, e.elts[1].value) for e in node.args[1].elts]
    return []


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_questions_have_their_answer_in_varying_places(lesson):
    """The right answer is not always the same option, and it exists in both languages."""
    import i18n
    answers = _answers(lesson)
    assert len(answers) >= 2
    assert len({a for _, a in answers}) > 1, f"{lesson.code}: every right answer is option {answers[0][1]}"
    for name, a in answers:
        for lang in ("en", "zh"):
            assert 0 <= a < len(i18n.items(lang, f"{lesson.ns}.{name}.options"))
