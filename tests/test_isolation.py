"""Two students on one server at the same moment, with different language, device choice, seed,
text and lesson state, each see exactly what they would see alone (issue 17, isolation): nothing
per-student lives on shared cached objects or in process-global state."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.stclient import Session
from tests.live_server import live_server

ROOT = Path(__file__).resolve().parent.parent

# Two students' states, per lesson: each differs from the other in every control it names.
STATES = [
    ("attention", "lang=zh&device=cpu&b1.seed=7&b1.text=%E6%98%A5%E7%9C%A0%E4%B8%8D%E8%A7%89%E6%99%93&b1.d_k=3",
     "lang=en&b1.seed=0&b1.d_k=40&b1.source=course&b1.layer=2&b1.head=1"),
    ("generation", "lang=en&d1.prompt=%E5%A4%A7%E6%B1%9F%E4%B8%9C%E5%8E%BB&d1.temperature=1.5&d1.seed=3&d1.steps=20",
     "lang=zh&d1.steps=5"),
    ("kv-cache", "lang=zh&d2.model=llama-3-8b&d2.batch=64", "lang=en&d2.dtype=int4&d2.context=131072"),
    ("rope", "lang=en&c3.d=16&c3.pair=7&c3.base=500000", "lang=zh&c3.m=200&c3.seed=42"),
]


@pytest.fixture(scope="module")
def server():
    with live_server(ROOT) as url:
        yield url


def _seen(url: str, page: str, query: str, repeats: int = 1) -> list[list[str]]:
    """What one student sees: the digests of every element of each run, opened afresh each time."""
    out = []
    for _ in range(repeats):
        s = Session(url, timeout=120)
        try:
            r = s.run(page, query)
            assert r.finished and not r.exceptions and not r.page_not_found, (page, query, r.exceptions)
            out.append(r.digests)
        finally:
            s.close()
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page,a,b", STATES, ids=[s[0] for s in STATES])
def test_two_students_at_once_see_what_each_would_see_alone(server, page, a, b):
    alone_a, alone_b = _seen(server, page, a)[0], _seen(server, page, b)[0]
    assert alone_a != alone_b, "the two states must differ, or the test shows nothing"
    with ThreadPoolExecutor(max_workers=2) as pool:          # interleaved: a, b, a, b ... at once
        runs_a = pool.submit(_seen, server, page, a, 4)
        runs_b = pool.submit(_seen, server, page, b, 4)
        together_a, together_b = runs_a.result(), runs_b.result()
    assert all(seen == alone_a for seen in together_a)
    assert all(seen == alone_b for seen in together_b)
