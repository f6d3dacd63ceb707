"""A class room under load (issue 42 §6): one teacher, N students, real websocket clients.

    python -m bench.bench_class --room --students 100 --seconds 60               # one server, SQLite
    python -m bench.bench_class --room --replicas 2 --students 100               # 2 replicas behind nginx
    ANATOMY_DATABASE_URL=postgresql://... python -m bench.bench_class --room --replicas 2

The teacher opens B1 in presenter mode with ``room=new``; the students open ``/?room=<CODE>`` (half
in Chinese) over a few seconds and follow the teacher to B1 as a browser would: each client obeys
the server's ``auto_rerun`` messages (the page's 1 s poll fragment) as the front end's timer does.
Then:

1. the teacher steps through 10 slides, one every ``--step-s`` s. A step is a rerun of the teacher's
   page with ``step=n`` in its query (what the presenter bar's key press makes the page do, less
   the bar's own early-ended run); a student is "at the slide" when the server sends its page the
   script that scrolls to slide n (ui.room.scroll_script). Reported: key press -> each student at
   that slide, p50/p95/max, and how many arrived;
2. the teacher opens B1's first question (a press of its "Open for the class" button); each student
   presses one option at a random moment within 10 s. Reported: vote round trip (press -> the
   run's end, the vote acknowledged) p50/p95, votes acknowledged vs votes in the database, and
   the time from the last acknowledged vote until the teacher's projector shows the final count;
3. nobody moves for ``--seconds`` s: the server's CPU (share of one core, and per student per
   minute) and memory with a class that only follows.

With ``--kill`` (2+ replicas behind nginx): halfway through the vote one replica with students and
without the teacher is killed (SIGKILL). Every client reconnects as Streamlit's front end does,
with the browser's cookies (nginx's ta_replica, the page's anatomy_student), so nginx sends it to a
replica that answers and the app takes it back into the room as the same student. Reported: how
many of the killed replica's students ran their page on the other and how soon, and whether every
vote acknowledged before the kill is still in the database after it.

    python -m bench.bench_class --room --replicas 2 --postgres --kill
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

import sqlalchemy as sa
import websocket
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetStates

LESSON = "attention"                 # B1: 10 slides, "Try this" b1.try1 with 3 options
QUESTION = "b1.try1"
OPTIONS = 3
SLIDES = 10
_WANT = re.compile(r"const want = (\d+);")
_COOKIE = re.compile(r'document\.cookie = "([A-Za-z0-9_]+)=([A-Za-z0-9_-]*);')


class Client:
    """One browser tab as the server sees it, reading the websocket all the time (a room's page
    changes without being asked: polls, switches to the teacher's lesson, reruns)."""

    def __init__(self, base_url: str, name: str, timeout: float = 60.0, reconnect: bool = False):
        self.url = base_url.replace("http://", "ws://").replace("https://", "wss://").rstrip("/")
        self.timeout = timeout
        self.cookies: dict[str, str] = {}            # what the browser keeps: nginx's ta_replica, the page's own
        self.reconnect = reconnect                   # as Streamlit's front end does when its socket drops
        self.lang = "en"
        self.generation = 0                          # connections made after the first
        self.drops: list[float] = []                 # perf_counter() of each drop
        self.landed: list[float] = []                # perf_counter() of the first run finished after each reconnect
        self.ws = self._connect()
        self.name = name
        self.page_hash = ""
        self.page = ""                               # the page's URL path, as the navigation says
        self.query = ""
        self.finished = threading.Condition()
        self.runs_finished = 0
        self.widgets: dict[str, str] = {}            # user key (the part after the id's last '-') -> widget id
        self.fragment_of: dict[str, str] = {}        # user key -> the fragment the widget was drawn in ("": none)
        self.slides: list[tuple[int, float]] = []    # (slide, perf_counter) of every scroll script received
        self.texts: list[tuple[str, float]] = []     # markdown bodies, with their time
        self.errors: list[str] = []
        self.auto: dict[str, float] = {}             # fragment id -> interval (s), from auto_rerun
        self.closed = False
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._timer, daemon=True).start()

    def _connect(self):
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        ws = websocket.create_connection(f"{self.url}/_stcore/stream", subprotocols=["streamlit"],
                                         timeout=self.timeout, header=[f"Cookie: {cookie}"] if cookie else None)
        headers = {k.lower(): v for k, v in (ws.getheaders() or {}).items()}
        self.replica = headers.get("x-replica", "")
        found = re.search(r"ta_replica=([^;]+)", headers.get("set-cookie", ""))
        if found:
            self.cookies["ta_replica"] = found.group(1)
        return ws

    def _reconnect(self) -> bool:
        """The socket dropped (its replica died): connect again with the browser's cookies and run the
        page shown, as the front end does; nginx sends it to a replica that answers."""
        self.drops.append(time.perf_counter())
        deadline = time.perf_counter() + 60
        while not self.closed and time.perf_counter() < deadline:
            try:
                ws = self._connect()
            except (OSError, websocket.WebSocketException):
                time.sleep(0.5)
                continue
            with self._send_lock:
                self.ws = ws
                self.generation += 1
                self.widgets.clear()
            self.rerun()
            return True
        return False

    # -- the front end's part --
    def rerun(self, query: str | None = None, page: str | None = None, widgets: WidgetStates | None = None,
              fragment: str = "", auto: bool = False) -> None:
        """A run of ``page`` (default: the page shown) with ``query`` (default: the page's own)."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query if query is None else query
        state.page_name = self.page if page is None else page
        state.page_script_hash = self.page_hash
        if widgets is not None:
            state.widget_states.CopyFrom(widgets)
        if fragment:
            state.fragment_id = fragment
        state.is_auto_rerun = auto
        with self._send_lock:
            self.ws.send_binary(msg.SerializeToString())

    def press(self, key: str, query: str | None = None) -> None:
        """A button's press (its trigger), as the front end sends it."""
        states = WidgetStates()
        state = states.widgets.add()
        state.id = self.widgets[key]
        state.trigger_value = True
        # A control inside a fragment reruns only that fragment, as the front end asks.
        self.rerun(query, widgets=states, fragment=self.fragment_of.get(key, ""))

    def wait_run(self, after: int, timeout: float) -> bool:
        """Until a run ends after the ``after``-th (True) or the timeout (False)."""
        with self.finished:
            return self.finished.wait_for(lambda: self.runs_finished > after, timeout)

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError, websocket.WebSocketException):
            self.ws.close()

    def _timer(self) -> None:
        # st.fragment(run_every=...) is a timer of the front end: a fragment rerun every interval
        # (the server merges a request that arrives during a run into the next run).
        due: dict[str, float] = {}
        while not self.closed:
            time.sleep(0.05)
            now = time.perf_counter()
            for fragment, every in list(self.auto.items()):
                if now >= due.setdefault(fragment, now + every):
                    due[fragment] = now + every
                    with contextlib.suppress(OSError, websocket.WebSocketException):
                        self.rerun(fragment=fragment, auto=True)

    def _read(self) -> None:
        while not self.closed:
            try:
                raw = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            except (OSError, websocket.WebSocketException) as exc:
                if self.closed:
                    return
                if self.reconnect and self._reconnect():
                    continue
                self.errors.append(f"{self.name}: websocket {type(exc).__name__}")
                return
            if isinstance(raw, str):
                continue
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            now = time.perf_counter()
            if kind == "new_session":
                self.page_hash = fwd.new_session.page_script_hash or self.page_hash
            elif kind == "navigation":
                nav = fwd.navigation
                self.page_hash = nav.page_script_hash or self.page_hash
                self.page = next((p.url_pathname for p in nav.app_pages if p.page_script_hash == nav.page_script_hash),
                                 self.page)
            elif kind == "page_info_changed":
                self.query = fwd.page_info_changed.query_string
            elif kind == "auto_rerun":
                self.auto[fwd.auto_rerun.fragment_id] = fwd.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                for fragment in fwd.stop_auto_rerun.fragment_ids:
                    self.auto.pop(fragment, None)
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                self._element(fwd.delta.new_element, now, fwd.delta.fragment_id)
            elif kind == "script_finished":
                if len(self.landed) < self.generation:
                    self.landed.append(now)
                with self.finished:
                    self.runs_finished += 1
                    self.finished.notify_all()

    def _element(self, element, now: float, fragment: str = "") -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.errors.append(f"{self.name}: {element.exception.type}: {element.exception.message}"[:200])
        elif kind == "alert" and element.alert.format == element.alert.ERROR:
            self.errors.append(f"{self.name}: {element.alert.body}"[:200])
        elif kind == "html":
            found = _WANT.search(element.html.body)
            if found:
                self.slides.append((int(found.group(1)), now))
            for name, value in _COOKIE.findall(element.html.body):
                self.cookies[name] = value
        elif kind == "markdown":
            self.texts.append((element.markdown.body, now))
        inner = getattr(element, kind) if kind else None
        widget_id = getattr(inner, "id", "") if inner is not None else ""
        if widget_id:
            key = widget_id.rsplit("-", 1)[-1]
            self.widgets[key] = widget_id
            self.fragment_of[key] = fragment


