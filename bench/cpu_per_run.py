"""The server's CPU for one rerun, two checkouts side by side (issue 39: "every lesson's median rerun
is ~10 ms dearer, also those whose page did not change"). CPU time rather than wall time: with other
work on the machine, the process's own CPU seconds (/proc/<pid>/stat, all its threads) move far
less than its latency does.

    python -m bench.cpu_per_run /tmp/old . --pages masks,gqa,lora --presses 40 [--profile /tmp/prof]

For each checkout, one server; one student opens each page and presses its first slider back and
forth ``--presses`` times; the server's CPU per press (median of three rounds, the checkouts taking
turns) and per first visit. ``--profile DIR``: py-spy samples each server during the presses
(``DIR/<name>.txt``, collapsed stacks, --idle off) to see where the difference goes.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.stclient import Session
from tests.live_server import live_server

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """User + system seconds of ``pid`` and its children (the server is ``streamlit run``)."""
    total = 0.0
    for p in [pid, *_children(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
        except (OSError, IndexError):
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _server_pid(port: int) -> int:
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
    return int(out.split("pid=")[1].split(",")[0])


def _presses(url: str, pid: int, page: str, presses: int) -> tuple[float, float]:
    """(CPU of the first visit, median CPU a press) of one student on ``page``."""
    s = Session(url)
    try:
        before = _cpu(pid)
        first = s.run(page, "lang=en")
        visit = _cpu(pid) - before
        if first.page_not_found:
            return float("nan"), float("nan")
        if not first.sliders:
            return visit, float("nan")
        before = _cpu(pid)                 # the clock ticks every 10 ms: the mean over every press
        for n in range(presses):
            s.move_slider(first, page, "lang=en", steps=1 if n % 2 == 0 else 0)
        return visit, (_cpu(pid) - before) / presses
    finally:
        s.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+", type=Path)
    parser.add_argument("--pages", default="", help="URL paths (default: every lesson of this checkout)")
    parser.add_argument("--presses", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    if args.pages:
        pages = args.pages.split(",")
    else:
        from ui.course import existing_lessons
        pages = [lesson.url_path for lesson in existing_lessons()]
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    logs = [open(os.devnull, "w") for _ in args.checkouts]
    servers = [live_server(folder.resolve(), log) for folder, log in zip(args.checkouts, logs, strict=True)]
    urls = [server.__enter__() for server in servers]
    try:
        pids = [_server_pid(int(url.rsplit(":", 1)[1])) for url in urls]
        for url, pid in zip(urls, pids, strict=True):
            _presses(url, pid, pages[0], 2)                    # the first run's imports and warm-up
        spies = []
        if args.profile and shutil.which(str(Path(sys.executable).parent / "py-spy")):
            args.profile.mkdir(parents=True, exist_ok=True)
            spies = [subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(pid),
                                       "-r", "200", "-f", "raw", "-o", str(args.profile / f"{folder.name or 'here'}.txt")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                     for pid, folder in zip(pids, args.checkouts, strict=True)]
            time.sleep(1)
        for _ in range(args.rounds):
            for folder, url, pid in zip(args.checkouts, urls, pids, strict=True):
                for page in pages:
                    results.setdefault((str(folder), page), []).append(_presses(url, pid, page, args.presses))
        for spy in spies:
            spy.send_signal(2)
            spy.wait(timeout=60)
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    print(f"server CPU ms, median of {args.rounds} rounds (a press: the mean of {args.presses})")
    print(f"{'page':10}" + "".join(f"{str(f)[-18:]:>22}{'':>12}" for f in args.checkouts))
    print(f"{'':10}" + "".join(f"{'first visit':>22}{'press':>12}" for _ in args.checkouts))
    for page in pages:
        row = f"{page:10}"
        for folder in args.checkouts:
            runs = results[(str(folder), page)]
            if any(r[0] != r[0] for r in runs):
                row += f"{'-':>22}{'-':>12}"
                continue
            row += f"{statistics.median(r[0] for r in runs) * 1000:22.1f}{statistics.median(r[1] for r in runs) * 1000:12.1f}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
