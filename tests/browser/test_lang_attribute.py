"""The page's lang attribute follows the chosen language (issue 43 §5: a screen reader reads Chinese
in Chinese), on a lesson opened in each language and after a switch in the sidebar, and on two more
lessons opened in Chinese (D1 and F4: the frame's script runs on every page, not on B1's alone)."""
from __future__ import annotations

from tests.browser.conftest import WAIT_MS, settle

LANG = "() => document.documentElement.lang"


def test_lang_follows_the_language(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    for lang in ("zh", "en"):
        page.goto(f"{server_url}/attention?lang={lang}")
        settle(page)
        page.wait_for_function(f"() => document.documentElement.lang === '{lang}'", timeout=WAIT_MS)
        assert page.evaluate(LANG) == lang
    # A switch in the sidebar, without a reload: 中文 then English again.
    page.locator('[data-testid="stSidebar"] button', has_text="中文").click()
    page.wait_for_function("() => document.documentElement.lang === 'zh'", timeout=WAIT_MS)
    settle(page)
    page.locator('[data-testid="stSidebar"] button', has_text="English").click()
    page.wait_for_function("() => document.documentElement.lang === 'en'", timeout=WAIT_MS)
    page.close()


def test_lang_is_chinese_on_other_lessons(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    for slug in ("generation", "patching"):
        page.goto(f"{server_url}/{slug}?lang=zh")
        page.wait_for_selector('[data-testid="stMain"] h1', timeout=WAIT_MS)      # the lesson itself drew
        page.wait_for_function("() => document.documentElement.lang === 'zh'", timeout=WAIT_MS)
        assert page.evaluate(LANG) == "zh"
    page.close()
