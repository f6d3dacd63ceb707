"""Every use of Streamlit's private API, in one place (Streamlit 1.67.0, pinned in requirements.txt).

Streamlit's public API covers almost everything the app does. Eight things it does not, and each is
done here, on a name Streamlit does not promise to keep; `tests/test_streamlit_internals.py` checks
each behaviour below on the installed Streamlit and fails, naming the function, when an upgrade
changes one of them.

- ``script_context()``: the running script's context (session, page, message sender). Public
  ``st.*`` calls find it themselves; we need it for the four helpers below.
- ``hold_messages`` / ``message_sender``: a script run sends each element through the context's
  ``_enqueue``. ``ui.frame.at_once`` puts a stand-in there that holds a fragment's elements and sends
  them together (one re-render in the browser instead of three or four).
- ``is_history_navigation()``: whether this run is the browser's back/forward button (a bound widget
  then follows the address, not its remembered value).
- ``correct_url_value`` / ``forget_url_value``: Streamlit's own correction of a URL-bound widget's
  parameter (``st.query_params`` refuses a bound key), and dropping a bound parameter from the values
  a new widget is seeded with (a slider whose bounds changed is a new widget).
- ``release_url_values``: a class room's student follows the teacher's values of URL-bound controls
  on the page shown (``st.switch_page`` refuses to set a parameter bound to a widget of the page).
- ``main_script_path()``: where ``app.py`` is, for the folder served at /app/static/.
- ``gzip_middleware()``: Streamlit's Starlette middleware class, its route helper and an instance's
  base URL, which ``ui.static_gzip`` wraps to serve static files compressed once a process.
- ``this_fragment()`` / ``rerun_fragment()``: the session and fragment of the running fragment, and a
  rerun of that fragment asked from another thread, as the browser's ``run_every`` timer asks it.
  A class room (``ui.room``) wakes its students' pages when the teacher moves, instead of every
  page asking every second.
- ``let_finished_runs_land()``: a fragment's rerun asked for just after the session's last run
  ended waits until that run's own messages have been handled (ui/preload.py installs it).

Not here because they are not Python: the CSS of ``ui.frame`` and the scripts in ``ui/`` select
Streamlit's elements by their ``data-testid`` attributes; the browser tests (tests/browser/) fail
when those change.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from streamlit.runtime.scriptrunner import get_script_run_ctx


def script_context():
    """The running script's context, or None outside a script run (a bare import, a thread)."""
    return get_script_run_ctx()


def message_sender(ctx) -> Callable:
    """The function this script run sends each of its messages (elements, deltas) through."""
    return ctx._enqueue


def hold_messages(ctx, sender: Callable) -> None:
    """From now on this run's messages go to ``sender`` (give back ``message_sender``'s to undo)."""
    ctx._enqueue = sender


def is_history_navigation() -> bool:
    """True when this run is the browser's back or forward button."""
    ctx = get_script_run_ctx()
    return ctx is not None and bool(ctx.is_history_navigation)


@contextlib.contextmanager
def _url_params() -> Iterator:
    ctx = get_script_run_ctx()
    if ctx is None:
        yield None
        return
    with ctx.session_state.query_params() as qp:
        yield qp


def correct_url_value(key: str, value: str) -> None:
    """Put ``value`` in the address under the URL-bound widget ``key`` (no-op outside a run)."""
    with _url_params() as qp:
        if qp is not None and qp.get_all(key) != [value]:
            qp.set_corrected_value(key, value, "string_value")


def forget_url_value(key: str) -> None:
    """A widget with ``key`` made later in this run is not seeded from the address the browser sent.

    The address itself is unchanged. Back and forward still follow the address."""
    if is_history_navigation():
        return
    with _url_params() as qp:
        if qp is not None:
            qp._initial_query_params.pop(key, None)


def release_url_values(keys) -> None:
    """The URL-bound widgets of ``keys`` let go of their parameters for the rest of this run, so that
    ``st.switch_page(query_params=...)`` may set them (``st.query_params`` refuses a bound key). Each
    widget binds again when it is next drawn; with its state deleted it is seeded from the address."""
    with _url_params() as qp:
        if qp is not None:
            for key in keys:
                binding = qp.get_binding_for_param(key)
                if binding is not None:
                    qp.unbind_widget(binding.widget_id)


