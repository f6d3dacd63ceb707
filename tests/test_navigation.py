"""The sidebar's navigation (ui/navigation.py, issue 43): every page st.navigation knows, as a page
link in course order under its part's heading, with the lesson's title, icon and address; the
current page named in the script that marks it (aria-current). Its markup is checked by axe-core
in tests/browser/test_axe.py."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import i18n
from tests.apptest_util import APP, TIMEOUT, assert_ok
from ui.course import PARTS, existing_lessons


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sidebar_lists_every_lesson_in_course_order(lang):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    assert_ok(at)
    links = [(p.proto.page, p.proto.label, p.proto.icon) for p in at.sidebar.get("page_link")]
    assert links == [("", i18n.t(lang, "home.nav"), ":material/home:")] + [
        (lesson.url_path, f"{lesson.code} · {i18n.t(lang, f'course.{lesson.ns}.nav')}", lesson.icon)
        for lesson in existing_lessons()]
    headings = [h.proto.body for h in at.sidebar.get("html") if "anatomy-nav-part" in h.proto.body]
    assert headings == [f'<h2 class="anatomy-nav-part">{i18n.t(lang, f"home.part_{part}")}</h2>'
                        for part, lessons in PARTS if any(lesson.exists for lesson in lessons)]


def test_the_current_page_is_the_one_marked():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("lessons/b3_masks.py")
    at.run()
    assert_ok(at)
    script = next(h.proto.body for h in at.sidebar.get("html") if "aria-current" in h.proto.body)
    assert 'const here = "masks", label = "Lessons";' in script
