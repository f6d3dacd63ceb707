"""A live Streamlit server and the system Chromium, for tests that look at real pages."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_url(chromium_browser):
    port = _free_port()
    log = open(ROOT / "tests" / "screenshots" / "server.log", "w") if SHOTS.mkdir(exist_ok=True) is None else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("streamlit did not start; see tests/screenshots/server.log")
        _warm_up(chromium_browser, url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def _warm_up(browser, url: str) -> None:
    """Open "/" once, so that the first timed or screenshotted page does not also pay for the
    server's first run (imports, ui/preload.py)."""
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=60000)
    page.close()


@pytest.fixture(scope="session")
def chromium_browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: /usr/bin/chromium is missing")
        pytest.skip("system Chromium not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def settle(page, timeout_ms: int = 30000) -> None:
    """Wait until Streamlit has finished the current script run."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') !== 'running'
                && document.querySelector('[data-testid="stMain"] h1');
        }""",
        timeout=timeout_ms,
    )
    # Charts and code blocks draw after the script finishes: wait for every skeleton to go and
    # for every chart element to hold a drawn plot (its <div> appears only once the component's
    # code has run, and the plot once plotly.js has loaded: a fresh tab fetches it first).
    page.wait_for_function(
        """() => document.querySelectorAll('[data-testid="stSkeleton"]').length === 0
            && Array.from(document.querySelectorAll('[data-testid^="stBidiComponent"]'))
                   .every(el => el.querySelector('.anatomy-chart .main-svg'))""",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(300)
