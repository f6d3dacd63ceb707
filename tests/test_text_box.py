"""ui.frame.text_box: an over-long text goes back into the box and the address cut to its limit
(A1 #4: 2,000 characters made an 18,090-character link), with the "looks at the first N"
warning once; an empty box says what the lesson does then (``empty_key``). In en and zh."""
import pytest
from streamlit.testing.v1 import AppTest

import i18n

LIMIT = 64


def _app():
    import streamlit as st

    from ui.frame import LANG_KEY, text_box

    st.session_state.setdefault(LANG_KEY, st.query_params.get("lang", "en"))
    empty = st.query_params.get("empty_key")
    kwargs = {"empty_key": empty} if empty else {}
    t = text_box("t.text", "君不见", 64, "Text", **kwargs)
    st.markdown(f"used={len(t.text)} truncated={t.truncated} n={t.original_len}")
    st.slider("other", 0, 9, 0, key="t.other")


def _open(lang: str, params: dict | None = None) -> AppTest:
    at = AppTest.from_function(_app, default_timeout=30)
    at.query_params["lang"] = lang
    for k, v in (params or {}).items():
        at.query_params[k] = v
    return at.run()


def _used(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("used="))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_typed_long_text_is_cut_in_the_box_and_the_address(lang):
    at = _open(lang)
    long = "将进酒" * 700                                  # 2,100 characters
    at.text_input(key="t.text").input(long).run()
    assert not at.exception
    assert at.text_input(key="t.text").value == long[:LIMIT]
    assert at.query_params["t.text"] == long[:LIMIT]       # the link holds 64 characters, not 2,100
    assert _used(at) == f"used={LIMIT} truncated=True n=2100"
    want = i18n.t(lang, "common.truncated", limit=LIMIT, n=2100)
    assert [w.value for w in at.warning] == [want]        # said once...
    at.slider(key="t.other").set_value(3).run()
    assert not at.warning and not at.exception            # ...not again on the next move
    assert at.text_input(key="t.text").value == long[:LIMIT]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_linked_long_text_is_cut_in_the_box_and_the_address(lang):
    long = "x" * 2000
    at = _open(lang, {"t.text": long})
    assert not at.exception
    assert at.text_input(key="t.text").value == "x" * LIMIT
    assert at.query_params["t.text"] == "x" * LIMIT
    assert [w.value for w in at.warning] == [i18n.t(lang, "common.truncated", limit=LIMIT, n=2000)]
    at.slider(key="t.other").set_value(3).run()
    assert not at.warning and at.text_input(key="t.text").value == "x" * LIMIT


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_short_text_untouched_and_empty_says_what_the_lesson_does(lang):
    at = _open(lang)
    at.text_input(key="t.text").input("床前明月光").run()
    assert _used(at) == "used=5 truncated=False n=5" and not at.warning
    at.text_input(key="t.text").input("").run()
    assert [i.value for i in at.info] == [i18n.t(lang, "common.empty_input")]
    # A lesson whose empty box means something else (D1/D2 start from <bos>) passes its own key.
    at = _open(lang, {"empty_key": "common.try_this_help"})
    at.text_input(key="t.text").input("").run()
    assert [i.value for i in at.info] == [i18n.t(lang, "common.try_this_help")]
