"""A Streamlit client without a browser: it speaks the app's own websocket protocol.

One ``Session`` is one browser tab as the server sees it: it opens ``/_stcore/stream``, asks
for a page run (``BackMsg.rerun_script``, as the front end does on load and after every
widget change) and reads the ``ForwardMsg`` stream until the run ends. It records what a
student would see go wrong: exception boxes, error alerts, a page that was not found.
Used by tests (many sessions at once on a fresh server) and by the load benchmark.
"""
from __future__ import annotations

import hashlib
import time
import urllib.parse
from dataclasses import dataclass, field

import websocket
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetStates


@dataclass
class RunResult:
    seconds: float                                  # request sent -> script_finished received
    finished: bool                                  # the run ended (not cut by the timeout)
    exceptions: list[str] = field(default_factory=list)   # text of every exception box
    errors: list[str] = field(default_factory=list)       # st.error boxes
    page_not_found: bool = False                    # the "Page not found" dialog was sent
    elements: int = 0                               # elements drawn by the run
    components: int = 0                             # custom components (our charts) drawn
    widgets: dict[str, object] = field(default_factory=dict)  # widget id -> its proto, as sent
    fragments: dict[str, str] = field(default_factory=dict)   # widget id -> the fragment it lives in
    sliders: list[str] = field(default_factory=list)          # slider ids, in page order
    digests: list[str] = field(default_factory=list)          # one per element: what the student sees


class Session:
    def __init__(self, base_url: str, timeout: float = 60.0, cookie: str | None = None, resume: str = ""):
        """``cookie``: the Cookie header a browser would send; ``resume``: the session id of a
        dropped connection, as the front end sends it on reconnect (third subprotocol entry)."""
        parts = urllib.parse.urlsplit(base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        path = parts.path.rstrip("/")
        self.timeout = timeout
        self.ws = websocket.create_connection(f"{scheme}://{parts.netloc}{path}/_stcore/stream",
                                              subprotocols=["streamlit", "-", resume] if resume else ["streamlit"],
                                              timeout=timeout, cookie=cookie)
        self.headers: dict[str, str] = dict(self.ws.getheaders() or {})   # the handshake's answer
        self.page_hash = ""
        self.session_id = ""     # the server's id of this session (its first new_session message)

    def run(self, page: str = "", query: str = "", widget_states=None, fragment_id: str = "") -> RunResult:
        """Ask for a run of ``page`` (its URL path) with ``query`` (``lang=zh&b1.d_k=8``)."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = query
        state.page_name = page
        state.page_script_hash = self.page_hash
        if widget_states is not None:
            state.widget_states.CopyFrom(widget_states)
        if fragment_id:
            state.fragment_id = fragment_id
        start = time.perf_counter()
        self.ws.send_binary(msg.SerializeToString())
        result = RunResult(0.0, False)
        deadline = start + self.timeout
        while time.perf_counter() < deadline:
            try:
                raw = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                break
            if isinstance(raw, str):
                continue
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = fwd.new_session.page_script_hash or self.page_hash
                self.session_id = fwd.new_session.initialize.session_id or self.session_id
            elif kind == "page_not_found":
                result.page_not_found = True
            elif kind == "delta":
                self._read_delta(fwd.delta, result)
            elif kind == "script_finished":
                result.finished = True
                break
        result.seconds = time.perf_counter() - start
        return result

    @staticmethod
    def _read_delta(delta, result: RunResult) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        result.elements += 1
        result.digests.append(hashlib.sha1(element.SerializeToString(deterministic=True)).hexdigest()[:16])
        if kind == "exception":
            result.exceptions.append(f"{element.exception.type}: {element.exception.message}")
        elif kind == "alert" and element.alert.format == element.alert.ERROR:
            result.errors.append(element.alert.body)
        elif kind == "bidi_component":
            result.components += 1
        inner = getattr(element, kind) if kind else None
        widget_id = getattr(inner, "id", "") if inner is not None else ""
        if widget_id:
            result.widgets[widget_id] = inner
            result.fragments[widget_id] = delta.fragment_id
            if kind == "slider" and widget_id not in result.sliders:
                result.sliders.append(widget_id)

    def move_slider(self, first: RunResult, page: str, query: str = "", index: int = 0, steps: int = 1) -> RunResult:
        """Move the ``index``-th slider of the page ``steps`` steps from its value on ``first``, as
        a key press in the browser does: a rerun of the slider's fragment (or of the page)."""
        widget_id = first.sliders[index]
        slider = first.widgets[widget_id]
        states = WidgetStates()
        state = states.widgets.add()
        state.id = widget_id
        values = list(slider.value) or list(slider.default)
        if slider.options:      # a select_slider: its value travels as the chosen option's text
            i = min(max(int(values[0]) + steps, 0), len(slider.options) - 1)
            state.string_array_value.data.extend([slider.options[i], *(slider.options[int(v)] for v in values[1:])])
        else:
            target = min(max(values[0] + steps * (slider.step or 1), slider.min), slider.max)
            state.double_array_value.data.extend([target, *values[1:]])
        return self.run(page, query, states, first.fragments.get(widget_id, ""))

    def close(self) -> None:
        try:
            self.ws.close()
        except OSError:
            pass
