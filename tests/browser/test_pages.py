"""Every lesson, in both languages, in a real Chromium: no exception box, no console
error, one control changes the figure, and a screenshot to look at."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import CHANGE_MS, CONSOLE_ERRORS, SHOTS, settle
from ui.course import existing_lessons

PAGES = [("", "home")] + [(lesson.url_path, lesson.code.lower()) for lesson in existing_lessons()]
PLOT_DATA = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(el => JSON.stringify([(el.data || []).map(t => [t.z, t.y, t.x, t.marker && t.marker.color]), el.layout && el.layout.title]))"""


def _base_path_probe(url: str, slug: str) -> bool:
    """Streamlit's front end, opened at /<page>, used to ask /<page>/_stcore/health and
    /<page>/_stcore/host-config first to find the server (streamlit#7074). The page names its
    server now (ui/static_gzip.py), so these are not asked for; test_live still tells them apart."""
    return re.search(rf"/{re.escape(slug)}/_stcore/(health|host-config)$", url) is not None


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slug,name", PAGES, ids=[f"{p[1]}-{p[0]}" if p[0] else p[1] for p in PAGES])
def test_page_opens_clean_and_reacts(chromium_browser, server_url, slug, name, lang):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    # Opened at /<page>, Streamlit's front end used to ask /<page>/_stcore/health and host-config
    # first (two 404s, two console errors on every page): the page now names its server
    # (ui/static_gzip.py), so no request fails at all.
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(f"{server_url}/{slug}?lang={lang}")
    settle(page)
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]').first.inner_text()
    page.screenshot(path=str(SHOTS / f"{name}-{lang}.png"), full_page=True)

    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]')
    if sliders.count() or name not in ("home",):
        assert sliders.count(), "every lesson has a slider that changes a figure"
        before = page.evaluate(PLOT_DATA)
        # A live slider (ui/live.py) is the lesson's headline control: it changes its figure.
        live = page.locator('[data-testid="stMain"] .anatomy-live input[type="range"]')
        (live.first if live.count() else sliders.first).focus()
        page.keyboard.press("End")
        page.wait_for_timeout(200)
        settle(page)
        page.wait_for_function(f"(b) => JSON.stringify(({PLOT_DATA})()) !== JSON.stringify(b)", arg=before,
                               timeout=CHANGE_MS)
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not failed, failed
    # conftest fails every browser test on a console error or a page error; said here too.
    assert not CONSOLE_ERRORS, CONSOLE_ERRORS
    page.close()
