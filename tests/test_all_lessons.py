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