@dataclass
class RoomReport:
    students: int
    joined: int
    follow_s: list[float] = field(default_factory=list)   # key press -> a student at that slide
    missed: int = 0                                        # (student, slide) pairs that never arrived
    missed_at: dict[int, int] = field(default_factory=dict)  # slide -> students it never reached
    vote_s: list[float] = field(default_factory=list)      # press -> the vote's run ended
    votes_acked: int = 0
    votes_counted: int = 0                                 # in the database
    count_final_s: float | None = None                     # last ack -> the projector's count final
    idle_s: float = 0.0
    idle_cpu_s: float = 0.0
    rss_start: int = 0
    rss_peak: int = 0
    errors: list[str] = field(default_factory=list)
    label: str = ""
    kill: KillReport | None = None

    def table(self) -> str:
        def stats(xs: list[float]) -> str:
            xs = sorted(xs)
            if not xs:
                return "      -        -        -     (n=0)"
            q = lambda p: xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]   # noqa: E731
            return f"{q(.5) * 1e3:7.0f}  {q(.95) * 1e3:7.0f}  {xs[-1] * 1e3:7.0f}   (n={len(xs)})"
        mb = 1 / 2**20
        per_min = self.idle_cpu_s / max(self.joined, 1) / max(self.idle_s / 60, 1e-9)
        final = "never" if self.count_final_s is None else f"{self.count_final_s * 1e3:.0f} ms"
        return "\n".join([
            self.label,
            f"students joined           {self.joined} of {self.students}",
            "                            p50 ms   p95 ms   max ms",
            f"key press -> at the slide {stats(self.follow_s)}   missed {self.missed}"
            + (f" (slide: students {self.missed_at})" if self.missed_at else ""),
            f"vote round trip           {stats(self.vote_s)}",
            f"votes                     {self.votes_acked} acknowledged, {self.votes_counted} in the database",
            f"projector's count final   {final} after the last acknowledged vote",
            f"errors                    {len(self.errors)}" + (f"   e.g. {self.errors[0]}" if self.errors else ""),
            f"following, nobody moving  server CPU {self.idle_cpu_s:.1f} s in {self.idle_s:.0f} s "
            f"({self.idle_cpu_s / max(self.idle_s, 1e-9):.0%} of one core; {per_min * 1e3:.1f} ms per student per minute)",
            f"server RSS (MB)           start {self.rss_start * mb:.0f}, peak {self.rss_peak * mb:.0f}",
            *self._kill_lines(stats),
        ])

    def _kill_lines(self, stats) -> list[str]:
        k = self.kill
        if k is None:
            return []
        return [
            f"replica killed            {k.replica} at {k.at_s:.1f} s into the vote (SIGKILL), {k.students} of its students",
            f"  landed on the other     {k.landed} of {k.students}; kill -> page run there {stats(k.land_s)}",
            f"  acknowledged votes      {k.acked_before} before the kill, {k.kept_1s} of them in the database 1 s after "
            f"({k.votes_after} votes in all then), {k.kept} at the vote's end",
            *([f"  not read 1 s after     {', '.join(k.missing_1s)}"] if k.missing_1s else []),
        ]


