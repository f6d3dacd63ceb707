"""ui.frame.try_this: nothing is revealed before an answer (the prediction cannot be skipped);
after a wrong answer the right one is behind "Reveal the answer"; the answers given stay for the
session when the questions leave the page (another lesson) and in the other language."""
import pytest
from streamlit.testing.v1 import AppTest

import i18n

QUESTIONS = [("try1", 1), ("try2", 2), ("try3", 0)]     # B1's questions and their right options


def _app():
    import streamlit as st

    from ui.frame import LANG_KEY, try_this

    st.session_state[LANG_KEY] = "zh" if st.checkbox("zh", key="zh") else "en"
    if not st.checkbox("away", key="away"):              # another lesson: the questions are not drawn
        try_this("b1", [("try1", 1), ("try2", 2), ("try3", 0)])


def _texts(at) -> list[str]:
    return [m.value for m in at.markdown]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reveal_only_after_an_answer_and_answers_kept(lang):
    t = lambda key, **f: i18n.t(lang, key, **f)              # noqa: E731
    at = AppTest.from_function(_app, default_timeout=30)
    if lang == "zh":
        at.session_state["zh"] = True
    at.run()
    assert not at.exception
    assert not at.expander, "nothing to reveal before an answer"
    assert not any(t("b1.try1.why") in m for m in _texts(at))

    at.radio(key=f"b1.try1.{lang}").set_value(1).run()       # right: the explanation
    assert f"**{t('common.right')}** {t('b1.try1.why')}" in _texts(at) and not at.expander
    at.radio(key=f"b1.try2.{lang}").set_value(0).run()       # wrong: the right one behind a click
    assert f"**{t('common.not_quite')}**" in _texts(at)
    (reveal,) = at.expander
    assert reveal.label == t("common.reveal")
    assert f"**{i18n.items(lang, 'b1.try2.options')[2]}** — {t('b1.try2.why')}" in [m.value for m in reveal.markdown]

    at.checkbox(key="away").check().run()                    # away and back
    assert not at.radio
    at.checkbox(key="away").uncheck().run()
    assert at.radio(key=f"b1.try1.{lang}").value == 1 and at.radio(key=f"b1.try2.{lang}").value == 0
    assert f"**{t('common.right')}** {t('b1.try1.why')}" in _texts(at) and len(at.expander) == 1
    assert any(t("classroom.score", right=1, total=3) in m for m in _texts(at))

    other = "en" if lang == "zh" else "zh"                   # the other language: the same answers
    at.checkbox(key="zh").set_value(other == "zh").run()
    assert at.radio(key=f"b1.try1.{other}").value == 1 and at.radio(key=f"b1.try2.{other}").value == 0
    assert at.radio(key=f"b1.try3.{other}").value is None
