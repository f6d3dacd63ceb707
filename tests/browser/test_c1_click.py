"""C1 in a real Chromium: clicking a sub-layer box of the diagram chooses it (review C1 #2: the
boxes only highlighted, the choice was made in a selectbox): the layer and the sub-layer
controls follow, and the tensors shown are that sub-layer's."""
from __future__ import annotations

import pytest

from tests.browser.conftest import settle, steady

BOX = """(name) => {
    const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(el => (el.data || []).some(t => Array.isArray(t.customdata) && t.customdata.includes(name)));
    const trace = gd.data[gd.data.length - 1];
    const i = trace.customdata.indexOf(name) + 3;           // the middle of its seven points
    gd.scrollIntoView({block: "center"});
    const full = gd._fullLayout, rect = gd.getBoundingClientRect();
    return [rect.left + full._size.l + full.xaxis.l2p(trace.x[i]),
            rect.top + full._size.t + full.yaxis.l2p(trace.y[i])];
}"""


# The chosen sub-layer is read from the page as a student sees it: the sub-layer box is a combobox
# whose value sits in its <input> (not in its text: waiting for the name in the box's innerText,
# as this test once did, waited forever), the layer slider's in its range <input>, both in the URL.
CHOSEN = """([part, layer]) => {
    const boxes = Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stSelectbox"] input'));
    const slider = document.querySelector('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]');
    const url = new URLSearchParams(location.search);
    return boxes.some(e => e.value === part) && slider && Number(slider.value) === layer
        && url.get("c1.part") === part && (url.get("c1.layer") || "0") === String(layer);   // a default leaves the URL
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_click_a_sublayer(chromium_browser, server_url, lang):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/encoder-decoder?lang={lang}")
        settle(page)
        for name, part, layer in (("encoder.layers.1.ffn", "encoder.ffn", 1),
                                  ("decoder.layers.0.self_attn_norm", "decoder.self_attn_norm", 0)):
            x, y = steady(page, f"({BOX})('{name}')")          # scrolls the diagram into view
            # plotly reports a click on the point it hovers: the pointer rests there first, as a
            # hand does (its hover is worked out on the next animation frame after a move).
            page.mouse.move(x, y)
            page.wait_for_timeout(300)
            page.mouse.click(x, y)
            page.wait_for_function(f"({CHOSEN})", arg=[part, layer], timeout=60000)
            settle(page)
            assert page.locator('[data-testid="stException"]').count() == 0
            main = page.locator('[data-testid="stMain"]')
            assert main.get_by_text(name, exact=True).count() >= 1          # the tensors' title names it
            chosen = page.evaluate("""() => { const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
                .find(el => (el.data || []).some(t => Array.isArray(t.customdata)));
                return gd.data.filter(t => t.fillcolor === '#ff7f0e').map(t => t.x.filter(v => v !== null).length); }""")
            assert chosen == [5]                                              # one box drawn orange: the clicked one
    finally:
        page.close()
