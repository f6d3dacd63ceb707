"""room.store (issue 42) on both backends: every test that takes `store` or `url` runs on a SQLite
file and on a real PostgreSQL server (Debian's, started here by pytest-postgresql's executor in a
temporary folder; STYLE.md rule 15). Without PostgreSQL installed the PostgreSQL half is skipped
with the reason, except under CI=true, where it fails."""

import itertools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from room import store as rs
from room.store import (
    ALPHABET,
    BadCode,
    BadInput,
    BadOption,
    EndedRoom,
    Limits,
    NotJoined,
    NotTeacher,
    RateLimited,
    RoomError,
    RoomStore,
    RoundClosed,
    UnknownQuestion,
    UnknownRoom,
    new_student_id,
    next_state,
    normalise_code,
)

TABLES = {"rooms", "positions", "questions", "votes", "participants", "rate_limits", "teacher_links"}
T0 = 1_800_000_000.0
L, Q = "b1", "b1.try1"          # a lesson and one of its "Try this" questions


# ---- the two backends ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def postgresql_server(request, tmp_path_factory):
    """One PostgreSQL server for the session, on a free port, in a temporary folder."""
    from port_for import get_port
    from pytest_postgresql.executors import PostgreSQLExecutor

    pg_ctl = request.config.getoption("postgresql_exec") or request.config.getini("postgresql_exec")
    if not (pg_ctl and os.access(pg_ctl, os.X_OK)):
        reason = (f"PostgreSQL's pg_ctl is not at {pg_ctl!r} (postgresql_exec in pyproject.toml): "
                  "install Debian's postgresql (scripts/test.sh does) to test the store on PostgreSQL")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    made = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root (CI's machines run as root): there the server runs as
        # Debian's `postgres` user, through runuser, in a folder that user owns. pytest's own
        # temporary folders are root's alone (0700), so the folder is made beside them.
        owner = pwd.getpwnam("postgres")
        folder = Path(tempfile.mkdtemp(prefix="room-store-pg-"))
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        bin_dir = Path(tempfile.mkdtemp(prefix="room-store-pg-bin-"))     # root's: postgres cannot edit what root runs
        executable = bin_dir / "pg_ctl"
        executable.write_text(f'#!/bin/sh\nexec runuser -u postgres -- "{pg_ctl}" "$@"\n')
        executable.chmod(0o755)
        made += [folder, bin_dir]
    else:
        folder, executable = tmp_path_factory.mktemp("postgresql"), Path(pg_ctl)
    server = PostgreSQLExecutor(
        executable=str(executable), host="127.0.0.1", port=get_port(None), datadir=str(folder / "data"),
        unixsocketdir=str(folder), logfile=str(folder / "postgresql.log"), startparams="-w", dbname="rooms",
        # A test server: durability against a power cut is not what these tests measure.
        postgres_options="-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


_databases = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    """An empty database: a fresh SQLite file, or a fresh database on the PostgreSQL server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'rooms.sqlite3'}"
        yield url
        rs.dispose_engine(url)
        return
    from pytest_postgresql.janitor import DatabaseJanitor

    server = request.getfixturevalue("postgresql_server")
    janitor = DatabaseJanitor(user=server.user, host=server.host, port=server.port,
                              dbname=f"rooms_{next(_databases)}")
    janitor.init()
    url = f"postgresql+psycopg://{server.user}@{server.host}:{server.port}/{janitor.dbname}"
    yield url
    rs.dispose_engine(url)
    janitor.drop()


class Clock:
    """The store's clock, moved by hand."""

    def __init__(self, t: float = T0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(url, clock):
    return RoomStore(url, clock=clock, idle_hours=12)


def joined(store, code, n=1, client="10.0.0.1"):
    """n students in the room; their ids."""
    ids = [new_student_id() for _ in range(n)]
    for sid in ids:
        store.join(code, sid, client)
    return ids


def rows(url, table):
    with rs.get_engine(url).connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(getattr(rs, table)))]


def everything(url) -> str:
    """Every row of every table, as text."""
    return repr({t: rows(url, t) for t in TABLES})


# ---- schema and engine -----------------------------------------------------------------------

def test_upgrade_makes_the_tables_and_leaves_a_database_at_head_alone(url):
    rs.upgrade(url)
    engine = rs.get_engine(url)
    assert set(sa.inspect(engine).get_table_names()) == TABLES | {"alembic_version"}
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), rs.metadata) == []   # migration == room.store's tables
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0002"
    store = RoomStore(url, clock=Clock())
    room = store.create_room()
    sid, = joined(store, room.code)
    store.open_question(room.code, room.teacher_secret, L, Q, 3)
    store.vote(room.code, sid, L, Q, 1, 2)
    before = everything(url)
    rs.upgrade(url)
    rs.dispose_engine(url)
    rs.upgrade(url)                      # a second process starting on the same database
    assert everything(url) == before
    assert store.tally(room.code, L, Q, room.teacher_secret).counts == {1: (0, 0, 1)}


