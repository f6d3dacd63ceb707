"""A class room in the app (issue 42 §1-3): the teacher's room, the students' screens that follow
the teacher, and the class's votes on the "Try this" questions. The storage is ``room.store``; this
module is its Streamlit side, called from a few hooks (app.py, ui/classroom.py's bar, ui/frame.py's
``try_this``, the home page's join box).

Who is who rests on secrets kept by the browser, never on the URL:
- the teacher's secret (from ``create_room``) is a cookie of the teacher's browser,
  ``anatomy_teacher_<CODE>``, set by a tiny script (Streamlit reads cookies, ``st.context.cookies``,
  but cannot set them) and kept in the session; a link, ``present=1`` included, carries only the code;
- a student is an anonymous random id per browser (the cookie ``anatomy_student``).

Outside a room (no ``room=`` in the URL and none in the session) nothing here opens the store.

Following is cheap: the students' pages do not ask; they are woken. One thread per process (_Waker)
reads the version of each room its students follow every WATCH_S, one query per room, and when it
changed it reruns each follower's small poll fragment (ui.streamlit_internals.rerun_fragment), which
then reads the whole position once per version and scrolls or switches the page. The teacher's
position is written by every run of the teacher's page and at the end of every run of a lesson's
section fragment (a control moved there: ui/lesson.py calls after_fragment). A page's own poll
(every POLL_S) only keeps the student counted as there and notices a control moved inside a
lesson's fragment. A 1 s poll of every student's session cost 35 % of a core for 100 students
idle (bench/bench_room.py, 2026-12-06); waking costs nothing while the teacher stands still.
"""
from __future__ import annotations

import html
import re
import threading
import time
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import streamlit as st

from room.store import (
    BadCode,
    EndedRoom,
    NotTeacher,
    Position,
    Question,
    RoomError,
    RoomStore,
    UnknownQuestion,
    UnknownRoom,
    database_url,
    new_student_id,
    normalise_code,
)
from ui.batching import send_now
from ui.chart import PRESENTING
from ui.course import existing_lessons
from ui.frame import lang, sentences, tr, tr_items
from ui.streamlit_internals import release_url_values, rerun_fragment, this_fragment

ROOM = "room"                        # URL parameter: room=<CODE>, or room=new in presenter mode
NEW = "new"
TEACH = "teach"                      # URL parameter of a teacher link (a one-time token), removed at once
TEACHER_COOKIE = "anatomy_teacher_"  # + code: the teacher's secret (never in the URL)
STUDENT_COOKIE = "anatomy_student"   # the browser's anonymous student id
COOKIE_SPARE_S = 86400               # the teacher's cookie outlives the room's idle time by a day (teacher_cookie_s)
COOKIE_RENEW_S = 3600.0              # a teaching session writes its cookie again this often: it lives while the room does
WATCH_S = 0.25                       # a process reads each followed room's version this often (_Waker)
POLL_S = 5.0                         # a student's page's own poll: presence, controls moved; and if a wake is lost
VERSION_TTL_S = 0.5                  # one read of the version per process this often, for every student
BEAT_S = 20.0                        # a student's "still here" (store.Limits.presence_s is 60 s)
SCROLL_AGAIN_S = 3.0                 # a poll's scroll drawn again by the poll's runs this long after (_scroll_again)
PRESENCE_S = 1.0                     # the teacher's "N in the room, M following" and answered count (one session: cheap)
# URL parameters that are each person's own, not the lesson's state the class follows.
OWN = frozenset({"lang", "device", "present", "step", ROOM, TEACH})

_CODE = "_room.code"                 # the room this session is in
_SECRET = "_room.secret"             # the teacher's secret: set only in the teacher's session
_STUDENT = "_room.student"           # this browser's student id
_FOLLOW = "_room.following"          # a student follows the teacher (False: looking around)
_SEEN = "_room.seen"                 # the last position version this session acted on
_FOLLOWED = "_room.followed"         # (lesson, query, section) of the teacher's position last followed
_AT = "_room.at"                     # (lesson, query) of the page the student landed on by following
_LANDING = "_room.landing"           # this run lands on the teacher's page: remember it as _AT
_SCROLL = "_room.scroll"             # a section to scroll to and mark, once the page has run
_MOVED = "_room.moved"               # the teacher's position last written
_ERROR = "_room.error"               # a refusal to show once: its catalogue key (and fields)
_COOKIE = "_room.cookie"             # a cookie to write in this run: (name, value, max_age)
_RENEWED = "_room.renewed"           # when this session last wrote the teacher's cookie (time.monotonic)
_BEAT = "_room.beat"                 # when this student's page last said it was there
_JOIN_TEXT = "_room.join_text"       # the home page's code box
_QR = "_room.qr"                     # the join card is shown (the toggle on the bar)
_QR_FLIP = "_room.qr_flip"           # key J asked for the card to be shown or hidden (next run, before the toggle)
_QR_AT = "_room.qr_at"               # (lesson, slide) the toggle was set for: a new slide sets it again
_LINK = "_room.teacher_link"         # the teacher link made on this device (shown in the bar's popover)
_ARRIVED = "_room.arrived"           # a second device just became teacher: its first page moves nobody
_ASKED = "_room.asked"               # (lesson ns, key, round, state) of the class question last scrolled to
_BOXES = "_room.boxes"               # question key -> the fragment id of this page's box for it (a student's)
_POLLED = "_room.polled"             # (script, time.monotonic(), _FOLLOWED then) of the last scroll the poll drew

_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


# ---- the store: one per process --------------------------------------------------------------

