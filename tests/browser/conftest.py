"""A live Streamlit server and the system Chromium, for tests that look at real pages."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"
# The screenshots are for a person to look at (the bar's "Look at it"): ANATOMY_SHOTS=0 takes none
# (.ci/run: no one opens a clean checkout's pictures, and a lesson drawn in a window as tall as itself,
# then encoded as PNG, was about a tenth of a layout test's time). The checks are the same either way.
SHOOT = os.environ.get("ANATOMY_SHOTS", "1") != "0"
# Waits are long but bounded: on a loaded CI machine (several test runs sharing two cores) a
# first page load once took over 30 s. A test that really hangs still fails, after WAIT_MS.
WAIT_MS = int(float(os.environ.get("ANATOMY_BROWSER_WAIT_S", "120")) * 1000)
CHANGE_MS = WAIT_MS // 2   # a figure changing after a key press
# One server a pytest-xdist worker (scripts/test.sh), each with its own log.
SERVER_LOG = f"server-{os.environ['PYTEST_XDIST_WORKER']}.log" if "PYTEST_XDIST_WORKER" in os.environ else "server.log"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def shoot(page, path, **options) -> bool:
    """``page.screenshot`` to ``path`` when SHOOT; whether it took one."""
    if SHOOT:
        page.screenshot(path=str(path), **options)
    return SHOOT


@pytest.fixture(scope="session")
def server_url(chromium_browser):
    port = free_port()
    SHOTS.mkdir(exist_ok=True)
    log = open(SHOTS / SERVER_LOG, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 2 * WAIT_MS / 1000
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"streamlit did not start; see tests/screenshots/{SERVER_LOG}")
        _warm_up(chromium_browser, url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)   # a loaded machine: streamlit may take a while to stop
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _warm_up(browser, url: str) -> None:
    """Open "/" once, so that the first timed or screenshotted page does not also pay for the
    server's first run (imports, ui/preload.py)."""
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=WAIT_MS)
    page.close()


# Every console error and uncaught exception of every page a browser test opens, since the test
# began (a list shared by the session's one browser; emptied before each test).
CONSOLE_ERRORS: list[str] = []


# What Chromium logs for a request a test aborted itself (``route.abort()``: test_chart blocks
# plotly.js on purpose). A server that fails answers with a status, or another net:: error.
ABORTED = "Failed to load resource: net::ERR_FAILED"


def watch(page) -> None:
    """Record ``page``'s console errors and page errors in CONSOLE_ERRORS."""
    page.on("console", lambda m: CONSOLE_ERRORS.append(f"console error on {page.url}: {m.text} {m.location}")
            if m.type == "error" and m.text != ABORTED else None)
    page.on("pageerror", lambda e: CONSOLE_ERRORS.append(f"page error on {page.url}: {e}"))