def test_an_upgrade_from_the_first_schema_keeps_a_class_under_way(url):
    """A database at revision 0001 holding a class in the middle of a question (a room, the teacher's
    position, a question in its second round, votes of both rounds, students, a rate-limit window)
    is upgraded to head by Alembic: every row is as it was, and the class goes on (issue 42 §4)."""
    config = rs.alembic_config()
    with rs.get_engine(url).connect() as conn:
        conn.execution_options(**{rs.WRITE: True})
        with conn.begin():
            config.attributes["connection"] = conn
            command.upgrade(config, "0001")
    secret, salt = "s" * 43, "ab" * 16
    students = [f"student-{i:02d}-{'x' * 10}" for i in range(3)]
    at_0001 = {
        "rooms": [{"code": "K7P2QX", "teacher_salt": salt, "teacher_hash": rs._secret_digest(salt, secret),
                   "created_at": T0, "active_at": T0 + 50, "ended_at": None}],
        "positions": [{"room_code": "K7P2QX", "version": 7, "lesson": "attention", "section": "5",
                       "query": '{"b1.r": "4"}', "updated_at": T0 + 50}],
        "questions": [{"id": 1, "room_code": "K7P2QX", "lesson": L, "question_key": Q, "n_options": 3, "round": 2,
                       "state": "open", "opened_at": T0 + 10, "updated_at": T0 + 40}],
        "votes": [{"question_id": 1, "round": r, "student_id": sid, "option": (i + r) % 3, "voted_at": T0 + 20 * r}
                  for r in (1, 2) for i, sid in enumerate(students[: 3 if r == 1 else 2])],
        "participants": [{"room_code": "K7P2QX", "student_id": sid, "joined_at": T0, "last_seen": T0 + 45,
                          "following": i != 1} for i, sid in enumerate(students)],
        "rate_limits": [{"bucket": f"vote:K7P2QX:{students[0]}", "window": int(T0 + 40), "hits": 1}],
    }
    engine = rs.get_engine(url)
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0001"
        assert "teacher_links" not in sa.inspect(conn).get_table_names()
        for table, values in at_0001.items():
            conn.execute(sa.insert(getattr(rs, table)), values)
    before = {t: rows(url, t) for t in at_0001}

    rs.upgrade(url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0002"
        assert compare_metadata(MigrationContext.configure(conn), rs.metadata) == []
    assert {t: rows(url, t) for t in at_0001} == before
    store = RoomStore(url, clock=Clock(T0 + 60))
    assert store.position(code="K7P2QX") == rs.Position(7, "attention", "5", {"b1.r": "4"}, T0 + 50)
    assert store.presence("K7P2QX") == rs.Presence(3, 2)
    assert store.tally("K7P2QX", L, Q, secret).counts == {1: (1, 1, 1), 2: (1, 0, 1)}
    assert store.my_votes("K7P2QX", students[0], L, Q) == {1: 1, 2: 2}
    store.vote("K7P2QX", students[2], L, Q, 2, 0)           # the round still open: the late vote counts
    store.vote("K7P2QX", students[0], L, Q, 2, 0)           # and a changed mind
    assert store.reveal("K7P2QX", secret, L, Q).answered == 3
    assert store.tally("K7P2QX", L, Q).counts == {1: (1, 1, 1), 2: (3, 0, 0)}
    token = store.teacher_link("K7P2QX", secret)             # 0002's table, for the old room
    assert store.redeem_teacher_link("K7P2QX", token, "10.0.0.9") == secret
    assert store.position_version("K7P2QX") == 8            # the reveal's version after the old 7


def test_one_engine_per_process_and_url(url, tmp_path):
    assert rs.get_engine(url) is rs.get_engine(url)
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    assert rs.get_engine(other) is not rs.get_engine(url)
    rs.dispose_engine(other)


def test_sqlite_runs_in_wal_mode_and_waits_for_the_lock(tmp_path):
    url = f"sqlite:///{tmp_path / 'deep' / 'folder' / 'rooms.sqlite3'}"    # the folder is made
    try:
        with rs.get_engine(url).connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == rs.SQLITE_BUSY_MS
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        rs.dispose_engine(url)


@pytest.mark.parametrize("environ, expected", [
    ({}, f"sqlite:///{rs.ROOT / 'data' / 'rooms.sqlite3'}"),
    ({"ANATOMY_DATA_DIR": "/srv/ta"}, "sqlite:////srv/ta/rooms.sqlite3"),
    ({"ANATOMY_DATABASE_URL": "postgresql://u:p@db:5432/ta"}, "postgresql+psycopg://u:p@db:5432/ta"),
    ({"ANATOMY_DATABASE_URL": "postgres://u@db/ta"}, "postgresql+psycopg://u@db/ta"),
    ({"ANATOMY_DATABASE_URL": "postgresql+psycopg://u@db/ta", "ANATOMY_DATA_DIR": "/x"}, "postgresql+psycopg://u@db/ta"),
])
def test_database_url_from_the_environment(environ, expected):
    assert rs.database_url(environ) == expected


def test_the_store_imports_no_streamlit_plotly_or_torch():
    code = "import sys, room.store; print([m for m in ('streamlit', 'plotly', 'torch') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=rs.ROOT).stdout
    assert out.strip() == "[]"


# ---- pure helpers ----------------------------------------------------------------------------

@pytest.mark.parametrize("typed, code", [
    ("K7P2QX", "K7P2QX"), ("k7p2qx", "K7P2QX"), (" k7p 2qx ", "K7P2QX"), ("k7p-2qx\n", "K7P2QX"),
    ("Ｋ７Ｐ２ＱＸ", "K7P2QX"), ("k7p\u30002qx", "K7P2QX"),
])
def test_codes_are_normalised(typed, code):
    assert normalise_code(typed) == code


@pytest.mark.parametrize("typed", [
    "", "K7P2Q", "K7P2QXA", "K0P2QX", "KOP2QX", "K1P2QX", "KIP2QX", "KLP2QX", "K7P2Q!", "K7P2QX" * 1000,
    "😀😀😀😀😀😀", "K7P2Q😀", "ß7P2QX", "K7P2Q\x00", "\ud800K7P2Q", None, 123456, b"K7P2QX", ["K7P2QX"],
])
def test_malformed_codes_are_refused(typed):
    with pytest.raises(BadCode):
        normalise_code(typed)


def test_next_state_follows_peer_instruction():
    assert next_state("open", 1, "open") == (1, "open")
    assert next_state("close", 1, "open") == (1, "closed")
    assert next_state("open", 1, "closed") == (1, "open")
    assert next_state("round2", 1, "open") == (2, "open")
    assert next_state("round2", 1, "closed") == (2, "open")
    assert next_state("round2", 2, "closed") == (2, "closed")
    assert next_state("reveal", 2, "open") == (2, "revealed")
    assert next_state("reveal", 2, "revealed") == (2, "revealed")
    for action in ("open", "close", "round2"):
        with pytest.raises(RoundClosed):
            next_state(action, 2, "revealed")


# ---- rooms, presence, following ----------------------------------------------------------------

def test_a_new_room_has_a_code_and_a_secret(store):
    made = [store.create_room() for _ in range(30)]
    assert len({r.code for r in made}) == 30
    for room in made:
        assert len(room.code) == 6 and set(room.code) <= set(ALPHABET)
        assert len(room.teacher_secret) >= 43
    assert not set("0O1IL") & set(ALPHABET)


def test_join_leave_and_presence(store, clock):
    room = store.create_room()
    a, b, c = joined(store, room.code, 3)
    assert store.presence(room.code) == rs.Presence(3, 3)
    store.join(room.code, a, "10.0.0.2")                    # again: still one student
    store.heartbeat(room.code, b, following=False)          # b looks around
    assert store.presence(room.code) == rs.Presence(3, 2)
    clock.t += 45
    store.heartbeat(room.code, a, following=True)
    clock.t += 30                                           # b and c not seen for 75 s: gone
    assert store.presence(room.code) == rs.Presence(1, 1)
    store.heartbeat(room.code, c, following=False)
    assert store.presence(room.code) == rs.Presence(2, 1)
    store.leave(room.code, a)
    assert store.presence(room.code) == rs.Presence(1, 0)
    with pytest.raises(NotJoined):
        store.heartbeat(room.code, a, following=True)
    store.join(room.code.lower(), a, "10.0.0.2")            # back, following again
    assert store.presence(room.code) == rs.Presence(2, 1)


def test_followers_poll_a_version_and_read_the_position_when_it_changes(store, clock):
    room = store.create_room()
    assert store.position_version(room.code) == 0
    assert store.position(room.code) == rs.Position(0, "", "", {}, T0)
    clock.t += 5
    query = {"attn.d_k": "16", "lang": "zh", "words": ["a", "b"], "prompt": "注意力 😀"}
    assert store.move(room.code, room.teacher_secret, L, "scores", query) == 1
    assert store.position_version(room.code) == 1
    assert store.position_version(room.code) == 1           # no move, no change
    assert store.position(room.code) == rs.Position(1, L, "scores", query, T0 + 5)
    store.move(room.code, room.teacher_secret, "c3_rope", "", {})
    assert store.position_version(room.code) == 2
    assert store.position(room.code).lesson == "c3_rope"
    store.open_question(room.code, room.teacher_secret, L, Q, 4)    # a question opened is a change to redraw
    assert store.position_version(room.code) == 3
    store.open_question(room.code, room.teacher_secret, L, Q, 4)    # already open: nothing changed
    assert store.position_version(room.code) == 3


# ---- questions and votes -----------------------------------------------------------------------

def test_one_vote_per_student_per_round_and_it_may_change(store):
    room = store.create_room()
    a, b = joined(store, room.code, 2)
    store.open_question(room.code, room.teacher_secret, L, Q, 4)
    store.vote(room.code, a, L, Q, 1, 2)
    store.vote(room.code, b, L, Q, 1, 2)
    store.vote(room.code, a, L, Q, 1, 2)                    # the same again: still one vote
    assert store.tally(room.code, L, Q, room.teacher_secret).counts == {1: (0, 0, 2, 0)}
    store.vote(room.code, a, L, Q, 1, 0)                    # a changes their mind
    tally = store.tally(room.code, L, Q, room.teacher_secret)
    assert tally.counts == {1: (1, 0, 1, 0)}
    assert tally.question == rs.Question(L, Q, 4, 1, "open", 2)
    assert store.my_votes(room.code, a, L, Q) == {1: 0}
    assert len(rows(store.url, "votes")) == 2


def test_a_late_joiner_votes_in_the_open_round(store):
    room = store.create_room()
    early, = joined(store, room.code)
    store.open_question(room.code, room.teacher_secret, L, Q, 3)
    store.vote(room.code, early, L, Q, 1, 1)
    late, = joined(store, room.code)
    assert store.current_question(room.code) == rs.Question(L, Q, 3, 1, "open", 1)
    store.vote(room.code, late, L, Q, 1, 2)
    assert store.question(room.code, L, Q).answered == 2
    assert store.tally(room.code, L, Q, room.teacher_secret).counts == {1: (0, 1, 1)}


def test_round_two_then_reveal(store):
    room, key = store.create_room(), "b1.try2"
    a, b, c = joined(store, room.code, 3)
    secret = room.teacher_secret
    store.open_question(room.code, secret, L, key, 3)
    for sid, option in ((a, 0), (b, 0), (c, 1)):
        store.vote(room.code, sid, L, key, 1, option)
    with pytest.raises(NotTeacher):                         # no distribution for students before the reveal
        store.tally(room.code, L, key)
    q = store.start_round_2(room.code, secret, L, key)
    assert (q.round, q.state, q.answered) == (2, "open", 0)
    with pytest.raises(RoundClosed):                        # round 1 closed with round 2's start
        store.vote(room.code, a, L, key, 1, 2)
    for sid in (a, b, c):
        store.vote(room.code, sid, L, key, 2, 1)
    assert store.my_votes(room.code, a, L, key) == {1: 0, 2: 1}
    assert store.tally(room.code, L, key, secret).counts == {1: (2, 1, 0), 2: (0, 3, 0)}
    assert store.start_round_2(room.code, secret, L, key).round == 2   # again: nothing changes
    q = store.reveal(room.code, secret, L, key)
    assert (q.round, q.state, q.answered) == (2, "revealed", 3)
    assert store.tally(room.code, L, key).counts == {1: (2, 1, 0), 2: (0, 3, 0)}   # now anyone may see it
    with pytest.raises(RoundClosed):
        store.vote(room.code, a, L, key, 2, 0)
    for again in (store.open_question, store.start_round_2):
        args = (3,) if again == store.open_question else ()
        with pytest.raises(RoundClosed):
            again(room.code, secret, L, key, *args)


def test_a_closed_round_refuses_votes_until_opened_again(store):
    room = store.create_room()
    a, = joined(store, room.code)
    store.open_question(room.code, room.teacher_secret, L, Q, 2)
    assert store.close_round(room.code, room.teacher_secret, L, Q).state == "closed"
    with pytest.raises(RoundClosed):
        store.vote(room.code, a, L, Q, 1, 0)
    store.open_question(room.code, room.teacher_secret, L, Q, 2)
    store.vote(room.code, a, L, Q, 1, 0)
    assert store.question(room.code, L, Q) == rs.Question(L, Q, 2, 1, "open", 1)


def test_results_csv_counts_every_option_and_holds_no_ids(store, clock):
    room = store.create_room()
    ids = joined(store, room.code, 3)
    s = room.teacher_secret
    store.open_question(room.code, s, L, Q, 3)
    for sid, option in zip(ids, (0, 2, 2), strict=True):
        store.vote(room.code, sid, L, Q, 1, option)
    store.start_round_2(room.code, s, L, Q)
    store.vote(room.code, ids[0], L, Q, 2, 2)
    clock.t += 1
    store.open_question(room.code, s, "c3_rope", "c3.try1", 2)
    csv = store.results_csv(room.code, s)
    assert csv.splitlines() == [
        "lesson,question,round,option,count",
        "b1,b1.try1,1,0,1", "b1,b1.try1,1,1,0", "b1,b1.try1,1,2,2",
        "b1,b1.try1,2,0,0", "b1,b1.try1,2,1,0", "b1,b1.try1,2,2,1",
        "c3_rope,c3.try1,1,0,0", "c3_rope,c3.try1,1,1,0",
    ]
    assert not any(sid in csv for sid in ids)
    assert room.teacher_secret not in csv and room.code not in csv


def test_current_question_is_the_one_changed_last(store, clock):
    room = store.create_room()
    assert store.current_question(room.code) is None
    store.open_question(room.code, room.teacher_secret, L, Q, 2)
    clock.t += 1
    store.open_question(room.code, room.teacher_secret, L, "b1.try2", 3)
    assert store.current_question(room.code).key == "b1.try2"
    clock.t += 1
    store.reveal(room.code, room.teacher_secret, L, Q)
    assert store.current_question(room.code) == rs.Question(L, Q, 2, 1, "revealed", 0)


# ---- security: teacher, rooms apart, ended rooms, hashed secret ----------------------------------

TEACHER_OPS = {
    "move": lambda st, code, s: st.move(code, s, "a1_tokens", "", {"x": "1"}),
    "open": lambda st, code, s: st.open_question(code, s, L, "b1.try2", 3),
    "close": lambda st, code, s: st.close_round(code, s, L, Q),
    "round2": lambda st, code, s: st.start_round_2(code, s, L, Q),
    "reveal": lambda st, code, s: st.reveal(code, s, L, Q),
    "end": lambda st, code, s: st.end_room(code, s),
    "csv": lambda st, code, s: st.results_csv(code, s),
}


@pytest.mark.parametrize("op", TEACHER_OPS)
def test_only_the_teacher_secret_moves_opens_closes_reveals_or_ends(store, op):
    room, other = store.create_room(), store.create_room()
    student, = joined(store, room.code)
    store.open_question(room.code, room.teacher_secret, L, Q, 3)
    before = everything(store.url)
    s = room.teacher_secret
    forged = [student, other.teacher_secret, s[:-1], s + "x", s.upper() if s != s.upper() else s.lower(),
              "", None, 0, b"x", [s], s + "😀", "\ud800", "x" * 100_000, room.code]
    for wrong in forged:
        with pytest.raises(NotTeacher):
            TEACHER_OPS[op](store, room.code, wrong)
    assert everything(store.url) == before                  # nothing changed, not even the room's activity
    TEACHER_OPS[op](store, room.code, s)                    # the teacher may


def test_no_data_crosses_rooms(store):
    a, b = store.create_room(), store.create_room()
    in_a, = joined(store, a.code)
    in_b, = joined(store, b.code, 2)[:1]
    for room in (a, b):
        store.open_question(room.code, room.teacher_secret, L, Q, 3)
    store.vote(a.code, in_a, L, Q, 1, 0)
    store.vote(b.code, in_b, L, Q, 1, 2)
    with pytest.raises(NotJoined):                          # a student of A cannot vote in B
        store.vote(b.code, in_a, L, Q, 1, 1)
    with pytest.raises(NotTeacher):                         # A's teacher cannot drive B
        store.move(b.code, a.teacher_secret, L, "x", {})
    with pytest.raises(NotTeacher):
        store.tally(b.code, L, Q, a.teacher_secret)
    store.move(a.code, a.teacher_secret, "c3_rope", "sin", {"k": "v"})
    assert store.position(b.code).version == 1 and store.position(b.code).lesson == ""   # B saw only its question
    assert store.tally(a.code, L, Q, a.teacher_secret).counts == {1: (1, 0, 0)}
    assert store.tally(b.code, L, Q, b.teacher_secret).counts == {1: (0, 0, 1)}
    assert store.presence(a.code) == rs.Presence(1, 1) and store.presence(b.code) == rs.Presence(2, 2)
    assert store.my_votes(b.code, in_a, L, Q) == {}
    store.end_room(a.code, a.teacher_secret)
    assert store.tally(b.code, L, Q, b.teacher_secret).counts == {1: (0, 0, 1)}      # ending A left B alone
    assert store.presence(b.code) == rs.Presence(2, 2)


def test_an_ended_room_refuses_everything_and_keeps_nothing(store):
    room = store.create_room()
    sid, = joined(store, room.code)
    store.open_question(room.code, room.teacher_secret, L, Q, 3)
    store.vote(room.code, sid, L, Q, 1, 1)
    store.end_room(room.code, room.teacher_secret)
    for call in (lambda: store.join(room.code, new_student_id(), "10.0.0.9"),
                 lambda: store.position_version(room.code), lambda: store.position(room.code),
                 lambda: store.vote(room.code, sid, L, Q, 1, 0), lambda: store.presence(room.code),
                 lambda: store.heartbeat(room.code, sid, True), lambda: store.question(room.code, L, Q),
                 lambda: store.tally(room.code, L, Q, room.teacher_secret),
                 lambda: store.move(room.code, room.teacher_secret, L, "", {}),
                 lambda: store.end_room(room.code, room.teacher_secret)):
        with pytest.raises(EndedRoom):
            call()
    for table in TABLES - {"rooms"}:
        assert rows(store.url, table) == [] or table == "rate_limits", table
    (code, salt, digest, *_), = rows(store.url, "rooms")   # the tombstone: a code and times, no secret
    assert (code, salt, digest) == (room.code, None, None)


def test_idle_rooms_end_and_purge_deletes_everything(store, clock, url, monkeypatch):
    idle, busy = store.create_room(), store.create_room()
    for room in (idle, busy):
        sid, = joined(store, room.code)
        store.open_question(room.code, room.teacher_secret, L, Q, 2)
        store.vote(room.code, sid, L, Q, 1, 1)
    clock.t += 11 * 3600
    store.move(busy.code, busy.teacher_secret, L, "x", {})
    clock.t += 3600 + 1                                     # idle: 12 h 1 s; busy: 1 h 1 s
    assert store.purge_idle(clock.t) == 1
    with pytest.raises(EndedRoom):
        store.position_version(idle.code)
    assert store.position_version(busy.code) == 2            # its question opened, then one move
    codes = {r[0] for r in rows(url, "participants") + rows(url, "positions")}
    assert codes == {busy.code}
    assert len(rows(url, "questions")) == len(rows(url, "votes")) == 1
    assert store.purge_idle(clock.t) == 0
    clock.t += 31 * 86400                                   # a month on: both ended, the tombstones forgotten
    assert store.purge_idle(clock.t) == 1                   # busy's turn; idle's tombstone forgotten
    assert [r[0] for r in rows(url, "rooms")] == [busy.code]
    clock.t += 31 * 86400
    assert store.purge_idle(clock.t) == 0
    assert {t: rows(url, t) for t in TABLES} == {t: [] for t in TABLES}
    with pytest.raises(UnknownRoom):
        store.position_version(idle.code)
    monkeypatch.setenv("ANATOMY_ROOM_IDLE_HOURS", "0.5")    # the idle time from the environment
    short = RoomStore(url, clock=clock)
    room = short.create_room()
    clock.t += 1801
    with pytest.raises(EndedRoom):
        short.position(room.code)


def test_idle_rooms_and_old_rate_limits_are_purged_within_a_minute_by_any_call(url, clock):
    """No room needs to be created for an idle room's data to go (issue 42 §1): the first call of any
    operation in each minute purges first; old rate-limit rows (digests of addresses) go too."""
    store = RoomStore(url, clock=clock, idle_hours=12)
    idle, busy = store.create_room(), store.create_room()
    sid, = joined(store, idle.code)
    store.move(idle.code, idle.teacher_secret, L, "3", {"attn.d_k": "16"})
    store.open_question(idle.code, idle.teacher_secret, L, Q, 3)
    store.vote(idle.code, sid, L, Q, 1, 2)
    store.teacher_link(idle.code, idle.teacher_secret)
    with pytest.raises(UnknownRoom):
        store.join("ZZZZZZ", sid, "203.0.113.9")            # a failed join: a rate-limit row
    assert {r[0].split(":")[0] for r in rows(url, "rate_limits")} == {"join", "vote"}
    clock.t += 2 * 3600 + 1                                 # two hours on: the limit rows are old
    store.move(busy.code, busy.teacher_secret, L, "1", {})  # a call: it purges first
    assert rows(url, "rate_limits") == [] and rows(url, "teacher_links") == []
    assert len(rows(url, "votes")) == 1                     # the idle room is 2 h idle, not 12: kept
    clock.t += 10 * 3600                                    # idle 12 h 1 s; busy 10 h 1 s
    assert store.presence(busy.code) == rs.Presence(0, 0)   # any call: the idle room is deleted now
    for table in ("participants", "questions", "votes", "teacher_links"):
        assert rows(url, table) == [], table
    assert [r[0] for r in rows(url, "positions")] == [busy.code]
    assert {r[0]: r[5] is not None for r in rows(url, "rooms")} == {idle.code: True, busy.code: False}
    clock.t += 30                                           # within the minute: no second purge
    assert store.purge_idle(clock.t) == 0
    calls, purge = [], store.purge_idle
    store.purge_idle = lambda now=None: calls.append(now) or purge(now)   # (this store only)
    store.presence(busy.code)
    assert calls == []
    clock.t += rs.PURGE_S
    store.presence(busy.code)
    assert calls == [clock.t]


def test_the_secret_is_stored_only_hashed(store, url):
    room = store.create_room(client_key="203.0.113.7")
    sid, = joined(store, room.code, client="198.51.100.4")
    with pytest.raises(UnknownRoom):
        store.join("ZZZZZZ", sid, "198.51.100.4")          # a failed join is counted by a digest of its client
    text = everything(url)
    for secret in (room.teacher_secret, "203.0.113.7", "198.51.100.4"):
        assert secret not in text
    if url.startswith("sqlite"):
        path = Path(sa.make_url(url).database)
        raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))   # the file, its -wal and -shm
        assert room.code.encode() in raw
        assert room.teacher_secret.encode() not in raw and b"203.0.113.7" not in raw
    (_, salt, digest, *_), = rows(url, "rooms")
    assert len(salt) == 32 and len(digest) == 64 and digest != room.teacher_secret


