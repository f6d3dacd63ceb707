"""No serious or critical accessibility violation on any page (issue 43): axe-core 4.14's rules for
WCAG 2.0 and 2.1, levels A and AA (tests/browser/axe.py), at 1440x900, on the home page and every
lesson in both languages, on each lesson's SmolLM2 setting (those two on test_layout's page loads), and in presenter mode on the first
lesson of each part; and at two more sizes: a phone's 390x844 on every page in both languages (on
tests/browser/test_zoom.py's load of it), and presenter mode at a projector's 1280x720 on every
lesson in both languages. One page load each (presenter mode: none, below); a failure lists the
rules and the elements they found. Moderate and minor findings are measured by bench/axe_report.py
(the README lists them).

Presenter mode is checked on tests/browser/test_slides.py's walk (test_every_slide, on each lesson's
first slide, issue 40: no page load of its own): at 1440x900 on the first lesson of each part in
the language FIRST_OF_PART names (was test_presenter_mode_has_no_serious_violation), and at
1280x720 on every lesson in both languages, PROJECTOR_PAGES (was
test_presenter_mode_on_a_projector_has_no_serious_violation; the walk opens each lesson in each
language anyway). The two lists stay here. And on each lesson's first slide with a chart after the
first, at 1280x720 in one language, the languages by turns (test_slides.py: LATER_SLIDE_AXE).
"""
from __future__ import annotations

import pytest

from tests.browser import axe
from tests.browser.conftest import settle
from ui.course import PARTS

PAGES = [("", "home")] + [(lesson.url_path, lesson.code.lower()) for _, lessons in PARTS
                          for lesson in lessons if lesson.exists]
# The first lesson of each part in presenter mode, the parts in English and Chinese by turns.
FIRST_OF_PART = [(slug, name, ("en", "zh")[i % 2]) for i, (slug, name) in enumerate(
    next((lesson.url_path, lesson.code.lower()) for lesson in lessons if lesson.exists)
    for _, lessons in PARTS if any(lesson.exists for lesson in lessons))]


def _grave_violations(browser, url: str, viewport: dict | None = None) -> str:
    page = browser.new_page(viewport=viewport or axe.VIEWPORT)
    try:
        page.goto(url)
        settle(page)
        found = axe.grave(axe.violations(page))
    finally:
        page.close()
    return axe.describe(found)


# Every lesson at 1440x900 in both languages, with the course model and with SmolLM2 chosen (its own
# controls, texts and figures), is checked on the page load of tests/browser/test_layout.py
# (test_lesson_fits_and_reacts, test_real_model_fits: axe_at_1440), after its layout checks at that
# size (issue 40: one load where there were two); D1 on SmolLM2 after Generate and with a branch on
# tests/browser/test_d1_branch.py's. The home page here.
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_home_page_has_no_serious_violation(chromium_browser, server_url, lang):
    found = _grave_violations(chromium_browser, f"{server_url}/?lang={lang}")
    assert not found, f"axe-core {axe.AXE_VERSION} on home ({lang}):\n{found}"


PHONE = {"width": 390, "height": 844}          # a phone held upright: the sidebar folded away
PROJECTOR = {"width": 1280, "height": 720}     # the common projector: presenter mode's slides (test_slides)


# Every page in both languages (issue 43: "in both languages"; each language has its own texts, so
# its own lengths, wraps and names). The phone's gate runs on tests/browser/test_zoom.py's load of
# each page (test_page_on_a_phone_zoomed_and_at_320_px), the projector's on test_slides.py's walk.
PHONE_PAGES = [(slug, name, lang) for slug, name in PAGES for lang in ("en", "zh")]
PROJECTOR_PAGES = [(slug, name, lang) for slug, name, lang in PHONE_PAGES if slug]