def main_script_path() -> str | None:
    """The path of the main script (``app.py``) of the running app, None outside a run."""
    ctx = get_script_run_ctx()
    return ctx.main_script_path if ctx is not None and ctx.main_script_path else None


def gzip_middleware():
    """``(middleware class, route_path(scope), base_url(instance))`` of Streamlit's Starlette gzip
    middleware, or None when this Streamlit does not have it where 1.67 does."""
    try:
        from streamlit.web.server.starlette import starlette_gzip_middleware as sgm
        middleware, route_path = sgm.SelectiveGZipMiddleware, sgm._route_path
    except (ImportError, AttributeError):
        return None
    return middleware, route_path, lambda instance: instance._base_url or ""


def this_fragment() -> tuple[str, str] | None:
    """``(session id, fragment id)`` of the fragment running now; None outside a fragment's run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState  # noqa: PLC0415

    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    try:
        fragment_id = ThreadState.get().fragment_id
    except RuntimeError:
        return None
    return (ctx.session_id, fragment_id) if fragment_id else None


def rerun_fragment(session_id: str, fragment_id: str) -> bool:
    """From any thread: the session reruns the fragment, as when the browser's ``run_every`` timer
    fires (the session's last client state: its page, query and widgets). False when the session
    has gone; a fragment the session no longer has is ignored by Streamlit itself."""
    from streamlit.proto.ClientState_pb2 import ClientState  # noqa: PLC0415
    from streamlit.runtime import Runtime  # noqa: PLC0415

    if not Runtime.exists():
        return False
    manager = getattr(Runtime.instance(), "_session_mgr", None)     # (AppTest's runtime has none)
    info = manager.get_active_session_info(session_id) if manager is not None else None
    if info is None:
        return False
    session = info.session
    state = ClientState()
    state.CopyFrom(session._client_state)
    state.fragment_id = fragment_id
    state.is_auto_rerun = True
    loop = session._event_loop
    if loop.is_closed():
        return False
    loop.call_soon_threadsafe(session.request_rerun, state)
    return True


def let_finished_runs_land() -> bool:
    """A fragment's rerun that reaches a session whose last run has just ended waits one turn of the
    session's event loop. False when this Streamlit has no ``AppSession.request_rerun`` to wrap.

    Why (issue 42): a script runner sends its run's elements to the session's event loop and ends;
    a rerun request that the loop handles before those messages finds the runner ended, and the
    session starts a new one at once. The loop then ignores the messages still waiting, because
    they come from a runner that is no longer the session's (``AppSession
    ._handle_scriptrunner_event_on_event_loop``: "Ignoring event from non-current ScriptRunner"):
    a whole fragment run's output was lost. Under a class's load (the loop seconds behind) this hit
    1-3 of 100 students at each vote: the question box redrawn with the vote buttons, never shown.
    Asked again with ``call_soon_threadsafe``, the request is handled after the messages the ended
    runner had already sent to the loop (they were all sent before it ended). A whole-page rerun is
    left alone: it draws everything again."""
    try:
        from streamlit.runtime.app_session import AppSession  # noqa: PLC0415
        from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType  # noqa: PLC0415
    except ImportError:
        return False
    original = getattr(AppSession, "request_rerun", None)
    if original is None:
        return False
    if getattr(original, "lets_finished_runs_land", False):
        return True

    def ended(runner) -> bool:          # the runner has ended its last run and takes no more requests
        return getattr(getattr(runner, "_requests", None), "_state", None) == ScriptRequestType.STOP

    def request_rerun(self, client_state=None) -> None:
        if client_state is not None and client_state.fragment_id and ended(getattr(self, "_scriptrunner", None)):
            self._event_loop.call_soon_threadsafe(original, self, client_state)
            return
        original(self, client_state)

    request_rerun.lets_finished_runs_land = True
    AppSession.request_rerun = request_rerun
    return True
