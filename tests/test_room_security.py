"""Issue 42 §5, tried by requests: what a student's browser can send (URL values, button presses,
forged widget values, a session state it should not have) never moves a room, opens, closes or
reveals a question, or ends the room; no room's data reaches another; bad codes and stale votes get
a clear message, never a traceback; joining and voting are rate-limited; the database keeps the
teacher's secret only hashed, and nothing a person typed or is.

The store's own checks (every refusal, on SQLite and PostgreSQL) are in tests/test_room_store.py;
these go through the app, as a browser would (AppTest), and read the database afterwards."""
from __future__ import annotations

import itertools
import json
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa
from streamlit.proto.WidgetStates_pb2 import WidgetStates

import i18n
from room import store as rs
from room.store import RoomStore, database_url
from tests.apptest_util import assert_ok
from tests.test_room_ui import B1, _app, _button, _fresh_version, _teacher, _texts
from ui import room

_clients = itertools.count()


@pytest.fixture(autouse=True)
def own_client(monkeypatch):
    """Each test is a client of its own address: the join limit counts failures per client, and
    the other tests' wrong codes must not count against this one's."""
    address = f"192.0.2.{next(_clients) % 250}:{id(monkeypatch)}"
    monkeypatch.setattr(room, "_client", lambda: address)
    return address


def _question_open(lang: str):
    """A teacher's room with B1's first question open, and one student in it (its page run)."""
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    _button(teacher, "_room.open.b1.try1").click()
    teacher.run()
    student = _app({"lang": lang, "room": code}, page=None)
    _fresh_version()
    student.run()
    return teacher, code, student


def _db() -> RoomStore:
    return RoomStore(database_url())


def _state(code: str) -> tuple:
    """Everything a teacher's control can change: the position and every question's round and state."""
    db = _db()
    pos = db.position(code)
    engine = sa.create_engine(database_url())
    with engine.connect() as conn:
        qs = conn.execute(sa.select(rs.questions.c.question_key, rs.questions.c.round, rs.questions.c.state)
                          .where(rs.questions.c.room_code == code).order_by(rs.questions.c.id)).all()
    engine.dispose()
    return pos.version, pos.lesson, pos.section, pos.query, [tuple(q) for q in qs]


def _dump() -> str:
    """Every value of every table of the test run's database, as text."""
    engine = sa.create_engine(database_url())
    with engine.connect() as conn:
        text = "\n".join(repr(row) for table in rs.metadata.sorted_tables
                         for row in conn.execute(sa.select(table)).all())
    engine.dispose()
    return text


def _forge(at, widget_ids: list[str]):
    """Run ``at`` with its own widgets' values plus a press of each button ``widget_ids`` names (a
    websocket message a browser could make up: the ids are visible in the teacher's page)."""
    states = WidgetStates()
    for own in at._tree.get_widget_states().widgets:
        if own.id not in widget_ids:
            states.widgets.append(own)
    for wid in widget_ids:
        forged = states.widgets.add()
        forged.id = wid
        forged.trigger_value = True
    return at._run(widget_state=states)


def _ids(at, prefix: str) -> list[str]:
    return [b.id for b in at.button if b.key and b.key.startswith(prefix)]


def test_a_forged_press_of_the_teachers_buttons_does_nothing_for_a_student():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    _button(teacher, "_room.open.b1.try1").click()
    teacher.run()
    assert_ok(teacher)
    # the teacher's buttons now: close, round 2, reveal, open (other questions), end
    controls = _ids(teacher, "_room.")
    assert {b.key for b in teacher.button if b.id in controls} >= {
        "_room.close.b1.try1", "_room.round2.b1.try1", "_room.reveal.b1.try1", "_room.open.b1.try2", "_room.end"}
    # Control: the same forged message from the teacher's own browser does act (the ids are right).
    # A student, even on the teacher's exact link (present=1, the teacher's slide), is refused.
    student = _app({"lang": "en", "present": "1", "step": "1", "room": code}, page=None)
    _fresh_version()
    student.run()
    assert_ok(student)
    before = _state(code)
    for wid in controls:
        _forge(student, [wid])
        assert_ok(student)
    _forge(student, controls)
    assert_ok(student)
    assert _state(code) == before
    assert room._SECRET not in student.session_state
    assert _db().position_version(code) == before[0]           # the room lives
    # the same press from the teacher's browser ends it: the forged message was well made
    _forge(teacher, [_button(teacher, "_room.end").id])
    assert_ok(teacher)
    with pytest.raises(rs.EndedRoom):
        _db().position_version(code)


