"""The class room's storage (issue 42): rooms, the teacher's position, questions voted in two
rounds, votes, presence and rate limits, on SQLAlchemy Core (STYLE.md rule 15).

One database serves every replica, so nothing about a room lives in one process's memory: a
SQLite file by default (``$ANATOMY_DATA_DIR/rooms.sqlite3``, ``data/`` in the checkout), PostgreSQL
when ``ANATOMY_DATABASE_URL`` names one. The schema is versioned with Alembic
(``room/migrations``); a store brings its database to the newest version when it opens.

Who may do what rests on two secrets, never on the URL: the teacher's secret (returned once by
``create_room``, stored only as a salted HMAC) for every teacher operation, and a student's
anonymous random id for joining and voting. The database holds no names and nothing a student typed.
Every refusal is a ``RoomError`` with a ``key`` for the i18n catalogue, never a traceback.

    store = RoomStore()
    room = store.create_room(client_key=address)          # room.code 'K7P2QX', room.teacher_secret
    store.join(" k7p 2qx ", student, client_key=address)  # -> 'K7P2QX'
    store.move(room.code, room.teacher_secret, "b1", "scores", {"attn.d_k": "16"})
    store.position_version(room.code)                     # 1: a follower's cheap poll
    store.open_question(room.code, room.teacher_secret, "b1", "b1.try1", n_options=4)
    store.vote(room.code, student, "b1", "b1.try1", round=1, option=2)
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Engine

ROOT = Path(__file__).resolve().parents[1]
MIGRATIONS = Path(__file__).resolve().parent / "migrations"

# Join codes are read off a projector from the back row and typed on phones: no 0/O and no 1/I/L,
# which are taken for one another. 31**6 ~ 8.9e8 codes: a client allowed 10 failed guesses a
# minute finds one of 100 live rooms once in ~6 years of guessing.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
MAX_OPTIONS = 10                  # a "Try this" question has 2-5 options; more is not a question of ours
IDLE_HOURS = 12.0                 # a day's lectures: a room nobody touched for longer ends (issue 42 §1)
WRITE = "room_write"              # execution option: this connection's transaction will write (SQLite: BEGIN IMMEDIATE)
SQLITE_BUSY_MS = 30_000           # a writer waits this long for SQLite's one write lock before failing
TOUCH_S = 60.0                    # a room's activity time is written at most once a minute by students
TEACHER_LINK_S = 600.0           # a teacher link for a second device works once, within 10 minutes
MIGRATION_LOCK = 4_204_242        # PostgreSQL advisory lock: two replicas starting at once upgrade one at a time
PURGE_S = 60.0                    # idle rooms are ended and deleted by the first store call a minute (per process)


@dataclass(frozen=True)
class Limits:
    """Abuse limits, counted in the database so that they hold across replicas (fixed windows)."""
    join_failures: int = 10       # failed joins a client may make a minute: a class mistyping is a few; guessing codes is many
    join_window_s: int = 60
    votes: int = 5                # votes a student may cast a second: a changed mind is a tap or two; a script is not
    vote_window_s: int = 1
    rooms: int = 20               # rooms a client may start an hour: a teacher's day; not a flood of rooms
    rooms_window_s: int = 3600
    presence_s: float = 60.0      # seen within this long counts as "in the room" (a student's page beats every ~20 s)
    tombstone_days: float = 30.0  # an ended code answers "ended" (not "unknown") this long, and is not handed out again


# ---- refusals -------------------------------------------------------------------------------

class RoomError(Exception):
    """A refusal to show the user: ``key`` names its message in the i18n catalogue."""
    key = "room.error"
    message = "The class room refused this."

    def __init__(self, message: str | None = None):
        super().__init__(message or self.message)


class BadInput(RoomError):
    key, message = "room.error.bad_input", "This is not something the class room stores."


class BadCode(BadInput):
    key, message = "room.error.bad_code", "A room code is 6 letters and digits (never 0, O, 1, I or L)."


class UnknownRoom(RoomError):
    key, message = "room.error.unknown", "No class room has this code."


class EndedRoom(RoomError):
    key, message = "room.error.ended", "This class room has ended."


class NotTeacher(RoomError):
    key, message = "room.error.not_teacher", "Only the room's teacher can do this."


class NotJoined(RoomError):
    key, message = "room.error.not_joined", "Join the room first."


class UnknownQuestion(RoomError):
    key, message = "room.error.unknown_question", "The teacher has not opened this question."


class RoundClosed(RoomError):
    key, message = "room.error.round_closed", "This round of voting is closed."


class BadOption(RoomError):
    key, message = "room.error.bad_option", "This question has no such option."


class BadTeacherLink(RoomError):
    key, message = "room.error.teacher_link", "This teacher link was used already, has expired or is not one."


class RateLimited(RoomError):
    key, message = "room.error.rate_limited", "Too many tries: wait a moment."

    def __init__(self, retry_after: float):
        super().__init__()
        self.retry_after = retry_after    # seconds until the window that refused ends


class Unavailable(RoomError):
    key, message = "room.error.unavailable", "The class room's database cannot be reached."


# ---- what the store returns -----------------------------------------------------------------

@dataclass(frozen=True)
class NewRoom:
    code: str
    teacher_secret: str           # shown once: the database keeps only its salted HMAC


@dataclass(frozen=True)
class Position:
    version: int                  # grows on every change a follower redraws for (a move, a question's state)
    lesson: str
    section: str
    query: dict                   # the lesson's URL query state: {"attn.d_k": "16", ...}
    updated_at: float


@dataclass(frozen=True)
class Presence:
    in_room: int                  # students seen within Limits.presence_s
    following: int                # of those, the ones following the teacher


@dataclass(frozen=True)
class Question:
    lesson: str
    key: str
    n_options: int
    round: int                    # 1 or 2 (peer instruction: vote, discuss, vote again)
    state: str                    # "open", "closed" or "revealed"
    answered: int                 # votes in the current round


@dataclass(frozen=True)
class Tally:
    question: Question
    counts: dict[int, tuple[int, ...]]    # round -> votes per option: {1: (3, 10, 2, 0), 2: (0, 14, 1, 0)}


# ---- the schema (room/migrations/versions/ creates it; this is what the queries use) ---------

metadata = sa.MetaData(naming_convention={
    "pk": "pk_%(table_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "ix": "ix_%(table_name)s_%(column_0_name)s",
})

# Times are seconds since the epoch (UTC) from the store's clock: the same arithmetic on both
# backends, and a clock the tests can move.
rooms = sa.Table(
    "rooms", metadata,
    sa.Column("code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("teacher_salt", sa.String(32)),         # hex; both NULL once the room ended
    sa.Column("teacher_hash", sa.String(64)),         # hex HMAC-SHA256 of the secret under the salt
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("active_at", sa.Double, nullable=False, index=True),   # idle rooms are found by it
    sa.Column("ended_at", sa.Double),                 # set: a tombstone, every other row of the room deleted
)

positions = sa.Table(
    "positions", metadata,
    sa.Column("room_code", sa.String(CODE_LENGTH), sa.ForeignKey("rooms.code"), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("lesson", sa.String(100), nullable=False),
    sa.Column("section", sa.String(100), nullable=False),
    sa.Column("query", sa.Text, nullable=False),      # JSON of the lesson's URL query state
    sa.Column("updated_at", sa.Double, nullable=False),
)

questions = sa.Table(
    "questions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("room_code", sa.String(CODE_LENGTH), sa.ForeignKey("rooms.code"), nullable=False),
    sa.Column("lesson", sa.String(100), nullable=False),
    sa.Column("question_key", sa.String(100), nullable=False),
    sa.Column("n_options", sa.SmallInteger, nullable=False),
    sa.Column("round", sa.SmallInteger, nullable=False),
    sa.Column("state", sa.String(8), nullable=False),
    sa.Column("opened_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.UniqueConstraint("room_code", "lesson", "question_key"),
    sa.CheckConstraint(f"n_options BETWEEN 2 AND {MAX_OPTIONS}", name="n_options"),
    sa.CheckConstraint("round IN (1, 2)", name="round"),
    sa.CheckConstraint("state IN ('open', 'closed', 'revealed')", name="state"),
)

votes = sa.Table(
    "votes", metadata,
    sa.Column("question_id", sa.Integer, sa.ForeignKey("questions.id"), primary_key=True),
    sa.Column("round", sa.SmallInteger, primary_key=True),
    sa.Column("student_id", sa.String(64), primary_key=True),   # one vote a student a round: the key says so
    sa.Column("option", sa.SmallInteger, nullable=False),
    sa.Column("voted_at", sa.Double, nullable=False),
    sa.CheckConstraint("round IN (1, 2)", name="round"),
    sa.CheckConstraint("option >= 0", name="option"),
)

participants = sa.Table(
    "participants", metadata,
    sa.Column("room_code", sa.String(CODE_LENGTH), sa.ForeignKey("rooms.code"), primary_key=True),
    sa.Column("student_id", sa.String(64), primary_key=True),
    sa.Column("joined_at", sa.Double, nullable=False),
    sa.Column("last_seen", sa.Double, nullable=False),
    sa.Column("following", sa.Boolean, nullable=False),
)

rate_limits = sa.Table(
    "rate_limits", metadata,
    sa.Column("bucket", sa.String(100), primary_key=True),   # "join:<digest of client>", "vote:<code>:<student>"
    sa.Column("window", sa.BigInteger, primary_key=True),    # the fixed window's start, epoch seconds
    sa.Column("hits", sa.Integer, nullable=False),
)


teacher_links = sa.Table(
    "teacher_links", metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),   # hex SHA-256 of the link's token
    sa.Column("room_code", sa.String(CODE_LENGTH), sa.ForeignKey("rooms.code"), nullable=False, index=True),
    sa.Column("sealed", sa.String(200), nullable=False),       # hex: the teacher's secret XOR a keystream of the token
    sa.Column("expires_at", sa.Double, nullable=False),
)


# ---- pure helpers -----------------------------------------------------------------------------

_CODE = re.compile(f"[{ALPHABET}]{{{CODE_LENGTH}}}")
_SPACING = re.compile(r"[\s\-]+")
_STUDENT = re.compile(r"[A-Za-z0-9_-]{16,64}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")           # secrets.token_urlsafe(32)
_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,100}")


def normalise_code(text: object) -> str:
    """A join code as typed or linked, made canonical; BadCode for anything that cannot be one.
    Full-width characters (a Chinese input method's) are read as ASCII; spaces and dashes go.

    Example: ' k7p 2qx ' -> 'K7P2QX';  'Ｋ７Ｐ-２ＱＸ' -> 'K7P2QX';  'K0P2QX' -> BadCode (no 0 in codes)
    """
    if not isinstance(text, str) or len(text) > 4 * CODE_LENGTH:
        raise BadCode()
    code = _SPACING.sub("", unicodedata.normalize("NFKC", text))
    if not code.isascii() or not _CODE.fullmatch(code.upper()):
        raise BadCode()
    return code.upper()


def new_student_id() -> str:
    """An anonymous student id for a browser to keep: 128 random bits, nothing about the person."""
    return secrets.token_urlsafe(16)


def next_state(action: str, round: int, state: str) -> tuple[int, str]:
    """A question's life in peer instruction: vote (round 1), discuss, vote again (round 2), reveal.
    Starting round 2 closes round 1; a closed round may be opened again; after the reveal, no vote.

    Example: ('round2', 1, 'closed') -> (2, 'open');  ('close', 2, 'open') -> (2, 'closed');
             ('open', 1, 'revealed') -> RoundClosed
    """
    if action == "reveal":
        return round, "revealed"
    if state == "revealed":
        raise RoundClosed("The answer was revealed: this question's votes are over.")
    if action == "open":
        return round, "open"
    if action == "close":
        return round, "closed"
    if action == "round2":
        return 2, ("open" if round == 1 else state)
    raise ValueError(f"no such action: {action}")


def _student(student_id: object) -> str:
    if not isinstance(student_id, str) or not _STUDENT.fullmatch(student_id):
        raise BadInput("A student id is 16-64 letters, digits, '-' or '_' (room.store.new_student_id).")
    return student_id


def _name(value: object, what: str, empty: bool = False) -> str:
    if isinstance(value, str) and (_NAME.fullmatch(value) or (empty and value == "")):
        return value
    raise BadInput(f"A {what} is 1-100 letters, digits or . _ : / -")


def _whole(value: object, what: str, error: type[RoomError] = BadInput) -> int:
    if isinstance(value, bool) or not isinstance(value, int):    # True is an int to Python, not an option
        raise error(f"The {what} must be a whole number.")
    return value


def _query_json(query: object) -> str:
    """The lesson's URL query state as stored: {name: value or [values]} in JSON, at most 16 kB."""
    ok = isinstance(query, Mapping) and all(
        isinstance(k, str) and len(k) <= 100
        and (isinstance(v, str) or (isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)))
        for k, v in query.items())
    text = json.dumps(dict(query), sort_keys=True, ensure_ascii=False) if ok else ""
    if not ok or len(text) > 16_000:
        raise BadInput("The lesson's state is a small map of URL parameters.")
    return text