# ---- bad input: a clear refusal, never a traceback ---------------------------------------------

@pytest.mark.parametrize("typed, error", [
    ("", BadCode), ("K7P2Q", BadCode), ("K7P2QX" * 5000, BadCode), ("😀😀😀😀😀😀", BadCode), ("K0P2QX", BadCode),
    (None, BadCode), ("ZZZZZZ", UnknownRoom), ("zz zz zz", UnknownRoom),
])
def test_joining_with_a_bad_code(store, typed, error):
    with pytest.raises(error):
        store.join(typed, new_student_id(), "10.0.0.1")


def test_joining_with_lowercase_and_spaces(store):
    room = store.create_room()
    typed = f"  {room.code[:3].lower()} {room.code[3:].lower()}  "
    assert store.join(typed, new_student_id(), "10.0.0.1") == room.code
    assert store.presence(typed) == rs.Presence(1, 1)


@pytest.mark.parametrize("student", ["", "short", "x" * 65, "a b c d e f g h i j", "ünïcödé-ünïcödé-ü", None, 12])
def test_a_student_id_is_anonymous_and_well_formed(store, student):
    room = store.create_room()
    with pytest.raises(BadInput):
        store.join(room.code, student, "10.0.0.1")


def test_votes_are_validated(store):
    room = store.create_room()
    sid, = joined(store, room.code)
    store.open_question(room.code, room.teacher_secret, L, Q, 4)
    for option in (4, 99, -1, -(2**40), 2**40):
        with pytest.raises(BadOption):
            store.vote(room.code, sid, L, Q, 1, option)
    for option in (True, 1.0, "1", None, [1]):
        with pytest.raises(BadOption):
            store.vote(room.code, sid, L, Q, 1, option)
    for round_ in (0, 2, 3, -1):
        with pytest.raises(RoundClosed):
            store.vote(room.code, sid, L, Q, round_, 1)
    with pytest.raises(BadInput):
        store.vote(room.code, sid, L, Q, "1", 1)
    with pytest.raises(UnknownQuestion):
        store.vote(room.code, sid, L, "b1.try9", 1, 1)
    with pytest.raises(UnknownQuestion):
        store.vote(room.code, sid, "c3_rope", Q, 1, 1)
    with pytest.raises(NotJoined):
        store.vote(room.code, new_student_id(), L, Q, 1, 1)
    for lesson in ("", "b1 attention", "b1😀", "x" * 101, None):
        with pytest.raises(BadInput):
            store.vote(room.code, sid, lesson, Q, 1, 1)
    assert rows(store.url, "votes") == []
    store.vote(room.code, sid, L, Q, 1, 3)
    assert store.question(room.code, L, Q).answered == 1


