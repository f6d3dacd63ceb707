"""ui.frame.choice: translated labels on screen, the language-neutral id in the address, in
every widget it offers; a link works in both languages; a value that is not an id falls back
to the default with no exception."""
import pytest
from streamlit.testing.v1 import AppTest

WIDGETS = ["selectbox", "radio", "segmented"]


def _app():
    import streamlit as st

    from ui.frame import choice

    names = {
        "en": {"window": "Window", "causal": "Causal window", "dilated": "Dilated window"},
        "zh": {"window": "窗口", "causal": "因果窗口", "dilated": "空洞窗口"},
    }
    lang = "zh" if st.checkbox("zh", key="zh") else "en"
    widget = st.query_params.get("widget", "selectbox")
    value = choice("Pattern", ["window", "causal", "dilated"], "t.pat", names[lang], widget=widget)
    st.markdown(f"value={value}")


def _open(widget: str, lang: str = "en", pat: str | None = None) -> AppTest:
    at = AppTest.from_function(_app, default_timeout=30)
    at.query_params["widget"] = widget
    if pat is not None:
        at.query_params["t.pat"] = pat
    if lang == "zh":
        at.session_state["zh"] = True
    return at.run()


def _shown(at: AppTest, widget: str):
    """The widget and the labels it shows for its options."""
    w = {"selectbox": at.selectbox, "radio": at.radio, "segmented": at.segmented_control}[widget][0]
    return w, list(w.options) if widget != "segmented" else [o.content for o in w.proto.options]


def _value(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("value=")).removeprefix("value=")


@pytest.mark.parametrize("widget", WIDGETS)
def test_labels_shown_and_the_id_in_the_address(widget):
    at = _open(widget, pat="causal")                   # a shared link, in English
    assert not at.exception and _value(at) == "causal"
    w, shown = _shown(at, widget)
    assert shown == ["Window", "Causal window", "Dilated window"]
    assert at.query_params["t.pat"] == "causal"

    w.set_value("dilated").run()                       # chosen: the address holds the id
    assert _value(at) == "dilated" and at.query_params["t.pat"] == "dilated"

    at.checkbox(key="zh").check().run()                # the language changes, the choice stays
    w, shown = _shown(at, widget)
    assert shown == ["窗口", "因果窗口", "空洞窗口"]
    assert _value(at) == "dilated" and at.query_params["t.pat"] == "dilated"

    w.set_value("window").run()                        # the default leaves the address
    assert _value(at) == "window" and "t.pat" not in at.query_params


@pytest.mark.parametrize("widget", WIDGETS)
def test_a_link_works_in_both_languages(widget):
    for lang in ("en", "zh"):
        at = _open(widget, lang, pat="dilated")
        assert not at.exception and _value(at) == "dilated"
        assert at.query_params["t.pat"] == "dilated"


@pytest.mark.parametrize("widget", WIDGETS)
@pytest.mark.parametrize("junk", ["空洞窗口", "Dilated window", "💥<b>x</b>", "", "1e309", "DILATED"])
def test_a_value_that_is_no_id_falls_back_to_the_default(widget, junk):
    at = _open(widget, pat=junk)
    assert not at.exception and _value(at) == "window"
    assert "t.pat" not in at.query_params