@st.cache_resource(show_spinner=False)
def _store(url: str) -> RoomStore:
    s = RoomStore(url)
    s.purge_in_background()       # idle rooms deleted on time even while nobody uses this server
    return s


def store() -> RoomStore:
    # Keyed on the URL: tests point ANATOMY_DATA_DIR at a folder of their own.
    return _store(database_url())


@st.cache_data(ttl=VERSION_TTL_S, max_entries=1000, show_spinner=False)
def _version(url: str, code: str) -> int:
    """The room's position version, read once per process every VERSION_TTL_S for every student."""
    return _store(url).position_version(code)


@st.cache_data(max_entries=1000, show_spinner=False)
def _position(url: str, code: str, version: int) -> Position:
    return _store(url).position(code)


@st.cache_data(max_entries=1000, show_spinner=False)
def _question_now(url: str, code: str, version: int) -> Question | None:
    """The question the teacher changed last, read once per process per position version (a
    question's opening, round and reveal each make a new version)."""
    return _store(url).current_question(code)


def version(code: str) -> int:
    """The room's position version: the waker's last read when fresh, else one cached read."""
    url = database_url()
    known = _waker(url).latest(code)
    return known if known is not None else _version(url, code)


class _Waker:
    """The rooms this process's students follow, and one thread that reads each room's version every
    WATCH_S and, when it changed, reruns each follower's poll fragment: a teacher's move reaches the
    pages in ~WATCH_S plus a fragment run, and an idle class costs one query per room per WATCH_S."""

    def __init__(self, store: RoomStore):
        self.store = store
        self.lock = threading.Lock()
        self.followers: dict[str, dict[str, str]] = {}     # room code -> {session id: poll fragment id}
        self.seen: dict[str, tuple[int | None, float]] = {}  # room code -> (version or None, when read)
        self.thread: threading.Thread | None = None

    def add(self, room_code: str, session_id: str, fragment_id: str) -> None:
        with self.lock:
            self.followers.setdefault(room_code, {})[session_id] = fragment_id
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="room-waker", daemon=True)
                self.thread.start()

    def latest(self, room_code: str) -> int | None:
        with self.lock:
            value, at = self.seen.get(room_code, (None, 0.0))
        return value if time.monotonic() - at < 4 * WATCH_S else None

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_S)
            with self.lock:
                codes = list(self.followers)
                if not codes:            # nobody left to wake: the next add() starts a thread again
                    self.thread = None
                    return
            for room_code in codes:
                try:
                    now: int | None = self.store.position_version(room_code)
                except RoomError:
                    now = None          # ended or gone: woken pages read it themselves and say so
                except Exception:      # the database away a moment (a restart, a failover): next time
                    continue
                with self.lock:
                    before = self.seen.get(room_code, (now, 0.0))[0]
                    self.seen[room_code] = (now, time.monotonic())
                    wake = dict(self.followers.get(room_code, {})) if now != before else {}
                    if now is None:
                        self.followers.pop(room_code, None)
                gone = [sid for sid, fragment in wake.items() if not rerun_fragment(sid, fragment)]
                if gone:
                    with self.lock:
                        left = self.followers.get(room_code, {})
                        for sid in gone:
                            left.pop(sid, None)
                        if not left:
                            self.followers.pop(room_code, None)


@st.cache_resource(show_spinner=False)
def _waker(url: str) -> _Waker:
    return _Waker(_store(url))


# ---- who is this session ---------------------------------------------------------------------

def code() -> str | None:
    return st.session_state.get(_CODE)


def in_room() -> bool:
    return _CODE in st.session_state


def teaching() -> bool:
    secret = st.session_state.get(_SECRET)
    return in_room() and isinstance(secret, str) and bool(secret)


def _student_id() -> str:
    if _STUDENT not in st.session_state:
        kept = _cookie(STUDENT_COOKIE)
        if kept and _TOKEN.fullmatch(kept):
            st.session_state[_STUDENT] = kept
        else:
            st.session_state[_STUDENT] = new_student_id()
            st.session_state[_COOKIE] = (STUDENT_COOKIE, st.session_state[_STUDENT], 30 * 86400)
    return st.session_state[_STUDENT]


def _cookie(name: str) -> str | None:
    try:
        value = st.context.cookies.get(name)
    except Exception:         # no browser behind the session
        return None
    return value if isinstance(value, str) else None    # AppTest's context is a stand-in


def _client() -> str:
    """Who is counted for rate limits: the client's address (only a digest of it is stored)."""
    try:
        address = st.context.ip_address
    except Exception:
        address = None
    return address if isinstance(address, str) and address else "local"


def _key(error: RoomError) -> str:
    """The catalogue key of a refusal: each kind has its own under "room.error"."""
    return error.key if error.key.startswith("room.error.") else "room.error.other"


def _fail(error: RoomError) -> None:
    st.session_state[_ERROR] = (_key(error), {})
    if isinstance(error, (EndedRoom, UnknownRoom)) or (isinstance(error, NotTeacher) and teaching()):
        _leave()      # the room ended (on another device, or idle) or the secret is not the room's: out


def _leave() -> None:
    for key in (_CODE, _SECRET, _FOLLOW, _SEEN, _FOLLOWED, _AT, _LANDING, _SCROLL, _MOVED, _BEAT, _QR, _QR_AT,
                _LINK, _ARRIVED, _ASKED, _BOXES, _RENEWED):
        st.session_state.pop(key, None)
    if ROOM in st.query_params:
        del st.query_params[ROOM]


