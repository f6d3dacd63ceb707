"""Live measurements (C2's norm timing, B5's kernels, D2's decoding) run one at a time in a
process: a class shares one server, and two students' measurements must not time each other."""
from __future__ import annotations

import threading
import time

from core.calc.flops import measure_decoding
from core.calc.timing import one_at_a_time, time_norms
from core.lab.sparse_lab import measure_one


def test_live_measurements_never_overlap():
    inside, overlaps = [0], []

    @one_at_a_time
    def measure(i):
        inside[0] += 1
        overlaps.append(inside[0])
        time.sleep(0.01)
        inside[0] -= 1
        return i

    threads = [threading.Thread(target=measure, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [1] * 8


def test_every_live_measurement_takes_its_turn():
    for fn in (time_norms, measure_one, measure_decoding):
        assert getattr(fn, "__wrapped__", None) is not None, fn.__name__
    # A measurement that calls another does not wait for itself (the lock is re-entrant).
    assert one_at_a_time(lambda: time_norms(8, 8, 1)["layer_ms"])() > 0