def _secret_digest(salt_hex: str, secret: str) -> str:
    # The secret is 256 random bits (token_urlsafe(32)), not a password: a keyed hash is enough; a slow
    # password hash would only cost the server on every teacher key press.
    return hmac.new(bytes.fromhex(salt_hex), secret.encode(), hashlib.sha256).hexdigest()


def _secret_matches(room: sa.Row, secret: object) -> bool:
    if room.teacher_hash is None or not isinstance(secret, str) or not secret.isascii() or not 0 < len(secret) <= 200:
        return False
    return hmac.compare_digest(_secret_digest(room.teacher_salt, secret), room.teacher_hash)


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _seal(secret: str, token: str) -> str:
    """The teacher's secret locked with a teacher link's token (XOR with a keystream drawn from the
    token): the database keeps this and the token's hash, so neither the database alone nor a link
    alone gives the secret; both together give it once (the row is deleted when the link is used).

    Example: _unseal(_seal(s, t), t) == s;  _unseal(_seal(s, t), other) != s
    """
    data = secret.encode()
    stream = hashlib.shake_256(b"anatomy-teacher-link:" + token.encode()).digest(len(data))
    return bytes(a ^ b for a, b in zip(data, stream, strict=True)).hex()


def _unseal(sealed: str, token: str) -> str:
    data = bytes.fromhex(sealed)
    stream = hashlib.shake_256(b"anatomy-teacher-link:" + token.encode()).digest(len(data))
    return bytes(a ^ b for a, b in zip(data, stream, strict=True)).decode("ascii", "replace")


