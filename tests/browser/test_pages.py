"""Every lesson, in both languages, in a real Chromium: no exception box, no console
error, one control changes the figure, and a screenshot to look at.

The home page is checked here; each lesson's page in tests/browser/test_layout.py's
test_lesson_fits_and_reacts, with the same functions (opened_clean, reacts, served_clean) on the
page load that also measures its layout.
"""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import CHANGE_MS, CONSOLE_ERRORS, SHOTS, settle, shoot

PAGES = [("", "home")]
PLOT_DATA = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(el => JSON.stringify([(el.data || []).map(t => [t.z, t.y, t.x, t.marker && t.marker.color]), el.layout && el.layout.title]))"""


def _base_path_probe(url: str, slug: str) -> bool:
    """Streamlit's front end, opened at /<page>, used to ask /<page>/_stcore/health and
    /<page>/_stcore/host-config first to find the server (streamlit#7074). The page names its
    server now (ui/static_gzip.py), so these are not asked for; test_live still tells them apart."""
    return re.search(rf"/{re.escape(slug)}/_stcore/(health|host-config)$", url) is not None


def failed_requests(page) -> list[str]:
    """The requests of ``page`` answered with an error status, from now on (a list that fills)."""
    # Opened at /<page>, Streamlit's front end used to ask /<page>/_stcore/health and host-config
    # first (two 404s, two console errors on every page): the page now names its server
    # (ui/static_gzip.py), so no request fails at all.
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return failed


def opened_clean(page, name: str, lang: str) -> list[str]:
    """Just after the page's first run: no exception box; a full-page screenshot <name>-<lang>.png."""
    boxes = page.locator('[data-testid="stException"]')
    out = [f"exception box: {boxes.first.inner_text()}"] if boxes.count() else []
    shoot(page, SHOTS / f"{name}-{lang}.png", full_page=True)
    return out


def reacts(page, name: str) -> list[str]:
    """A lesson's slider (a live one, its headline control, if there is one) pressed to its end
    changes a figure, and no exception box comes. The home page only if it has a slider."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]')
    if not sliders.count() and name in ("home",):
        return []
    if not sliders.count():
        return ["every lesson has a slider that changes a figure"]
    before = page.evaluate(PLOT_DATA)
    # A live slider (ui/live.py) is the lesson's headline control: it changes its figure.
    live = page.locator('[data-testid="stMain"] .anatomy-live input[type="range"]')
    (live.first if live.count() else sliders.first).focus()
    page.keyboard.press("End")
    page.wait_for_timeout(200)
    settle(page)
    out = []
    try:
        page.wait_for_function(f"(b) => JSON.stringify(({PLOT_DATA})()) !== JSON.stringify(b)", arg=before,
                               timeout=CHANGE_MS)
    except PlaywrightTimeout:
        out.append(f"no figure changed within {CHANGE_MS} ms of the slider pressed to its end")
    boxes = page.locator('[data-testid="stException"]')
    if boxes.count():
        out.append(f"exception box after the slider: {boxes.first.inner_text()}")
    return out


def served_clean(failed: list[str]) -> list[str]:
    """No request failed (``failed``: failed_requests' list), and no console error so far."""
    out = [f"failed requests: {failed}"] if failed else []
    # conftest fails every browser test on a console error or a page error; said here too.
    return out + ([f"console errors: {CONSOLE_ERRORS}"] if CONSOLE_ERRORS else [])


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slug,name", PAGES, ids=[f"{p[1]}-{p[0]}" if p[0] else p[1] for p in PAGES])
def test_page_opens_clean_and_reacts(chromium_browser, server_url, slug, name, lang):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    failed = failed_requests(page)
    page.goto(f"{server_url}/{slug}?lang={lang}")
    settle(page)
    failures = opened_clean(page, name, lang) + reacts(page, name) + served_clean(failed)
    assert not failures, "\n".join(failures)
    page.close()
