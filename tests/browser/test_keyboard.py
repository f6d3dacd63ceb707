"""The sidebar's navigation by keyboard alone (issue 43 §2, ui/navigation.py): Tab from the top of a
lesson reaches every page's link in course order, each with a visible focus ring and the current
one marked (aria-current), and Enter on a link opens that lesson."""
from __future__ import annotations

import pytest

from tests.browser.conftest import WAIT_MS, settle
from ui.course import existing_lessons

FOCUSED = """() => { const a = document.activeElement;
    const nav = a.closest('[data-testid="stSidebarNav"]') !== null;
    return {nav, href: nav ? new URL(a.href).pathname.replace(/\\/+$/, '').split('/').pop() : a.getAttribute('href'),
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
    page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebarNav\"] a[aria-current=\"page\"]')"
                           "?.href.endsWith('/cross-attention')", timeout=WAIT_MS)
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


# A chart's toolbar (plotly's modebar) reached by Tab, read two frames after the key: plotly fades it in
# from nothing over 0.3 s and draws its icons at 30 % opacity, so a focused button was all but
# invisible (its opacity and its ancestors' multiplied: ~0.04). ui/theme.py shows it at once.
TOOLBAR = """async () => {
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const a = document.activeElement;
    let opacity = 1;
    for (let e = a; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
    const s = getComputedStyle(a), icon = a.querySelector('.icon path');
    return {button: a.matches('[data-testid="stMain"] .modebar-btn'), title: a.getAttribute('data-title'), opacity,
            ring: [s.outlineStyle, parseFloat(s.outlineWidth)], fill: icon ? getComputedStyle(icon).fill : null};
}"""


def test_a_chart_toolbar_button_shows_when_focused(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{server_url}/masks?lang=en")
    settle(page)
    page.locator('[data-testid="stMain"] .modebar-btn').first.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")                     # reached by the keyboard: :focus-visible
    first = page.evaluate(TOOLBAR)
    page.keyboard.press("Tab")                     # the next button of the same toolbar
    second = page.evaluate(TOOLBAR)
    page.close()
    for got in (first, second):
        assert got["button"] and got["opacity"] >= 0.9, got
        assert got["ring"][0] not in ("none", "") and got["ring"][1] >= 2, got
        assert got["fill"].startswith("rgb(") and not got["fill"].startswith("rgba("), got   # the icon opaque
    assert first["title"] != second["title"]


def test_reduced_motion_turns_transitions_off(chromium_browser, server_url):
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900}, reduced_motion="reduce")
    page.goto(f"{server_url}/masks?lang=en")
    settle(page)
    durations = page.evaluate("""() => [...document.querySelectorAll('button')].map(
        (b) => parseFloat(getComputedStyle(b).transitionDuration) || 0)""")
    page.close()
    assert durations and max(durations) <= 0.001, durations


# ---- A keyboard walk of every lesson (issue 43 §2) -------------------------------------------------
# Every control of the lesson's main column is a Streamlit widget (by its test id) or a clickable
# chart's keyboard layer (ui/chart/pick.js). Each visible one is numbered; Tab from the lesson's
# title must reach each of them (a radio group is one stop), and every stop must look different when
# focused than when not (a ring, a shadow or a border: how each widget shows its focus).
WIDGETS = ("stSlider", "stSelectbox", "stRadio", "stCheckbox", "stButton", "stTextInput", "stTextArea",
           "stNumberInput", "stButtonGroup", "stExpander", "stPopover", "stDownloadButton", "stMultiSelect")
MARK = """(widgets) => {
    const main = document.querySelector('[data-testid="stMain"]');
    const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
    const found = [...main.querySelectorAll(widgets.map(w => `[data-testid="${w}"]`).join(', ') + ', .anatomy-pick')]
        .filter(shown).filter(el => !el.parentElement.closest(widgets.map(w => `[data-testid="${w}"]`).join(', ')));
    found.forEach((el, i) => el.setAttribute('data-kb', String(i)));
    const title = main.querySelector('h1');
    title.setAttribute('tabindex', '-1');
    title.focus();
    window.__kbStops = [];
    const stops = main.querySelectorAll('a[href], button, input, select, textarea, [tabindex]').length;
    return [found.map(el => el.classList.contains('anatomy-pick') ? 'chart' : el.getAttribute('data-testid')), stops];
}"""
# The look of a focused control and what round it could show its focus: its widget (or itself and
# three ancestors) and everything in it.
LOOK = """(el) => {
    const root = el.closest('[data-kb]') || el.parentElement?.parentElement?.parentElement || el;
    const nodes = [el, root, ...root.querySelectorAll('*')];
    return nodes.map(n => { const s = getComputedStyle(n);
        return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.borderColor].join(' '); }).join('|');
}"""
# Read two frames after the key: a widget that shows its focus through its own state (a select box's
# border) draws it on the next render.
STOP = f"""async () => {{
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const a = document.activeElement;
    if (!a || !a.closest('[data-testid="stMain"]')) return {{main: false}};
    window.__kbStops.push([a, ({LOOK})(a)]);
    const w = a.closest('[data-kb]');
    return {{main: true, widget: w ? Number(w.getAttribute('data-kb')) : null}};
}}"""
# After the walk, nothing focused: each stop's look again. Stops that look the same both ways.
NO_RING = f"""() => {{
    document.activeElement.blur();
    return window.__kbStops.filter(([el, look]) => el.isConnected && ({LOOK})(el) === look)
        .map(([el]) => (el.closest('[data-kb]')?.getAttribute('data-testid') || el.tagName) + ': '
             + (el.getAttribute('aria-label') || el.innerText || el.value || '').trim().slice(0, 40));
}}"""


def _walk(page) -> tuple[list[str], set[int], list[str]]:
    """Tab from the lesson's title to past its last control: (the controls, those reached, the stops
    that showed no focus)."""
    controls, stops = page.evaluate(MARK, list(WIDGETS))
    reached: set[int] = set()
    inside = 0
    for _ in range(stops + 40):
        page.keyboard.press("Tab")
        stop = page.evaluate(STOP)
        if not stop["main"]:
            if inside:
                break                                  # past the column's last control
            continue
        inside += 1
        if stop["widget"] is not None:
            reached.add(stop["widget"])
    return controls, reached, page.evaluate(NO_RING)


VALUE = """(sel) => { const el = document.querySelector(sel);
    return el && (el.getAttribute('aria-valuenow') ?? el.value ?? null); }"""
FIRST = '[data-testid="stMain"] [data-kb] '


def _operate(page) -> list[str]:
    """The first control of each kind operated by keys alone; what did not answer."""
    failed = []

    def changed(sel: str, keys: list[str], what: str) -> None:
        if not page.locator(sel).count():
            return
        page.locator(sel).first.focus()
        before = page.evaluate(VALUE, sel)
        for key in keys:
            page.keyboard.press(key)
        try:
            page.wait_for_function(f"(b) => ({VALUE})({sel!r}) !== b", arg=before, timeout=WAIT_MS // 4)
        except Exception:
            failed.append(f"{what}: {keys} left it at {before!r}")
        settle(page)

    slider = FIRST.replace(" [data-kb] ", " [data-kb] [role=slider]")
    # A slider at its top moves down instead.
    top = page.evaluate(f"() => {{ const s = document.querySelector({slider!r}); return s && s.getAttribute('aria-valuenow') === s.getAttribute('aria-valuemax'); }}")
    changed(slider, ["ArrowLeft" if top else "ArrowRight"], "slider")
    changed(FIRST + '[data-testid="stSelectbox"] input', ["ArrowDown", "ArrowDown", "Enter"], "select box")
    changed(FIRST + '[data-testid="stNumberInput"] input', ["ArrowUp", "Enter"], "number box")
    toggle = FIRST + '[data-testid="stCheckbox"] input'
    if page.locator(toggle).count():
        page.locator(toggle).first.focus()
        before = page.locator(toggle).first.is_checked()
        page.keyboard.press("Space")
        try:
            page.wait_for_function(f"(b) => document.querySelector({toggle!r}).checked !== b", arg=before,
                                   timeout=WAIT_MS // 4)
        except Exception:
            failed.append("toggle: Space did not turn it")
        settle(page)
    # A segmented control: a choice not yet made, pressed with Space, becomes the chosen one.
    segment = f'{FIRST}[data-testid="stButtonGroup"] button:not([data-testid$="Active"])'
    if page.locator(segment).count():
        label = page.locator(segment).first.inner_text()
        page.locator(segment).first.focus()
        page.keyboard.press("Space")
        try:
            page.wait_for_function("""(t) => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stButtonGroup"] button[data-testid$="Active"]')]
                .some(b => b.innerText === t)""", arg=label, timeout=WAIT_MS // 4)
        except Exception:
            failed.append(f"segmented control: Space on {label!r} did not choose it")
        settle(page)
    # "Try this": Space on the first option answers the question.
    radio = FIRST + '[data-testid="stRadio"] input[type=radio]'
    if page.locator(radio).count():
        page.locator(radio).first.focus()
        page.keyboard.press("Space")
        try:
            page.wait_for_function(f"() => document.querySelector({radio!r}).checked", timeout=WAIT_MS // 4)
        except Exception:
            failed.append("radio: Space did not choose the option")
        settle(page)
    if page.locator('[data-testid="stException"]').count():
        failed.append("an exception: " + page.locator('[data-testid="stException"]').first.inner_text()[:300])
    return failed


LESSONS = [(lesson.url_path, lesson.code.lower()) for lesson in existing_lessons()]


def keyboard_lang(slug: str) -> str:
    """The language the keyboard walk takes for the lesson at ``slug``: they take turns in course
    order (Chinese on every other lesson, from the second)."""
    n = [s for s, _ in LESSONS].index(slug)
    return "zh" if n % 2 else "en"


def by_keyboard(page, name: str, lang: str) -> list[str]:
    """Tab reaches every control of the lesson shown, each shows its focus, and the first of each
    kind (slider, select box, number box, toggle, segmented control, "Try this" option) answers keys
    alone: what fails. Under reduced motion: no transitions (ui/theme.py, a media query that applies
    at once), so that a focus shown by a colour that fades in (a number box's border) is read at its
    end, not at its start; the page's own setting is given back after."""
    page.emulate_media(reduced_motion="reduce")
    try:
        controls, reached, no_ring = _walk(page)
        missed = [f"{i}: {kind}" for i, kind in enumerate(controls) if i not in reached]
        out = [f"{name} ({lang}): Tab never reached {missed} of {controls}"] if not controls or missed else []
        out += [f"{name} ({lang}): no focus shown on {no_ring}"] if no_ring else []
        failed = _operate(page)
        return out + ([f"{name} ({lang}): " + "; ".join(failed)] if failed else [])
    finally:
        page.emulate_media(reduced_motion="no-preference")


# test_every_control_by_keyboard[<lesson>] (each lesson opened once more, at 1440x900, with reduced
# motion) is gone: by_keyboard runs its checks on the page load of
# tests/browser/test_layout.py::test_lesson_fits_and_reacts[<lesson>-<keyboard_lang(lesson)>],
# at 1440x900 after the layout checks (issue 40: one page load fewer per lesson).


# ---- The clickable charts by keyboard (ui/chart/pick.js) ----------------------------------------
PICKS = '[data-testid="stMain"] .anatomy-pick'
# The keyboard layer ``n`` of the page: the point it is on (what Enter sends), what a screen reader
# reads for it, whether its cursor box is drawn on the chart, and whether it has the focus.
PICK_STATE = f"""(n) => {{
    const layer = document.querySelectorAll({PICKS!r})[n];
    const option = document.getElementById(layer.getAttribute('aria-activedescendant'));
    const cursor = layer.querySelector('.anatomy-pick-cursor'), c = cursor.getBoundingClientRect();
    const h = layer.parentElement.querySelector('.anatomy-chart').getBoundingClientRect();
    return {{value: layer.__value, label: option ? option.textContent : null,
             shown: getComputedStyle(cursor).display === 'block' && c.width > 0
                 && c.left >= h.left - 4 && c.right <= h.right + 4 && c.top >= h.top - 4 && c.bottom <= h.bottom + 4,
             focused: document.activeElement === layer, role: layer.getAttribute('role'),
             name: layer.getAttribute('aria-label')}};
}}"""


def _pick(page, keys: list[str], n: int = 0) -> dict:
    """Focus the page's ``n``-th clickable chart, press ``keys``, then Enter: the point it sent."""
    layer = page.locator(PICKS).nth(n)
    layer.scroll_into_view_if_needed()
    layer.focus()
    page.keyboard.press("Home")
    first = page.evaluate(PICK_STATE, n)
    for key in keys:
        page.keyboard.press(key)
    state = page.evaluate(PICK_STATE, n)
    assert state["focused"] and state["role"] == "listbox" and state["name"], state
    assert state["shown"], f"no cursor on the chart: {state}"
    assert state["label"] and state["value"] != first["value"], (first, state)
    page.keyboard.press("Enter")
    return state


# The sliders and address after a grid's cell "a,b" was sent: the two URL-bound controls hold a and b.
SENT_CELL = """([keys, cell]) => { const url = new URLSearchParams(location.search);
    return cell.split(',').every((v, i) => url.get(keys[i]) === v); }"""
# C1: "encoder.layers.1.ffn" opens the sub-layer box at "encoder.ffn" and the layer slider at 1.
SENT_PART = """(name) => { const m = /^(\\w+)\\.layers\\.(\\d+)\\.(\\w+)$/.exec(name);
    const boxes = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stSelectbox"] input')];
    const slider = document.querySelector('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]');
    return !!m && boxes.some(e => e.value === m[1] + '.' + m[3]) && !!slider && slider.value === m[2]; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c1_diagram_by_keyboard(chromium_browser, server_url, lang):
    """C1's diagram: the arrow keys move over its boxes, Enter opens the one reached (as a click)."""
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/encoder-decoder?lang={lang}")
        settle(page)
        state = _pick(page, ["ArrowDown", "ArrowRight", "ArrowDown"])
        page.wait_for_function(f"({SENT_PART})", arg=state["value"], timeout=WAIT_MS)
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.evaluate(PICK_STATE, 0)["value"] == state["value"]      # still on it after the rerun
    finally:
        page.close()


# (lesson, query, the two URL keys a cell's "a,b" goes to, keys pressed after Home)
GRIDS = [("heads-at-work", "f1", "lang=en", ("f1.layer", "f1.head"), ["ArrowRight", "ArrowDown"]),
         ("patching", "f4", "lang=zh", ("f4.layer", "f4.pos"), ["ArrowRight", "ArrowDown", "ArrowRight"]),
         ("heads", "b2-explorer", "lang=zh&b2.lm=smollm2&b2.ex_open=true&b2.ex.lm=smollm2", ("b2.ex_layer", "b2.ex_head"),
          ["ArrowRight", "ArrowRight", "ArrowDown"])]


@pytest.mark.parametrize("slug,name,query,keys,moves", GRIDS, ids=[g[1] for g in GRIDS])
def test_head_map_by_keyboard(chromium_browser, server_url, slug, name, query, keys, moves):
    """F1's grids, F4's map, the explorer's map on SmolLM2: a cell reached by the arrow keys and
    sent with Enter moves the lesson's two sliders (and the address) as a click on it does."""
    from tests.real_util import need_package

    need_package()
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/{slug}?{query}")
        settle(page)
        state = _pick(page, moves)
        page.wait_for_function(f"({SENT_CELL})", arg=[list(keys), state["value"]], timeout=WAIT_MS)
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


def test_d1_branch_by_keyboard(chromium_browser, server_url):
    """D1 on SmolLM2: Generate pressed with Enter, then a step's bar reached with ↓ and sent with
    Space branches the generation there, as a click on the bar does."""
    from tests.real_util import need_package

    need_package()
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server_url}/generation?lang=en&d1.lm=smollm2&d1.max_new=12&d1.temperature=1&d1.seed=3&d1.real_step=3")
        settle(page)
        page.get_by_role("button", name="Generate", exact=True).focus()
        page.keyboard.press("Enter")
        page.wait_for_selector(f'[class~="st-key-d1-real_bars"] {PICKS.split(" ")[-1]}', timeout=WAIT_MS)
        settle(page)
        n = page.evaluate(f"""() => [...document.querySelectorAll({PICKS!r})]
            .indexOf(document.querySelector('[class~="st-key-d1-real_bars"] .anatomy-pick'))""")
        layer = page.locator(PICKS).nth(n)
        layer.focus()
        page.keyboard.press("Home")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        state = page.evaluate(PICK_STATE, n)
        assert state["shown"] and state["label"], state
        page.keyboard.press("Space")
        page.wait_for_function("(t) => new URLSearchParams(location.search).get('d1.branch_token') === t",
                               arg=state["value"], timeout=WAIT_MS)
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "d1.branch_step=3" in page.url
    finally:
        page.close()