def _client_bucket(kind: str, client_key: object) -> str:
    # A client key may be an address: personal data, so only a digest of it is stored. (A digest of
    # an IPv4 address can be reversed by trying them all: it is kept only as long as its counter,
    # which purge_idle deletes once two hours old.)
    if not isinstance(client_key, str) or not 0 < len(client_key) <= 500:
        raise BadInput("A client key is a short string (the client's address or session).")
    return f"{kind}:{hashlib.sha256(client_key.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


# ---- the engine: one per process and URL ------------------------------------------------------

_engines: dict[str, Engine] = {}
_upgraded: set[str] = set()
_engines_lock = threading.Lock()


def database_url(environ: Mapping[str, str] = os.environ) -> str:
    """ANATOMY_DATABASE_URL when set, else a SQLite file in ANATOMY_DATA_DIR (default data/).

    Example: {'ANATOMY_DATABASE_URL': 'postgresql://u:p@db/anatomy'} -> 'postgresql+psycopg://u:p@db/anatomy'
             {'ANATOMY_DATA_DIR': '/srv/ta'} -> 'sqlite:////srv/ta/rooms.sqlite3'
    """
    url = environ.get("ANATOMY_DATABASE_URL", "").strip()
    if url:
        # psycopg 3 is the driver installed (requirements.txt); a bare postgresql:// asks for psycopg2.
        for bare in ("postgresql://", "postgres://"):
            if url.startswith(bare):
                return "postgresql+psycopg://" + url[len(bare):]
        return url
    folder = Path(environ.get("ANATOMY_DATA_DIR") or ROOT / "data").absolute()
    return f"sqlite:///{folder / 'rooms.sqlite3'}"