def test_teacher_input_is_validated(store):
    room = store.create_room()
    code, s = room.code, room.teacher_secret
    for lesson, section, query in [("", "x", {}), ("b1", "a section title", {}), ("b1", "x", "a=1"),
                                   ("b1", "x", {"k": 1}), ("b1", "x", {"k": "v" * 20_000}), ("b1", "x", None),
                                   ("b1", "x", {1: "v"}), ("b1", "x", {"k": ["v", 2]})]:
        with pytest.raises(BadInput):
            store.move(code, s, lesson, section, query)
    for n in (0, 1, 11, True, 2.5, "4"):
        with pytest.raises(BadInput):
            store.open_question(code, s, L, Q, n)
    store.open_question(code, s, L, Q, 4)
    with pytest.raises(BadOption):                          # the same question with other options
        store.open_question(code, s, L, Q, 3)
    with pytest.raises(UnknownQuestion):
        store.close_round(code, s, L, "b1.try9")
    assert store.position_version(code) == 1


def test_every_refusal_is_a_room_error():
    for error in (BadCode, BadInput, UnknownRoom, EndedRoom, NotTeacher, NotJoined, UnknownQuestion,
                  RoundClosed, BadOption, rs.Unavailable):
        assert issubclass(error, RoomError)
        assert error().key.startswith("room.error.") and str(error())
    assert RateLimited(1.5).retry_after == 1.5 and RateLimited(1.5).key == "room.error.rate_limited"


