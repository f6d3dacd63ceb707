"""The chart component in a real Chromium: plotly.js comes from this app's server, and a
slider move redraws the chart in place (same element, new figure), not a new chart."""
from __future__ import annotations

import pytest

from tests.browser.conftest import CHANGE_MS, WAIT_MS, settle
from ui import chart

REMEMBER = """() => { window.__hosts = Array.from(document.querySelectorAll('.anatomy-chart'));
    window.__data = window.__hosts.map(el => el.data); return window.__hosts.length; }"""
CHANGED = """() => window.__hosts.some((el, i) => el.data !== window.__data[i])"""


def test_chart_redraws_in_place(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    modules: list[str] = []
    page.on("request", lambda r: modules.append(r.url) if "/app/static/anatomy-chart." in r.url else None)
    page.goto(f"{server_url}/attention?lang=zh")
    settle(page)
    # The chart's code came once for the page's charts, from the app's static files (issue 39: each
    # element carries only a loader); none is asked for again on a rerun below.
    assert len(modules) == 1 and modules[0].endswith(chart.CHART_MODULE), modules
    # plotly.js came from this app's server (the resource-timing list can be full by then:
    # look at the script element and what it defined instead).
    assert page.evaluate("""() => !!window.Plotly && Array.from(document.scripts)
        .some(s => new URL(s.src || location.href).pathname === '/app/static/plotly.min.js')""")
    assert page.evaluate(REMEMBER) >= 3
    slider = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]').first
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(CHANGED, timeout=CHANGE_MS)
    settle(page)
    # The charts on the page are the very elements that were there before the move.
    assert page.evaluate("() => Array.from(document.querySelectorAll('.anatomy-chart'))"
                         ".every((el, i) => el === window.__hosts[i])")
    assert page.evaluate("() => window.__hosts.every(el => el.querySelector('.main-svg'))")
    assert len(modules) == 1, modules
    # A narrower window: every chart refits its new width.
    page.set_viewport_size({"width": 1000, "height": 1000})
    page.wait_for_function("""() => window.__hosts.every(el =>
        Math.abs(el.querySelector('.main-svg').getBoundingClientRect().width - el.clientWidth) < 2)""", timeout=CHANGE_MS)
    # Another lesson, same tab: the old plots are freed, the new page draws its own.
    page.locator('[data-testid="stSidebarNav"] a[href$="/masks"]').click()   # the sidebar's navigation (ui/navigation.py)
    page.wait_for_function("() => location.pathname.endsWith('/masks')")
    settle(page)
    page.wait_for_function("() => window.__hosts.every(el => !el.isConnected && !el.data)", timeout=CHANGE_MS)
    assert page.locator(".anatomy-chart .main-svg").count() >= 4
    assert not errors, errors
    page.close()


@pytest.mark.parametrize("blocked", ["plotly.min.js*", "anatomy-chart.*"])
def test_chart_says_so_when_plotly_cannot_load(chromium_browser, server_url, blocked):
    """No plotly.js or no chart module (a proxy that blocks it, a broken install): the chart's place
    says what went wrong, in the page's language, instead of staying blank."""
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route(f"**/app/static/{blocked}", lambda route: route.abort())
    page = context.new_page()
    page.goto(f"{server_url}/attention?lang=zh")
    page.wait_for_function("() => document.querySelectorAll('.anatomy-chart').length >= 3"
                           " && Array.from(document.querySelectorAll('.anatomy-chart'))"
                           ".every(el => el.textContent.length > 0)", timeout=WAIT_MS)
    assert "plotly.js" in page.locator(".anatomy-chart").first.inner_text()
    assert "图表" in page.locator(".anatomy-chart").first.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0
    context.close()