def _forge_bar(at, action: object, key: str = "_classroom"):
    """Run ``at`` as if its presenter's bar (ui/classroom.js, a component) had sent ``action``: the
    trigger classroom.js sets with setTriggerValue("action", ...), a websocket message a browser can
    make up with any value, for the bar it shows (``_classroom.off`` for a student) or another."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id  # noqa: PLC0415

    bars = [e.proto.id for e in at.get("bidi_component") if e.proto.component_name == "anatomy_classroom"]
    assert bars, "no presenter's bar on the page"
    states = WidgetStates()
    for own in at._tree.get_widget_states().widgets:
        states.widgets.append(own)
    for bar in {*bars, *(b.replace("_classroom.off", key) for b in bars)}:
        forged = states.widgets.add()
        forged.id = _make_trigger_id(bar, "events")
        forged.json_trigger_value = json.dumps([{"event": "action", "value": action}])
    return at._run(widget_state=states)


# Everything classroom.js sends (ui/classroom.py's _act), and what it never sends.
BAR_ACTIONS = ["room", "join", "on", "step:3", "step:-5", "step:99999999999999999999", "lesson:1", "lesson:-1",
               "lesson:-1:last", "clamp:1@attention", "clamp:x@", "off", "", "🙂" * 50, "step:" + "9" * 5000, None, 7,
               {"action": "room"}]


def test_a_forged_presenters_bar_does_nothing_to_the_room_for_a_student():
    """Issue 42 §5, the bar's half: the presenter's bar is a component whose actions ("room" starts a
    class, "join" shows the join card, "step:n" and "lesson:±1" move the slide, "on"/"off" presenter
    mode) come back as a websocket message. Forged by a student, for the bar the student's page
    draws or for the teacher's ``_classroom.on``, one after another: the room's position and questions
    are unchanged, the student stays a student of the room, never presenting, and nothing fails."""
    teacher, code, student = _question_open("en")
    assert_ok(student)
    before = _state(code)
    for action in BAR_ACTIONS:
        for key in ("_classroom.off", "_classroom.on"):
            _forge_bar(student, action, key)
            assert_ok(student)
            student.run()                        # the run a rerun asked for (a step, "on")
            assert_ok(student)
            assert student.session_state[room._CODE] == code, action
            assert room._SECRET not in student.session_state and not student.session_state["_classroom.present"]
            assert "present" not in student.query_params and "step" not in student.query_params
    assert _state(code) == before
    assert _db().presence(code).in_room == 1
    # Control: the same forged message from the teacher's browser does act (the ids are right).
    _forge_bar(teacher, "join", "_classroom.on")
    assert_ok(teacher)
    teacher.run()
    assert not [h for h in teacher.get("html") if "anatomy-room-join" in h.proto.body]    # slide 1's card, hidden
    _forge_bar(teacher, "step:2", "_classroom.on")
    teacher.run()
    assert _db().position(code).section == "2"


@pytest.mark.parametrize("forged", ["", "x" * 43, "a-secret-of-another-room", "🙂" * 20, None, 42])
def test_a_student_with_a_forged_secret_in_the_session_controls_nothing(forged):
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    other = _teacher()                       # a real secret, of another room
    if forged == "a-secret-of-another-room":
        forged = other.session_state[room._SECRET]
    student = _app({"lang": "en", "room": code}, page=None)
    before = _state(code)
    student.session_state[room._SECRET] = forged          # what no browser can do: the session's own state
    student.session_state["_classroom.present"] = True
    student.run()
    assert_ok(student)
    for key in ("_room.end", "_room.open.b1.try1"):
        if any(b.key == key for b in student.button):
            _button(student, key).click()
            student.run()
            assert_ok(student)
    assert _state(code) == before
    assert _db().position_version(code) == before[0]
    errors = [e.value for e in student.error]
    assert not errors or i18n.t("en", "room.error.not_teacher") in errors


@pytest.mark.parametrize("params", [
    {"present": "1"},                                   # the teacher's exact link
    {"present": "1", "step": "3"},
    {"present": "1", "room_end": "1", "end": "1", "action": "room", "secret": "x"},
    {"present": "1", "teach": "not-a-token"},           # a made-up teacher link
    {"present": "1", "teach": "🙂" * 100},
])
def test_no_url_makes_a_student_a_teacher(params):
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    before = _state(code)
    student = _app({"lang": "en", "room": code, **params}, page=None)
    _fresh_version()
    student.run()
    assert_ok(student)
    assert student.session_state[room._CODE] == code and room._SECRET not in student.session_state
    assert not student.session_state["_classroom.present"]
    assert not [b for b in student.button if b.key and b.key.startswith(("_room.open", "_room.end", "_room.close"))]
    assert _state(code) == before
    assert "teach" not in student.query_params           # a made-up teacher link leaves no secret-like value


def test_room_new_makes_a_room_of_ones_own_never_the_teachers():
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    before = _state(code)
    student = _app({"lang": "en", "room": code}, page=None)
    student.query_params["room"] = "new"                # no presenter mode: refused, with a message
    student.run()
    assert_ok(student)
    assert i18n.t("en", "room.start_in_present") in [e.value for e in student.error]
    assert room._CODE not in student.session_state
    student.query_params.update({"room": "new", "present": "1"})
    student.run()
    assert_ok(student)
    assert student.session_state[room._CODE] != code        # a new room, the student's own
    assert _state(code) == before


def test_no_room_sees_or_changes_another_rooms_questions():
    a, b = _teacher(), _teacher()
    code_a, code_b = a.session_state[room._CODE], b.session_state[room._CODE]
    assert code_a != code_b
    student_a = _app({"lang": "en", "room": code_a}, page=None)
    student_b = _app({"lang": "en", "room": code_b}, page=None)
    _button(b, "_room.open.b1.try1").click()             # only room B opens the question
    b.run()
    _fresh_version()
    student_a.run()
    student_b.run()
    assert_ok(student_a)
    assert i18n.t("en", "room.q.waiting") in _texts(student_a)
    assert not [x for x in student_a.button if x.key and x.key.startswith("_room.vote.")]
    _button(student_b, "_room.vote.b1.try1.2").click()
    student_b.run()
    assert_ok(student_b)
    # A's teacher: nobody of B counted, no B question in A's results
    a.run()
    assert i18n.t("en", "room.presence", n=1, m=1) in _texts(a)
    csv_a = _db().results_csv(code_a, a.session_state[room._SECRET])
    assert csv_a.strip() == "lesson,question,round,option,count"
    with pytest.raises(rs.NotTeacher):                   # A's secret is nothing in B
        _db().results_csv(code_b, a.session_state[room._SECRET])
    # B's student, in room A by a forged session (the code of another room in its state): refused
    student_b.session_state[room._CODE] = code_a
    _button(student_b, "_room.vote.b1.try1.1").click()   # the button drawn for room B's question
    student_b.run()
    assert_ok(student_b)
    assert _db().tally(code_b, "b1", "b1.try1", secret=b.session_state[room._SECRET]).counts[1] == (0, 0, 1)


def test_a_vote_on_a_closed_round_or_after_the_reveal_says_so():
    teacher, code, student = _question_open("zh")
    vote = _button(student, "_room.vote.b1.try1.0")
    _button(teacher, "_room.close.b1.try1").click()      # the round closes while the student's buttons show
    teacher.run()
    vote.click()
    student.run()
    assert_ok(student)
    assert i18n.t("zh", "room.error.round_closed") in [e.value for e in student.error]
    _button(teacher, "_room.round2.b1.try1").click()     # round 2 opens: a round-1 button is stale
    teacher.run()
    student.run()
    _button(student, "_room.vote.b1.try1.1").click()
    student.run()
    assert_ok(student)
    assert _db().my_votes(code, student.session_state[room._STUDENT], "b1", "b1.try1") == {2: 1}
    stale = _button(student, "_room.vote.b1.try1.2")
    _button(teacher, "_room.reveal.b1.try1").click()
    teacher.run()
    stale.click()
    student.run()
    assert_ok(student)
    assert i18n.t("zh", "room.error.round_closed") in [e.value for e in student.error]
    assert _db().my_votes(code, student.session_state[room._STUDENT], "b1", "b1.try1") == {2: 1}


def test_a_vote_for_an_option_out_of_range_or_forged_is_refused():
    teacher, code, student = _question_open("en")
    ids = [b.id for b in student.button if b.key == "_room.vote.b1.try1.0"]
    # a press of an option button that is not drawn (option 7): an unknown widget, ignored
    _forge(student, [ids[0].replace("b1.try1.0", "b1.try1.7")])
    assert_ok(student)
    assert _db().my_votes(code, student.session_state[room._STUDENT], "b1", "b1.try1") == {}
    # the store refuses what the page never offers: option 7, a round not open, a question not opened
    sid = student.session_state[room._STUDENT]
    for args, error in [((1, 7), rs.BadOption), ((1, -1), rs.BadOption), ((2, 0), rs.RoundClosed)]:
        with pytest.raises(error):
            _db().vote(code, sid, "b1", "b1.try1", *args)
    with pytest.raises(rs.UnknownQuestion):
        _db().vote(code, sid, "b1", "b1.try2", 1, 0)
    assert _db().question(code, "b1", "b1.try1").answered == 0


def test_joining_is_limited_per_client(own_client, monkeypatch):
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    guesser = _app({"lang": "en"}, page=None)
    frozen = time.time()
    monkeypatch.setattr(room.store(), "clock", lambda: frozen)   # every guess in one minute-long window
    limit = _db().limits.join_failures
    for guess in itertools.islice(("".join(p) for p in itertools.product("23456789", repeat=6)), limit):
        guesser.query_params["room"] = guess
        guesser.run()
        assert_ok(guesser)
        assert i18n.t("en", "room.error.unknown") in [e.value for e in guesser.error]
    guesser.query_params["room"] = code                  # the right code, after too many guesses: refused too
    guesser.run()
    assert_ok(guesser)
    assert i18n.t("en", "room.error.rate_limited") in [e.value for e in guesser.error]
    assert room._CODE not in guesser.session_state
    # another client joins
    monkeypatch.setattr(room, "_client", lambda: "198.51.100.7")
    guesser.query_params["room"] = code
    guesser.run()
    assert_ok(guesser)
    assert guesser.session_state[room._CODE] == code


def test_voting_is_limited_per_student(monkeypatch):
    teacher, code, student = _question_open("en")
    shared = room.store()
    frozen = time.time()
    monkeypatch.setattr(shared, "clock", lambda: frozen)     # every vote in one second-long window
    votes = shared.limits.votes
    for i in range(votes):
        _button(student, f"_room.vote.b1.try1.{i % 3}").click()
        student.run()
        assert_ok(student)
        assert not student.error
    _button(student, "_room.vote.b1.try1.2").click()
    student.run()
    assert_ok(student)
    assert i18n.t("en", "room.error.rate_limited") in [e.value for e in student.error]
    assert _db().my_votes(code, student.session_state[room._STUDENT], "b1", "b1.try1") == {1: (votes - 1) % 3}


@pytest.mark.parametrize("typed", [
    "", "   ", "K0P2QX", "ZZZZZZ", "ZZZ", "ZZZZZZZ", "🙂🙂🙂🙂🙂🙂", "<b>K7P2QX</b>", "K7P2QX' OR 1=1 --",
    "Ｚ２Ｚ２Ｚ２", "\x00\x01ZZZZZZ", "A" * 40,
])
def test_the_join_box_says_what_is_wrong_with_a_code(typed):
    at = _app({"lang": "zh"}, page=None)
    at.text_input(key=room._JOIN_TEXT).set_value(typed)
    at.get("form_submit_button")[0].click()
    at.run()
    assert_ok(at)
    errors = [e.value for e in at.error]
    assert errors and errors[0] in {i18n.t("zh", "room.error.bad_code"), i18n.t("zh", "room.error.unknown")}
    assert room._CODE not in at.session_state and "room" not in at.query_params
    at.run()
    assert_ok(at)


@pytest.mark.parametrize("raw", ["", "%", "&present=1", "Z" * 10_000, "🙂" * 2_000, "<script>alert(1)</script>",
                                 "ZZZZZZ\nZZZZZZ", "new\x00", "NEW!"])
def test_a_malformed_room_in_the_url_says_so(raw):
    at = _app({"lang": "en", "room": raw}, page=None)
    errors = [e.value for e in at.error]
    assert errors and errors[0] in {i18n.t("en", k) for k in ("room.error.bad_code", "room.error.unknown")}
    assert room._CODE not in at.session_state and "room" not in at.query_params
    assert raw not in _texts(at) or not raw.strip()      # the value is not echoed back


def test_an_ended_rooms_code_and_its_stale_buttons_say_so():
    teacher, code, student = _question_open("zh")
    stale = _button(student, "_room.vote.b1.try1.0")
    _db().end_room(code, teacher.session_state[room._SECRET])
    stale.click()
    student.run()
    assert_ok(student)
    assert i18n.t("zh", "room.error.ended") in [e.value for e in student.error]
    student.run()
    assert_ok(student)
    assert room._CODE not in student.session_state
    # the teacher's next press on the ended room: a message, and the teacher is out of the room
    _button(teacher, "_room.close.b1.try1").click()
    teacher.run()
    assert_ok(teacher)
    teacher.run()
    assert_ok(teacher)
    assert room._CODE not in teacher.session_state
    for params in ({"room": code}, {"room": code.lower(), "present": "1"}):
        late = _app({"lang": "en", **params}, page=None)
        assert i18n.t("en", "room.error.ended") in [e.value for e in late.error]


def test_the_database_keeps_no_secret_no_address_and_nothing_typed(own_client):
    teacher = _teacher()
    code = teacher.session_state[room._CODE]
    secret = teacher.session_state[room._SECRET]
    typed = f" {code[:3].lower()} - {code[3:]} "
    student = _app({"lang": "zh"}, page=None)
    student.text_input(key=room._JOIN_TEXT).set_value(typed)
    student.get("form_submit_button")[0].click()
    student.run()
    assert student.session_state[room._CODE] == code
    wrong = _app({"lang": "en", "room": "🙂 my name is Ada"}, page=None)
    assert wrong.error
    _button(teacher, "_room.open.b1.try1").click()
    teacher.run()
    _fresh_version()
    student.run()
    _button(student, "_room.vote.b1.try1.1").click()
    student.run()
    assert_ok(student)
    dump = _dump()
    assert code in dump                                   # the dump is of the right database
    for private in (secret, secret[:16], own_client, own_client.split(":")[0], typed, typed.strip(), "Ada",
                    '"lang"', "Mozilla"):
        assert private not in dump, private
    assert student.session_state[room._STUDENT] in dump   # only the anonymous random id


# ---- the teacher's second device (issue 42 §1: the bar's "teacher link") ---------------------

def test_a_teacher_link_makes_a_second_device_teacher_once():
    teacher = _teacher()
    code, secret = teacher.session_state[room._CODE], teacher.session_state[room._SECRET]
    assert not [c for c in teacher.get("code") if "teach=" in c.value]     # only on request
    _button(teacher, "_room.make_link").click()
    teacher.run()
    assert_ok(teacher)
    link = next(c.value for c in teacher.get("code") if "teach=" in c.value)
    assert secret not in link
    card = "".join(h.proto.body for h in teacher.get("html") if "anatomy-room-join" in h.proto.body)
    assert card and "teach=" not in card                                    # never on the projected card
    query = parse_qs(urlsplit(link).query)
    assert urlsplit(link).path.endswith("/attention")
    assert query["room"] == [code] and query["present"] == ["1"] and query["step"] == ["1"]
    params = {k: v[0] for k, v in query.items()}
    before = _db().position(code)
    second = _app({"lang": "zh", **params}, page=None)    # the teacher's tablet opens the link
    assert second.session_state[room._SECRET] == secret and second.session_state[room._CODE] == code
    assert "teach" not in second.query_params and second.query_params["room"] == code
    assert i18n.t("zh", "room.teacher_arrived", code=code) in [t.value for t in second.toast]
    assert any(f"anatomy_teacher_{code}=" in h.proto.body for h in second.get("html"))   # its cookie
    assert _db().position(code) == before                  # opening the link moved nobody
    second.switch_page(B1)
    second.run()
    assert_ok(second)
    _button(second, "_room.open.b1.try2").click()          # and it runs the class
    second.run()
    assert_ok(second)
    assert _db().question(code, "b1", "b1.try2").state == "open"
    # the same link again: spent; whoever opens it is a student, told why
    again = _app({"lang": "en", **params}, page=None)
    assert i18n.t("en", "room.error.teacher_link") in [e.value for e in again.error]
    assert room._SECRET not in again.session_state and again.session_state[room._CODE] == code
    assert "teach" not in again.query_params
