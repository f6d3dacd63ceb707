"""Charts that stay on the page: one plotly.js plot per key, updated in place.

``st.plotly_chart`` in Streamlit 1.67 takes its element id from the figure, so every
changed figure became a new chart drawn from scratch (15-25 ms each here, more than the
script run of most lessons). This component keeps its ``<div>`` across reruns and hands a
new figure to ``Plotly.react`` (ui/chart.js). plotly.js itself is the copy that ships in
the plotly wheel, served by this app (``server.enableStaticServing``: ``static/``), so the
app works offline.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from _plotly_utils.utils import to_typed_array_spec
from plotly.io.json import to_json_plotly
from streamlit import config

from ui.streamlit_internals import main_script_path
from ui.words import tr

NAME = "anatomy_chart"
PRESENTING = "_classroom.present"   # ui.classroom._ON: this session presents (kept apart: no import cycle)
ROOT = Path(__file__).resolve().parent.parent
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


# ---- The component's JavaScript: ui/chart.js and the ES modules it imports (ui/chart/*.js), joined
# into the one module Streamlit runs (components.v2 hands ``js=`` text to the browser as a blob: URL
# and imports it, and a module there cannot import a relative path). Joined once, at import: the
# modules are the source and have their own tests (tests/js/, node --test); the page fetches nothing
# more. The modules keep to what joining needs: imports of ``{ names }`` from "./x.js" only, every
# top-level name once in all of them, only the entry (ui/chart.js) with an ``export default``.
_IMPORT = re.compile(r'^import \{([^}]*)\} from "(\./[\w/.-]+\.js)";[ \t]*\n', re.M)
_EXPORT = re.compile(r"^export (?=(?:async )?function|const |let |class )", re.M)
_TOP_NAME = re.compile(r"^(?:export )?(?:async )?(?:function\*?|const|let|class)\s+(\w+)", re.M)


def bundle_js(entry: Path) -> str:
    """``entry`` and the modules it imports, each once, those imported first, as one ES module."""
    entry = entry.resolve()
    order: list[tuple[Path, str]] = []

    def visit(path: Path, chain: tuple[Path, ...]) -> None:
        if path in chain:
            raise ValueError(f"import cycle: {' -> '.join(p.name for p in (*chain, path))}")
        if any(path == done for done, _ in order):
            return
        text = path.read_text(encoding="utf-8")
        for m in _IMPORT.finditer(text):
            visit((path.parent / m.group(2)).resolve(), (*chain, path))
        order.append((path, text))

    visit(entry, ())
    parts, owner = [], {}
    for path, text in order:
        body = _IMPORT.sub("", text)
        if path != entry:
            body = _EXPORT.sub("", body)
        left = [line for line in body.splitlines() if re.match(r"(import|export)\b", line)
                and not (path == entry and line.startswith("export default function"))]
        if left:
            raise ValueError(f"{path.name}: an import or export the bundle cannot join: {left[0]!r}")
        for name in _TOP_NAME.findall(body):
            if name in owner:
                raise ValueError(f"{name} is declared in {owner[name]} and {path.name}")
            owner[name] = path.name
        parts.append(f"// ---- {path.relative_to(ROOT).as_posix()}\n{body}")
    return "\n".join(parts)


_JS = bundle_js(Path(__file__).parent / "chart.js")

# ---- The component's code as a static file, fetched once a page (issue 39) ------------------------
# components.v2 sends a component's inline ``js=`` inside every element it draws: the chart's ~110 KB
# went to the browser with every chart of every run (C3's first page 1.2 MB of websocket, 0.10 MB
# before). The bundle is published once a process beside plotly.js, under a name with its digest (a
# browser keeps it a day: a new version is a new name), and each element carries only this loader,
# which imports it; the browser fetches and evaluates a module URL once a page. When the module
# cannot load, the loader writes the chart's message (data[0].failed: the data is a one-item list,
# chart() says why) as plain text, in the page's language. Kept under 1 KB (tests/test_chart.py).
_LOADER = """// ui/chart.py: the chart's code is a static file, imported once a page.
const SOURCE = new URL(%s, window.location.href).href;
let loading = null, draw = null;
export default function (component) {
  if (draw) return draw(component);
  let gone = false, release = null;
  loading = loading || import(SOURCE).then((m) => (draw = m.default));
  loading.then((ready) => { if (!gone) release = ready(component); }, (err) => {
    console.warn(err);
    const { parentElement } = component, data = (component.data || [])[0];
    if (gone || !data || typeof data.failed !== "string") return;
    let host = parentElement.querySelector(":scope > .anatomy-chart");
    if (!host) {
      host = document.createElement("div");
      host.className = "anatomy-chart";
      parentElement.appendChild(host);
    }
    host.textContent = data.failed;
  });
  return () => { gone = true; if (typeof release === "function") release(); };
}
"""


def module_name(text: str, stem: str) -> str:
    """A module's file name under /app/static/: ``<stem>.<digest>.js``."""
    return f"{stem}.{hashlib.sha256(text.encode()).hexdigest()[:12]}.js"


