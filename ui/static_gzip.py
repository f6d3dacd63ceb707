"""Static files compressed once a process, not once a request, when the app serves them itself.

A class opening the link at once made the app's one Python process serve every student's first
visit: plotly.js (4.6 MB, at /app/static/) and Streamlit's own scripts (2.3 MB a page, at
/static/). Streamlit 1.67 gzips /app/static/ files at level 9 on every request, inside the event
loop that also carries every websocket (~0.2 s of CPU per student for plotly.js alone), and
sends /static/ uncompressed. 40 students opening a lesson in 5 s waited 21 s for these files
(bench/bench_class.py; profile: 55 % of the server's busy time in gzip and socket writes).

This wraps Streamlit's gzip middleware: a GET for a file under /static/ or /app/static/, from a
browser that accepts gzip and asks for no byte range, is answered from memory, compressed once
(the first request, or ui/preload for plotly.js). Anything else goes to Streamlit unchanged.
Behind nginx (deploy/nginx.conf) these paths never reach the app. Installed once a process from
ui/preload; if Streamlit's middleware is not where 1.67 has it, nothing changes.

The same wrapper tells the page where the server is. Opened at /<page>, Streamlit's front end
guesses its server from the address: it asks /<page>/_stcore/health and /<page>/_stcore/host-config
first, gets two 404s (two "Failed to load resource" errors in every page's console), then asks
/_stcore/... . The page's HTML (Streamlit's index.html) gets one inline script before Streamlit's
own, ``window.__streamlit = {BACKEND_BASE_URL: <origin>/<server.baseUrlPath>}``, which its front
end reads for exactly this (an app embedded elsewhere names its server so), and asks the right
place first. The HTML is asked for uncompressed from Streamlit and sent as it is (4 KB).
"""
from __future__ import annotations

import gzip
import json
import mimetypes
import threading
from pathlib import Path

import streamlit

from ui.streamlit_internals import gzip_middleware

ST_STATIC = (Path(streamlit.__file__).parent / "static").resolve()
# Streamlit's hashed file names never change content; plotly.js is asked for with ?v=<version>.
_CACHE_CONTROL = {"/static/": b"public, max-age=31536000, immutable", "/app/static/": b"public, max-age=86400"}
_MAX_FILES = 400
# Routes that are never a page's HTML (Streamlit's endpoints, files).
_NOT_PAGES = ("/_stcore/", "/static/", "/app/static/", "/media/", "/component/")
_LEVEL = 6     # plotly.js: 1.4 MB at 6, 1.4 MB at 9 for three times the CPU

_files: dict[str, tuple[bytes, bytes] | None] = {}   # route path -> (gzipped body, content type)
_lock = threading.Lock()
_installed = False


def _source(route: str, app_static: Path) -> Path | None:
    for prefix, root in (("/static/", ST_STATIC / "static"), ("/app/static/", app_static)):
        if route.startswith(prefix):
            path = (root / route[len(prefix):]).resolve()
            if path.is_relative_to(root.resolve()) and path.is_file():
                return path
    return None


def compressed(route: str, app_static: Path) -> tuple[bytes, bytes] | None:
    """(gzipped bytes, content type) of the static file at ``route``, or None if it is not one."""
    if route in _files:
        return _files[route]
    with _lock:
        if route in _files:
            return _files[route]
        path = _source(route, app_static)
        entry = None
        if path is not None:
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            if kind.endswith("javascript"):
                kind = "application/javascript"
            if kind.startswith("text/"):
                kind += "; charset=utf-8"
            entry = (gzip.compress(path.read_bytes(), _LEVEL, mtime=0), kind.encode())
        if len(_files) < _MAX_FILES:
            _files[route] = entry
        return entry


def _base_script(base_url: str) -> bytes:
    """The inline script that names the server's address for Streamlit's front end.

    Example: ``_base_script("course")`` sets ``BACKEND_BASE_URL`` to ``location.origin + "/course"``.
    """
    path = json.dumps("/" + base_url.strip("/"))
    return (b"<script>window.__streamlit = Object.assign({}, window.__streamlit, "
            b"{BACKEND_BASE_URL: window.location.origin + " + path.encode() + b"})</script>")


def with_base_script(html: bytes, base_url: str) -> bytes:
    """Streamlit's index.html with ``_base_script`` before its module script (unchanged if none)."""
    mark = b'<script type="module"'
    if mark not in html or b"window.__streamlit = Object.assign" in html:
        return html
    return html.replace(mark, _base_script(base_url) + b"\n    " + mark, 1)


async def _send_html_with_base(app, scope, receive, send, base_url: str) -> None:
    """Run ``app`` and, if it answers HTML, add the base script to it (the body is buffered)."""
    start: dict | None = None
    chunks: list[bytes] = []

    async def capture(message):
        nonlocal start
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers") or []).get(b"content-type", b"")
            if not kind.startswith(b"text/html"):
                await send(message)
                return
            start = message
        elif message["type"] == "http.response.body" and start is not None:
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                body = with_base_script(b"".join(chunks), base_url)
                headers = [(k, v) for k, v in start.get("headers") or [] if k not in (b"content-length", b"etag")]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": body})
        else:
            await send(message)

    await app(scope, receive, capture)


def install(app_static: Path) -> bool:
    """Wrap Streamlit's gzip middleware (once a process); False if it is not there."""
    global _installed
    found = gzip_middleware()
    if found is None:
        return False
    middleware, route_path, base_url = found
    with _lock:
        if _installed:
            return True
        _installed = True
    from streamlit import config
    prefixes = ("/static/", "/app/static/") if config.get_option("server.enableStaticServing") else ("/static/",)
    original = middleware.__call__

    async def __call__(self, scope, receive, send):
        if scope.get("type") == "http" and scope.get("method") == "GET":
            route = route_path(scope)
            base = "/" + base_url(self).strip("/")
            if base != "/" and route.startswith(base + "/"):
                route = route[len(base):]
            headers = dict(scope.get("headers") or [])
            if b"text/html" in headers.get(b"accept", b"") and not route.startswith(_NOT_PAGES):
                # A page: its HTML uncompressed from Streamlit, with the base script added.
                plain = [(k, v) for k, v in scope.get("headers") or []
                         if k not in (b"accept-encoding", b"if-none-match", b"if-modified-since")]
                await _send_html_with_base(original.__get__(self), {**scope, "headers": plain},
                                           receive, send, base_url(self))
                return
            if route.startswith(prefixes):
                if b"gzip" in headers.get(b"accept-encoding", b"") and b"range" not in headers:
                    hit = compressed(route, app_static)
                    if hit is not None:
                        body, kind = hit
                        cache = _CACHE_CONTROL["/static/" if route.startswith("/static/") else "/app/static/"]
                        await send({"type": "http.response.start", "status": 200, "headers": [
                            (b"content-type", kind), (b"content-encoding", b"gzip"),
                            (b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding"),
                            (b"cache-control", cache), (b"x-content-type-options", b"nosniff")]})
                        await send({"type": "http.response.body", "body": body})
                        return
        await original(self, scope, receive, send)

    middleware.__call__ = __call__
    return True
