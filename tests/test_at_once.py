"""ui.frame.at_once: a fragment's messages reach the browser together, slow work still shows."""
import time
from types import SimpleNamespace

import ui.batching as batching
import ui.frame as frame


def _ctx(monkeypatch):
    sent: list[str] = []
    ctx = SimpleNamespace(_enqueue=sent.append)
    monkeypatch.setattr(batching.internals, "script_context", lambda: ctx)
    return ctx, sent


def test_messages_wait_for_the_end_of_the_block_and_keep_their_order(monkeypatch):
    ctx, sent = _ctx(monkeypatch)
    with frame.at_once():
        for name in "abc":
            ctx._enqueue(name)
        assert sent == []
    assert sent == ["a", "b", "c"]
    ctx._enqueue("d")                      # after the block: sent as usual
    assert sent == ["a", "b", "c", "d"]


def test_a_slow_block_lets_go_after_the_limit(monkeypatch):
    ctx, sent = _ctx(monkeypatch)
    with frame.at_once(limit_s=0.02):
        ctx._enqueue("bar")
        time.sleep(0.05)
        ctx._enqueue("bar 50 %")           # past the limit: both go now
        assert sent == ["bar", "bar 50 %"]
        ctx._enqueue("bar 100 %")
        assert sent == ["bar", "bar 50 %", "bar 100 %"]
    assert sent == ["bar", "bar 50 %", "bar 100 %"]


def test_send_now_and_nesting(monkeypatch):
    ctx, sent = _ctx(monkeypatch)
    with frame.at_once():
        ctx._enqueue("a")
        with frame.at_once():              # nested: the outer block holds
            ctx._enqueue("b")
        assert sent == []
        frame.send_now()
        assert sent == ["a", "b"]
        ctx._enqueue("c")
        assert sent == ["a", "b", "c"]
    assert sent == ["a", "b", "c"]


def test_an_error_inside_still_sends_what_was_made(monkeypatch):
    ctx, sent = _ctx(monkeypatch)
    try:
        with frame.at_once():
            ctx._enqueue("a")
            raise ValueError("boom")
    except ValueError:
        pass
    assert sent == ["a"]
