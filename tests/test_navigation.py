"""The sidebar's navigation (ui/navigation.py, issues 43 and 39): Streamlit's own, given every page in
course order under its part's heading, with the lesson's title, icon and address, all parts open;
the fixed script that makes it whole for a screen reader travels in the theme's elements (no element
of its own). Its markup is checked by axe-core and by the keyboard in tests/browser/."""
from __future__ import annotations

import json

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import i18n
from tests.apptest_util import APP, TIMEOUT, assert_ok
from ui import navigation
from ui.course import PARTS, existing_lessons


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sidebar_lists_every_lesson_in_course_order(lang, monkeypatch):
    given = []
    real = st.navigation

    def spy(pages, **options):
        given.append((pages, options))
        return real(pages, **options)

    monkeypatch.setattr(st, "navigation", spy)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    assert_ok(at)
    pages, options = given[-1]
    assert options == {"position": "sidebar", "expanded": True}
    assert list(pages) == ["", *(i18n.t(lang, f"home.part_{part}") for part, lessons in PARTS
                                 if any(lesson.exists for lesson in lessons))]
    links = [(p.url_path, p.title, p.icon) for group in pages.values() for p in group]
    assert links == [("", i18n.t(lang, "home.nav"), ":material/home:")] + [
        (lesson.url_path, f"{lesson.code} · {i18n.t(lang, f'course.{lesson.ns}.nav')}", lesson.icon)
        for lesson in existing_lessons()]
    # No element of its own: its style and script are in the theme's two elements (a style sheet
    # alone goes to the page's event container, not the sidebar).
    bodies = [h.proto.body for h in at.get("html")]
    assert sum(navigation.NAV_CSS in b for b in bodies) == 1 and sum(navigation.NAV_JS in b for b in bodies) == 1
    assert not at.get("page_link") or all(p.proto.page != "masks" for p in at.sidebar.get("page_link"))


def test_the_script_names_the_landmark_in_each_language():
    labels = {lang: i18n.t(lang, "common.nav_label") for lang in i18n.LANGS}
    assert labels == {"en": "Lessons", "zh": "课程目录"}
    assert json.dumps(labels, ensure_ascii=False) in navigation.NAV_JS
    assert "role', 'none'" in navigation.NAV_JS and "'aria-level', '2'" in navigation.NAV_JS