class WatchedBrowser:
    """Playwright's Browser, with every page it opens (alone, or in a context) watched.

    ``new_page`` hands out a tab kept from an earlier test when one is free (issue 40): a lesson
    loaded in a tab that has shown one before costs Chromium about half the CPU of a fresh tab in a
    fresh context (measured 2026-12-06: 2.4-3.6 s against 4.5-6.0 s a load; the renderer, its fonts
    and compiled scripts, and the HTTP cache are already there), and Chromium was most of the browser
    tests' time. A kept tab is as good as a fresh one to the next test: when a test closes it, the
    listeners, routes and media emulation the test added are taken off, the mouse released and put
    back at (0, 0), the origin's local and session storage emptied, the page left for about:blank and
    the context's cookies cleared. A tab the test changed in a way that cannot be undone (an init script, an
    exposed function) is closed for good. One tab of a kind is lent at a time: a test that opens a
    second page beside the first gets a fresh context, as before, so two pages of one test never
    share cookies.

    A test module opts out with ``KEPT_TABS = False`` (``ANATOMY_KEPT_TABS=0`` turns kept tabs off
    everywhere). test_live.py and test_d1_branch.py do: with kept tabs everywhere, two full runs of
    three here failed one of their tests each (D1's real-model bars read before their data; one run
    more during the temperature slider's frames; a key press on A3's offsets not seen), which fresh
    tabs have not failed; they time a page's own runs and frames, and a page that loads faster in a
    warm tab meets their races sooner. The tests that only load and read a page keep their tabs."""

    def __init__(self, browser):
        self._browser = browser
        self._kept: dict[tuple, dict] = {}     # context options -> {"context", "idle": [pages], "lent": page}
        self.keep = False                      # set for each test by _kept_tabs (below)

    def new_page(self, *args, viewport: dict | None = None, **options):
        try:
            kind = tuple(sorted(options.items()))
            hash(kind)
        except TypeError:
            kind = None
        if args or kind is None or not self.keep:
            return self._fresh(*args, viewport=viewport, **options)
        kept = self._kept.get(kind)
        if kept is None:
            kept = self._kept[kind] = {"context": self._browser.new_context(**options), "idle": [], "lent": None}
        if kept["lent"] is not None:
            return self._fresh(viewport=viewport, **options)
        if kept["idle"]:
            page = kept["idle"].pop()
        else:
            page = kept["context"].new_page()
            watch(page)
        page.set_viewport_size(viewport or {"width": 1280, "height": 720})   # Playwright's default
        kept["lent"] = page
        _lend(page, lambda: self._give_back(kept, page))
        return page

    def _fresh(self, *args, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if not (k == "viewport" and v is None)}
        page = self._browser.new_page(*args, **kwargs)
        watch(page)
        return page

    def _give_back(self, kept: dict, page) -> None:
        kept["lent"] = None
        lent = page.__dict__.pop("_lent")
        for name in ("on", "once", "add_init_script", "expose_function", "expose_binding",
                     "route", "emulate_media", "close"):
            page.__dict__.pop(name, None)
        if lent["spoilt"] or page.is_closed():
            page.close()
            return
        try:
            for event, handler in lent["listeners"]:
                try:
                    page.remove_listener(event, handler)
                except (KeyError, ValueError):
                    pass
            if lent["routed"]:
                page.unroute_all(behavior="ignoreErrors")
            if lent["emulated"]:
                page.emulate_media(media="null", color_scheme="null", contrast="null", reduced_motion="null", forced_colors="null")
            page.mouse.up()
            page.mouse.move(0, 0)       # where a fresh tab's pointer is: no hover left over a chart
            page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
            page.goto("about:blank")
            kept["context"].clear_cookies()
        except Exception:   # noqa: BLE001 - a tab that cannot be made clean is not kept
            page.close()
            return
        kept["idle"].append(page)

    def new_context(self, *args, **kwargs):
        context = self._browser.new_context(*args, **kwargs)
        context.on("page", watch)
        return context

    def __getattr__(self, name):
        return getattr(self._browser, name)


def _lend(page, give_back) -> None:
    """While a test holds ``page``: record what it adds that the next test must not inherit, and
    make ``page.close()`` give the tab back (WatchedBrowser.new_page)."""
    lent = {"listeners": [], "spoilt": False, "routed": False, "emulated": False}
    cls = type(page)

    def on(event, handler):
        lent["listeners"].append((event, handler))
        return cls.on(page, event, handler)

    def once(event, handler):
        lent["listeners"].append((event, handler))
        return cls.once(page, event, handler)

    def spoils(name):
        def call(*args, **kwargs):
            lent["spoilt"] = True
            return getattr(cls, name)(page, *args, **kwargs)
        return call

    def route(*args, **kwargs):
        lent["routed"] = True
        return cls.route(page, *args, **kwargs)

    def emulate_media(*args, **kwargs):
        lent["emulated"] = True
        return cls.emulate_media(page, *args, **kwargs)

    page.__dict__.update(_lent=lent, on=on, once=once, route=route, emulate_media=emulate_media,
                         add_init_script=spoils("add_init_script"), expose_function=spoils("expose_function"),
                         expose_binding=spoils("expose_binding"), close=lambda **_: give_back())


