"""At 320 CSS px wide (WCAG 2.1 SC 1.4.10, issue 43 §5) every lesson reflows: the page never scrolls
sideways. One load a lesson, the languages taking turns (Chinese on every other lesson)."""
from __future__ import annotations

from tests.browser.conftest import settle
from ui.course import existing_lessons

WIDTH = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"


def test_every_lesson_reflows_at_320_px(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 320, "height": 640})
    wide = {}
    for n, lesson in enumerate(existing_lessons()):
        lang = "zh" if n % 2 else "en"
        page.goto(f"{server_url}/{lesson.url_path}?lang={lang}")
        settle(page)
        scroll, client = page.evaluate(WIDTH)
        if scroll > client:
            wide[f"{lesson.code}-{lang}"] = scroll
        if lesson.code == "F4":
            page.screenshot(path="tests/screenshots/reflow-320-f4.png")
    page.close()
    assert not wide, f"pages wider than 320 px: {wide}"