def _voters_in_database(code: str) -> set[str]:
    """The student ids with a vote in the room (one vote per student and round: one round here)."""
    from room.store import database_url, questions, votes  # noqa: PLC0415 (the servers' database, by the same environment)

    engine = sa.create_engine(database_url())
    try:
        with engine.connect() as conn:
            return set(conn.execute(sa.select(votes.c.student_id).select_from(votes.join(questions))
                                    .where(questions.c.room_code == code)).scalars())
    finally:
        engine.dispose()


def _votes_in_database(code: str) -> int:
    return len(_voters_in_database(code))


@dataclass
class KillReport:
    """One replica killed during the vote (issue 42 §6): its students land on the other, and no
    acknowledged vote is lost."""
    replica: str = ""
    at_s: float = 0.0                  # into the voting window
    students: int = 0                  # on the killed replica
    landed: int = 0                    # of them, reconnected to another replica with their page run
    land_s: list[float] = field(default_factory=list)    # kill -> the page's first run on the other
    acked_before: int = 0              # votes acknowledged before the kill
    kept: int = 0                      # of them, in the database at the vote's end (none votes again once acknowledged)
    kept_1s: int = 0                   # of them, in the database 1 s after the kill
    votes_after: int = 0               # the whole room's votes in the database 1 s after the kill
    before: list[str] = field(default_factory=list)      # the student ids acknowledged before the kill
    missing_1s: list[str] = field(default_factory=list)  # of them, not read 1 s after: id, student, replica


