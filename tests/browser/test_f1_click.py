"""F1 in a real Chromium: a click on a cell of the score grids chooses that head. The layer and
head sliders follow, the address holds them, and the large patterns are that head's."""
from __future__ import annotations

import pytest

from tests.browser.conftest import settle, steady

# The screen position of cell (layer, head) of the grids' panel ``panel`` (0: previous token ...
# 2: induction), from plotly's own axes: the cell's centre is at x0 + layer, y0 + head.
CELL = """([panel, layer, head]) => {
    const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(el => (el.data || []).length === 4 && (el.data[0].customdata || []).length > 0);
    const trace = gd.data[panel];
    gd.scrollIntoView({block: "center"});
    const full = gd._fullLayout, rect = gd.getBoundingClientRect();
    return [rect.left + full._size.l + full.xaxis.l2p(trace.x0 + layer),
            rect.top + full._size.t + full.yaxis.l2p(trace.y0 + head)];
}"""

CHOSEN = """([layer, head]) => {
    const url = new URLSearchParams(location.search);
    return url.get("f1.layer") === String(layer) && url.get("f1.head") === String(head);
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f1_click_a_cell_chooses_that_head(chromium_browser, server_url, lang):
    from tests.real_util import need_package

    need_package()
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/heads-at-work?lang={lang}")
        settle(page)
        for panel, layer, head in ((2, 17, 3), (0, 16, 0)):
            x, y = steady(page, f"({CELL})([{panel}, {layer}, {head}])")   # scrolls the grids into view
            page.mouse.move(x, y)                                       # plotly clicks the point it hovers
            page.wait_for_function("(cell) => ((document.querySelector('.hoverlayer') || {}).textContent || '')"
                                   ".includes(cell)", arg=f"{layer},{head}", timeout=30000)
            page.mouse.click(x, y)
            page.wait_for_function(f"({CHOSEN})", arg=[layer, head], timeout=60000)
            settle(page)
            assert page.locator('[data-testid="stException"]').count() == 0
            main = page.locator('[data-testid="stMain"]')
            title = f"Layer {layer}, head {head} on the probe" if lang == "en" else f"第 {layer} 层第 {head} 个头，在探针上"
            assert main.get_by_text(title, exact=True).count() >= 1 or page.evaluate(
                """(t) => Array.from(document.querySelectorAll('.js-plotly-plot'))
                       .some(el => ((el.layout.title || {}).text || '').includes(t))""", title)
    finally:
        page.close()


def test_f1_a_link_to_head_0_opens_at_head_0(chromium_browser, server_url):
    """Head 0 is the slider's lowest value and not its default (6): the address must still hold
    it, or a shared link would open at head 6."""
    from tests.real_util import need_package

    need_package()
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/heads-at-work?lang=en")
        settle(page)
        x, y = steady(page, f"({CELL})([0, 16, 0])")                   # scrolls the grids into view
        page.mouse.move(x, y)
        page.wait_for_function("(cell) => ((document.querySelector('.hoverlayer') || {}).textContent || '')"
                               ".includes(cell)", arg="16,0", timeout=30000)
        page.mouse.click(x, y)
        page.wait_for_function(f"({CHOSEN})", arg=[16, 0], timeout=60000)
        link = page.url
        other = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            other.goto(link)
            settle(other)
            main = other.locator('[data-testid="stMain"]')
            assert main.get_by_text("Layer 16, head 0 (reads key/value head 0)", exact=False).count() == 1
        finally:
            other.close()
    finally:
        page.close()
