"""Every lesson, in both languages, in a real Chromium: no exception box, no console
error, one control changes the figure, and a screenshot to look at."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import CHANGE_MS, SHOTS, settle
from ui.course import existing_lessons

PAGES = [("", "home")] + [(lesson.url_path, lesson.code.lower()) for lesson in existing_lessons()]
PLOT_DATA = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(el => JSON.stringify([(el.data || []).map(t => [t.z, t.y, t.x, t.marker && t.marker.color]), el.layout && el.layout.title]))"""


def _base_path_probe(url: str, slug: str) -> bool:
    """Opening /<page> directly, Streamlit's front end first asks /<page>/_stcore/... to
    find the server's base path, gets 404, then asks /_stcore/... (streamlit#7074).
    Those two 404s are Streamlit's, on every deep link; anything else is ours."""
    return re.search(rf"/{re.escape(slug)}/_stcore/(health|host-config)$", url) is not None


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slug,name", PAGES, ids=[f"{p[1]}-{p[0]}" if p[0] else p[1] for p in PAGES])
def test_page_opens_clean_and_reacts(chromium_browser, server_url, slug, name, lang):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    probes: list[str] = []
    page.on("response", lambda r: (probes if _base_path_probe(r.url, slug) else errors).append(
        f"{r.status} {r.url}") if r.status >= 400 else None)
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
    # Each known probe also logs one "Failed to load resource ... 404" line; drop exactly those.
    generic = [e for e in errors if e.startswith("Failed to load resource") and "404" in e]
    assert len(generic) <= len(probes), errors
    rest = [e for e in errors if e not in generic]
    assert not rest, rest
    page.close()
