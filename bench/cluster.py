"""Replicas of the app and nginx in front of them, on loopback, with no Docker engine.

Used by the class benchmark (``--replicas N``) and tests/test_nginx_replicas.py. nginx runs with
deploy/nginx.conf itself: only the lines marked TEMPLATE change (ports, paths), so what is
tested is what compose.yaml deploys.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NGINX_CONF = ROOT / "deploy" / "nginx.conf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, wait_s: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the process ended with {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer /_stcore/health in {wait_s:.0f} s")
        time.sleep(0.25)


def _production_env() -> dict[str, str]:
    """This environment without the tests' switches (tests/conftest.py turns on plotly's
    figure validation, which a deployed server does not run)."""
    return {k: v for k, v in os.environ.items() if k != "ANATOMY_VALIDATE_FIGURES"}


@dataclass
class Replica:
    url: str
    port: int
    proc: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.proc.pid


@contextlib.contextmanager
def replicas(n: int, folder: Path = ROOT, cookie_secret: str | None = None, log_dir: Path | None = None):
    """``n`` processes of ``streamlit run app.py`` on free loopback ports, one cookieSecret for all."""
    secret = cookie_secret or secrets.token_hex(32)
    started: list[Replica] = []
    logs = []
    try:
        for i in range(n):
            port = free_port()
            log = open(log_dir / f"replica{i}.log", "w") if log_dir else subprocess.DEVNULL
            if log_dir:
                logs.append(log)
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                 "--server.address", "127.0.0.1", "--server.headless", "true"],
                cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                env={**_production_env(), "STREAMLIT_SERVER_COOKIE_SECRET": secret})   # not allowed as a flag
            started.append(Replica(f"http://127.0.0.1:{port}", port, proc))
        for r in started:
            wait_healthy(r.url, proc=r.proc)
        yield started
    finally:
        for r in started:
            r.proc.terminate()
        for r in started:
            try:
                r.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                r.proc.kill()
        for log in logs:
            log.close()


def render_nginx_conf(upstreams: list[str], listen: str, runtime: Path, static_root: Path) -> str:
    """deploy/nginx.conf with its TEMPLATE lines set for a run on this machine."""
    out, seen = [], set()
    for line in NGINX_CONF.read_text(encoding="utf-8").splitlines():
        if "# TEMPLATE:" not in line:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        what = line.split("# TEMPLATE:", 1)[1].strip()
        seen.add(what)
        if what == "runtime paths":
            out += [f"{indent}{d}_temp_path {runtime / d};" for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")]
        elif what == "upstreams":
            out += [f"{indent}server {u};" for u in upstreams]
        elif what == "listen":
            out.append(f"{indent}listen {listen};")
        elif what == "streamlit static":
            out.append(f"{indent}root {static_root / 'streamlit'};")
        elif what == "app static":
            out.append(f"{indent}root {static_root / 'app'};")
        else:
            raise ValueError(f"unknown template line in {NGINX_CONF}: {line!r}")
    missing = {"runtime paths", "upstreams", "listen", "streamlit static", "app static"} - seen
    if missing:
        raise ValueError(f"{NGINX_CONF} lost its template lines: {sorted(missing)}")
    return "\n".join(out) + "\n"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None)


@contextlib.contextmanager
def nginx(upstreams: list[str], runtime: Path, static_root: Path | None = None):
    """Debian's nginx with deploy/nginx.conf on a free loopback port; yields (url, pid).

    ``static_root``: a folder made by deploy/build_static.py (one is built in ``runtime`` if not given)."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (scripts/test.sh installs Debian's nginx)")
    runtime = Path(runtime)
    runtime.mkdir(parents=True, exist_ok=True)
    if static_root is None:
        from deploy.build_static import build
        static_root = build(runtime / "static", level=6)
    port = free_port()
    conf = runtime / "nginx.conf"
    conf.write_text(render_nginx_conf(upstreams, f"127.0.0.1:{port}", runtime, Path(static_root)), encoding="utf-8")
    pid_file = runtime / "nginx.pid"
    glob = f"daemon off; pid {pid_file}; error_log {runtime / 'error.log'} warn;"
    if os.geteuid() == 0:
        glob += " user root;"     # workers must read the static files under a private temp folder
    # -e: the error log from the start (a user who is not root cannot open Debian's default one)
    args = ["-p", str(runtime), "-e", str(runtime / "error.log"), "-c", str(conf), "-g", glob]
    check = subprocess.run([binary, "-t", "-q", *args],
                           capture_output=True, text=True)
    if check.returncode:
        raise RuntimeError(f"nginx rejected the configuration:\n{check.stderr}")
    proc = subprocess.Popen([binary, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"nginx ended: {proc.stderr.read().decode(errors='replace')}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not listen in 20 s") from None
                time.sleep(0.1)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


PG_BIN = Path(os.environ.get("ANATOMY_PG_BIN", "/usr/lib/postgresql/15/bin"))


@contextlib.contextmanager
def postgresql(folder: Path | None = None):
    """A throwaway PostgreSQL server (Debian's) in a temporary folder, on a free loopback port, with
    its defaults (fsync on: what a class's server runs); yields its SQLAlchemy URL. As root, the
    server runs as Debian's ``postgres`` user (PostgreSQL refuses root), in a folder that user owns."""
    import pwd  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    if not (PG_BIN / "pg_ctl").exists():
        raise RuntimeError(f"PostgreSQL is not at {PG_BIN} (apt-get install postgresql, or set ANATOMY_PG_BIN)")
    own = folder is None
    folder = Path(tempfile.mkdtemp(prefix="ta-bench-pg-")) if own else Path(folder)
    as_user: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()

    def pg(tool: str, *args: str) -> None:
        subprocess.run([*as_user, str(PG_BIN / tool), *args], check=True, capture_output=True, text=True)

    started = False
    try:
        pg("initdb", "-D", str(data), "-U", "anatomy", "--auth=trust", "-E", "UTF8")
        pg("pg_ctl", "-D", str(data), "-l", str(folder / "postgresql.log"), "-w", "start",
           "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200")
        started = True
        pg("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "anatomy", "anatomy")
        yield f"postgresql+psycopg://anatomy@127.0.0.1:{port}/anatomy"
    finally:
        if started:
            with contextlib.suppress(subprocess.CalledProcessError):
                pg("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        if own:
            shutil.rmtree(folder, ignore_errors=True)