# ---- rate limits (counted in the database: they hold across replicas) ----------------------------

def test_failed_joins_are_limited_per_client(url, clock):
    store = RoomStore(url, clock=clock, limits=Limits(join_failures=5))
    replica = RoomStore(url, clock=clock, limits=Limits(join_failures=5))     # another process, same database
    room = store.create_room()
    sid = new_student_id()
    clock.t += 10                                           # 10 s into a minute's window (T0 starts one)
    for i, typed in enumerate(("ZZZZZZ", "K0P2QX", "YYYYYY", "", "XXXXXX")):
        with pytest.raises((UnknownRoom, BadCode)):
            (store, replica)[i % 2].join(typed, sid, "203.0.113.7")
    with pytest.raises(RateLimited) as refused:             # the right code too: a guesser learns nothing
        replica.join(room.code, sid, "203.0.113.7")
    assert refused.value.retry_after == pytest.approx(50)
    assert store.join(room.code, sid, "203.0.113.8") == room.code       # another client is not held back
    clock.t += 50
    assert store.join(room.code, sid, "203.0.113.7") == room.code       # the next minute
    for _ in range(20):                                     # good joins are not counted
        store.join(room.code, sid, "203.0.113.7")


def test_votes_are_limited_per_student(url, clock):
    store = RoomStore(url, clock=clock, limits=Limits(votes=3))
    room = store.create_room()
    a, b = joined(store, room.code, 2)
    store.open_question(room.code, room.teacher_secret, L, Q, 4)
    for option in (0, 1, 2):
        store.vote(room.code, a, L, Q, 1, option)
    with pytest.raises(RateLimited):
        store.vote(room.code, a, L, Q, 1, 3)
    store.vote(room.code, b, L, Q, 1, 3)                    # b is not held back
    clock.t += 1
    store.vote(room.code, a, L, Q, 1, 3)
    assert store.my_votes(room.code, a, L, Q) == {1: 3}
    assert store.tally(room.code, L, Q, room.teacher_secret).counts == {1: (0, 0, 0, 2)}


