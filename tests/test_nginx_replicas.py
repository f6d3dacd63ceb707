"""Two replicas behind nginx, with deploy/nginx.conf itself (only its TEMPLATE lines changed: ports
and paths), no Docker engine: what compose.yaml deploys, on loopback.

- sticky sessions on a cookie: a browser's page, files, websocket and a reconnect all reach one
  replica, which resumes the very same Streamlit session after the reconnect (the other replica
  does not know it and would start a new one); fresh browsers from one address spread over both;
- nginx serves plotly.js and Streamlit's files itself, compressed and cached;
- the class benchmark: 2 replicas behind nginx draw the first lesson sooner than 1 replica alone.
"""
from __future__ import annotations

import contextlib
import gzip
import http.client
import os
import random
import socket
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa
import websocket
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

import i18n
from bench.bench_class import Browser, run_class, warm_up
from bench.cluster import PG_BIN, nginx, nginx_binary, postgresql, replicas
from bench.stclient import Session
from room import store as rs
from room.store import database_url

pytestmark = pytest.mark.slow


# The replicas trust forwarded addresses from this network only, as compose.yaml's trust the
# Compose network (FORWARDED_ALLOW_IPS, read by the uvicorn server Streamlit runs): nginx reaches
# them from 127.0.0.1, and the tests' clients come from loopback addresses outside it.
PROXIES = "127.0.0.0/30"


@pytest.fixture(scope="module")
def static(tmp_path_factory):
    """The files nginx serves itself, built once for the module's nginx servers (~7 s each time)."""
    from deploy.build_static import build  # noqa: PLC0415

    assert nginx_binary(), "nginx is missing: scripts/test.sh installs Debian's nginx"
    return build(tmp_path_factory.mktemp("static"), level=6)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, static):
    logs = tmp_path_factory.mktemp("replica-logs")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FORWARDED_ALLOW_IPS", PROXIES)
        with replicas(2, log_dir=logs) as reps, \
                nginx([r.url.removeprefix("http://") for r in reps], tmp_path_factory.mktemp("nginx"),
                      static_root=static) as (url, _):
            yield url, reps


