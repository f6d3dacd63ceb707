"""The page's HTML names the server for Streamlit's front end (ui/static_gzip.py), so it does not
first ask /<page>/_stcore/health and /<page>/_stcore/host-config (two 404s, two console errors
on every page). The browser tests (tests/browser/test_pages.py) check that no request fails."""
from __future__ import annotations

from pathlib import Path

import streamlit

from ui.static_gzip import ST_STATIC, with_base_script

INDEX = (Path(streamlit.__file__).parent / "static" / "index.html").read_bytes()


def test_base_script_comes_before_streamlits_module():
    html = with_base_script(INDEX, "")
    script = (b'<script>window.__streamlit = Object.assign({}, window.__streamlit, '
              b'{BACKEND_BASE_URL: window.location.origin + "/"})</script>')
    assert html.count(script) == 1
    assert html.index(script) < html.index(b'<script type="module"')
    assert html.replace(script + b"\n    ", b"") == INDEX                 # nothing else changes


def test_base_script_follows_the_base_url_path_and_is_added_once():
    html = with_base_script(INDEX, "/course/")
    assert b'window.location.origin + "/course"' in html
    assert with_base_script(html, "/course/") == html                     # a second pass adds nothing
    assert with_base_script(b"<p>not streamlit</p>", "") == b"<p>not streamlit</p>"


def test_streamlit_front_end_still_reads_backend_base_url():
    """The pinned Streamlit's bundle reads window.__streamlit.BACKEND_BASE_URL to find its server;
    if a new version drops it, the two 404s come back and this says why."""
    bundles = list((ST_STATIC / "static" / "js").glob("index.*.js"))
    assert bundles and any(b"BACKEND_BASE_URL" in p.read_bytes() and b"window.__streamlit" in p.read_bytes()
                           for p in bundles)
