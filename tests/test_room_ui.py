"""The class room in the app (issue 42 §1-3, ui/room.py), in AppTest: a teacher starts a room from
presenter mode, students join by link and by code, follow the teacher, vote in two rounds; a wrong
code says so; a student holds no control; outside a room "Try this" is as before.

The database is the test run's own (tests/conftest.py sets ANATOMY_DATA_DIR to a temporary folder)."""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

import i18n
from bench.cluster import free_port, wait_healthy
from room.store import RoomStore, database_url
from tests.apptest_util import APP, TIMEOUT, assert_ok
from ui import room

ROOT = Path(__file__).resolve().parents[1]

B1 = "lessons/b1_attention.py"


def _app(params: dict[str, str], page: str | None = B1) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert_ok(at)
    return at


def _teacher(lang: str = "en") -> AppTest:
    at = _app({"lang": lang, "present": "1", "room": "new"})
    assert at.session_state[room._CODE] and at.session_state[room._SECRET]
    return at


def _texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
                     + [i.value for i in at.info])


def _fresh_version():
    room._version.clear()       # the ~0.5 s cache every student of a process shares


def _button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


def _keys(at: AppTest) -> set[str]:
    return {b.key for b in at.button}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_teacher_starts_a_room_and_the_projector_shows_how_to_join(lang):
    at = _teacher(lang)
    code = at.session_state[room._CODE]
    assert len(code) == 6 and all(ch in "23456789ABCDEFGHJKMNPQRSTUVWXYZ" for ch in code)
    assert at.query_params["room"] == [code] or at.query_params["room"] == code
    # the secret never in the URL
    assert all(at.session_state[room._SECRET] not in str(v) for v in at.query_params.values())
    # the join card: the code, a QR code drawn as SVG, the link with the code (slide 1)
    card = next(h.proto.body for h in at.get("html") if "anatomy-room-join" in h.proto.body)
    assert code in card and "data:image/svg+xml" in card and f"room={code}" in card
    # the teacher's position is the lesson, slide 1
    pos = RoomStore(database_url()).position(code)
    assert (pos.lesson, pos.section) == ("attention", "1")
    assert i18n.t(lang, "room.code", code=code) in _texts(at)
    # each question has its "Open for the class" button, and no radio
    assert {"_room.open.b1.try1", "_room.open.b1.try2", "_room.open.b1.try3"} <= _keys(at)
    assert not [r for r in at.radio if r.key and r.key.startswith("b1.try")]


def test_student_joins_by_link_follows_and_cannot_control():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    # the teacher's exact link, present=1 included: a student, on the normal page
    student = _app({"lang": "zh", "present": "1", "room": code}, page=None)
    _fresh_version()
    student.run()
    assert_ok(student)
    assert student.session_state[room._CODE] == code and room._SECRET not in student.session_state
    assert not student.session_state["_classroom.present"]
    assert not any(b.key and b.key.startswith(("_room.open", "_room.end", "_room.close", "_room.reveal"))
                   for b in student.button)
    # followed the teacher to B1, kept its own language
    assert student.session_state[room._FOLLOWED][0] == "attention"
    assert i18n.t("zh", "b1.title") in [t.value for t in student.title]
    assert i18n.t("zh", "room.following", code=code) in _texts(student)
    assert i18n.t("zh", "room.q.waiting") in _texts(student)
    # the teacher sees the student in the room, following
    who = RoomStore(database_url()).presence(code)
    assert (who.in_room, who.following) == (1, 1)


def test_a_student_on_the_teachers_lesson_takes_a_control_value_the_teacher_moved():
    """The teacher moves B1's row slider (bound to the address): the student, on B1 already, takes
    the value. st.switch_page refused to set a parameter bound to a control of the page shown, and
    the student's page showed that traceback (found by tests/browser/test_room.py)."""
    teacher = _teacher()
    code, secret = teacher.session_state[room._CODE], teacher.session_state[room._SECRET]
    student = _app({"lang": "en", "room": code}, page=None)
    _fresh_version()
    student.run()
    assert student.slider(key="b1.r").value == 3
    moved = RoomStore(database_url()).move(code, secret, "attention", "2", {"b1.r": "5"})
    deadline = time.monotonic() + 5
    while room.version(code) != moved and time.monotonic() < deadline:   # the process's waker reads it
        _fresh_version()
        time.sleep(0.05)
    student.run()
    assert_ok(student)
    assert student.query_params["b1.r"] in ("5", ["5"]) and student.slider(key="b1.r").value == 5
    assert student.session_state[room._FOLLOW]
    assert i18n.t("en", "room.following", code=code) in _texts(student)


def _fragment_script():
    import streamlit as st

    from ui import room

    st.query_params["b1.r"] = "6"             # what a control moved inside a fragment leaves in the URL
    room.after_fragment()


