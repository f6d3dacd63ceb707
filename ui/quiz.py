""""Try this": predict, then reveal; the lesson's score; a common mistake set right.
In a class room each question is the class's (ui/room.py). Part of the lesson frame (ui/frame.py).
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui.words import lang, sentences, tr, tr_items

SCORES = "_frame.first_answers"   # this session's first answer to each question: {"b1.try1": True}
ANSWERS = "_frame.answers"        # its latest answer to each: {"b1.try1": 2}, shown again on return


def first_answers() -> dict[str, bool]:
    """Whether this session's first answer to each question was right (per session, never shared)."""
    return st.session_state.setdefault(SCORES, {})


def try_this(ns: str, questions: Sequence[tuple[str, int]]) -> None:
    """Predict, then reveal. Each question is (name, index of the right option); its
    text, options and explanation are ``{ns}.{name}.q``, ``.options`` and ``.why``.
    The first answer to each question counts (it is the prediction; the next ones come after
    the reveal): the score under the questions says how many were right. Nothing is revealed
    before an answer is chosen (a student could skip the prediction); after a wrong one, the
    right answer is one click away. The answers stay for this session: back from another lesson,
    or in the other language, the question shows the answer given and its explanation."""
    st.subheader(tr("common.try_this"))
    st.caption(tr("common.try_this_help"))
    record = first_answers()
    answers = st.session_state.setdefault(ANSWERS, {})
    from ui.room import class_question  # noqa: PLC0415 (issue 42; ui.room imports this module)

    for name, answer in questions:
        if class_question(ns, name, answer):          # in a class room: the class votes (ui/room.py)
            continue
        base = f"{ns}.{name}"
        key = f"{base}.{lang()}"
        if key not in st.session_state and base in answers:
            st.session_state[key] = answers[base]     # the radio left the page: its state went with it
        with st.container(border=True):
            options = tr_items(f"{base}.options")
            picked = st.radio(tr(f"{base}.q"), range(len(options)), format_func=options.__getitem__,
                              index=None, key=key)
            if picked is None:
                continue
            answers[base] = picked
            record.setdefault(base, picked == answer)
            if picked == answer:
                st.markdown(f"**{tr('common.right')}** {tr(f'{base}.why')}")
            else:
                st.markdown(f"**{tr('common.not_quite')}**")
                with st.expander(tr("common.reveal")):
                    st.markdown(f"**{options[answer]}** — {tr(f'{base}.why')}")
    quiz_score(ns, [name for name, _ in questions])


def quiz_score(ns: str, names: Sequence[str]) -> None:
    """The lesson's small score: first answers right, of its questions, and how many are left."""
    record = first_answers()
    done = [record[f"{ns}.{name}"] for name in names if f"{ns}.{name}" in record]
    if not done:
        st.caption(tr("classroom.score_none"))
        return
    text = tr("classroom.score", right=sum(done), total=len(names))
    left = len(names) - len(done)
    if left:
        text = sentences(text, tr("classroom.score_left", left=left))
    st.markdown(f":material/scoreboard: **{text}**")


def common_mistake(key: str) -> None:
    """A widely repeated statement that is wrong, next to the figure that shows the right one
    (``key`` in the catalogue: the statement in quotes, then what is true)."""
    st.warning(f"**{tr('common.mistake')}** {tr(key)}", icon=":material/report:")
