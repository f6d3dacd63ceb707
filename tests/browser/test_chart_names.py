"""Every chart has an accessible name (its title) and a short description written from its data, in
the page's language (issue 43 §3; ui/chart/describe.js, tested on its own in tests/js/)."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import WAIT_MS, settle

CHARTS = """() => [...document.querySelectorAll('.anatomy-chart')].map((el) => {
  const note = document.getElementById(el.getAttribute('aria-describedby') || '');
  return {role: el.getAttribute('role'), name: el.getAttribute('aria-label'), text: note ? note.textContent : null};
})"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chart_is_named_and_described(chromium_browser, server_url, lang):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{server_url}/attention?lang={lang}")
    settle(page)
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")   # charts below the fold draw too
    page.wait_for_function("() => document.querySelectorAll('.anatomy-chart[role=figure]').length >= 3",
                           timeout=WAIT_MS)
    settle(page)
    charts = [c for c in page.evaluate(CHARTS) if c["role"] == "figure"]
    page.close()
    assert len(charts) >= 3
    for chart in charts:
        assert chart["name"], chart
        assert chart["text"], chart                                   # a description from the data
    heatmaps = [c for c in charts if ("grid of" if lang == "en" else "数值网格") in c["text"]]
    assert heatmaps, charts                                          # B1's attention weights
    assert all(re.search(r"\d", c["text"]) for c in heatmaps)         # its key number
    if lang == "zh":
        assert all(re.search("[\u4e00-\u9fff]", c["name"] + c["text"]) for c in charts)