def run_room(base_url: str, pids: list[int], students: int = 100, seconds: float = 60.0, ramp: float = 10.0,
             step_s: float = 3.0, seed: int = 0, label: str = "", kill: dict[str, int] | None = None,
             slides: int = SLIDES) -> RoomReport:
    """``kill``: replica address (as nginx's X-Replica names it) -> its process: one replica that no
    teacher is on is killed halfway through the vote; every client reconnects as a browser does."""
    from bench.bench_class import Watch  # noqa: PLC0415 (bench_class imports this module for --room)

    rng = random.Random(seed)
    report = RoomReport(students, 0, label=label)
    watch = Watch(pids)
    report.rss_start = watch.samples[-1][2]
    watch.start()
    teacher = Client(base_url, "teacher", timeout=120, reconnect=bool(kill))
    clients = [teacher]
    try:
        teacher.rerun("lang=en&present=1&room=new", page=LESSON)
        deadline = time.perf_counter() + 120
        while "room" not in parse_qs(teacher.query) and time.perf_counter() < deadline:
            time.sleep(0.1)
        code = parse_qs(teacher.query)["room"][0]
        teacher.wait_run(0, 120)
        # The students arrive over `ramp` seconds and follow the teacher to B1.
        for i in range(students):
            time.sleep(ramp / max(students, 1))
            client = Client(base_url, f"student{i}", timeout=120, reconnect=bool(kill))
            client.lang = "zh" if i % 2 else "en"
            clients.append(client)
            client.rerun(f"lang={'zh' if i % 2 else 'en'}&room={code}", page="")
        pupils = clients[1:]
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline and not all(c.slides for c in pupils):
            time.sleep(0.2)
        report.joined = sum(1 for c in pupils if c.slides)
        time.sleep(2)
        # 1. Ten slides: 2, 3, ..., 10, then 1.
        for slide in [*range(2, slides + 1), 1][-slides:]:
            press = time.perf_counter()
            query = re.sub(r"(^|&)step=\d+", "", teacher.query).lstrip("&")
            teacher.rerun(f"{query}&step={slide}")
            time.sleep(step_s)
            for c in pupils:
                arrived = [t for s, t in c.slides if s == slide and t >= press]
                if arrived:
                    report.follow_s.append(arrived[0] - press)
                else:
                    report.missed += 1
                    report.missed_at[slide] = report.missed_at.get(slide, 0) + 1
        # 2. A vote: the teacher opens B1's first question; everyone votes within 10 s.
        teacher.press("_room.open.b1.try1")
        deadline = time.perf_counter() + 30
        keys = [f"_room.vote.{QUESTION}.{k}" for k in range(OPTIONS)]
        while time.perf_counter() < deadline and not all(all(k in c.widgets for k in keys) for c in pupils):
            time.sleep(0.1)
        acks: list[float] = []
        acked: list[str] = []                        # student ids, in the order acknowledged
        lock = threading.Lock()

        def vote(c: Client, delay: float, option: int) -> None:
            time.sleep(delay)
            for _ in range(3):                       # again after a reconnect, as a student would
                deadline = time.perf_counter() + 60
                while keys[option] not in c.widgets and time.perf_counter() < deadline:
                    time.sleep(0.05)
                if keys[option] not in c.widgets:
                    c.errors.append(f"{c.name} ({c.cookies.get('anatomy_student', '?')}): no vote buttons")
                    return
                generation, seen = c.generation, len(c.texts)
                start = time.perf_counter()
                try:
                    c.press(keys[option])
                except (OSError, websocket.WebSocketException, KeyError):
                    time.sleep(0.5)
                    continue
                # Acknowledged: the box redrawn with "Your answer: B. ..." (not any run's end: the
                # page's poll and wakes end runs too).
                if _said(c, chosen[c.name][option], seen, 30, generation) and c.generation == generation:
                    end = time.perf_counter()
                    with lock:
                        report.vote_s.append(end - start)
                        acks.append(end)
                        acked.append(c.cookies.get("anatomy_student", c.name))
                    return
                if c.generation == generation:
                    c.errors.append(f"{c.name}: vote not acknowledged in 30 s")
                    return

        import i18n  # noqa: PLC0415

        chosen = {c.name: [f"{'ABCDEFGHIJ'[k]}. {text}" for k, text in
                           enumerate(i18n.items(c.lang, f"{QUESTION}.options"))] for c in pupils}
        window = time.perf_counter()
        voters = [threading.Thread(target=vote, args=(c, rng.uniform(0, 10), rng.randrange(OPTIONS))) for c in pupils]
        for t in voters:
            t.start()
        if kill:
            report.kill = _kill_one(kill, teacher, pupils, code, window, acked, lock)
        for t in voters:
            t.join()
        report.votes_acked = len(acks)
        last = max(acks, default=time.perf_counter())
        report.votes_counted = _votes_in_database(code)
        wanted = f"Round 1 of the open question: {report.votes_counted} answered"
        deadline = time.perf_counter() + 15
        while time.perf_counter() < deadline:
            shown = [t for body, t in teacher.texts if wanted in body and t >= last]
            if shown:
                report.count_final_s = shown[0] - last
                break
            time.sleep(0.1)
        final = _voters_in_database(code)
        report.votes_counted = len(final)
        if report.kill:
            k = report.kill
            k.kept = sum(1 for s in k.before if s in final)
            moved = [c for c in pupils if c.drops]
            k.landed = sum(1 for c in moved if c.landed and c.replica != k.replica)
            k.land_s = [c.landed[0] - c.drops[0] for c in moved if c.landed]
        # 3. Nobody moves: what following costs the server (the servers still up).
        idle = watch if not kill else Watch([p for p in pids if _alive(p)])
        if idle is not watch:
            idle.start()
        t0 = time.perf_counter()
        time.sleep(seconds)
        t1 = time.perf_counter()
        idle.sample()
        report.idle_s = t1 - t0
        report.idle_cpu_s, report.rss_peak, _ = idle.between(t0, t1)
        if idle is not watch:
            idle.stop()
    finally:
        for c in clients:
            c.close()
        watch.stop()
    report.errors = [e for c in clients for e in c.errors]
    _, report.rss_peak, _ = watch.between(watch.samples[0][0], watch.samples[-1][0])
    return report


