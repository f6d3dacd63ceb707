"""A first-come, first-served line for slow jobs that a whole class may start at once.

A fine-tune keeps a CPU core busy for half a minute. If thirty students press the button
together, running thirty at once would freeze every lesson on the server; here at most
``slots`` run, and the others wait in the order they asked, each told their place.
One instance is shared by every session (st.cache_resource); it holds tickets, no data.
"""
from __future__ import annotations

import itertools
import threading


class JobQueue:
    def __init__(self, slots: int):
        if slots <= 0:
            raise ValueError("a queue needs at least one slot")
        self.slots = slots
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._waiting: list[int] = []      # tickets in the order they came
        self._running: set[int] = set()

    def join(self) -> int:
        """A ticket at the end of the line."""
        with self._lock:
            ticket = next(self._numbers)
            self._waiting.append(ticket)
            return ticket

    def try_start(self, ticket: int) -> bool:
        """True (and the ticket now runs) when a slot is free and no earlier ticket waits.

        Example (1 slot): a = join(); b = join(); try_start(b) -> False; try_start(a) -> True
        """
        with self._lock:
            if ticket in self._running:
                return True
            free = self.slots - len(self._running)
            if ticket in self._waiting[:free]:   # no one who came earlier is left waiting
                self._waiting.remove(ticket)
                self._running.add(ticket)
                return True
            return False

    def place(self, ticket: int) -> int:
        """0 while running; otherwise 1 for the next in line, 2 behind it, ..."""
        with self._lock:
            if ticket in self._running:
                return 0
            return self._waiting.index(ticket) + 1 if ticket in self._waiting else 0

    def leave(self, ticket: int) -> None:
        """Done, or gave up waiting (the student left the page): the next in line may start."""
        with self._lock:
            self._running.discard(ticket)
            if ticket in self._waiting:
                self._waiting.remove(ticket)

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)