CHART_MODULE = module_name(_JS, "anatomy-chart")


def static_url(name: str) -> str:
    """Where the browser fetches a file of static/: ``/<server.baseUrlPath>/app/static/<name>``."""
    base = (config.get_option("server.baseUrlPath") or "").strip("/")
    return "/" + (base + "/" if base else "") + "app/static/" + name


def loader_js(name: str) -> str:
    """The few lines each element carries in place of the module ``name`` itself."""
    return _LOADER % json.dumps(static_url(name))
_CSS = """.anatomy-chart { width: 100%; }
.anatomy-sr { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.anatomy-live { display: flex; align-items: center; gap: 0.75rem; margin: 0 0 0.25rem; font-size: 0.95rem; }
.anatomy-live label { flex: 0 0 auto; max-width: 45%; }
.anatomy-live-value { margin-left: 0.5em; font-weight: 600; font-variant-numeric: tabular-nums; }
.anatomy-live input[type=range] { flex: 1 1 auto; min-width: 8rem; accent-color: #ff4b4b; cursor: pointer; }
.anatomy-pick { position: absolute; inset: 0; pointer-events: none; border-radius: 4px; }
.anatomy-pick:focus { outline: none; }
.anatomy-pick:focus-visible { outline: 3px solid #2f2d2b; outline-offset: 2px; }
.anatomy-pick-cursor { position: absolute; display: none; border: 3px solid #1d1d1f; border-radius: 2px;
  box-shadow: 0 0 0 2px #fff, inset 0 0 0 2px #fff; }
.anatomy-live-present { font-size: 24px; }
.anatomy-live-present input[type=range] { height: 2rem; }"""


def static_dir() -> Path:
    """The folder the server serves at /app/static/: ``static/`` beside the main script."""
    return _static_dir_of(main_script_path() or str(ROOT / "app.py"))


@functools.lru_cache(maxsize=16)
def _static_dir_of(main_script: str) -> Path:
    # Resolved once per main script: resolve() walks the path with a system call per part,
    # and every chart of every run asked (~3 % of a class's server time).
    return Path(main_script).resolve().parent / "static"


_PUBLISH_LOCK = threading.Lock()


def _publish(folder: Path, name: str, size: Callable[[], int], write: Callable) -> Path:
    """Put a file where the app's server serves it, once a process (``write(out)`` fills it,
    ``size()`` says how large it is). Every chart asks: once done, a dictionary lookup (no stat(),
    nothing encoded: both were 3-5 % of a class's server samples when asked every time).

    Safe when many first charts call it at once: one thread writes under the lock, each copy
    goes to a temporary file of its own and is renamed into place (atomic, so two servers
    starting at once from one folder both end well too)."""
    with _PUBLISH_LOCK:
        if (folder, name) in _PUBLISHED:
            return _PUBLISHED[folder, name]
        size = size()
        target = folder / name
        if not target.exists() or target.stat().st_size != size:
            folder.mkdir(exist_ok=True)
            fd, partial = tempfile.mkstemp(prefix=name + ".", suffix=".tmp", dir=folder)
            try:
                with os.fdopen(fd, "wb") as out:
                    write(out)
                os.replace(partial, target)
            except BaseException:
                Path(partial).unlink(missing_ok=True)
                raise
        _PUBLISHED[folder, name] = target
        return target