def _get(url: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    resp = conn.getresponse()
    resp.body = resp.read()
    conn.close()
    return resp


def test_a_session_stays_on_its_replica_across_reruns_and_a_reconnect(cluster):
    url, reps = cluster
    addresses = {r.url.removeprefix("http://") for r in reps}
    seen = set()
    for i in range(12):
        browser = Browser(url)
        status, _, headers, _ = browser.get(f"/attention?lang={'zh' if i % 2 else 'en'}")
        assert status == 200
        cookie = browser.cookie_header()
        assert cookie.startswith("ta_replica="), headers
        replica = headers["X-Replica"]
        assert replica in addresses
        seen.add(replica)
        # Later requests carry the cookie: no new cookie, the same replica.
        status, _, again, _ = browser.get("/_stcore/host-config")
        assert status == 200 and again["X-Replica"] == replica and "Set-Cookie" not in again
        browser.close()

        session = Session(url, cookie=cookie)
        assert session.headers["x-replica"] == replica, "the websocket reached another replica"
        first = session.run("attention", "lang=en")
        assert first.finished and not first.exceptions and first.components > 0
        for steps in (1, 0, 1):
            moved = session.move_slider(first, "attention", "lang=en", steps=steps)
            assert moved.finished and not moved.exceptions
        sid = session.session_id
        session.close()

        # The browser reconnects (a dropped WiFi link): same replica, same Streamlit session.
        back = Session(url, cookie=cookie, resume=sid)
        assert back.headers["x-replica"] == replica
        again = back.run("attention", "lang=en")
        assert again.finished and not again.exceptions
        assert back.session_id == sid, "the session was not resumed: the reconnect reached another replica"
        back.close()
    assert seen == addresses, f"12 fresh browsers behind one address all went to {seen}"


def test_nginx_serves_static_files_compressed_and_cached(cluster):
    url, _ = cluster
    resp = _get(url, "/app/static/plotly.min.js?v=1", {"Accept-Encoding": "gzip"})
    assert resp.status == 200 and resp.getheader("Content-Encoding") == "gzip"
    assert resp.getheader("X-Replica") is None, "plotly.js came from a replica, not from nginx"
    assert "max-age" in resp.getheader("Cache-Control")
    js = gzip.decompress(resp.body)
    assert len(js) > 3_000_000 and len(resp.body) < len(js) / 2
    page = _get(url, "/", {"Accept-Encoding": "gzip"})
    html = gzip.decompress(page.body).decode() if page.getheader("Content-Encoding") == "gzip" else page.body.decode()
    script = next(part.split('"')[0] for part in html.split('src="./')[1:] if part.startswith("static/js/"))
    asset = _get(url, "/" + script, {"Accept-Encoding": "gzip"})
    assert asset.status == 200 and asset.getheader("Content-Encoding") == "gzip"
    assert "immutable" in asset.getheader("Cache-Control") and asset.getheader("X-Replica") is None
    from ui.chart import _JS, CHART_MODULE  # noqa: PLC0415
    module = _get(url, f"/app/static/{CHART_MODULE}", {"Accept-Encoding": "gzip"})   # the charts' code (issue 39)
    assert module.status == 200 and module.getheader("X-Replica") is None
    assert "javascript" in module.getheader("Content-Type") and gzip.decompress(module.body).decode() == _JS
    assert _get(url, "/_stcore/health").status == 200


def test_two_replicas_behind_nginx_draw_the_first_lesson_sooner_than_one(cluster):
    """The class benchmark, 100 students opening a lesson in the same second: through nginx over
    both replicas against the first replica alone (it serves its own files). The two set-ups
    take turns, twice, and the better median of each counts: the machine's other load drifts.
    Both replicas are warmed first, at once (every lesson in each language: the lecturer's own check),
    and each only once (issue 40: the first replica was warmed twice, one after the other, ~40 s)."""
    url, reps = cluster
    students = 100
    median = lambda xs: xs[len(xs) // 2]  # noqa: E731
    best = {"one": [], "two": []}
    with ThreadPoolExecutor(len(reps)) as pool:
        list(pool.map(warm_up, [r.url for r in reps]))
    for trial in range(2):
        one = run_class(reps[0].url, [reps[0].pid], students=students, seconds=3, burst=True, settle=0,
                        warm=False, label=f"1 replica, trial {trial + 1}")
        two = run_class(url, [r.pid for r in reps], students=students, seconds=3, burst=True, settle=0,
                        warm=False, label=f"2 replicas behind nginx, trial {trial + 1}")
        print("\n" + one.table() + "\n\n" + two.table())
        for name, report in (("one", one), ("two", two)):
            assert not report.errors, report.errors[:3]
            assert len(report.first_drawn) == students
            # plotly.js (4.6 MB) and Streamlit's scripts (2.3 MB a page) gzipped: ~2 MB a first visit.
            assert max(s.http_bytes for s in report.students) < 2.5 * 2**20
            best[name].append(median(report.first_drawn))
    assert min(best["two"]) < min(best["one"]), best


def test_the_same_config_file_is_what_compose_mounts():
    root = Path(__file__).resolve().parent.parent
    compose = (root / "compose.yaml").read_text(encoding="utf-8")
    dockerfile = (root / "Dockerfile").read_text(encoding="utf-8")
    assert "deploy/nginx.conf" in dockerfile or "deploy/nginx.conf" in compose
    assert "/_stcore/health" in dockerfile and "streamlit" in dockerfile
    assert "STREAMLIT_SERVER_COOKIE_SECRET" in compose
    conf = (root / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    assert not [line for line in conf.splitlines() if line.strip().startswith("ip_hash")]
    assert "hash $ta_sticky_key consistent" in conf and "proxy_read_timeout 3600s" in conf
    # The replicas believe X-Forwarded-For from their own network, the proxy's, and are reachable
    # only on it: no published port (a browser straight to a replica could forge the header).
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in conf
    subnet = "${TA_SUBNET:-172.30.42.0/24}"
    assert f"FORWARDED_ALLOW_IPS: {subnet}" in compose and f"- subnet: {subnet}" in compose
    app = compose.split("\n  app:\n", 1)[1].split("\n  db:\n", 1)[0]
    assert "ports:" not in app and "networks:\n      - classroom" in app
    assert "ENV FORWARDED_ALLOW_IPS=127.0.0.1" in dockerfile


def test_one_server_alone_sends_its_static_files_gzipped_once(cluster):
    """Without nginx the app serves plotly.js and Streamlit's scripts itself: compressed once a
    process (ui/static_gzip.py), byte for byte the files, with cache headers."""
    import streamlit

    from ui.chart import PLOTLY_JS

    _, reps = cluster
    url = reps[0].url
    _get(url, "/attention")    # a page run: ui/preload installs the wrapper
    Session(url).run("attention", "lang=en")
    plotly_js = _get(url, "/app/static/plotly.min.js?v=1", {"Accept-Encoding": "gzip, br"})
    assert plotly_js.status == 200 and plotly_js.getheader("Content-Encoding") == "gzip"
    assert gzip.decompress(plotly_js.body) == PLOTLY_JS.read_bytes()
    assert "max-age" in plotly_js.getheader("Cache-Control")
    page = _get(url, "/").body.decode()
    script = next(part.split('"')[0] for part in page.split('src="./')[1:] if part.startswith("static/js/"))
    asset = _get(url, "/" + script, {"Accept-Encoding": "gzip"})
    assert asset.getheader("Content-Encoding") == "gzip" and "immutable" in asset.getheader("Cache-Control")
    assert gzip.decompress(asset.body) == (Path(streamlit.__file__).parent / "static" / script).read_bytes()
    # A client that does not accept gzip, or asks for a range, gets Streamlit's own answer.
    plain = _get(url, "/app/static/plotly.min.js?v=1")
    assert plain.getheader("Content-Encoding") is None and plain.body == PLOTLY_JS.read_bytes()
    ranged = _get(url, "/app/static/plotly.min.js?v=1", {"Accept-Encoding": "gzip", "Range": "bytes=0-99"})
    assert ranged.status == 206 and len(ranged.body) == 100


def _join_errors(url: str, source: str, codes: list[str], forwarded: str | None = None) -> list[list[str]]:
    """A browser at loopback address ``source`` opens ``/?room=<code>`` for each code in turn, over one
    websocket to ``url`` (nginx, or a replica directly), sending ``X-Forwarded-For: forwarded`` if
    given; the error boxes of each run."""
    parts = urllib.parse.urlsplit(url)
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(30)
    sock.connect((parts.hostname, parts.port))
    ws = websocket.create_connection(f"ws://{parts.netloc}/_stcore/stream", subprotocols=["streamlit"], timeout=30,
                                     socket=sock, header=[f"X-Forwarded-For: {forwarded}"] if forwarded else None)
    out = []
    try:
        for code in codes:
            msg = BackMsg()
            msg.rerun_script.query_string = f"lang=en&room={code}"
            ws.send_binary(msg.SerializeToString())
            errors = []
            while True:
                raw = ws.recv()
                if isinstance(raw, str):
                    continue
                fwd = ForwardMsg()
                fwd.ParseFromString(raw)
                kind = fwd.WhichOneof("type")
                if kind == "delta" and fwd.delta.new_element.WhichOneof("type") == "alert":
                    errors.append(fwd.delta.new_element.alert.body)
                elif kind == "script_finished":
                    break
            out.append(errors)
    finally:
        ws.close()
    return out


def test_failed_joins_are_limited_per_client_behind_nginx_and_a_forged_address_is_not_believed(cluster):
    """Issue 42 §5: the join limit (failed joins a minute) counts the browser's own address. Behind
    nginx a replica sees nginx's address; it takes the client's from X-Forwarded-For, which it trusts
    only from the proxies named in FORWARDED_ALLOW_IPS (uvicorn, under Streamlit 1.67), and then only
    the address nginx itself appended. So two browsers behind nginx are limited apart; a browser that
    forges the header, through nginx or straight to a replica, is still counted as itself."""
    url, reps = cluster
    limit = rs.Limits().join_failures
    unknown, limited = i18n.t("en", "room.error.unknown"), i18n.t("en", "room.error.rate_limited")
    for attempt in range(2):      # the limit's window is a calendar minute: again, as new browsers, if one ended
        guesser, other, direct = (f"127.0.0.{9 + 3 * attempt + i}" for i in range(3))
        minute = time.time() // 60
        codes = ["".join(random.choices(rs.ALPHABET, k=rs.CODE_LENGTH)) for _ in range(limit + 1)]
        guessed = _join_errors(url, guesser, codes)
        forged = _join_errors(url, other, codes[:1], forwarded=guesser)          # "I am the guesser"
        straight = _join_errors(reps[0].url, direct, codes[:1], forwarded=guesser)
        if time.time() // 60 == minute:
            break
    assert guessed == [[unknown]] * limit + [[limited]]
    assert forged == [[unknown]], "a browser behind nginx was counted as the address it forged"
    assert straight == [[unknown]], "a browser straight to a replica was counted as the address it forged"
    window = int(minute * 60)
    engine = sa.create_engine(database_url())
    with engine.connect() as conn:
        hits = dict(conn.execute(sa.select(rs.rate_limits.c.bucket, rs.rate_limits.c.hits)
                                 .where(rs.rate_limits.c.window == window)).all())
    engine.dispose()
    join = lambda address: hits.get(rs._client_bucket("join", address), 0)  # noqa: E731
    assert (join(guesser), join(other), join(direct)) == (limit, 1, 1)


@contextlib.contextmanager
def _shared_database(monkeypatch):
    """The replicas' database as compose.yaml deploys them: a PostgreSQL server (Debian's, started in
    a temporary folder, bench/cluster.py). Where PostgreSQL is not installed, outside CI, the replicas
    share a SQLite file instead, and say so."""
    if not (PG_BIN / "pg_ctl").exists():
        reason = f"PostgreSQL is not at {PG_BIN}: scripts/test.sh installs Debian's postgresql"
        if os.environ.get("CI"):
            pytest.fail(reason)
        import warnings
        warnings.warn(f"{reason}; the replicas share a SQLite file instead", stacklevel=3)
        yield database_url()
        return
    with postgresql() as url:
        monkeypatch.setenv("ANATOMY_DATABASE_URL", url)    # the replicas', and bench_room's count of votes
        yield url


def test_a_replica_killed_during_a_vote_loses_no_acknowledged_vote(tmp_path, monkeypatch, static):
    """Issue 42 §6 at a small scale: a teacher and 8 students in a class room on 2 replicas behind
    nginx sharing one PostgreSQL database; halfway through the vote the replica without the teacher is killed
    (SIGKILL). Its students reconnect as browsers do and land on the other replica, back in the
    room as the same students; every vote acknowledged before the kill is still counted after it,
    and in the end every student's vote is counted once.

    "After it" is read at the vote's end (a student whose vote was acknowledged never votes again,
    so a vote lost in the kill could not come back). The database is also read 1 s after the kill:
    one run (CI, 2026-12-06: 1 of 6 that day) found 2 of 3 acknowledged votes there and all 8
    at the end, cause not found; a warning names the missing ones (bench_room's report too)."""
    from bench.bench_room import run_room

    with _shared_database(monkeypatch) as db, replicas(2, log_dir=tmp_path) as reps, \
            nginx([r.url.removeprefix("http://") for r in reps], tmp_path / "nginx", static_root=static) as (url, _):
        print(f"the replicas' database: {sa.make_url(db).get_backend_name()}")
        report = run_room(url, [r.pid for r in reps], students=8, seconds=1, ramp=2, step_s=2, slides=2,
                          kill={r.url.removeprefix("http://"): r.pid for r in reps})
    print(report.table())
    k = report.kill
    assert k is not None and k.students >= 1, "no student was on the replica without the teacher"
    assert k.landed == k.students
    assert k.kept == k.acked_before
    if k.kept_1s != k.acked_before:
        import warnings
        warnings.warn(f"1 s after the kill the database held {k.kept_1s} of the {k.acked_before} votes acknowledged "
                      f"before it (all {k.kept} at the end); not read: {k.missing_1s}", stacklevel=1)
    assert report.votes_acked == report.votes_counted == 8
    assert not report.errors