def _sqlite_connect(dbapi_connection, _record) -> None:
    # SQLAlchemy emits BEGIN itself (_sqlite_begin): sqlite3's own transaction control would start
    # no transaction for a SELECT, so a read-then-write could see two states of the room.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")   # a writer waits for the lock, not "database is locked"
    cursor.execute("PRAGMA journal_mode=WAL")      # readers (100 polling students) never wait for a writer
    cursor.execute("PRAGMA foreign_keys=ON")       # SQLite checks foreign keys only when asked, per connection
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # A transaction that writes takes the write lock at BEGIN: one that read first under a plain BEGIN
    # could not upgrade its snapshot once another writer committed, and would fail at once, busy timeout
    # or not.
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")


def get_engine(url: str | None = None) -> Engine:
    """The process's one Engine (and pool) for this database: a page can keep it in st.cache_resource."""
    url = url or database_url()
    with _engines_lock:
        if url not in _engines:
            parsed = sa.make_url(url)
            if parsed.get_backend_name() == "sqlite":
                if parsed.database and parsed.database != ":memory:":
                    Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
                engine = sa.create_engine(parsed)
                event.listen(engine, "connect", _sqlite_connect)
                event.listen(engine, "begin", _sqlite_begin)
            else:
                engine = sa.create_engine(parsed, pool_pre_ping=True)   # a restarted server's dead connections are replaced
            _engines[url] = engine
        return _engines[url]


def dispose_engine(url: str | None = None) -> None:
    """Close the process's connections to this database (a restart, in the tests)."""
    url = url or database_url()
    with _engines_lock:
        engine = _engines.pop(url, None)
        _upgraded.discard(url)
    if engine is not None:
        engine.dispose()


def alembic_config() -> Config:
    """Alembic's configuration, built in code: no alembic.ini in the working directory.
    (A new revision: alembic.command.revision(alembic_config(), 'what it does').)"""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    return config


