"""What the app relies on in Streamlit's private API (ui/streamlit_internals.py), on the installed
Streamlit. Each test names the helper whose behaviour it checks: when an upgrade breaks one, the
failure says which of our features goes with it (at_once, the URL-bound widgets, the static files)."""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import streamlit
from streamlit.testing.v1 import AppTest

from ui import streamlit_internals as internals

ROOT = Path(__file__).resolve().parent.parent


def test_the_streamlit_these_names_were_checked_on_is_the_pinned_one():
    pinned = re.search(r"^streamlit==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert streamlit.__version__ == pinned == "1.67.0"


def _held_script():
    import streamlit as st

    from ui import streamlit_internals as internals

    ctx = internals.script_context()
    sent = internals.message_sender(ctx)
    held: list = []
    internals.hold_messages(ctx, held.append)
    st.write("held one")
    st.write("held two")
    internals.hold_messages(ctx, sent)
    st.write(f"held {len(held)}; no context outside: {internals.main_script_path() is not None}")
    for msg in held:                      # what was held goes now, in order
        sent(msg)


def test_message_sender_is_where_every_element_goes():
    """ui.frame.at_once holds a fragment's elements by standing in for the run's sender."""
    at = AppTest.from_function(_held_script, default_timeout=30).run()
    assert not at.exception
    texts = [m.value for m in at.markdown]
    assert "held 2; no context outside: True" in texts
    assert texts.index("held one") > texts.index("held 2; no context outside: True")   # sent later
    assert "held two" in texts


def _url_script():
    import streamlit as st

    from ui import streamlit_internals as internals

    internals.forget_url_value("seeded")
    st.slider("seeded", 0, 10, 3, key="seeded", bind="query-params")
    st.text_input("word", key="word", bind="query-params")
    internals.correct_url_value("word", "fixed")
    st.write(f"history {internals.is_history_navigation()}")


def test_url_values_can_be_corrected_and_forgotten():
    """ui.frame's text boxes write their cut text back (correct_url_value); ranged sliders are not
    re-seeded from the address after their bounds change (forget_url_value)."""
    at = AppTest.from_function(_url_script, default_timeout=30)
    at.query_params["seeded"] = "8"
    at.run()
    assert not at.exception
    assert at.slider(key="seeded").value == 3             # the address's 8 was forgotten, not used
    assert at.query_params["word"] == ["fixed"] or at.query_params["word"] == "fixed"
    assert [m.value for m in at.markdown] == ["history False"]


def _follow_script():
    import streamlit as st

    from ui import streamlit_internals as internals

    if st.session_state.pop("follow", False):       # a class room's student takes the teacher's value
        del st.session_state["level"]
        try:
            st.query_params["level"] = "7"
        except st.errors.StreamlitAPIException:
            st.session_state["refused"] = True       # a bound parameter, refused without release
        internals.release_url_values(["level", "not-bound"])
        st.query_params["level"] = "7"
        st.rerun()
    st.slider("level", 0, 10, 3, key="level", bind="query-params")


def test_a_bound_url_value_can_be_released_and_set():
    """ui.room's students follow the teacher's values of URL-bound controls on the page they show
    (release_url_values): st.query_params (and st.switch_page) refuse a bound key until it is released;
    the widget, its state deleted, is then seeded from the new address and binds again."""
    at = AppTest.from_function(_follow_script, default_timeout=30).run()
    assert at.slider(key="level").value == 3
    at.session_state["follow"] = True
    at.run()
    assert not at.exception
    assert at.session_state["refused"] is True
    assert at.slider(key="level").value == 7
    assert at.query_params["level"] in ("7", ["7"])
    at.session_state["follow"] = True                  # bound again: refused again until released
    at.session_state["refused"] = False
    at.run()
    assert at.session_state["refused"] is True and at.slider(key="level").value == 7


def test_outside_a_script_run_the_helpers_do_nothing():
    assert internals.script_context() is None
    assert internals.main_script_path() is None
    assert internals.is_history_navigation() is False
    internals.correct_url_value("x", "1")                # no run: nothing to correct, no error
    internals.forget_url_value("x")
    internals.release_url_values(["x"])


def test_the_gzip_middleware_is_where_ui_static_gzip_wraps_it():
    found = internals.gzip_middleware()
    assert found is not None, "Streamlit's SelectiveGZipMiddleware or _route_path moved: static files go uncompressed"
    middleware, route_path, base_url = found

    async def app(scope, receive, send):
        pass

    assert base_url(middleware(app, base_url="course")) == "course"
    assert base_url(middleware(app)) == ""
    assert route_path({"type": "http", "path": "/static/js/a.js", "root_path": ""}) == "/static/js/a.js"
    assert asyncio.iscoroutinefunction(middleware.__call__)


def _fragment_script():
    import streamlit as st

    from ui import streamlit_internals as internals

    @st.fragment
    def box():
        found = internals.this_fragment()
        st.write(f"in a fragment: {found is not None and all(found)}")

    st.write(f"outside: {internals.this_fragment()}")
    box()


def test_this_fragment_names_the_running_fragment_and_a_gone_session_is_not_woken():
    """ui.room's waker: a student's poll fragment says which session and fragment it is; a rerun
    asked for a session that is not there is refused (False), outside a server too."""
    at = AppTest.from_function(_fragment_script).run()
    assert [m.value for m in at.markdown] == ["outside: None", "in a fragment: True"]
    assert internals.this_fragment() is None
    assert internals.rerun_fragment("no-such-session", "no-such-fragment") is False


def test_a_fragment_rerun_after_a_finished_run_waits_for_its_messages(monkeypatch):
    """let_finished_runs_land: a fragment's rerun that reaches a session whose runner has ended is
    handled one turn of the event loop later, after the messages that runner had already sent; a
    whole-page rerun, or one while the runner still takes requests, goes through at once. Checked
    on Streamlit's own request queue (an ended runner's state) and AppSession's attributes."""
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

    handled: list[str] = []
    monkeypatch.setattr(AppSession, "request_rerun", lambda self, state=None: handled.append(
        f"rerun {state.fragment_id or 'page'}" if state is not None else "rerun"))
    assert internals.let_finished_runs_land() is True
    assert internals.let_finished_runs_land() is True          # once: not wrapped twice
    source = Path(streamlit.__file__).parent.joinpath("runtime", "app_session.py").read_text()
    assert "self._scriptrunner = " in source and "self._event_loop = " in source       # the names read

    ended, running = ScriptRequests(), ScriptRequests()
    ended.request_rerun(RerunData())
    ended.on_scriptrunner_ready()                   # the run it asked for
    ended.on_scriptrunner_ready()                   # that run ended with nothing asked: STOP
    running.request_rerun(RerunData())
    running.on_scriptrunner_ready()                 # running now

    class Runner:
        def __init__(self, requests):
            self._requests = requests

    loop = asyncio.new_event_loop()
    try:
        session = AppSession.__new__(AppSession)
        session._event_loop = loop
        fragment, page = ClientState(fragment_id="box"), ClientState()

        session._scriptrunner = Runner(ended)
        loop.call_soon(handled.append, "the ended run's messages")   # already waiting on the loop
        AppSession.request_rerun(session, fragment)
        AppSession.request_rerun(session, page)
        assert handled == ["rerun page"]            # the page at once; the fragment waits its turn
        loop.call_soon(loop.stop)
        loop.run_forever()
        assert handled == ["rerun page", "the ended run's messages", "rerun box"]

        handled.clear()
        session._scriptrunner = Runner(running)
        AppSession.request_rerun(session, fragment)
        session._scriptrunner = None
        AppSession.request_rerun(session, fragment)
        assert handled == ["rerun box", "rerun box"]
    finally:
        loop.close()
