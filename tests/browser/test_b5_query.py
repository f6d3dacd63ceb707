"""B5 in a real Chromium: shrinking N below the query clamps the query and never shows a
traceback (review B5 #1: 64 -> 48 -> 32 from the default page raised StreamlitValueAboveMaxError),
also with the query at its largest while N walks from its largest to its smallest."""
from __future__ import annotations

import pytest

from tests.browser.conftest import settle

SLIDERS = '[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]'
N, QUERY = 0, 5          # N, w, dilation, globals, random, then the query slider


def _press(page, index: int, key: str) -> None:
    page.locator(SLIDERS).nth(index).focus()
    page.keyboard.press(key)
    page.wait_for_timeout(150)
    settle(page)
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()[:300]


def _value(page, index: int) -> int:
    return int(float(page.locator(SLIDERS).nth(index).input_value()))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b5_n_down_from_default(chromium_browser, server_url, lang):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server_url}/sparse-attention?lang={lang}")
    settle(page)
    for want in (48, 32, 16):
        _press(page, N, "ArrowLeft")
        assert _value(page, N) == want
        assert _value(page, QUERY) <= want - 1
    page.close()


def test_b5_n_max_to_min_with_query_at_max(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server_url}/sparse-attention?lang=en")
    settle(page)
    _press(page, N, "End")
    _press(page, QUERY, "End")
    assert _value(page, QUERY) == 255
    for n in range(240, 15, -16):
        _press(page, N, "ArrowLeft")
        assert _value(page, N) == n
        assert _value(page, QUERY) == n - 1, page.url
    page.close()
