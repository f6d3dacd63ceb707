"""A Streamlit server of this app on a free loopback port, for tests that need a live one."""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def live_server(folder: Path, log=subprocess.DEVNULL, wait_s: float = 120.0):
    """``streamlit run app.py`` in ``folder``; yields its URL once /_stcore/health answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=folder, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start in {folder}") from None
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