def test_rooms_made_are_limited_per_client(url, clock):
    store = RoomStore(url, clock=clock, limits=Limits(rooms=2))
    store.create_room("203.0.113.7")
    store.create_room("203.0.113.7")
    with pytest.raises(RateLimited):
        store.create_room("203.0.113.7")
    store.create_room("203.0.113.8")
    store.create_room()                                     # no client key: not counted (a server's own call)
    clock.t += 3600
    store.create_room("203.0.113.7")
    assert len(rows(url, "rooms")) == 5


# ---- concurrency and durability ----------------------------------------------------------------

@pytest.mark.parametrize("students", [100])
def test_a_class_votes_at_once_and_every_vote_counts(url, students):
    store = RoomStore(url)
    room = store.create_room()
    store.open_question(room.code, room.teacher_secret, L, Q, 4)
    start, errors = threading.Barrier(students), []

    def student(i: int) -> None:
        try:
            sid = new_student_id()
            start.wait()
            store.join(room.code, sid, f"10.0.{i // 250}.{i % 250}")
            store.vote(room.code, sid, L, Q, 1, i % 4)
            store.vote(room.code, sid, L, Q, 1, (i + 1) % 4)      # and at once changes it
            store.heartbeat(room.code, sid, following=i % 2 == 0)
        except Exception as e:          # every failure is reported below, not lost in a thread
            errors.append(repr(e))

    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    tally = store.tally(room.code, L, Q, room.teacher_secret)
    assert tally.counts == {1: (students // 4,) * 4} and tally.question.answered == students
    assert store.presence(room.code) == rs.Presence(students, students // 2)


def test_a_restart_keeps_rooms_and_votes(url, clock):
    store = RoomStore(url, clock=clock)
    room = store.create_room()
    ids = joined(store, room.code, 3)
    store.move(room.code, room.teacher_secret, L, "scores", {"attn.d_k": "16"})
    store.open_question(room.code, room.teacher_secret, L, Q, 3)
    for sid in ids:
        store.vote(room.code, sid, L, Q, 1, 1)
    rs.dispose_engine(url)                                  # the process ends ...
    again = RoomStore(url, clock=clock)                     # ... and a new one opens the same database
    assert again.engine is not store.engine
    assert again.position(room.code) == rs.Position(2, L, "scores", {"attn.d_k": "16"}, T0)
    assert again.tally(room.code, L, Q, room.teacher_secret).counts == {1: (0, 3, 0)}
    assert again.presence(room.code) == rs.Presence(3, 3)
    again.vote(room.code, ids[0], L, Q, 1, 2)               # the students go on where they were
    assert again.question(room.code, L, Q).answered == 3


# ---- the teacher's second device ---------------------------------------------------------------

def test_a_teacher_link_works_once_for_its_room_within_ten_minutes(store, clock, url):
    room, other = store.create_room(), store.create_room()
    token = store.teacher_link(room.code, room.teacher_secret)
    assert room.teacher_secret not in everything(url) and token not in everything(url)   # sealed, and only hashed
    with pytest.raises(rs.BadTeacherLink):                  # another room's code with this room's link
        store.redeem_teacher_link(other.code, token, "10.0.0.9")
    assert store.redeem_teacher_link(room.code.lower(), token, "10.0.0.9") == room.teacher_secret
    with pytest.raises(rs.BadTeacherLink):                  # once
        store.redeem_teacher_link(room.code, token, "10.0.0.9")
    late = store.teacher_link(room.code, room.teacher_secret)
    clock.t += rs.TEACHER_LINK_S + 1
    with pytest.raises(rs.BadTeacherLink):                  # within ten minutes
        store.redeem_teacher_link(room.code, late, "10.0.0.9")
    with pytest.raises(NotTeacher):                         # only the teacher makes one
        store.teacher_link(room.code, "a" * 43)
    ended = store.teacher_link(room.code, room.teacher_secret)
    store.end_room(room.code, room.teacher_secret)
    assert rows(url, "teacher_links") == []
    with pytest.raises(EndedRoom):
        store.redeem_teacher_link(room.code, ended, "10.0.0.9")


@pytest.mark.parametrize("token", ["", "x", "a" * 43, "a" * 44, "🙂" * 43, None, 43, "a" * 10_000])
def test_a_made_up_teacher_link_is_refused_and_counted(url, clock, token):
    store = RoomStore(url, clock=clock, limits=Limits(join_failures=2))
    room = store.create_room()
    for _ in range(2):
        with pytest.raises(rs.BadTeacherLink):
            store.redeem_teacher_link(room.code, token, "10.0.0.7")
    real = store.teacher_link(room.code, room.teacher_secret)
    with pytest.raises(RateLimited):                        # a guesser of links waits, as a guesser of codes
        store.redeem_teacher_link(room.code, real, "10.0.0.7")
    assert store.redeem_teacher_link(room.code, real, "10.0.0.8") == room.teacher_secret


def test_a_sealed_secret_opens_only_with_its_token():
    secret, token = "s" * 43, "t" * 43
    assert rs._unseal(rs._seal(secret, token), token) == secret
    assert rs._unseal(rs._seal(secret, token), "u" * 43) != secret
    assert secret.encode().hex() not in rs._seal(secret, token)