def upgrade(url: str | None = None) -> None:
    """Bring the database to the newest schema (``alembic upgrade head``); at head, nothing changes.
    One transaction: a failed upgrade leaves the old schema and its data as they were."""
    url = url or database_url()
    config = alembic_config()
    with get_engine(url).connect() as conn:
        conn.execution_options(**{WRITE: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
    with _engines_lock:
        _upgraded.add(url)


# ---- the store -------------------------------------------------------------------------------

class RoomStore:
    """Every operation on class rooms. Holds no room state: only the engine, the limits and a clock,
    so one store may serve every session of a process (and any number of processes)."""

    def __init__(self, url: str | None = None, *, idle_hours: float | None = None,
                 limits: Limits | None = None, clock: Callable[[], float] = time.time):
        self.url = url or database_url()
        if idle_hours is None:
            idle_hours = float(os.environ.get("ANATOMY_ROOM_IDLE_HOURS") or IDLE_HOURS)
        if not idle_hours > 0:
            raise ValueError(f"idle_hours must be positive, not {idle_hours}")
        self.idle_s = 3600.0 * idle_hours
        self.limits = limits or Limits()
        self.clock = clock
        self.engine = get_engine(self.url)
        if self.url not in _upgraded:
            upgrade(self.url)
        self._purge_lock = threading.Lock()
        self._purged_at = -float("inf")     # store clock of the last periodic purge (_purge_due)

    # -- transactions and shared steps --

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        self._purge_due()
        try:
            with self.engine.connect() as conn:
                if write:
                    conn.execution_options(**{WRITE: True})
                with conn.begin():
                    yield conn
        except (sa.exc.OperationalError, sa.exc.InterfaceError) as e:
            raise Unavailable() from e

    def _purge_due(self) -> None:
        """Once every PURGE_S (the store's clock) the first call of any operation purges first: an idle
        room's data goes within a minute of its idle time, whether or not a room is created, and old
        rate-limit rows (digests of addresses) within a minute of their two hours. Other threads do not
        wait for it; a purge that fails is tried again a minute later (the call itself says why)."""
        now = self.clock()
        if now - self._purged_at < PURGE_S or not self._purge_lock.acquire(blocking=False):
            return
        try:
            if now - self._purged_at < PURGE_S:
                return
            try:
                self.purge_idle(now)
            except (RoomError, sa.exc.SQLAlchemyError):
                pass
        finally:
            self._purge_lock.release()

    def purge_in_background(self) -> threading.Thread:
        """A daemon thread that purges when due (every PURGE_S), for a server that no call reaches:
        an idle room's data is deleted on time whether anyone uses the app or not."""
        def run() -> None:
            while True:
                time.sleep(PURGE_S)
                self._purge_due()

        thread = threading.Thread(target=run, name="room-purge", daemon=True)
        thread.start()
        return thread

    def _insert(self, conn: Connection, table: sa.Table):
        return (pg_dialect if conn.dialect.name == "postgresql" else sqlite_dialect).insert(table)

    def _room(self, conn: Connection, code: str, now: float, lock: str | None = None) -> sa.Row:
        """The live room's row; UnknownRoom or EndedRoom otherwise (an idle room has ended, purged or not).
        lock (PostgreSQL): "share" for students (votes do not wait for one another), "update" for the
        teacher (a close or an end waits for the votes under way, and the votes after it see it)."""
        query = sa.select(rooms).where(rooms.c.code == code)
        if lock:
            query = query.with_for_update(read=lock == "share")
        room = conn.execute(query).first()
        if room is None:
            raise UnknownRoom()
        if room.ended_at is not None or room.active_at < now - self.idle_s:
            raise EndedRoom()
        return room

    def _teacher(self, conn: Connection, code: object, secret: object, now: float, write: bool = True) -> sa.Row:
        room = self._room(conn, normalise_code(code), now, lock="update" if write else None)
        if not _secret_matches(room, secret):
            raise NotTeacher()
        if write:
            conn.execute(sa.update(rooms).where(rooms.c.code == room.code).values(active_at=now))
        return room

    def _question_row(self, conn: Connection, code: str, lesson: str, key: str, lock: str | None = None) -> sa.Row:
        query = sa.select(questions).where(questions.c.room_code == code, questions.c.lesson == lesson,
                                           questions.c.question_key == key)
        if lock:
            query = query.with_for_update(read=lock == "share")
        row = conn.execute(query).first()
        if row is None:
            raise UnknownQuestion()
        return row

    def _answered(self, conn: Connection, q: sa.Row) -> int:
        return conn.execute(sa.select(sa.func.count()).select_from(votes).where(
            votes.c.question_id == q.id, votes.c.round == q.round)).scalar_one()

    def _as_question(self, conn: Connection, q: sa.Row) -> Question:
        return Question(q.lesson, q.question_key, q.n_options, q.round, q.state, self._answered(conn, q))

    def _bump(self, conn: Connection, code: str, now: float) -> int:
        return conn.execute(sa.update(positions).where(positions.c.room_code == code)
                            .values(version=positions.c.version + 1, updated_at=now)
                            .returning(positions.c.version)).scalar_one()

    def _hits(self, conn: Connection, bucket: str, window_s: int, now: float) -> int:
        window = int(now // window_s) * window_s
        return conn.execute(sa.select(rate_limits.c.hits).where(
            rate_limits.c.bucket == bucket, rate_limits.c.window == window)).scalar() or 0

    def _hit(self, conn: Connection, bucket: str, window_s: int, now: float) -> int:
        """Count one hit in the bucket's current fixed window; the window's count after it."""
        window = int(now // window_s) * window_s
        stmt = self._insert(conn, rate_limits).values(bucket=bucket, window=window, hits=1)
        stmt = stmt.on_conflict_do_update(index_elements=["bucket", "window"], set_={"hits": rate_limits.c.hits + 1})
        return conn.execute(stmt.returning(rate_limits.c.hits)).scalar_one()

    def _retry_after(self, window_s: int, now: float) -> float:
        return (int(now // window_s) + 1) * window_s - now

    def _touch(self, code: str, active_at: float, now: float) -> None:
        # Students' activity keeps a room alive, written at most once a minute (not on every vote of 100).
        if active_at < now - TOUCH_S:
            with self._tx(write=True) as conn:
                conn.execute(sa.update(rooms).where(rooms.c.code == code, rooms.c.ended_at.is_(None),
                                                    rooms.c.active_at < now - TOUCH_S).values(active_at=now))

    def _erase(self, conn: Connection, code: str, now: float) -> None:
        """Delete everything of the room; its row stays as a tombstone (an old link says "ended")."""
        ids = sa.select(questions.c.id).where(questions.c.room_code == code).scalar_subquery()
        conn.execute(sa.delete(votes).where(votes.c.question_id.in_(ids)))
        for table in (questions, participants, positions, teacher_links):
            conn.execute(sa.delete(table).where(table.c.room_code == code))
        conn.execute(sa.delete(rate_limits).where(rate_limits.c.bucket.startswith(f"vote:{code}:")))
        conn.execute(sa.update(rooms).where(rooms.c.code == code)
                     .values(ended_at=now, teacher_salt=None, teacher_hash=None))

    # -- rooms --

    def create_room(self, client_key: str | None = None) -> NewRoom:
        """A new room with a fresh code; its teacher secret is returned here and never again."""
        now = self.clock()
        bucket = None if client_key is None else _client_bucket("room", client_key)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16).hex()
        for _ in range(20):
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            try:
                with self._tx(write=True) as conn:
                    if bucket and self._hit(conn, bucket, self.limits.rooms_window_s, now) > self.limits.rooms:
                        raise RateLimited(self._retry_after(self.limits.rooms_window_s, now))
                    conn.execute(sa.insert(rooms).values(code=code, teacher_salt=salt, created_at=now,
                                                         teacher_hash=_secret_digest(salt, secret), active_at=now))
                    conn.execute(sa.insert(positions).values(room_code=code, version=0, lesson="", section="",
                                                             query="{}", updated_at=now))
                return NewRoom(code, secret)
            except sa.exc.IntegrityError:
                continue          # a live room's or a remembered tombstone's code (the key): draw again
        raise Unavailable("No free room code was found.")

    def end_room(self, code: str, secret: str) -> None:
        """The teacher ends the room: its data is deleted now."""
        now = self.clock()
        with self._tx(write=True) as conn:
            room = self._teacher(conn, code, secret, now)
            self._erase(conn, room.code, now)

    def teacher_link(self, code: str, secret: str) -> str:
        """A token for the teacher's second device (issue 42 §1: the bar's "teacher link"): given to
        redeem_teacher_link once within TEACHER_LINK_S, it hands that device the teacher's secret."""
        now = self.clock()
        token = secrets.token_urlsafe(32)
        with self._tx(write=True) as conn:
            room = self._teacher(conn, code, secret, now)
            conn.execute(sa.insert(teacher_links).values(token_hash=_token_hash(token), room_code=room.code,
                                                         sealed=_seal(secret, token), expires_at=now + TEACHER_LINK_S))
        return token

    def redeem_teacher_link(self, code: str, token: str, client_key: str) -> str:
        """The teacher's secret for the device that opened a teacher link; the link is spent. A link
        used, expired, of another room or made up is BadTeacherLink, counted as a failed join of the
        client (a guesser of links is limited as a guesser of codes)."""
        bucket = _client_bucket("join", client_key)
        now = self.clock()
        with self._tx() as conn:
            if self._hits(conn, bucket, self.limits.join_window_s, now) >= self.limits.join_failures:
                raise RateLimited(self._retry_after(self.limits.join_window_s, now))
        try:
            code = normalise_code(code)
            if not isinstance(token, str) or not _TOKEN.fullmatch(token):
                raise BadTeacherLink()
            with self._tx(write=True) as conn:
                room = self._room(conn, code, now, lock="update")
                link = conn.execute(sa.delete(teacher_links).where(teacher_links.c.token_hash == _token_hash(token),
                                                                   teacher_links.c.room_code == code)
                                    .returning(teacher_links.c.sealed, teacher_links.c.expires_at)).first()
                secret = None if link is None or link.expires_at < now else _unseal(link.sealed, token)
                if secret is None or not _secret_matches(room, secret):
                    raise BadTeacherLink()
        except (BadCode, UnknownRoom, EndedRoom, BadTeacherLink):
            with self._tx(write=True) as conn:
                self._hit(conn, bucket, self.limits.join_window_s, now)
            raise
        return secret

    def purge_idle(self, now: float | None = None) -> int:
        """End every room idle for longer than the idle time (deleting its data), forget old tombstones
        and rate-limit windows; how many rooms ended. Every operation runs it once a minute (_purge_due)."""
        now = self.clock() if now is None else now
        self._purged_at = max(self._purged_at, now)    # first: this purge's own transaction does not purge again
        with self._tx(write=True) as conn:
            idle = conn.execute(sa.select(rooms.c.code).where(
                rooms.c.ended_at.is_(None), rooms.c.active_at < now - self.idle_s).with_for_update()).scalars().all()
            for code in idle:
                self._erase(conn, code, now)
            conn.execute(sa.delete(teacher_links).where(teacher_links.c.expires_at < now))
            conn.execute(sa.delete(rooms).where(rooms.c.ended_at < now - 86400 * self.limits.tombstone_days))
            longest = max(self.limits.join_window_s, self.limits.vote_window_s, self.limits.rooms_window_s)
            conn.execute(sa.delete(rate_limits).where(rate_limits.c.window < now - 2 * longest))
        return len(idle)

    # -- students: join, presence --

    def join(self, code: str, student_id: str, client_key: str) -> str:
        """A student joins (again: nothing changes but the time seen) and follows the teacher; the
        canonical code. Failed joins are counted per client: RateLimited after Limits.join_failures a
        minute, even for a right code (a guesser learns nothing from the answer)."""
        student = _student(student_id)
        bucket = _client_bucket("join", client_key)
        now = self.clock()
        with self._tx() as conn:
            if self._hits(conn, bucket, self.limits.join_window_s, now) >= self.limits.join_failures:
                raise RateLimited(self._retry_after(self.limits.join_window_s, now))
        try:
            code = normalise_code(code)
            with self._tx(write=True) as conn:
                room = self._room(conn, code, now, lock="share")
                stmt = self._insert(conn, participants).values(room_code=code, student_id=student, joined_at=now,
                                                               last_seen=now, following=True)
                conn.execute(stmt.on_conflict_do_update(index_elements=["room_code", "student_id"],
                                                        set_={"last_seen": now, "following": True}))
        except (BadCode, UnknownRoom, EndedRoom):
            with self._tx(write=True) as conn:
                self._hit(conn, bucket, self.limits.join_window_s, now)
            raise
        self._touch(code, room.active_at, now)
        return code

    def heartbeat(self, code: str, student_id: str, following: bool) -> None:
        """A student's page says it is still there, and whether it follows the teacher."""
        code, student = normalise_code(code), _student(student_id)
        if not isinstance(following, bool):
            raise BadInput("following is True or False.")
        now = self.clock()
        with self._tx(write=True) as conn:
            self._room(conn, code, now, lock="share")
            done = conn.execute(sa.update(participants).where(
                participants.c.room_code == code, participants.c.student_id == student)
                .values(last_seen=now, following=following)).rowcount
            if not done:
                raise NotJoined()

    def leave(self, code: str, student_id: str) -> None:
        """The student leaves; their votes stay counted."""
        code, student = normalise_code(code), _student(student_id)
        with self._tx(write=True) as conn:
            conn.execute(sa.delete(participants).where(participants.c.room_code == code,
                                                       participants.c.student_id == student))

    def presence(self, code: str) -> Presence:
        """For the teacher's bar: "N in the room, M following"."""
        code = normalise_code(code)
        now = self.clock()
        with self._tx() as conn:
            self._room(conn, code, now)
            row = conn.execute(sa.select(sa.func.count(), sa.func.count().filter(participants.c.following))
                               .where(participants.c.room_code == code,
                                      participants.c.last_seen >= now - self.limits.presence_s)).one()
        return Presence(row[0], row[1])

    # -- the teacher's position, and following it --

    def move(self, code: str, secret: str, lesson: str, section: str, query: Mapping[str, object]) -> int:
        """The teacher shows a lesson's section with its URL state; the new position version."""
        lesson, section = _name(lesson, "lesson"), _name(section, "section", empty=True)
        blob = _query_json(query)
        now = self.clock()
        with self._tx(write=True) as conn:
            room = self._teacher(conn, code, secret, now)
            return conn.execute(sa.update(positions).where(positions.c.room_code == room.code)
                                .values(version=positions.c.version + 1, lesson=lesson, section=section,
                                        query=blob, updated_at=now)
                                .returning(positions.c.version)).scalar_one()

    def position_version(self, code: str) -> int:
        """A follower's poll: one read by primary key (the room and its position share it). Read the
        whole position only when this number changed."""
        code = normalise_code(code)
        now = self.clock()
        with self._tx() as conn:
            row = conn.execute(sa.select(rooms.c.ended_at, rooms.c.active_at, positions.c.version)
                               .select_from(rooms.outerjoin(positions, positions.c.room_code == rooms.c.code))
                               .where(rooms.c.code == code)).first()
        if row is None:
            raise UnknownRoom()
        if row.ended_at is not None or row.version is None or row.active_at < now - self.idle_s:
            raise EndedRoom()
        return row.version

    def position(self, code: str) -> Position:
        code = normalise_code(code)
        now = self.clock()
        with self._tx() as conn:
            self._room(conn, code, now)
            row = conn.execute(sa.select(positions).where(positions.c.room_code == code)).one()
        return Position(row.version, row.lesson, row.section, json.loads(row.query), row.updated_at)

    # -- questions and votes --

    def _change(self, action: str, code: str, secret: str, lesson: str, key: str,
                n_options: int | None = None) -> Question:
        lesson, key = _name(lesson, "lesson"), _name(key, "question")
        now = self.clock()
        with self._tx(write=True) as conn:
            room = self._teacher(conn, code, secret, now)
            try:
                q = self._question_row(conn, room.code, lesson, key, lock="update")
            except UnknownQuestion:
                if action != "open":
                    raise
                conn.execute(sa.insert(questions).values(room_code=room.code, lesson=lesson, question_key=key,
                                                         n_options=n_options, round=1, state="open",
                                                         opened_at=now, updated_at=now))
                self._bump(conn, room.code, now)
                return self._as_question(conn, self._question_row(conn, room.code, lesson, key))
            if n_options is not None and n_options != q.n_options:
                raise BadOption(f"This question was opened with {q.n_options} options, not {n_options}.")
            round_, state = next_state(action, q.round, q.state)
            if (round_, state) != (q.round, q.state):
                conn.execute(sa.update(questions).where(questions.c.id == q.id)
                             .values(round=round_, state=state, updated_at=now))
                self._bump(conn, room.code, now)
            return self._as_question(conn, self._question_row(conn, room.code, lesson, key))

    def open_question(self, code: str, secret: str, lesson: str, key: str, n_options: int) -> Question:
        """The teacher opens a question for the class (round 1), or opens its closed round again."""
        n_options = _whole(n_options, "number of options")
        if not 2 <= n_options <= MAX_OPTIONS:
            raise BadInput(f"A question has 2 to {MAX_OPTIONS} options.")
        return self._change("open", code, secret, lesson, key, n_options)

    def close_round(self, code: str, secret: str, lesson: str, key: str) -> Question:
        return self._change("close", code, secret, lesson, key)

    def start_round_2(self, code: str, secret: str, lesson: str, key: str) -> Question:
        """"Discuss, then vote again": round 1 closes, round 2 opens; every student votes afresh."""
        return self._change("round2", code, secret, lesson, key)

    def reveal(self, code: str, secret: str, lesson: str, key: str) -> Question:
        """The answer is shown: voting ends, and every student may see the distributions."""
        return self._change("reveal", code, secret, lesson, key)

    def question(self, code: str, lesson: str, key: str) -> Question:
        """A question's state and how many have answered this round (never the distribution)."""
        code, lesson, key = normalise_code(code), _name(lesson, "lesson"), _name(key, "question")
        with self._tx() as conn:
            self._room(conn, code, self.clock())
            return self._as_question(conn, self._question_row(conn, code, lesson, key))

    def current_question(self, code: str) -> Question | None:
        """The question the teacher changed last (the one the students' devices show), if any."""
        code = normalise_code(code)
        with self._tx() as conn:
            self._room(conn, code, self.clock())
            q = conn.execute(sa.select(questions).where(questions.c.room_code == code)
                             .order_by(questions.c.updated_at.desc(), questions.c.id.desc()).limit(1)).first()
            return None if q is None else self._as_question(conn, q)

    def vote(self, code: str, student_id: str, lesson: str, key: str, round: int, option: int) -> None:
        """A student's vote in the open round; voting again in the same round changes it."""
        code, student = normalise_code(code), _student(student_id)
        lesson, key = _name(lesson, "lesson"), _name(key, "question")
        round, option = _whole(round, "round"), _whole(option, "option", BadOption)
        now = self.clock()
        with self._tx(write=True) as conn:
            room = self._room(conn, code, now, lock="share")
            if conn.execute(sa.select(participants.c.student_id).where(
                    participants.c.room_code == code, participants.c.student_id == student)).first() is None:
                raise NotJoined()
            q = self._question_row(conn, code, lesson, key, lock="share")
            if q.state != "open" or q.round != round:
                raise RoundClosed()
            if not 0 <= option < q.n_options:
                raise BadOption()
            # Counted inside the vote's transaction: a refused vote rolls its count back, so the limit
            # is on votes taken.
            if self._hit(conn, f"vote:{code}:{student}", self.limits.vote_window_s, now) > self.limits.votes:
                raise RateLimited(self._retry_after(self.limits.vote_window_s, now))
            stmt = self._insert(conn, votes).values(question_id=q.id, round=round, student_id=student,
                                                    option=option, voted_at=now)
            conn.execute(stmt.on_conflict_do_update(index_elements=["question_id", "round", "student_id"],
                                                    set_={"option": option, "voted_at": now}))
        self._touch(code, room.active_at, now)

    def my_votes(self, code: str, student_id: str, lesson: str, key: str) -> dict[int, int]:
        """This student's own votes on a question: {round: option} (to show their choice again)."""
        code, student = normalise_code(code), _student(student_id)
        lesson, key = _name(lesson, "lesson"), _name(key, "question")
        with self._tx() as conn:
            self._room(conn, code, self.clock())
            q = self._question_row(conn, code, lesson, key)
            rows = conn.execute(sa.select(votes.c.round, votes.c.option).where(
                votes.c.question_id == q.id, votes.c.student_id == student)).all()
        return {r: o for r, o in rows}

    def _counts(self, conn: Connection, code: str) -> dict[tuple[int, int, int], int]:
        rows = conn.execute(sa.select(votes.c.question_id, votes.c.round, votes.c.option, sa.func.count())
                            .join(questions, questions.c.id == votes.c.question_id)
                            .where(questions.c.room_code == code)
                            .group_by(votes.c.question_id, votes.c.round, votes.c.option)).all()
        return {(q, r, o): n for q, r, o, n in rows}

    def tally(self, code: str, lesson: str, key: str, secret: str | None = None) -> Tally:
        """The distributions of every round so far: for the teacher at any time (the projector shows
        them when the teacher chooses), for anyone once revealed (no herding before)."""
        code, lesson, key = normalise_code(code), _name(lesson, "lesson"), _name(key, "question")
        with self._tx() as conn:
            room = self._room(conn, code, self.clock())
            q = self._question_row(conn, code, lesson, key)
            if q.state != "revealed" and not _secret_matches(room, secret):
                raise NotTeacher()
            counts = self._counts(conn, code)
            question = self._as_question(conn, q)
        return Tally(question, {r: tuple(counts.get((q.id, r, o), 0) for o in range(q.n_options))
                                for r in range(1, q.round + 1)})

    def results_csv(self, code: str, secret: str) -> str:
        """The room's results for the teacher: lesson, question, round, option, count (no student ids),
        one row per option of every round held, in the order the questions were opened."""
        now = self.clock()
        with self._tx() as conn:
            room = self._teacher(conn, code, secret, now, write=False)
            qs = conn.execute(sa.select(questions).where(questions.c.room_code == room.code)
                              .order_by(questions.c.opened_at, questions.c.id)).all()
            counts = self._counts(conn, room.code)
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["lesson", "question", "round", "option", "count"])
        for q in qs:
            for r in range(1, q.round + 1):
                for o in range(q.n_options):
                    writer.writerow([q.lesson, q.question_key, r, o, counts.get((q.id, r, o), 0)])
        return out.getvalue()