def test_a_control_moved_in_a_fragment_moves_the_class_at_once():
    """A fragment's run is not a page run: at its end (ui/lesson.py) after_fragment writes the
    teacher's new URL state, with the slide last written; a student's session writes nothing."""
    teacher = _teacher()
    code, secret = teacher.session_state[room._CODE], teacher.session_state[room._SECRET]
    db = RoomStore(database_url())
    before = db.position(code)
    assert (before.lesson, before.section, before.query) == ("attention", "1", {})
    for session, moves in (({room._CODE: code, room._FOLLOW: True}, False),
                           ({room._CODE: code, room._SECRET: secret, room._MOVED: ("attention", "1", {})}, True)):
        at = AppTest.from_function(_fragment_script, default_timeout=TIMEOUT)
        at.query_params["room"] = code
        for key, value in session.items():
            at.session_state[key] = value
        at.run()
        assert not at.exception
        after = db.position(code)
        if moves:
            assert (after.version, after.section, after.query) == (before.version + 1, "1", {"b1.r": "6"})
            assert at.session_state[room._MOVED] == ("attention", "1", {"b1.r": "6"})
            at.run()                             # unchanged since: nothing written
            assert db.position(code).version == after.version
        else:
            assert after == before


def test_student_joins_by_typing_the_code_on_the_home_page():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    student = _app({"lang": "en"}, page=None)
    student.text_input(key=room._JOIN_TEXT).set_value(f" {code[:3].lower()} {code[3:]} ")
    student.get("form_submit_button")[0].click()
    student.run()
    assert_ok(student)
    assert student.session_state[room._CODE] == code


@pytest.mark.parametrize("text,key", [
    ("K0P2QX", "room.error.bad_code"),         # 0 is never in a code
    ("👩‍🏫" * 3, "room.error.bad_code"),
    ("A" * 500, "room.error.bad_code"),
    ("ZZZZZZ", "room.error.unknown"),
])
def test_a_wrong_code_says_so(text, key):
    at = _app({"lang": "en", "room": text}, page=None)
    assert i18n.t("en", key) in [e.value for e in at.error]
    assert room._CODE not in at.session_state and "room" not in at.query_params
    at.run()                                    # and the page goes on as usual
    assert_ok(at)


def test_an_ended_room_says_so_and_the_student_leaves():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    student = _app({"lang": "en", "room": code}, page=None)
    _button(teacher, "_room.end").click()
    teacher.run()
    assert_ok(teacher)
    assert room._CODE not in teacher.session_state
    _fresh_version()
    student.run()
    student.run()
    assert_ok(student)
    assert room._CODE not in student.session_state
    late = _app({"lang": "en", "room": code}, page=None)
    assert i18n.t("en", "room.error.ended") in [e.value for e in late.error]


def test_a_student_who_moves_a_control_stops_following_and_comes_back():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    student = _app({"lang": "en", "room": code}, page=None)
    _fresh_version()
    student.run()
    assert student.session_state[room._FOLLOW] and student.session_state[room._AT][0] == "attention"
    student.switch_page("lessons/a1_tokens.py")       # another lesson
    student.run()
    assert_ok(student)
    assert not student.session_state[room._FOLLOW]
    assert i18n.t("en", "room.paused", code=code) in _texts(student)
    _button(student, "_room.back").click()
    student.run()
    assert_ok(student)
    assert student.session_state[room._FOLLOW]
    assert i18n.t("en", "b1.title") in [t.value for t in student.title]


def test_vote_in_two_rounds_then_reveal_and_csv():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    students = [_app({"lang": lang, "room": code}, page=None) for lang in ("en", "zh", "en")]
    _button(teacher, "_room.open.b1.try1").click()
    teacher.run()
    assert_ok(teacher)
    _fresh_version()
    for s, option in zip(students, (0, 1, 1), strict=True):
        s.run()
        assert_ok(s)
        assert {f"_room.vote.b1.try1.{i}" for i in range(3)} <= _keys(s)
        _button(s, f"_room.vote.b1.try1.{option}").click()
        s.run()
        assert_ok(s)
    _button(students[0], "_room.vote.b1.try1.1").click()    # a changed mind
    students[0].run()
    teacher.run()
    assert i18n.t("en", "room.q.answered", n=3) in _texts(teacher)
    assert "▇" not in _texts(teacher)                     # no distribution before the teacher asks
    teacher.toggle(key="_room.show.b1.try1").set_value(True).run()
    assert "| 0 " in _texts(teacher) and "3 ▇▇▇" in _texts(teacher)
    _button(teacher, "_room.round2.b1.try1").click()
    teacher.run()
    _fresh_version()
    for s, option in zip(students, (1, 1, 2), strict=True):
        s.run()
        _button(s, f"_room.vote.b1.try1.{option}").click()
        s.run()
        assert_ok(s)
    _button(teacher, "_room.reveal.b1.try1").click()
    teacher.run()
    assert_ok(teacher)
    assert i18n.t("en", "b1.try1.why") in _texts(teacher)
    _fresh_version()
    students[1].run()
    assert i18n.t("zh", "b1.try1.why") in _texts(students[1])
    # a student cannot vote once revealed: no buttons
    assert not any(b.key and b.key.startswith("_room.vote.") for b in students[1].button)
    data = RoomStore(database_url()).results_csv(code, teacher.session_state[room._SECRET])
    rows = list(csv.DictReader(io.StringIO(data)))
    counts = {(r["round"], r["option"]): int(r["count"]) for r in rows if r["question"] == "b1.try1"}
    assert counts[("1", "1")] == 3 and counts[("2", "1")] == 2 and counts[("2", "2")] == 1
    assert teacher.get("download_button"), "the teacher's results button"