_PUBLISHED: dict[tuple[Path, str], Path] = {}


def publish_plotly_js(folder: Path) -> Path:
    """The plotly wheel's plotly.min.js, served at /app/static/plotly.min.js."""
    def copy(out) -> None:
        with open(PLOTLY_JS, "rb") as src:
            shutil.copyfileobj(src, out)
    return _publish(folder, "plotly.min.js", lambda: PLOTLY_JS.stat().st_size, copy)


def publish_module(folder: Path, name: str, text: str) -> Path:
    """A component's JavaScript (``text``), served at /app/static/``name``."""
    return _publish(folder, name, lambda: len(text.encode("utf-8")), lambda out: out.write(text.encode("utf-8")))


def publish_chart_js(folder: Path) -> Path:
    return publish_module(folder, CHART_MODULE, _JS)


def plotly_url() -> str:
    """Where the browser fetches plotly.js: ``/<server.baseUrlPath>/app/static/...``."""
    return static_url("plotly.min.js") + "?v=" + plotly.__version__


# Keys whose arrays plotly sends as plain lists, not typed arrays (as plotly's own to_dict).
_PLAIN_KEYS = frozenset(("geojson", "layer", "layers", "range"))


def _typed(obj, key: str = ""):
    """A copy of a figure's dicts and lists with every numeric numpy array as a typed array
    (``{"dtype": "f4", "bdata": ..., "shape": ...}``), the encoding plotly.py uses."""
    if isinstance(obj, dict):
        return {k: _typed(v, k) for k, v in obj.items() if v is not None}   # as plotly: None is unset
    if isinstance(obj, (list, tuple)):
        return [_typed(v) for v in obj]
    if isinstance(obj, np.ndarray) and key not in _PLAIN_KEYS:
        return to_typed_array_spec(obj)
    return obj


def _to_json(fig) -> str:
    """The JSON plotly.js draws: a ``viz.common.Figure`` (plain dicts) or any plotly figure."""
    if isinstance(fig, go.Figure):
        return pio.to_json(fig, validate=False)
    return to_json_plotly(_typed(dict(fig)))


def chart(fig, key: str, failed_text: str, export: dict[str, str] | None = None,
          on_select: Callable[[], None] | None = None, live: dict | None = None,
          on_commit: Callable[[], None] | None = None, present_most: int | None = None) -> None:
    """Draw ``fig`` under ``key``; the same key on the next run updates the same plot.
    ``failed_text`` is shown in its place if the browser cannot load plotly.js. ``export``:
    the titles of the chart's PNG / SVG / CSV buttons (keys "png", "svg", "csv"), built in the
    browser from the figure it already has (ui/chart.js: no server work until one is pressed).
    ``on_select``: a callback run (before the rerun) when a point is clicked; it reads the point's
    ``customdata`` as ``st.session_state[key]["select"]`` (C1's diagram: click a sub-layer).
    ``live``: frames and a slider of the chart's own (ui/live.py); ``on_commit`` runs (before the
    rerun) when the slider is let go, reading the value as ``st.session_state[key]["commit"]``.
    A clickable chart is chosen from by keyboard too (ui/chart/pick.js): Tab reaches it, the arrow
    keys move over its points, Enter or Space sends the point as a click does. ``present_most``:
    in presenter mode, the most height the chart takes before the browser draws it a quarter
    larger and fits it to the slide (ui/chart/present.js); None, its own height."""
    folder = static_dir()
    publish_plotly_js(folder)
    publish_chart_js(folder)
    spec, revision = figure_json(fig)
    # Registered on each call: a new Streamlit runtime (AppTest) starts with no components;
    # registering the same definition again is a dictionary write.
    mount = st.components.v2.component(NAME, js=loader_js(CHART_MODULE), css=_CSS, isolate_styles=False)
    events = {} if on_select is None else {"on_select_change": on_select}
    if on_commit is not None:
        events["on_commit_change"] = on_commit
    # The data goes in a one-item tuple (a list in the browser, unwrapped by chart/plot.js's
    # ``sent``): Streamlit asks of every top-level value of a component's dict whether it is a
    # dataframe, which imports pandas and pyarrow (80 MB a process) and takes a quarter of a
    # millisecond for a dict; a tuple passes at once (issue 39: every chart, every run).
    mount(data=({"figure": spec, "revision": revision, "plotly": plotly_url(),
                 "failed": failed_text, "export": export, "select": on_select is not None,
                 "pick": tr("classroom.describe.pick") if on_select is not None else "",
                 # presenter mode (ui/classroom.py): the browser draws the type larger
                 "present": bool(st.session_state.get(PRESENTING)), "most": present_most, "live": live},),
          key=key, width="stretch", height="content", **events)


