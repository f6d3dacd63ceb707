"""A class of N students on one server (or on replicas behind nginx): the load benchmark.

    python -m bench.bench_class --students 100 --seconds 120            # starts one server
    python -m bench.bench_class --students 100 --burst --seconds 20     # all open in one second
    python -m bench.bench_class --replicas 2 --students 100             # 2 replicas behind nginx
    python -m bench.bench_class --url http://host:8501 [--pid PID ...]  # a server already running

Each simulated student is one thread with no browser (bench/stclient.py speaks Streamlit's
websocket protocol). It opens a lesson as a browser's first visit does: the page's HTML, every
script, style and font the HTML names, /_stcore/health and host-config, plotly.js
(/app/static/plotly.min.js), then the session's first run over the websocket. "First drawn" is
the time from the first byte asked to the end of that run. Then, every 3 s (jittered 2-4 s) it
moves one slider of its lesson one step and back (a fragment rerun, as the browser sends it);
students are spread over every lesson, languages alternate. Most students sit on a few values,
as in a class following the lecturer.

Printed in one run: time to first drawn lesson and rerun latency (p50, p95, max), errors, the
server's CPU and RSS (after a warm-up visit to every lesson, peak, and after the sessions
closed), and this client's own CPU (threads of one Python process: near 100 % of a core means
the client, not the server, is what was measured).
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import os
import random
import re
import resource
import statistics
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from bench.stclient import Session
from ui.course import existing_lessons as _all_lessons

ONLY: set[str] = set()     # --lessons: the lesson codes the class draws from (empty: every lesson)


def existing_lessons():
    """The lessons the class draws from: every lesson, or those --lessons names (a like-for-like run
    of two commits whose courses differ: issue 39's 17 lessons of b452ca2 against today's 21)."""
    return [lesson for lesson in _all_lessons() if not ONLY or lesson.code in ONLY]

ASSET = re.compile(r'(?:src|href)="\./((?:static/)[^"]+)"')
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the server's processes
def _proc_cpu_rss(pid: int) -> tuple[float, int]:
    """CPU seconds used so far and resident bytes now, from /proc (0, 0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm") as f:
            rss_pages = int(f.read().split()[1])
    except (OSError, IndexError):
        return 0.0, 0
    return (int(fields[11]) + int(fields[12])) / TICK, rss_pages * os.sysconf("SC_PAGE_SIZE")


def _cpu_wait(pid: int) -> float:
    """Seconds the threads of ``pid`` have spent ready to run but waiting for a CPU core
    (/proc/<pid>/task/*/schedstat): the machine's other work, not this server's own queue."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def pids_listening(port: int) -> list[int]:
    """The processes with a TCP socket listening on ``port`` (this machine's /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in list(f)[1:]:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(cols[9])
        except OSError:
            pass
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    found.append(int(pid))
                    break
        except OSError:
            continue
    return found


class Watch(threading.Thread):
    """Samples the CPU and RSS of some processes (and their children) every ``every`` s."""

    def __init__(self, pids: list[int], every: float = 0.5):
        super().__init__(daemon=True)
        self.pids, self.every = pids, every
        self.samples: list[tuple[float, float, int]] = []   # (time, cpu seconds, rss bytes), summed
        self.client: list[tuple[float, float]] = []          # (time, this process's cpu seconds)
        self.waits: list[tuple[float, float]] = []           # (time, server threads' wait for a core)
        self._halt = threading.Event()
        self.sample()

    def sample(self) -> tuple[float, float, int]:
        cpu, rss = 0.0, 0
        for pid in self.pids:
            for p in [pid, *_children(pid)]:
                c, r = _proc_cpu_rss(p)
                cpu, rss = cpu + c, rss + r
        s = (time.perf_counter(), cpu, rss)
        self.samples.append(s)
        self.client.append((s[0], time.process_time()))
        self.waits.append((s[0], sum(_cpu_wait(p) for pid in self.pids for p in [pid, *_children(pid)])))
        return s

    def cpu_wait(self, t0: float, t1: float) -> float:
        inside = [w for w in self.waits if t0 <= w[0] <= t1]
        return inside[-1][1] - inside[0][1] if len(inside) >= 2 else 0.0

    def client_cores(self, t0: float, t1: float) -> float:
        """This client's CPU, in cores, between t0 and t1 (the samples nearest inside)."""
        inside = [c for c in self.client if t0 <= c[0] <= t1]
        if len(inside) < 2:
            return 0.0
        return (inside[-1][1] - inside[0][1]) / max(inside[-1][0] - inside[0][0], 1e-9)

    def run(self) -> None:
        while not self._halt.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def between(self, t0: float, t1: float) -> tuple[float, int, float]:
        """CPU seconds, peak RSS and the busiest second's CPU (in cores) between t0 and t1."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1] or self.samples[-1:]
        before = max((s for s in self.samples if s[0] <= t0), default=inside[0], key=lambda s: s[0])
        peak_cores = 0.0
        for a, b in zip(inside, inside[2:], strict=False):
            peak_cores = max(peak_cores, (b[1] - a[1]) / max(b[0] - a[0], 1e-9))
        return inside[-1][1] - before[1], max(s[2] for s in inside), peak_cores


# ---------------------------------------------------------------- one student
@dataclass
class Student:
    lesson: str
    lang: str
    extra: str = ""                     # more of the query, e.g. "&a1.lm=smollm2" (--real)
    first_drawn: float | None = None    # s, first byte asked -> first run finished
    drawn_at: float = 0.0               # perf_counter() when it was drawn
    http_s: float = 0.0                 # of which: the page, its files and plotly.js
    http_bytes: int = 0                 # bytes on the wire (compressed where the server compressed)
    reruns: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    replica: str = ""                   # X-Replica of the websocket's handshake (behind nginx)


class Browser:
    """One student's HTTP/1.1 keep-alive connection, with the cookies a browser would keep."""

    def __init__(self, base_url: str, timeout: float = 60.0):
        parts = urllib.parse.urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self.conn = None

    def cookie_header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def get(self, path: str, decode: bool = True) -> tuple[int, bytes, dict[str, str], int]:
        """GET ``path``: (status, body, headers, bytes on the wire). ``decode``: gunzip the body
        (a browser does, in C++; here it cost the client ~15 ms of its one core for plotly.js)."""
        headers = {"Accept-Encoding": "gzip", "User-Agent": "bench_class"}
        if self.cookies:
            headers["Cookie"] = self.cookie_header()
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request("GET", self.prefix + path, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        for value in resp.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        body = gzip.decompress(raw) if decode and resp.headers.get("Content-Encoding") == "gzip" else raw
        return resp.status, body, dict(resp.headers), len(raw)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def open_lesson(base_url: str, student: Student, timeout: float = 60.0) -> tuple[Session, object] | None:
    """A browser's first visit: page, files, plotly.js, websocket and first run."""
    start = time.perf_counter()
    browser = Browser(base_url, timeout)
    query = f"lang={student.lang}{student.extra}"
    try:
        status, html, _, size = browser.get(f"/{student.lesson}?{query}")
        if status != 200:
            student.errors.append(f"page {student.lesson}: HTTP {status}")
            return None
        wire = size
        paths = list(dict.fromkeys(ASSET.findall(html.decode("utf-8", "replace"))))
        paths += ["_stcore/health", "_stcore/host-config", "app/static/plotly.min.js"]
        for path in paths:
            status, _, _, size = browser.get("/" + path, decode=False)
            wire += size
            if status != 200:
                student.errors.append(f"/{path}: HTTP {status}")
    except (OSError, http.client.HTTPException) as exc:
        student.errors.append(f"page load: {type(exc).__name__}: {exc}")
        return None
    finally:
        browser.close()
    student.http_s = time.perf_counter() - start
    student.http_bytes = wire
    try:
        session = Session(base_url, timeout=timeout, cookie=browser.cookie_header() or None)
        first = session.run(student.lesson, query)
    except Exception as exc:  # noqa: BLE001 - every failure a student would see is counted
        student.errors.append(f"websocket: {type(exc).__name__}: {exc}")
        return None
    student.replica = session.headers.get("x-replica", "")
    if not _ok(first, student, "first run"):
        session.close()
        return None
    student.drawn_at = time.perf_counter()
    student.first_drawn = student.drawn_at - start
    return session, first


def _ok(result, student: Student, what: str) -> bool:
    if result.finished and not result.exceptions and not result.errors and not result.page_not_found:
        return True
    why = ("not finished in time" if not result.finished else "page not found" if result.page_not_found
           else "; ".join(result.exceptions + result.errors)[:200])
    student.errors.append(f"{student.lesson} {what}: {why}")
    return False


def _direction(first, index: int) -> int:
    """+1 unless the slider already sits at its top (a move that changes nothing never finishes)."""
    slider = first.widgets[first.sliders[index]]
    values = list(slider.value) or list(slider.default)
    if slider.options:
        return 1 if int(values[0]) + 1 < len(slider.options) else -1
    return 1 if values[0] + (slider.step or 1) <= slider.max else -1


def student_life(base_url: str, student: Student, number: int, start_at: float, end_at: float,
                 think: tuple[float, float], seed: int) -> None:
    rng = random.Random(seed)
    time.sleep(max(0.0, start_at - time.perf_counter()))
    opened = open_lesson(base_url, student)
    if opened is None:
        return
    session, first = opened
    query = f"lang={student.lang}{student.extra}"
    try:
        index = (number // len(existing_lessons())) % len(first.sliders) if first.sliders else 0
        step = _direction(first, index) if first.sliders else 0
        moved = False
        while first.sliders:
            pause = rng.uniform(*think)
            if time.perf_counter() + pause > end_at:
                break
            time.sleep(pause)
            moved = not moved
            try:
                result = session.move_slider(first, student.lesson, query, index=index, steps=step if moved else 0)
            except Exception as exc:  # noqa: BLE001
                student.errors.append(f"{student.lesson} rerun: {type(exc).__name__}: {exc}")
                return
            if not _ok(result, student, "rerun"):
                return
            student.reruns.append(result.seconds)
    finally:
        session.close()


# ---------------------------------------------------------------- a class
@dataclass
class Report:
    students: list[Student]
    wall_s: float
    server_cpu_s: float
    server_peak_cores: float
    rss_start: int
    rss_peak: int
    rss_after: int
    client_cpu_s: float
    client_cores_opening: float = 0.0   # the client's CPU (cores) until the last student was drawn
    server_cpu_wait_s: float = 0.0      # server threads ready to run, waiting for a core (others' load)
    label: str = ""

    @property
    def first_drawn(self) -> list[float]:
        return sorted(s.first_drawn for s in self.students if s.first_drawn is not None)

    @property
    def reruns(self) -> list[float]:
        return sorted(x for s in self.students for x in s.reruns)

    @property
    def errors(self) -> list[str]:
        return [e for s in self.students for e in s.errors]

    def table(self) -> str:
        def stats(xs: list[float]) -> str:
            if not xs:
                return "      -        -        -     (n=0)"
            return f"{_q(xs, .5) * 1e3:7.0f}  {_q(xs, .95) * 1e3:7.0f}  {xs[-1] * 1e3:7.0f}   (n={len(xs)})"
        mb = 1 / 2**20
        client_share = self.client_cpu_s / self.wall_s
        lines = [
            f"{self.label}",
            "                          p50 ms   p95 ms   max ms",
            f"first drawn lesson      {stats(self.first_drawn)}",
            f"  of which HTTP files   {stats(sorted(s.http_s for s in self.students if s.first_drawn))}",
            f"rerun (slider moved)    {stats(self.reruns)}",
            f"errors                  {len(self.errors)}" + (f"   e.g. {self.errors[0]}" if self.errors else ""),
            f"server CPU              {self.server_cpu_s:.1f} s in {self.wall_s:.0f} s "
            f"({self.server_cpu_s / self.wall_s:.0%} of one core on average, busiest second {self.server_peak_cores:.0%})",
            f"server waited for CPU   {self.server_cpu_wait_s:.1f} s (its threads ready to run, every core busy: "
            f"this client, nginx, other jobs)",
            f"server RSS (MB)         start {self.rss_start * mb:.0f}, peak {self.rss_peak * mb:.0f}, "
            f"after close {self.rss_after * mb:.0f} ({self.rss_after / max(self.rss_start, 1) - 1:+.0%})",
            f"client CPU              {self.client_cpu_s:.1f} s ({client_share:.0%} of one core)"
            + f"; {self.client_cores_opening:.0%} while the students opened"
            + ("   <- the client may be the bottleneck" if max(client_share, self.client_cores_opening) > 0.7 else ""),
            f"bytes per first visit   {statistics.mean(s.http_bytes for s in self.students) / 2**20:.2f} MB",
        ]
        per = {}
        for s in self.students:
            per.setdefault(s.lesson, []).extend(s.reruns)
        lines.append("rerun p50/p95 ms by lesson: " + ", ".join(
            f"{k} {_q(sorted(v), .5) * 1e3:.0f}/{_q(sorted(v), .95) * 1e3:.0f}" for k, v in per.items() if v))
        return "\n".join(lines)


def _q(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def real_query(lesson) -> str:
    """The query that opens ``lesson`` on SmolLM2 (ui.model.model_switch's key); a lesson
    without the switch ignores it."""
    return f"&{lesson.code.lower()}.lm=smollm2"


def warm_up(base_url: str, real: bool = False) -> None:
    """Every lesson once in each language, as the lecturer's own check before class (and on
    SmolLM2 too with ``real``)."""
    for lesson in existing_lessons():
        for lang in ("en", "zh"):
            for extra in ("", real_query(lesson)) if real else ("",):
                session = Session(base_url, timeout=120)
                try:
                    session.run(lesson.url_path, f"lang={lang}{extra}")
                finally:
                    session.close()


def run_class(base_url: str, pids: list[int], students: int = 100, seconds: float = 120.0,
              burst: bool = False, ramp: float = 20.0, think: tuple[float, float] = (2.0, 4.0),
              settle: float = 10.0, warm: bool = True, seed: int = 0, label: str = "",
              warm_urls: list[str] | None = None, real: bool = False) -> Report:
    """Run a class against ``base_url``; ``pids`` are the server processes to watch. ``warm_urls``:
    where the warm-up visits go (each replica itself: through nginx, a visit lands on one replica,
    and the other would meet the class cold). ``real``: every other student of each lesson opens it on
    SmolLM2 (``?{ns}.lm=smollm2``), the rest on the course model."""
    if warm:
        for url in warm_urls or [base_url]:
            warm_up(url, real)
    if os.environ.get("BENCH_MARK"):  # a profiler waiting for the class to start (not the warm-up)
        Path(os.environ["BENCH_MARK"]).write_text("class\n")
    lessons = existing_lessons()
    rng = random.Random(seed)
    roster = []
    for i in range(students):
        lesson, turn = lessons[i % len(lessons)], i // len(lessons)
        roster.append(Student(lesson.url_path, "zh" if turn % 2 else "en",
                              real_query(lesson) if real and (turn // 2) % 2 == 0 else ""))
    watch = Watch(pids)
    rss_start = watch.samples[-1][2]
    watch.start()
    t0 = time.perf_counter() + 0.5
    end_at = t0 + seconds
    starts = [t0 + (rng.uniform(0, 0.9) if burst else i * ramp / max(students, 1)) for i in range(students)]
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    threads = [threading.Thread(target=student_life, args=(base_url, s, i, starts[i], end_at, think, seed * 1000 + i),
                                daemon=True) for i, s in enumerate(roster)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.perf_counter()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(settle)
    rss_after = watch.sample()[2]
    watch.stop()
    server_cpu, rss_peak, peak_cores = watch.between(t0, t1)
    client_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    last_drawn = max((s.drawn_at for s in roster if s.first_drawn is not None), default=t1)
    return Report(roster, t1 - t0, server_cpu, peak_cores, rss_start, rss_peak, rss_after, client_cpu,
                  watch.client_cores(t0, last_drawn), watch.cpu_wait(t0, t1), label)


@contextlib.contextmanager
def servers(replicas: int, log_dir: Path | None = None):
    """Start ``replicas`` app processes (and nginx in front when more than one): (url, pids)."""
    from bench.cluster import nginx
    from bench.cluster import replicas as start_replicas
    with start_replicas(replicas, log_dir=log_dir) as reps:
        if replicas == 1:
            yield reps[0].url, [reps[0].pid], [reps[0].url]
            return
        with tempfile.TemporaryDirectory(prefix="ta-nginx-") as runtime, \
                nginx([r.url.removeprefix("http://") for r in reps], Path(runtime)) as (url, nginx_pid):
            yield url, [r.pid for r in reps] + [nginx_pid], [r.url for r in reps]


def main(argv: list[str] | None = None) -> Report:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=120.0, help="how long the class lasts, from the first open")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--url", help="a running server (or nginx); default: start --replicas servers here")
    where.add_argument("--replicas", type=int, default=1, help="servers to start (2+: behind nginx, deploy/nginx.conf)")
    ap.add_argument("--pid", type=int, action="append", help="server process(es) to watch with --url "
                    "(default: whatever listens on the URL's port)")
    ap.add_argument("--burst", action="store_true", help="every student opens within the same second")
    ap.add_argument("--ramp", type=float, default=20.0, help="without --burst: students open over this many s")
    ap.add_argument("--settle", type=float, default=10.0, help="s to wait after the sessions close before RSS")
    ap.add_argument("--no-warmup", action="store_true", help="skip the visit to every lesson before the class")
    ap.add_argument("--real", action="store_true", help="half the students open their lesson on SmolLM2")
    ap.add_argument("--room", action="store_true", help="a class room (issue 42): the students follow a teacher "
                    "through 10 slides and vote (bench/bench_room.py)")
    ap.add_argument("--step-s", type=float, default=3.0, help="--room: seconds between the teacher's slides")
    ap.add_argument("--postgres", action="store_true", help="--room: the servers' database is a throwaway "
                    "PostgreSQL started here (Debian's; ANATOMY_DATABASE_URL, if set, is used instead)")
    ap.add_argument("--kill", action="store_true", help="--room with --replicas 2+: kill one replica (not the "
                    "teacher's) halfway through the vote; its students reconnect through nginx")
    ap.add_argument("--lessons", default="", help="lesson codes the class draws from, e.g. A1,B1 "
                    "(default: every lesson; the warm-up visits only these too)")
    args = ap.parse_args(argv)
    ONLY.update(code.strip().upper() for code in args.lessons.split(",") if code.strip())
    if args.room:
        return room_main(args)
    mode = "burst (all open within 1 s)" if args.burst else f"opening over {args.ramp:.0f} s"
    if args.url:
        pids = args.pid or pids_listening(urllib.parse.urlsplit(args.url).port or 80)
        ctx = contextlib.nullcontext((args.url, pids, [args.url]))
        where_txt = args.url
    else:
        ctx = servers(args.replicas)
        where_txt = f"{args.replicas} replica(s)" + (" behind nginx" if args.replicas > 1 else "")
    with ctx as (url, pids, warm_urls):
        label = (f"{args.students} students{' (half on SmolLM2)' if args.real else ''}, {args.seconds:.0f} s, "
                 f"{mode}; {where_txt}; "
                 f"server pids {pids}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                 f"load before {os.getloadavg()[0]:.2f}")
        report = run_class(url, pids, args.students, args.seconds, args.burst, args.ramp,
                           settle=args.settle, warm=not args.no_warmup, label=label, warm_urls=warm_urls,
                           real=args.real)
    print(report.table())
    return report


def room_main(args):
    """--room: one teacher, --students students in a class room (bench/bench_room.py)."""
    from bench.bench_room import own_database, run_room  # noqa: PLC0415

    if args.kill and (args.url or args.replicas < 2):
        raise SystemExit("--kill needs --replicas 2 or more, started here")
    with own_database(postgres=args.postgres) as database:
        if args.url:
            ctx = contextlib.nullcontext((args.url, args.pid or pids_listening(urllib.parse.urlsplit(args.url).port or 80),
                                          [args.url]))
        else:
            ctx = servers(args.replicas)
        with ctx as (url, pids, warm_urls):
            if not args.no_warmup:
                for each in warm_urls:    # B1 and the home page once, in each language
                    for page in ("attention", ""):
                        for lang in ("en", "zh"):
                            session = Session(each, timeout=120)
                            try:
                                session.run(page, f"lang={lang}")
                            finally:
                                session.close()
            where = args.url or f"{args.replicas} replica(s)" + (" behind nginx" if args.replicas > 1 else "")
            label = (f"class room: 1 teacher, {args.students} students; {where}; database {database}; "
                     f"server pids {pids}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                     f"load before {os.getloadavg()[0]:.2f}")
            kill = {u.removeprefix("http://"): pid for u, pid in zip(warm_urls, pids, strict=False)} if args.kill else None
            report = run_room(url, pids, args.students, args.seconds, ramp=min(args.ramp, 10.0),
                              step_s=args.step_s, label=label, kill=kill)
    print(report.table())
    return report


if __name__ == "__main__":
    main()