def _set_cookie_script(name: str, value: str, max_age: int) -> str:
    # Both are ours: a code's letters and a token_urlsafe secret. Checked anyway: nothing else is written.
    assert re.fullmatch(r"[A-Za-z0-9_]{1,40}", name) and re.fullmatch(r"[A-Za-z0-9_-]{0,64}", value)
    return (f'<script>document.cookie = "{name}={value}; path=/; max-age={int(max_age)}; SameSite=Strict"'
            ' + (location.protocol === "https:" ? "; Secure" : "");</script>')


# ---- joining: app.py calls start() before presenter mode reads the URL -----------------------

def start() -> None:
    """Enter the room the URL names (a link, the join box, ``room=new``); keep the room in the URL
    on every run (a page switch keeps only bound parameters). Nothing at all outside a room."""
    raw = st.query_params.get(ROOM)
    token = st.query_params.get(TEACH)
    if token is not None:
        del st.query_params[TEACH]            # the token leaves the address bar (and its history) at once
        if raw is not None:
            _redeem(raw, token)
    if raw is not None and raw != code():
        _enter(raw)
    if in_room():
        if st.query_params.get(ROOM) != code():
            st.query_params[ROOM] = code()
        if not teaching():
            # A student sees the normal page, whatever the link said (the teacher's link has present=1).
            st.session_state[PRESENTING] = False
    cookie = st.session_state.get(_COOKIE)
    if cookie:
        # Forgotten only once drawn: a rerun asked for meanwhile (a poll, the teacher's push) stops
        # this run inside st.html before the element is sent, and the next run draws it again. A
        # browser without the cookie would come back from a reconnect as a new student.
        st.html(_set_cookie_script(*cookie), unsafe_allow_javascript=True)
        st.session_state.pop(_COOKIE, None)


def _enter(raw: str) -> None:
    try:
        if raw.strip().lower() == NEW:
            if st.query_params.get("present") == "1" or st.session_state.get(PRESENTING):
                create()
            else:
                _leave()
                st.session_state[_ERROR] = ("room.start_in_present", {})
            return
        room_code = normalise_code(raw)       # junk is refused here, before the store is opened
        secret = st.session_state.get(_SECRET) if code() == room_code else None
        secret = secret or _cookie(TEACHER_COOKIE + room_code)
        if secret:
            try:
                store().results_csv(room_code, secret)     # the teacher's secret, checked
                _leave()
                st.session_state.update({_CODE: room_code, _SECRET: secret})
                return
            except NotTeacher:
                pass                                       # a stale cookie: a student then
        joined = store().join(room_code, _student_id(), client_key=_client())
        _leave()
        st.session_state.update({_CODE: joined, _FOLLOW: True})
    except RoomError as e:
        _leave()
        _fail(e)


def _redeem(raw: str, token: str) -> None:
    """A teacher link opened on a second device: this browser becomes the room's teacher (the
    secret in its cookie and session). A spent or made-up link says so; the page then joins the
    room as a student."""
    try:
        secret = store().redeem_teacher_link(raw, token, client_key=_client())
    except RoomError as e:
        _fail(e)
        return
    room_code = normalise_code(raw)
    _leave()
    st.session_state.update({_CODE: room_code, _SECRET: secret, _ARRIVED: True})
    _teacher_cookie(room_code, secret)
    st.toast(tr("room.teacher_arrived", code=room_code), icon=":material/devices:")
    st.query_params[ROOM] = room_code


def create() -> None:
    """The teacher starts a room: its code in the URL, its secret in this browser's cookie."""
    try:
        new = store().create_room(client_key=_client())
    except RoomError as e:
        _fail(e)
        return
    _leave()
    st.session_state.update({_CODE: new.code, _SECRET: new.teacher_secret})
    _teacher_cookie(new.code, new.teacher_secret)
    st.query_params[ROOM] = new.code


def teacher_cookie_s(idle_s: float) -> int:
    """How long a teacher's cookie lives: the room's idle time and a day more (a room nobody touched
    for its idle time has ended; one in use has its cookie written again, COOKIE_RENEW_S), at most
    the 400 days a browser keeps a cookie.

    Example: teacher_cookie_s(12 * 3600) -> 129600 (36 h);  teacher_cookie_s(1e9) -> 34560000 (400 days)
    """
    return int(min(idle_s + COOKIE_SPARE_S, 400 * 86400))


def _teacher_cookie(room_code: str, secret: str) -> None:
    st.session_state[_COOKIE] = (TEACHER_COOKIE + room_code, secret, teacher_cookie_s(store().idle_s))
    st.session_state[_RENEWED] = time.monotonic()


def join_box() -> None:
    """The home page's "Join the class": a code typed from the projector."""
    if in_room():
        return
    with st.form("_room.join_form", border=True):
        st.markdown(f"**{tr('room.join_title')}**")
        st.text_input(tr("room.join_label"), key=_JOIN_TEXT, max_chars=40, help=tr("room.join_help"))
        st.form_submit_button(tr("room.join_button"), on_click=_join_typed)


def _join_typed() -> None:
    text = st.session_state.get(_JOIN_TEXT) or ""
    try:
        normalise_code(text)
    except BadCode as e:
        _fail(e)
        return
    st.query_params[ROOM] = text      # start() joins in the run this callback opens


# ---- the page's own lesson state ------------------------------------------------------------

def _lesson_name(page) -> str:
    return page.url_path or "home"


def _lesson_query() -> dict[str, str | list[str]]:
    """This page's URL state a class follows: every parameter but each person's own (OWN)."""
    out = {}
    for key in st.query_params.keys():
        if key not in OWN:
            values = st.query_params.get_all(key)
            out[key] = values[0] if len(values) == 1 else values
    return out


def _ns(url_path: str) -> str | None:
    return next((lesson.ns for lesson in existing_lessons() if lesson.url_path == url_path), None)