# ---- Chart JSON shared by every session (issue 17) -------------------------------------------
# A class sits mostly on the same control values, so many sessions draw equal figures. A figure's
# JSON (~1 ms to write for a 64 x 64 heatmap, more for larger ones) is written once per distinct
# figure for all sessions, found again by a digest of its data and layout (~0.15 ms). Plain
# strings only: nothing of one session is kept in another's.
_SPECS: OrderedDict[bytes, tuple[str, str]] = OrderedDict()
_SPECS_LOCK = threading.Lock()
_SPECS_MAX = 512
_PLAIN = (str, int, float, bool, type(None))


def _feed(h, value) -> None:
    if isinstance(value, np.ndarray):
        h.update(f"nd{value.dtype}{value.shape}".encode())
        h.update(repr(value.tolist()).encode() if value.dtype == object else value.tobytes())
    elif isinstance(value, dict):
        h.update(b"{")
        for k, v in value.items():
            h.update(repr(k).encode())
            _feed(h, v)
        h.update(b"}")
    elif isinstance(value, (list, tuple)) and not all(type(x) in _PLAIN for x in value):
        h.update(b"[")
        for x in value:
            _feed(h, x)
        h.update(b"]")
    else:
        h.update(repr(value).encode())
        h.update(b"|")


def figure_json(fig) -> tuple[str, str]:
    """(plotly JSON of ``fig``, its revision): written once per distinct figure, for all sessions."""
    if isinstance(fig, go.Figure):
        if fig.frames:
            spec = _to_json(fig)
            return spec, f"{zlib.crc32(spec.encode()):08x}"
        data, layout = fig._data, fig._layout
    else:
        known = getattr(fig, "_chart_json", None)     # this very figure, written before
        if known is not None:
            return known
        data, layout = fig["data"], fig["layout"]
    h = hashlib.blake2b(digest_size=20)
    _feed(h, data)
    _feed(h, layout)
    key = h.digest()
    with _SPECS_LOCK:
        entry = _SPECS.get(key)
        if entry is not None:
            _SPECS.move_to_end(key)
    if entry is None:
        spec = _to_json(fig)
        entry = (spec, f"{zlib.crc32(spec.encode()):08x}")
        with _SPECS_LOCK:
            _SPECS[key] = entry
            while len(_SPECS) > _SPECS_MAX:
                _SPECS.popitem(last=False)
    _remember(fig, entry)
    return entry


def _remember(fig, entry: tuple[str, str]) -> None:
    """Keep the JSON on the figure itself (a viz.common.Figure, never changed after it was made):
    a figure from a cache shared by every session (ui.frame.built_figure, ui.live) is written and
    looked up once, not hashed again on every run of every student (issue 39: the digest walked
    every figure of every run, ~5 % of the server's CPU in a class)."""
    try:
        fig._chart_json = entry
    except AttributeError:          # a plain dict: no attributes
        pass
