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
"""
from __future__ import annotations

import gzip
import mimetypes
import threading
from pathlib import Path

import streamlit

ST_STATIC = (Path(streamlit.__file__).parent / "static").resolve()
# Streamlit's hashed file names never change content; plotly.js is asked for with ?v=<version>.
_CACHE_CONTROL = {"/static/": b"public, max-age=31536000, immutable", "/app/static/": b"public, max-age=86400"}
_MAX_FILES = 400
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


def install(app_static: Path) -> bool:
    """Wrap Streamlit's gzip middleware (once a process); False if it is not there."""
    global _installed
    try:
        from streamlit.web.server.starlette import starlette_gzip_middleware as sgm
        middleware = sgm.SelectiveGZipMiddleware
        route_path = sgm._route_path
    except (ImportError, AttributeError):
        return False
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
            base = "/" + (self._base_url or "").strip("/")
            if base != "/" and route.startswith(base + "/"):
                route = route[len(base):]
            if route.startswith(prefixes):
                headers = dict(scope.get("headers") or [])
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