# ---- the teacher: the strip on the presenter's bar, the position written --------------------

def teacher_bar(current, slide: int) -> None:
    """On the presenter's bar (ui/classroom.py), or in the sidebar outside presenter mode:
    "Start a class", or the room's code, who is there, the join code, the results and the end."""
    presenting = bool(st.session_state.get(PRESENTING))
    if presenting and _ERROR in st.session_state:      # on every slide (follow()'s place is slide 1)
        key, fields = st.session_state.pop(_ERROR)
        st.error(tr(key, **fields), icon=":material/groups:")
    if not in_room():     # "Start a class" is a button of the presenter's bar (ui/classroom.js)
        return
    if not teaching():
        return
    _move(current, slide)
    if not teaching():        # the store refused the secret (an ended room, a forged session): out of the room
        return
    room_code = code()
    at = (_lesson_name(current), slide)
    if st.session_state.get(_QR_AT) != at:
        # The join card: on the first slide, and on any other when the teacher turns it on there.
        st.session_state[_QR_AT] = at
        st.session_state[_QR] = slide == 1
    if st.session_state.pop(_QR_FLIP, False):
        st.session_state[_QR] = not st.session_state.get(_QR, False)
    with st.container(horizontal=True, key="room-teacher", vertical_alignment="center"):
        _presence(room_code)
        st.toggle(tr("room.show_join"), key=_QR)
        try:
            csv = store().results_csv(room_code, st.session_state.get(_SECRET))
        except RoomError as e:
            _fail(e)
            if not teaching():
                st.rerun()            # out of the room: the page says why
            csv = ""
        else:
            if time.monotonic() - st.session_state.get(_RENEWED, -1e9) > COOKIE_RENEW_S:
                # The secret is the room's (results_csv checked it): its cookie is written again (in the
                # next run's start()), so a room in use never outlives the cookie its teacher returns with.
                _teacher_cookie(room_code, st.session_state[_SECRET])
        st.download_button(tr("room.csv"), csv, file_name=f"class-{room_code}.csv", mime="text/csv",
                           on_click="ignore", key="_room.csv", icon=":material/download:")
        with st.popover(tr("room.teacher_link"), icon=":material/devices:", key="room-teacher-link"):
            _teacher_link_box(current, slide)
        st.button(tr("room.end"), key="_room.end", on_click=_end, icon=":material/logout:")
    if st.session_state.get(_QR):
        st.html(join_card(room_code, join_link(room_code)))


@st.fragment(run_every=PRESENCE_S)
def _presence(room_code: str) -> None:
    after_fragment()      # a control moved in a fragment that does not call it (the explorer's): within 1 s
    try:
        who = store().presence(room_code)
        current = store().current_question(room_code)
    except (EndedRoom, UnknownRoom) as e:
        _fail(e)
        st.rerun(scope="app")         # ended on another device, or idle: the page says so and leaves
    except RoomError as e:
        st.caption(tr(_key(e)))
        return
    text = sentences(tr("room.code", code=room_code), tr("room.presence", n=who.in_room, m=who.following))
    if current is not None and current.state == "open":
        text = sentences(text, tr("room.q.current", round=current.round, n=current.answered))
    st.markdown(f":material/groups: {text}")


def _teacher_link_box(current, slide: int) -> None:
    """The popover's content: what a teacher link is, and one made on request (never drawn
    on the slide itself: it is in the bar's popover, closed until the teacher opens it)."""
    st.caption(tr("room.teacher_link_help"))
    st.button(tr("room.teacher_link_make"), key="_room.make_link", on_click=_make_link,
              args=(_lesson_name(current), slide), icon=":material/link:")
    link = st.session_state.get(_LINK)
    if link:
        st.code(link, language=None, wrap_lines=True)


def _make_link(lesson: str, slide: int) -> None:
    try:
        token = store().teacher_link(code(), st.session_state.get(_SECRET))
    except RoomError as e:
        _fail(e)
        return
    st.session_state[_LINK] = teacher_link(code(), token, lesson, slide, _lesson_query())


def teacher_link(room_code: str, token: str, lesson: str, slide: int, query: dict) -> str:
    """The address a teacher's second device opens: this lesson and slide in presenter mode, in the
    room, with the one-time token.

    Example: teacher_link('K7P2QX', 'tok', 'attention', 3, {'attn.d_k': '16'})
             -> 'http://10.0.0.5:8501/attention?attn.d_k=16&present=1&step=3&room=K7P2QX&teach=tok'
    """
    root = join_link(room_code).split("?", 1)[0]
    path = "" if lesson == "home" else quote(lesson)
    params = {**query, "present": "1", "step": str(slide), ROOM: room_code, TEACH: token}
    return f"{root}{path}?{urlencode(params, doseq=True)}"


def _end() -> None:
    room_code, secret = code(), st.session_state.get(_SECRET)
    try:
        store().end_room(room_code, secret)
    except RoomError as e:
        _fail(e)
        return
    _leave()
    st.session_state[_COOKIE] = (TEACHER_COOKIE + room_code, "", 0)
    st.session_state[_ERROR] = ("room.ended_now", {})


def _move(current, slide: int) -> None:
    """Write the teacher's position when it changed: the lesson, the slide, the lesson's URL state."""
    here = (_lesson_name(current), str(slide), _lesson_query())
    if st.session_state.get(_MOVED) == here:
        return
    if st.session_state.pop(_ARRIVED, False):
        st.session_state[_MOVED] = here     # a second device's first page is the link's: the class stays put
        return
    try:
        store().move(code(), st.session_state.get(_SECRET), *here)
        st.session_state[_MOVED] = here
    except RoomError as e:
        _fail(e)


