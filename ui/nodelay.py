"""Send each websocket message at once (TCP_NODELAY) on this server's sockets.

Streamlit 1.67's own server binds its listening socket without naming the TCP protocol, and
asyncio only turns off Nagle's algorithm on sockets that name it. Every connection then held
each small message back until the browser acknowledged the one before (on Linux a delayed
acknowledgement waits up to 40 ms): a slider press took ~40 ms longer than its script run.
Connections accepted from a listening socket with TCP_NODELAY inherit it (Linux); the ones
already open are set here too. Done once a process, from ui.preload; harmless if nothing is found.
"""
from __future__ import annotations

import asyncio.trsock
import gc
import socket
import threading

_DONE = False
_LOCK = threading.Lock()


def tcp_nodelay() -> int:
    """Turn on TCP_NODELAY on every TCP socket of this process; returns how many were set."""
    global _DONE
    with _LOCK:
        if _DONE:
            return 0
        _DONE = True
        count = 0
        for obj in gc.get_objects():
            # type(), not isinstance(): the latter asks some lazy objects (torch's deprecated
            # aliases) for their class, and they warn.
            if type(obj) not in (socket.socket, asyncio.trsock.TransportSocket):
                continue
            try:
                if obj.family in (socket.AF_INET, socket.AF_INET6) and obj.type == socket.SOCK_STREAM:
                    obj.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    count += 1
            except OSError:
                pass    # closed, or not ours to change
        return count