def test_outside_a_room_try_this_is_as_before(monkeypatch):
    opened = []
    monkeypatch.setattr(room, "store", lambda: opened.append(1))
    at = _app({"lang": "en"})
    assert not opened
    assert {"b1.try1.en", "b1.try2.en", "b1.try3.en"} <= {r.key for r in at.radio}
    assert not any(b.key and b.key.startswith("_room.") for b in at.button)


def test_key_j_shows_and_hides_the_join_card_for_the_teacher_only():
    """Key J (ui/classroom.js sends "join"): the card goes on a slide where it was hidden and off again."""
    at = _teacher()
    cards = lambda: [h for h in at.get("html") if "anatomy-room-join" in h.proto.body]   # noqa: E731
    assert cards()                                     # slide 1: shown
    at.session_state[room._QR_FLIP] = True             # what flip_join_card() leaves for the next run
    at.run()
    assert not cards() and at.session_state[room._QR] is False
    at.session_state[room._QR_FLIP] = True
    at.run()
    assert cards() and at.session_state[room._QR] is True


def test_the_teachers_cookie_lives_as_long_as_the_room_can_and_is_written_again_in_use():
    """Issue 42 §1: the teacher's cookie followed no setting (1 day, whatever the idle time). It now
    lives the room's idle time and a day more, and a teaching session writes it again every hour,
    so a room in use never outlives the cookie its teacher comes back with."""
    assert room.teacher_cookie_s(12 * 3600) == 36 * 3600
    assert room.teacher_cookie_s(72 * 3600) == 96 * 3600
    assert room.teacher_cookie_s(1e9) == 400 * 86400        # what a browser keeps at most
    at = _app({"lang": "en", "present": "1", "room": "new"}, page=None)
    code = at.session_state[room._CODE]
    cookie = lambda: [h.proto.body for h in at.get("html") if f"anatomy_teacher_{code}=" in h.proto.body]  # noqa: E731
    expected = f"max-age={room.teacher_cookie_s(room.store().idle_s)};"
    assert len(cookie()) == 1 and expected in cookie()[0]
    at.run()
    assert cookie() == []                                    # written once, not on every run
    at.session_state[room._RENEWED] -= room.COOKIE_RENEW_S + 1   # an hour of teaching later
    at.run()                                                 # the bar checks the secret, then asks ...
    at.run()                                                 # ... and the next run writes the cookie
    assert len(cookie()) == 1 and expected in cookie()[0]
    forged = _app({"lang": "en", "room": code}, page=None)   # a forged secret is never written
    forged.session_state[room._SECRET] = "🙂" * 20
    forged.session_state[room._RENEWED] = -1e9
    forged.run()
    forged.run()
    assert_ok(forged)
    assert not [h for h in forged.get("html") if "anatomy_teacher_" in h.proto.body]


def test_the_scroll_to_an_opened_question_names_its_box_and_nothing_else():
    """A student's page is brought to the question the teacher opened: the script looks for the
    box's class (the container's key), made of letters, digits and dashes only."""
    assert room.question_class("b1.try1") == "st-key-room-q-b1-try1"
    assert room.question_class('b1.x"</script>') == "st-key-room-q-b1-x---script-"
    script = room.scroll_script("4", 17, "b1.try1")
    assert 'const want = 4;' in script and 'const box = "st-key-room-q-b1-try1";' in script
    assert 'const box = "";' in room.scroll_script("4", 17)


# ---- a server restart during a vote (issue 42 §4) ----------------------------------------------

def _server(port: int, data_dir, log) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "ANATOMY_DATA_DIR": str(data_dir)})
    wait_healthy(f"http://127.0.0.1:{port}", proc=proc)
    return proc