def after_fragment() -> None:
    """At the end of a lesson's section fragment (ui/lesson.py): a control moved there changed the
    URL without a run of the whole page, so neither teacher_bar nor after_page saw it. The teacher's
    position is written now (the lesson and slide are the last ones written: only a page run changes
    them), and the class follows the new value within a wake (issue 42 §2). The teacher's 1 s
    presence fragment calls it too, for a fragment of the page that does not (the explorer's)."""
    if not teaching():
        return
    moved = st.session_state.get(_MOVED)
    if moved is None or moved[2] == _lesson_query():
        return
    send_now()                  # the teacher's own figure first: the store's write does not hold it back
    lesson, slide, _ = moved
    try:
        store().move(code(), st.session_state.get(_SECRET), lesson, slide, _lesson_query())
        st.session_state[_MOVED] = (lesson, slide, _lesson_query())
    except RoomError as e:
        _fail(e)


def join_link(room_code: str) -> str:
    """The address students open: this server's root with ``?room=<CODE>``.

    Example: 'http://10.0.0.5:8501/attention?present=1' -> 'http://10.0.0.5:8501/?room=K7P2QX'
    """
    try:
        url = st.context.url
    except Exception:
        url = ""
    url = url if isinstance(url, str) else ""
    parts = urlsplit(url)
    path = parts.path
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if last and any(lesson.url_path == last for lesson in existing_lessons()):
        path = path.rstrip("/")[: -len(last)]
    path = path if path.endswith("/") else path + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, f"{ROOM}={room_code}", ""))


def qr_svg(text: str) -> str:
    """A QR code of ``text`` as an SVG data URI, drawn here (segno, offline), no size of its own.
    An <img> of it: st.html's sanitiser keeps no inline <svg>, and an image runs nothing.

    Example: qr_svg("http://10.0.0.5:8501/?room=K7P2QX") -> 'data:image/svg+xml;charset=utf-8,%3Csvg...'
    """
    import segno  # noqa: PLC0415 (only a teacher's page draws one)

    return segno.make(text, error="m").svg_data_uri(scale=1, border=2, omitsize=True, dark="#000", light="#fff")


JOIN_CSS = """<style>
.anatomy-room-join { display: flex; flex-wrap: wrap; align-items: center; justify-content: center;
  gap: 0.4rem 2.5rem; background: white; color: #31333f; border: 1px solid rgba(49, 51, 63, 0.2);
  border-radius: 1rem; padding: 0.6rem 1.2rem; }
.anatomy-room-join .anatomy-room-qr { display: block; width: clamp(200px, min(36vh, 80vw), 480px); height: auto;
  image-rendering: pixelated; }
.anatomy-room-join .anatomy-room-text { text-align: center; min-width: 0; max-width: 100%; }
.anatomy-room-join .anatomy-room-code { font-size: clamp(2rem, min(9vh, 12vw), 5.5rem); font-weight: 700;
  letter-spacing: 0.2em; font-family: monospace; line-height: 1.2; }
.anatomy-room-join .anatomy-room-link { font-size: 1.1rem; font-family: monospace; word-break: break-all; }
</style>"""


def flip_join_card() -> bool:
    """Key J on the presenter's bar: show the join card if hidden, hide it if shown (the bar's toggle
    follows). Only the room's teacher; False (nothing to do) for anyone else."""
    if not teaching():
        return False
    st.session_state[_QR_FLIP] = True
    return True


def join_card(room_code: str, link: str) -> str:
    """The projector's join card: the code in large letters, the link, a QR code of the link (about
    a third of the screen's height: readable from the back row). A block of the page under the
    teacher's bar, in the flow: the slide's content follows it and is never covered."""
    return f"""{JOIN_CSS}<div class="anatomy-room-join">
<img class="anatomy-room-qr" alt="QR" src="{html.escape(qr_svg(link))}">
<div class="anatomy-room-text">
<div>{html.escape(tr('room.join_at'))}</div>
<div class="anatomy-room-code">{html.escape(room_code)}</div>
<div class="anatomy-room-link">{html.escape(link)}</div>
</div>
</div>"""


# ---- the student: following ------------------------------------------------------------------

def follow(current, order: list) -> None:
    """Before the page runs: refusals to show, and for a student the banner, the poll, and a move
    to the teacher's lesson when the teacher's position changed."""
    error = st.session_state.pop(_ERROR, None)
    if error:
        key, fields = error
        st.error(tr(key, **fields), icon=":material/groups:")
    if not in_room() or teaching():
        return
    st.session_state.pop(_BOXES, None)   # this run draws the page's question boxes again
    room_code = code()
    try:
        now = version(room_code)
    except RoomError as e:
        _leave()
        _fail(e)
        st.rerun()
    if now != st.session_state.get(_SEEN):
        st.session_state[_SEEN] = now
        if st.session_state.get(_FOLLOW):
            _go(_position(database_url(), room_code, now), current, order, error)
    if st.session_state.get(_FOLLOW) and _SCROLL in st.session_state:
        _to_question(room_code, now, current)    # here too after a page switch: _go's run ended in it
    _banner(room_code)
    scroll = st.session_state.pop(_SCROLL, None)
    if scroll:
        st.html(scroll_script(*scroll), unsafe_allow_javascript=True)     # (section, version[, question])
    _poll(room_code)


