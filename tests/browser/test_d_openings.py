"""Review D1 #6: clicking an "Openings to try" pill (D1, D2) fills the prompt box without Streamlit's
"created with a default value but also had its value set via the Session State API" warning in
the server log. The warning is only logged by a real server (AppTest has no runtime), once a process.
"""
from __future__ import annotations

import pytest

from tests.browser.conftest import SERVER_LOG, SHOTS, settle

WARNING = "was created with a default value but also had its value set via the Session State API"


@pytest.mark.parametrize("path,opening", [("generation", "大江东去，"), ("kv-cache", "将进酒：人生得")])
def test_opening_pill_sets_the_prompt_without_a_warning(chromium_browser, server_url, path, opening):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/{path}?lang=en")
        settle(page)
        page.locator("[data-testid=\"stMain\"] button", has_text=opening).first.click()
        page.wait_for_function(
            "(v) => [...document.querySelectorAll('[data-testid=\"stMain\"] input[type=\"text\"]')]"
            ".some((i) => i.value === v)", arg=opening, timeout=60_000)
        settle(page)
    finally:
        page.close()
    log = (SHOTS / SERVER_LOG).read_text(encoding="utf-8", errors="replace")
    assert WARNING not in log
