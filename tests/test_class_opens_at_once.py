"""A class opens the link in the same second, right after the server starts, on a fresh clone
(no plotly.js copied yet): every session must get a clean lesson (issue 11: 59 of 100 got
an exception box when plotly's lazy pandas import raced, and concurrent first charts raced
on copying plotly.js)."""
from __future__ import annotations

import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.bench_class import pids_listening
from bench.stclient import Session
from tests.live_server import live_server
from ui.course import existing_lessons
from ui.memory import TRIM_EVERY_S

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = 48


def _fresh_clone(dest: Path) -> Path:
    """The files git would commit (tracked, or new and not ignored), as a fresh clone has them: no
    static/plotly.min.js, no caches."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    clone = _fresh_clone(tmp_path_factory.mktemp("clone"))
    assert not (clone / "static" / "plotly.min.js").exists()
    with open(clone / "server.log", "w") as log, live_server(clone, log) as url:
        yield url, clone


@pytest.mark.slow
def test_a_class_opening_the_link_at_once_gets_clean_lessons(fresh_server):
    url, clone = fresh_server
    lessons = existing_lessons()
    wanted = [(lessons[i % len(lessons)].url_path, "zh" if i % 2 else "en") for i in range(SESSIONS)]

    def open_one(item):
        path, lang = item
        session = Session(url, timeout=120)
        try:
            return path, lang, session.run(page=path, query=f"lang={lang}")
        finally:
            session.close()

    with ThreadPoolExecutor(max_workers=SESSIONS) as pool:
        results = list(pool.map(open_one, wanted))
    bad = [(p, lang, r.exceptions or r.errors) for p, lang, r in results if r.exceptions or r.errors]
    assert not bad, bad
    lost = [(p, lang) for p, lang, r in results if r.page_not_found]
    assert not lost, f"'Page not found' shown to {len(lost)} of {SESSIONS}: {lost[:5]}"
    unfinished = [(p, lang) for p, lang, r in results if not r.finished]
    assert not unfinished, unfinished
    assert all(r.components > 0 for _, _, r in results), "every lesson drew its charts"
    assert (clone / "static" / "plotly.min.js").stat().st_size > 1_000_000
    assert not list((clone / "static").glob("*.tmp")), "no half-copied plotly.js left behind"


# Issue 39: what one process holds once a class has opened every lesson (the test above: 48
# sessions at once, every lesson, both languages, SmolLM2 loaded when installed), the sessions
# still kept for their reconnection (120 s) and the freed memory handed back: measured
# 2026-12-07 at 1,198 MB (a server warmed one page at a time holds ~1,016 MB): SmolLM2's float32
# weights 513 MB (mapped from the cache file), torch ~210 MB, Python, Streamlit and our modules
# ~110 MB, SmolLM2's tokenizer 26 MB, the lessons' shared caches ~100 MB, the 48 live sessions
# the rest. pandas and pyarrow (80 MB) or PyTorch's compiler (68 MB) coming back would cross it.
CEILING_MB = 1250


@pytest.mark.slow
def test_the_server_holds_no_dataframe_library_and_stays_under_its_ceiling(fresh_server):
    url, _ = fresh_server
    (pid,) = pids_listening(int(url.rsplit(":", 1)[1]))
    time.sleep(2 * TRIM_EVERY_S + 2)        # the first quiet period after the class (ui/memory.py)
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert "/pandas/" not in maps and "/pyarrow/" not in maps, "no page draws an st.dataframe"
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    rss_mb = int(status["VmRSS"].split()[0]) / 1024
    assert rss_mb <= CEILING_MB, f"{rss_mb:.0f} MB after a class opened every lesson"