def _go(pos: Position, current, order: list, error: tuple | None = None) -> None:
    """To the teacher's position: another lesson or other values, by a page switch (the lesson's
    controls then read the teacher's values from the URL); another slide of the same page, by a scroll."""
    if not pos.lesson:
        return                          # the teacher has not shown anything yet
    target = next((p for p in order if _lesson_name(p) == pos.lesson), None)
    if target is None:
        return
    st.session_state[_SCROLL] = (pos.section, pos.version)
    followed = (pos.lesson, pos.query)
    same = st.session_state.get(_FOLLOWED, (None, None, None))[:2] == followed
    st.session_state[_FOLLOWED] = (pos.lesson, pos.query, pos.section)
    if same and _lesson_name(current) == pos.lesson:
        return
    # The controls take the teacher's values: their state goes, so each reads its value from the URL.
    ns = _ns(pos.lesson)
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and (key in pos.query or (ns and key.startswith(f"{ns}.") and "try" not in key)):
            del st.session_state[key]
    st.session_state[_LANDING] = True
    if error:
        st.session_state[_ERROR] = error    # shown on the page the switch opens
    params = {**pos.query, "lang": lang(), ROOM: code()}
    # On the page shown, its controls are bound to the address: switch_page would refuse their values
    # (a traceback on the student's page, the first time the teacher moved one of them).
    release_url_values(pos.query)
    st.switch_page(target, query_params=params)


def _to_question(room_code: str, now: int, current) -> None:
    """The teacher opened a question (or started its round 2, or revealed it) on this lesson: the
    student is brought to the question rather than to the slide's top, once per change."""
    try:
        q = _question_now(database_url(), room_code, now)
    except RoomError:
        return
    if q is None or q.lesson != _ns(_lesson_name(current)):
        return
    seen = (q.lesson, q.key, q.round, q.state)
    if st.session_state.get(_ASKED) == seen:
        return
    st.session_state[_ASKED] = seen
    scroll = st.session_state.get(_SCROLL)
    if scroll:
        st.session_state[_SCROLL] = (scroll[0], scroll[1], q.key)


def _banner(room_code: str) -> None:
    with st.container(key="room-banner"):
        if st.session_state.get(_FOLLOW):
            st.caption(f":material/groups: {tr('room.following', code=room_code)}")
            return
        with st.container(horizontal=True, vertical_alignment="center"):
            st.info(tr("room.paused", code=room_code), icon=":material/explore:")
            st.button(tr("room.back"), key="_room.back", on_click=_back, type="primary")
            st.button(tr("room.leave"), key="_room.leave", on_click=_leave)


def _back() -> None:
    st.session_state[_FOLLOW] = True
    for key in (_SEEN, _FOLLOWED, _AT, _ASKED):
        st.session_state.pop(key, None)
    _beat(force=True)


def _beat(force: bool = False) -> None:
    if not force and time.monotonic() - st.session_state.get(_BEAT, -1e9) < BEAT_S:
        return
    st.session_state[_BEAT] = time.monotonic()
    try:
        store().heartbeat(code(), _student_id(), bool(st.session_state.get(_FOLLOW)))
    except RoomError:
        pass                            # the poll says so if the room has gone


@st.fragment(run_every=POLL_S)
def _poll(room_code: str) -> None:
    """A student's page asks the cached version; a change reruns the page (or only scrolls)."""
    if code() != room_code:
        return
    found = this_fragment()
    if found:
        _waker(database_url()).add(room_code, *found)     # woken when the teacher moves
    at = st.session_state.get(_AT)
    landing = st.session_state.get(_LANDING)     # a page switch to the teacher's values, its run not ended
    if st.session_state.get(_FOLLOW) and at and not landing and _lesson_query() != at[1]:
        # A control moved inside one of the lesson's fragments (no whole run, so after_page did not
        # see it): the student looks around; the whole page runs to show the banner.
        st.session_state[_FOLLOW] = False
        _beat(force=True)
        st.rerun(scope="app")
    _beat()
    try:
        now = version(room_code)
    except RoomError:
        st.rerun(scope="app")          # follow() says why and leaves
    if now == st.session_state.get(_SEEN):
        _scroll_again()
        return
    followed = st.session_state.get(_FOLLOWED)
    seen = st.session_state.get(_SEEN)
    if st.session_state.get(_FOLLOW) and followed and isinstance(seen, int) and now == seen + 1:
        # One change since the page ran (each move or question's change is one version): the page
        # need not run again for it.
        pos = _position(database_url(), room_code, now)
        if (pos.lesson, pos.query) == followed[:2] and pos.section != followed[2]:
            # Only the slide changed: scroll there.
            st.session_state[_SEEN] = now
            st.session_state[_FOLLOWED] = (pos.lesson, pos.query, pos.section)
            _poll_scroll(scroll_script(pos.section, now))
            return
        if (pos.lesson, pos.query, pos.section) == followed and _redraw_question(room_code, now, pos.section):
            return
    st.rerun(scope="app")


def _poll_scroll(script: str) -> None:
    st.session_state[_POLLED] = (script, time.monotonic(), st.session_state.get(_FOLLOWED))
    st.html(script, unsafe_allow_javascript=True)


def _scroll_again() -> None:
    """A poll run that finds nothing new draws the last scroll again while it is recent. Streamlit
    drops a fragment's output not yet sent when the fragment runs again, and under a class's load
    the next poll (the page's timer, or a wake) often starts before the last one's script left:
    the student then missed the slide until the teacher moved again (5-9 of 100 students a slide).
    The same script again is the same element: the page does not scroll twice. Only on the page
    it was drawn for, while the student follows: a page the student or the teacher has since
    opened, or a student looking around, is never scrolled by it."""
    last = st.session_state.get(_POLLED)
    if (last and time.monotonic() - last[1] < SCROLL_AGAIN_S and st.session_state.get(_FOLLOW)
            and st.session_state.get(_FOLLOWED) == last[2]):
        st.html(last[0], unsafe_allow_javascript=True)


