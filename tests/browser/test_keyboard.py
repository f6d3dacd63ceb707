"""The sidebar's navigation by keyboard alone (issue 43 §2, ui/navigation.py): Tab from the top of a
lesson reaches every page's link in course order, each with a visible focus ring and the current
one marked (aria-current), and Enter on a link opens that lesson."""
from __future__ import annotations

from tests.browser.conftest import WAIT_MS, settle
from ui.course import existing_lessons

FOCUSED = """() => { const a = document.activeElement;
    return {nav: a.closest('.st-key-anatomy-nav') !== null, href: a.getAttribute('href'),
            ring: getComputedStyle(a).outlineStyle, current: a.getAttribute('aria-current')}; }"""


def test_tab_walks_the_lessons_and_enter_opens_one(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{server_url}/masks?lang=zh")
    settle(page)
    reached = []
    for _ in range(60):                      # Streamlit's "skip to content" link comes first
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused["nav"]:
            reached.append(focused)
        elif reached:
            break                            # past the last link
    assert [f["href"] for f in reached] == [""] + [lesson.url_path for lesson in existing_lessons()]
    assert all(f["ring"] not in ("none", "") for f in reached), reached
    assert [f["href"] for f in reached if f["current"] == "page"] == ["masks"]
    # Back to the next lesson's link (B4), then Enter.
    for _ in range(len(reached) - [f["href"] for f in reached].index("cross-attention")):
        page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED)["href"] == "cross-attention"
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.pathname.endsWith('/cross-attention')", timeout=WAIT_MS)
    settle(page)
    page.wait_for_function("() => document.querySelector('.st-key-anatomy-nav a[aria-current=\"page\"]')"
                           "?.getAttribute('href') === 'cross-attention'", timeout=WAIT_MS)
    page.close()


RING = """() => { const a = document.activeElement;
    return {tag: a.tagName, text: (a.innerText || '').trim(), ring: getComputedStyle(a).outlineStyle}; }"""


def test_the_language_switch_shows_its_focus(chromium_browser, server_url):
    """ui/theme.py: every focused button draws a ring (Streamlit's segmented control draws none)."""
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{server_url}/masks?lang=en")
    settle(page)
    page.locator('[data-testid="stSidebar"] button', has_text="中文").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")                     # reached by the keyboard: :focus-visible
    focused = page.evaluate(RING)
    assert focused["tag"] == "BUTTON" and focused["text"] == "中文", focused
    assert focused["ring"] not in ("none", ""), focused
    page.close()


def test_reduced_motion_turns_transitions_off(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900}, reduced_motion="reduce")
    page.goto(f"{server_url}/masks?lang=en")
    settle(page)
    durations = page.evaluate("""() => [...document.querySelectorAll('button')].map(
        (b) => parseFloat(getComputedStyle(b).transitionDuration) || 0)""")
    page.close()
    assert durations and max(durations) <= 0.001, durations