def pytest_configure(config):
    config.addinivalue_line("markers", "console_errors_ok: a browser test that provokes console errors on purpose")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A browser test fails on any console error or page error, as if it had asserted none."""
    CONSOLE_ERRORS.clear()
    result = yield
    if "chromium_browser" in item.fixturenames and not item.get_closest_marker("console_errors_ok"):
        errors, CONSOLE_ERRORS[:] = list(CONSOLE_ERRORS), []
        assert not errors, "the browser logged errors:\n" + "\n".join(errors)
    return result


@pytest.fixture(scope="session")
def chromium_browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: /usr/bin/chromium is missing")
        pytest.skip("system Chromium not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield WatchedBrowser(b)
        b.close()


@pytest.fixture(autouse=True)
def _kept_tabs(request):
    """Kept tabs (WatchedBrowser.new_page) for this test unless its module says ``KEPT_TABS = False``
    or ANATOMY_KEPT_TABS=0."""
    if "chromium_browser" in request.fixturenames:
        browser = request.getfixturevalue("chromium_browser")
        if isinstance(browser, WatchedBrowser):
            browser.keep = (getattr(request.module, "KEPT_TABS", True)
                            and os.environ.get("ANATOMY_KEPT_TABS", "1") != "0")


_RAN = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.getAttribute('data-test-script-state') !== 'running'
        && document.querySelector('[data-testid="stMain"] h1');
}"""
# Charts and code blocks draw after the script finishes: wait for every skeleton to go and
# for every chart element to hold a drawn plot (its <div> appears only once the component's
# code has run, and the plot once plotly.js has loaded: a fresh tab fetches it first), and for
# presenter mode's fitting of each chart to its slide to end (ui/chart.js: fitPresent). The other
# component, the classroom bar (ui/classroom.py), draws no plot.
_DRAWN = """() => document.querySelectorAll('[data-testid="stSkeleton"]').length === 0
    && Array.from(document.querySelectorAll('[data-testid^="stBidiComponent"]'))
           .every(el => el.querySelector('.anatomy-chart .main-svg') || el.querySelector('.anatomy-classroom'))
    && !document.querySelector('.anatomy-chart[data-fitting]')"""


QUIET_MS, SETTLE_MS = 120, 300
_QUIET = """([quiet, most]) => new Promise((done) => {
    const start = performance.now();
    let last = start;
    const seen = new MutationObserver(() => { last = performance.now(); });
    seen.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
    const look = () => {
        const now = performance.now();
        if (now - last >= quiet || now - start >= most) { seen.disconnect(); done(); } else setTimeout(look, 20);
    };
    setTimeout(look, 20);
})"""


def quiet(page, most_ms: int, quiet_ms: int = QUIET_MS) -> None:
    """Wait until nothing on the page has changed for ``quiet_ms``, or ``most_ms`` have passed: in
    place of a fixed pause of ``most_ms`` for a page that may still be changing."""
    page.evaluate(_QUIET, [quiet_ms, most_ms])


def settle(page, timeout_ms: int | None = None) -> None:
    """Wait until Streamlit has finished the current script run and drawn its charts.

    Bounded but generous (WAIT_MS). A page whose first load never showed the lesson (the
    websocket lost on a starved machine) is reloaded once, half-way through the wait.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    timeout_ms = timeout_ms or WAIT_MS
    try:
        page.wait_for_function(_RAN, timeout=timeout_ms // 2)
    except PlaywrightTimeout:
        if page.locator('[data-testid="stMain"] h1').count():
            page.wait_for_function(_RAN, timeout=timeout_ms // 2)   # a long run: keep waiting
        else:
            page.reload()
            page.wait_for_function(_RAN, timeout=timeout_ms // 2)
    page.wait_for_function(_DRAWN, timeout=timeout_ms)
    # Then the page quiet for QUIET_MS (a late relayout, a correction sent back), at most SETTLE_MS
    # (the fixed pause this was), and still finished and drawn.
    quiet(page, SETTLE_MS)
    page.wait_for_function(f"() => ({_RAN})() && ({_DRAWN})()", timeout=timeout_ms)


def press_until(page, key: str, done: str, arg=None, tries: int = 3) -> None:
    """Press ``key`` until the page's ``done(arg)`` holds.

    On a starved machine a key press once did nothing at all (the presenter's → at the end of a
    lesson: no run, the address unchanged for two minutes). A press is given WAIT_MS / 4; then,
    once the page is idle again and ``done`` still does not hold, the key is pressed again, with a
    warning that says so, so that a press lost for good still fails, after ``tries`` presses."""
    import warnings

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(1, tries + 1):
        page.keyboard.press(key)
        try:
            page.wait_for_function(done, arg=arg, timeout=WAIT_MS if attempt == tries else WAIT_MS // 4)
            return
        except PlaywrightTimeout:
            if attempt == tries:
                raise
        settle(page)
        if page.evaluate(done, arg):
            return
        warnings.warn(f"{key} changed nothing on {page.url}; pressed again", stacklevel=2)


def steady(page, script: str, arg=None, quiet_ms: int = 250):
    """``script(arg)``'s value once it has stayed the same for ``quiet_ms`` (a scroll has ended),
    within WAIT_MS."""
    last, since = page.evaluate(script, arg), time.monotonic()
    deadline = since + WAIT_MS / 1000
    while time.monotonic() - since < quiet_ms / 1000:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{script[:60]}... still changing after {WAIT_MS} ms")
        page.wait_for_timeout(50)
        now = page.evaluate(script, arg)
        if now != last:
            last, since = now, time.monotonic()
    return last