def _redraw_question(room_code: str, now: int, section: str) -> bool:
    """A question changed on the page shown (opened, round 2, closed, revealed): rerun only its box
    (a fragment) and bring the student to it; False when the box is not on this page (the page runs)."""
    try:
        q = _question_now(database_url(), room_code, now)
    except RoomError:
        return False
    box = st.session_state.get(_BOXES, {}).get(q.key) if q is not None else None
    here = this_fragment()
    if box is None or here is None:
        return False
    asked = (q.lesson, q.key, q.round, q.state)
    new = st.session_state.get(_ASKED) != asked
    if new:
        # Drawn before the box's rerun is asked for: that request reaches the session from the event
        # loop, and when it came first it could stop this run before the script was sent (the student
        # was then never brought to the question: test_room, one run in three).
        st.html(scroll_script(section, now, q.key), unsafe_allow_javascript=True)
    if not rerun_fragment(here[0], box):
        return False                    # the whole page runs (and _to_question scrolls, _ASKED unset)
    st.session_state[_SEEN] = now
    if new:
        st.session_state[_ASKED] = asked
    return True


def after_page(current) -> None:
    """After the page ran: the teacher's position (the lesson's controls may have changed the URL);
    a student who moved a control or opened another lesson stops following."""
    if not in_room():
        return
    if teaching():
        from ui.classroom import step  # noqa: PLC0415 (ui.classroom imports this module)

        _move(current, step() if st.session_state.get(PRESENTING) else 1)
        return
    here = (_lesson_name(current), _lesson_query())
    if st.session_state.pop(_LANDING, False):
        st.session_state[_AT] = here
    elif st.session_state.get(_FOLLOW) and st.session_state.get(_AT) not in (None, here):
        st.session_state[_FOLLOW] = False
        _beat(force=True)
        st.rerun()                      # the banner says so at once


def question_class(key: str) -> str:
    """The class name of a class question's box on the page (its container's key).

    Example: question_class("b1.try1") -> 'st-key-room-q-b1-try1'"""
    return "st-key-room-q-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)


def scroll_script(section: str, press: int, question: str = "") -> str:
    """Scroll to the teacher's slide ``section`` (its number, as ui/classroom.js counts them) on
    the student's normal page, and mark it; with ``question`` (a "Try this" key the teacher has
    just opened), to that question's box instead. A fixed script: only two numbers and a class
    name of letters, digits and dashes are put into it."""
    n = int(section) if str(section).isdigit() else 1
    box = question_class(question) if question else ""
    return f"""<script>/* {int(press)} */
(() => {{
  const want = {n};
  const box = "{box}";
  const BLOCK = '[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]';
  const HEAD = ':scope > [data-testid="stHeading"] :is(h2, h3), :scope > [data-testid="stHtml"] .anatomy-slide';
  const isHead = (el) => el.matches('[data-testid="stElementContainer"]') && !!el.querySelector(HEAD);
  const find = () => {{
    if (box) return document.querySelector("." + box);
    const block = document.querySelector(BLOCK);
    if (!block) return null;
    if (want <= 1) return block;
    let k = 1;
    for (const el of block.children) {{
      const inner = el.matches('[data-testid="stLayoutWrapper"]')
        ? el.querySelector(':scope > [data-testid="stVerticalBlock"]') : null;
      const kids = inner ? Array.from(inner.children) : [];
      const heads = kids.filter(isHead);
      if (isHead(el) || (heads.length === 1 && kids[0] === heads[0])) {{ if (++k === want) return el; continue; }}
      for (const h of heads) if (++k === want) return h;
    }}
    return null;
  }};
  let tries = 0;
  const look = () => {{
    const app = document.querySelector('[data-testid="stApp"]');
    let el = app && app.getAttribute("data-test-script-state") !== "running" ? find() : null;
    if (!el) {{ if (++tries < 100) setTimeout(look, 100); return; }}
    while (el.nextElementSibling && el.getBoundingClientRect().height === 0) el = el.nextElementSibling;
    for (const old of document.querySelectorAll(".anatomy-followed")) {{
      old.classList.remove("anatomy-followed"); old.style.boxShadow = "";
    }}
    if (want > 1 || box) {{
      el.classList.add("anatomy-followed");
      el.style.boxShadow = "-6px 0 0 0 #ff4b4b";
    }}
    if (box) el.style.scrollMarginTop = "4rem";     // the question's own words clear of the page's header
    el.scrollIntoView({{block: "start", behavior: "instant"}});
    document.body.dataset.anatomyFollowed = String(want);
    if (box) document.body.dataset.anatomyQuestion = box;
  }};
  look();
}})();
</script>"""


# ---- the class's votes: ui.frame.try_this calls class_question in a room ---------------------

VOTE_CSS = """<style>
[class*="st-key-room-vote-"] button { min-height: 48px; font-size: 1.1rem; width: 100%; justify-content: flex-start; }
</style>"""


def class_question(ns: str, name: str, answer: int) -> bool:
    """Draw the question ``{ns}.{name}`` as the class's question when this session is in a room
    (the teacher's controls, or a student's buttons); False outside a room: try_this draws its own."""
    if not in_room():
        return False
    base = f"{ns}.{name}"
    options = tr_items(f"{base}.options")
    try:
        question = store().question(code(), ns, base)
    except UnknownQuestion:
        question = None
    except RoomError as e:
        _fail(e)
        return False
    student = not teaching()
    # Keyed: a student's page is scrolled to this box when the teacher opens it (scroll_script).
    with st.container(border=True, key=question_class(base).removeprefix("st-key-")):
        st.markdown(f"**{tr(f'{base}.q')}**")
        if student:
            _student_question(ns, base, answer, options)
        else:
            _teacher_question(ns, base, answer, options, question)
    return True