def _said(c: Client, text: str, seen: int, timeout: float, generation: int | None = None) -> bool:
    """Until the client's page shows a markdown holding ``text`` (after its first ``seen`` texts);
    False at once when the client reconnected since connection ``generation`` (a vote in flight when
    its replica died: the caller presses again, rather than waiting out the timeout)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if any(text in body for body, _ in c.texts[seen:]):
            return True
        if generation is not None and c.generation != generation:
            return False
        time.sleep(0.02)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and " Z " not in Path(f"/proc/{pid}/stat").read_text()


def _kill_one(replicas: dict[str, int], teacher: Client, pupils: list[Client], code: str, window: float,
              acked: list[str], lock: threading.Lock) -> KillReport:
    """Halfway through the vote, SIGKILL a replica with students and without the teacher; then
    check in the database that every vote acknowledged before the kill is still there."""
    import signal  # noqa: PLC0415

    counts = {addr: sum(1 for c in pupils if c.replica == addr) for addr in replicas if addr != teacher.replica}
    victim = max(counts, key=counts.get)
    time.sleep(max(0.0, window + 5.0 - time.perf_counter()))
    with lock:
        before = list(acked)
        at = time.perf_counter()
        os.kill(replicas[victim], signal.SIGKILL)
    time.sleep(1.0)
    voters = _voters_in_database(code)
    where = {c.cookies.get("anatomy_student", c.name): f"{c.name} on {c.replica}" for c in pupils}
    return KillReport(replica=victim, at_s=at - window, students=counts[victim], acked_before=len(before),
                      kept_1s=sum(1 for s in before if s in voters), votes_after=len(voters), before=before,
                      missing_1s=[f"{s} ({where.get(s, '?')})" for s in before if s not in voters])


@contextlib.contextmanager
def own_database(postgres: bool = False):
    """The started servers' class rooms in a temporary SQLite folder (or, with ``postgres``, a
    throwaway PostgreSQL server), unless ANATOMY_DATABASE_URL names a database."""
    if os.environ.get("ANATOMY_DATABASE_URL"):
        yield os.environ["ANATOMY_DATABASE_URL"]
        return
    if postgres:
        from bench.cluster import postgresql  # noqa: PLC0415

        with postgresql() as url:
            os.environ["ANATOMY_DATABASE_URL"] = url
            try:
                yield url
            finally:
                os.environ.pop("ANATOMY_DATABASE_URL", None)
        return
    with tempfile.TemporaryDirectory(prefix="ta-room-bench-") as folder:
        old = os.environ.get("ANATOMY_DATA_DIR")
        os.environ["ANATOMY_DATA_DIR"] = folder
        try:
            yield str(Path(folder) / "rooms.sqlite3")
        finally:
            if old is None:
                os.environ.pop("ANATOMY_DATA_DIR", None)
            else:
                os.environ["ANATOMY_DATA_DIR"] = old