def _shows(client, text: str, after: int = 0, timeout: float = 60) -> bool:
    """Until the client's page has drawn a markdown holding ``text`` (after its first ``after`` texts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in body for body, _ in client.texts[after:]):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_a_server_restart_during_a_vote_loses_no_vote_and_the_student_comes_back(tmp_path):
    """One server on a SQLite file: the teacher starts a room and opens B1's first question, a student
    (a websocket client keeping its cookies, as a browser does) joins and votes, and the vote is
    acknowledged. The server is killed (SIGKILL) and started again on the same port: the student's
    page reconnects by itself, is in the same room as the same student, sees its vote, and the
    vote is counted once; the teacher's page is the teacher's again and shows the count."""
    from bench.bench_room import Client  # noqa: PLC0415 (a browser's websocket, with its cookies)

    port, log = free_port(), open(tmp_path / "server.log", "w")
    url = f"http://127.0.0.1:{port}"
    option = f"B. {i18n.items('en', 'b1.try1.options')[1]}"
    server = _server(port, tmp_path, log)
    clients = []
    try:
        teacher = Client(url, "teacher", reconnect=True)
        clients.append(teacher)
        teacher.rerun("lang=en&present=1&room=new", page="attention")
        assert _shows(teacher, i18n.t("en", "room.presence", n=0, m=0)), "no room was started"
        code = parse_qs(teacher.query)["room"][0]
        assert teacher.wait_run(0, 60)
        student = Client(url, "student", reconnect=True)
        clients.append(student)
        student.rerun(f"lang=en&room={code}", page="")
        teacher.press("_room.open.b1.try1")
        deadline = time.monotonic() + 60
        while "_room.vote.b1.try1.1" not in student.widgets and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = len(student.texts)
        student.press("_room.vote.b1.try1.1")
        assert _shows(student, i18n.t("en", "room.q.yours", option=option), seen), "the vote was not acknowledged"
        deadline = time.monotonic() + 30
        while "anatomy_student" not in student.cookies and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "anatomy_student" in student.cookies, "the page never set the student's cookie"
        sid = student.cookies["anatomy_student"]

        server.kill()                               # no goodbye: the process is gone, mid-class
        server.wait()
        restart = time.monotonic()
        seen, seen_by_teacher = len(student.texts), len(teacher.texts)
        server = _server(port, tmp_path, log)
        # The student's page reconnects by itself and runs again: the same room, the same student.
        assert _shows(student, i18n.t("en", "room.following", code=code), seen), "the student did not come back"
        assert _shows(student, i18n.t("en", "room.q.yours", option=option), seen), "the vote is not shown again"
        print(f"restart -> the student's page back in the room: {time.monotonic() - restart:.1f} s")
        assert student.generation == 1 and not student.errors
        # and the teacher's projector, back as the teacher (the cookie), counts the vote
        assert _shows(teacher, i18n.t("en", "room.q.current", round=1, n=1), seen_by_teacher)
        db = RoomStore(database_url({"ANATOMY_DATA_DIR": str(tmp_path)}))
        assert db.my_votes(code, sid, "b1", "b1.try1") == {1: 1}
        assert db.question(code, "b1", "b1.try1").answered == 1
        assert db.presence(code).in_room == 1      # one student: the same one, not a second
    finally:
        for c in clients:
            c.close()
        server.kill()
        server.wait()
        log.close()


def _scroll_again_script():
    import streamlit as st

    from ui import room

    if st.session_state.setdefault("runs", 0) == 0:
        st.session_state[room._FOLLOW] = True
        st.session_state[room._FOLLOWED] = ("attention", (), "3")
        room._poll_scroll(room.scroll_script("3", 7))
    else:
        room._scroll_again()
    st.session_state.runs += 1


def test_a_poll_that_finds_nothing_new_draws_its_last_scroll_again_for_a_while():
    """Streamlit drops a fragment's output not yet sent when the fragment runs again: the poll's next
    runs draw the same scroll (the same element: the page does not scroll twice) for SCROLL_AGAIN_S,
    then nothing (under a class's load 5-9 of 100 students missed a slide without it); never on
    another page than the one it was drawn for, nor for a student looking around."""
    at = AppTest.from_function(_scroll_again_script, default_timeout=30).run()
    first = [e.proto.body for e in at.get("html")]
    assert len(first) == 1 and "const want = 3;" in first[0]
    at.run()
    assert [e.proto.body for e in at.get("html")] == first
    at.session_state[room._FOLLOWED] = ("masks", (), "1")              # the teacher's next lesson
    at.run()
    assert at.get("html") == []
    at.session_state[room._FOLLOWED] = ("attention", (), "3")
    at.session_state[room._FOLLOW] = False                              # looking around
    at.run()
    assert at.get("html") == []
    at.session_state[room._FOLLOW] = True
    script, _, where = at.session_state[room._POLLED]
    at.session_state[room._POLLED] = (script, time.monotonic() - room.SCROLL_AGAIN_S - 1, where)
    at.run()
    assert at.get("html") == []