def _letter(i: int) -> str:
    return "ABCDEFGHIJ"[i]


def _teacher_question(ns: str, base: str, answer: int, options: list[str], q) -> None:
    st.markdown("\n".join(f"{_letter(i)}. {text}" for i, text in enumerate(options)))
    args = (ns, base, len(options))
    if q is None:
        st.button(tr("room.q.open"), key=f"_room.open.{base}", on_click=_teacher_act, args=("open", *args),
                  type="primary", icon=":material/how_to_vote:")
        return
    state = tr({"open": "room.q.state_open", "closed": "room.q.state_closed", "revealed": "room.q.state_revealed"}[q.state])
    st.markdown(sentences(tr("room.q.round", round=q.round), tr("room.q.answered", n=q.answered), state))
    with st.container(horizontal=True):
        if q.state == "open":
            st.button(tr("room.q.close"), key=f"_room.close.{base}", on_click=_teacher_act, args=("close", *args))
        if q.state == "closed":
            st.button(tr("room.q.reopen"), key=f"_room.reopen.{base}", on_click=_teacher_act, args=("open", *args))
        if q.round == 1 and q.state != "revealed":
            st.button(tr("room.q.round2"), key=f"_room.round2.{base}", on_click=_teacher_act, args=("round2", *args))
        if q.state != "revealed":
            st.button(tr("room.q.reveal"), key=f"_room.reveal.{base}", on_click=_teacher_act,
                      args=("reveal", *args), type="primary")
    shown = q.state == "revealed" or st.toggle(tr("room.q.show"), key=f"_room.show.{base}")
    if shown:
        try:
            tally = store().tally(code(), ns, base, secret=st.session_state.get(_SECRET))
        except RoomError as e:
            st.warning(tr(_key(e)))
        else:
            distribution(options, tally.counts, answer if q.state == "revealed" else None)
    if q.state == "revealed":
        st.markdown(f"**{tr('room.q.answer', option=options[answer])}** {tr(f'{base}.why')}")


def _teacher_act(action: str, ns: str, base: str, n_options: int) -> None:
    s, secret = store(), st.session_state.get(_SECRET)
    try:
        if action == "open":
            s.open_question(code(), secret, ns, base, n_options=n_options)
        elif action == "close":
            s.close_round(code(), secret, ns, base)
        elif action == "round2":
            s.start_round_2(code(), secret, ns, base)
        elif action == "reveal":
            s.reveal(code(), secret, ns, base)
    except RoomError as e:
        _fail(e)


def distribution(options: list[str], counts: dict[int, tuple[int, ...]], answer: int | None) -> None:
    """The rounds' distributions side by side: a row per option, a column per round."""
    rounds = sorted(counts)
    head = f"| {tr('room.q.option')} | " + " | ".join(tr("room.q.round", round=r) for r in rounds) + " |"
    rule = "|---|" + "---:|" * len(rounds)
    rows = []
    for i, text in enumerate(options):
        mark = " ✓" if i == answer else ""
        cells = " | ".join(f"{counts[r][i]} {'▇' * min(counts[r][i], 30)}" for r in rounds)
        rows.append(f"| {_letter(i)}. {text}{mark} | {cells} |")
    st.markdown("\n".join([head, rule, *rows]))


@st.fragment
def _student_question(ns: str, base: str, answer: int, options: list[str]) -> None:
    """A student's side of a class question. A fragment: a vote reruns only this box (a whole
    lesson's run per vote made a class of 100 wait seconds for its votes' acknowledgement)."""
    if not in_room():
        st.rerun(scope="app")           # a vote found the room ended: the page says so
    found = this_fragment()
    if found:
        st.session_state.setdefault(_BOXES, {})[base] = found[1]     # _poll reruns this box alone
    error = st.session_state.pop(_ERROR, None)
    if error:
        st.error(tr(error[0], **error[1]), icon=":material/groups:")
    try:
        q = store().question(code(), ns, base)
    except UnknownQuestion:
        q = None
    except RoomError as e:
        st.caption(tr(_key(e)))
        return
    if q is None:
        st.caption(tr("room.q.waiting"))
        return
    try:
        mine = store().my_votes(code(), _student_id(), ns, base)
    except RoomError:
        mine = {}
    picked = mine.get(q.round)
    if q.state == "open":
        st.caption(tr("room.q.pick", round=q.round))
        st.html(VOTE_CSS)
        with st.container(key=f"room-vote-{base.replace('.', '-')}"):
            for i, text in enumerate(options):
                st.button(f"{_letter(i)}. {text}", key=f"_room.vote.{base}.{i}", on_click=_vote,
                          args=(ns, base, q.round, i), type="primary" if picked == i else "secondary",
                          width="stretch")
    if picked is not None:
        st.markdown(tr("room.q.yours", option=f"{_letter(picked)}. {options[picked]}"))
    if q.state == "closed":
        st.info(tr("room.q.closed"))
    if q.state == "revealed":
        try:
            tally = store().tally(code(), ns, base)
        except RoomError:
            tally = None
        if tally is not None:
            distribution(options, tally.counts, answer)
        st.markdown(f"**{tr('room.q.answer', option=options[answer])}** {tr(f'{base}.why')}")


def _vote(ns: str, base: str, round_: int, option: int) -> None:
    try:
        store().vote(code(), _student_id(), ns, base, round=round_, option=option)
    except RoomError as e:
        _fail(e)
