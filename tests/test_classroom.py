"""In class, in AppTest, both languages: presenter mode's frame (its bar, its style sheet, the
step from the URL, bad steps), every chart's export buttons, and the Try-this score."""
from __future__ import annotations

import pytest

import i18n
from tests.apptest_util import assert_ok, chart_keys, charts, component_data, figures, open_lesson
from ui import classroom
from ui.course import existing_lessons
from ui.figures import DESCRIBE_KEYS
from ui.frame import PLOTLY_WORDS, PRESENT_MAX_HEIGHT

LANGS = ["en", "zh"]


def _bar(at) -> dict:
    found = [el for el in at.get("bidi_component") if el.proto.component_name == classroom.NAME]
    assert len(found) == 1, "one classroom bar a page"
    return component_data(found[0])


def _presenter_css(at) -> list[str]:
    return [el.proto.body for el in at.get("html") if "font-size: 20px" in el.proto.body]


@pytest.mark.parametrize("lang", LANGS)
def test_presenter_mode_frame(lang):
    at = open_lesson("b1_attention.py", lang, {"present": "1"})
    bar = _bar(at)
    assert bar["present"] is True and bar["step"] == 1
    assert bar["has_prev"] and bar["has_next"]               # home before B1, B2 after it
    assert bar["labels"]["next"] == i18n.t(lang, "classroom.next")
    assert bar["lesson"].startswith("B1 · ")
    assert at.query_params["present"] in ("1", ["1"]) and at.query_params["step"] in ("1", ["1"])
    css = _presenter_css(at)
    assert len(css) == 1 and '[data-testid="stSidebar"]' in css[0]
    assert classroom.section_selector(1) in css[0]
    # The whole lesson still runs.
    plain = open_lesson("b1_attention.py", lang)
    # The same charts with the same figures as without presenter mode, but no taller than
    # ui.frame.PRESENT_MAX_HEIGHT (a tall chart fits a projector's screen); the six panels of one
    # attention call are two charts of three there, on two slides, with the same numbers.
    keys, shown_figs = chart_keys(at), figures(at)
    mix = [i for i, key in enumerate(keys) if key.endswith("-b1.weights_mix")]
    assert len(mix) == 1
    mixed = shown_figs[mix[0]]
    keys, shown_figs = keys[:mix[0]] + keys[mix[0] + 1:], shown_figs[:mix[0]] + shown_figs[mix[0] + 1:]
    assert keys == chart_keys(plain)
    # ...the most height each chart is drawn at in presenter mode goes with it, for the browser.
    assert [component_data(el)["most"] for el in charts(at)] == [PRESENT_MAX_HEIGHT] * len(charts(at))
    assert {component_data(el)["most"] for el in charts(plain)} == {None}
    for key, shown, own in zip(keys, shown_figs, figures(plain), strict=True):
        assert shown["layout"].get("height", 420) == own["layout"].get("height", 420)
        if key.endswith("-b1.weights"):
            panels = [t["z"] for t in shown["data"][:3] + mixed["data"][:3]]
            assert panels == [t["z"] for t in own["data"][:6]]
            continue
        assert shown["data"] == own["data"]
        assert {**shown["layout"], "height": 0} == {**own["layout"], "height": 0}
    assert _bar(plain)["present"] is False and not _presenter_css(plain)


@pytest.mark.parametrize("lang", LANGS)
def test_step_from_the_url(lang):
    at = open_lesson("b2_heads.py", lang, {"present": "1", "step": "3"})
    assert _bar(at)["step"] == 3
    css = _presenter_css(at)[0]
    assert classroom.section_selector(3) in css and '[data-anatomy-slide~="3"]' in css
    assert at.query_params["step"] in ("3", ["3"])


@pytest.mark.parametrize("step,expected", [("abc", 1), ("-4", 1), ("0", 1), ("1e309", 1), ("9999", 99),
                                           ("<b>", 1), ("2.5", 1), ("", 1)])
def test_bad_step_reads_as_a_step(step, expected):
    at = open_lesson("b1_attention.py", "en", {"present": "1", "step": step})
    assert_ok(at)
    assert _bar(at)["step"] == expected


def test_off_drops_presenter_parameters():
    at = open_lesson("b1_attention.py", "zh", {"step": "4", "present": "0"})
    assert _bar(at)["present"] is False
    assert "present" not in at.query_params and "step" not in at.query_params
    assert not _presenter_css(at)


def test_home_has_no_previous_page():
    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import APP, TIMEOUT
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["present"] = "1"
    at.run()
    assert_ok(at)
    bar = _bar(at)
    assert bar["present"] and not bar["has_prev"] and bar["has_next"]


def test_section_selector():
    # The bar numbers every element with its slide (ui/classroom.js); the style sheet shows step n's.
    assert classroom.section_selector(1) == '[data-anatomy-slide~="1"]'
    css = classroom.presenter_css(4)
    assert f":not({classroom.section_selector(4)}, {classroom._KEEP})" in css
    assert '[data-anatomy-split] > [data-testid="stVerticalBlock"] > :not([data-anatomy-slide~="4"])' in css


def test_slide_mark():
    """ui.frame.slide: one element holding the title, escaped; hidden by the page's own style sheet."""
    from streamlit.testing.v1 import AppTest

    def page():
        import streamlit as st

        from ui.frame import LAYOUT_CSS, slide
        st.html(LAYOUT_CSS)
        slide("Q & <b>K</b>")

    at = AppTest.from_function(page).run()
    marks = [el.proto.body for el in at.get("html") if "anatomy-slide" in el.proto.body and "<style>" not in el.proto.body]
    assert marks == ['<div class="anatomy-slide">Q &amp; &lt;b&gt;K&lt;/b&gt;</div>']


def test_presenter_height_is_the_browsers_to_decide():
    """Presenter sizing is decided in one place, ui/chart/present.js (issue 41: one layout engine):
    the server sends the shared figure unchanged and the most height as a number; the cap itself
    is tested in tests/js/present.test.mjs (a 900 px figure drawn at PRESENT_MAX_HEIGHT, a quarter
    larger; a 300 px one kept; plotly's 420 capped)."""
    from ui.frame import PRESENT_MAX_HEIGHT

    assert PRESENT_MAX_HEIGHT == 340
    assert "presenter_figure" not in vars(__import__("ui.figures", fromlist=["x"]))


@pytest.mark.parametrize("lang", LANGS)
def test_every_chart_has_its_export_buttons(lang):
    at = open_lesson("b1_attention.py", lang)
    found = charts(at)
    assert found
    for el in found:
        export = component_data(el)["export"]
        words = export.pop("words")
        # the templates of the chart's description for screen readers (ui/chart/describe.js), in the page's language
        assert export.pop("describe") == {key: i18n.t(lang, f"classroom.describe.{key}") for key in DESCRIBE_KEYS}
        assert export == {"png": i18n.t(lang, "classroom.png"), "svg": i18n.t(lang, "classroom.svg"),
                          "csv": i18n.t(lang, "classroom.csv"), "file": el.proto.id.rsplit("-", 1)[-1],
                          "locale": lang}
        # plotly.js's own words: English as they are; in Chinese, every one of them translated
        if lang == "en":
            assert words is None
        else:
            assert set(words) == set(PLOTLY_WORDS)
            assert words["Zoom"] == i18n.t(lang, "classroom.plotly.zoom")
            assert all(v != k and any("\u4e00" <= ch <= "\u9fff" for ch in v) for k, v in words.items())
    assert "b1.weights" in [component_data(el)["export"]["file"] for el in found]


def _score_lines(at) -> list[str]:
    return [md.value for md in at.markdown if ":material/scoreboard:" in md.value]


@pytest.mark.parametrize("lang", LANGS)
def test_try_this_score(lang):
    t = lambda key, **f: i18n.t(lang, key, **f)   # noqa: E731
    at = open_lesson("b1_attention.py", lang)
    assert not _score_lines(at)
    assert t("classroom.score_none") in [c.value for c in at.caption]
    # b1: try1 -> 1, try2 -> 2, try3 -> 0 are right.
    at.radio(key=f"b1.try1.{lang}").set_value(1).run()
    assert_ok(at)
    (line,) = _score_lines(at)
    assert t("classroom.score", right=1, total=3) in line and t("classroom.score_left", left=2) in line
    at.radio(key=f"b1.try2.{lang}").set_value(0).run()          # wrong
    (line,) = _score_lines(at)
    assert t("classroom.score", right=1, total=3) in line and t("classroom.score_left", left=1) in line
    at.radio(key=f"b1.try2.{lang}").set_value(2).run()          # right now, but the first answer counts
    (line,) = _score_lines(at)
    assert t("classroom.score", right=1, total=3) in line
    at.radio(key=f"b1.try3.{lang}").set_value(0).run()
    (line,) = _score_lines(at)
    assert t("classroom.score", right=2, total=3) in line and t("classroom.score_left", left=0) not in line
    # Another student's session starts from nothing.
    other = open_lesson("b1_attention.py", lang)
    assert not _score_lines(other)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", [lesson.file for lesson in existing_lessons()])
def test_every_lesson_presents(lesson, lang):
    """Presenter mode is the frame's, not the lessons': every lesson runs in it unchanged."""
    at = open_lesson(lesson, lang, {"present": "1", "step": "2"})
    bar = _bar(at)
    assert bar["present"] and bar["step"] == 2 and bar["has_prev"]
    assert len(_presenter_css(at)) == 1


def _repeated_page():
    import streamlit as st

    from ui.frame import repeat_control
    value = st.slider("capacity", 1, 8, 2, key="x.cap", bind="query-params")
    st.markdown(f"value {value}")
    repeat_control(st.slider, "capacity", 1, 8, key="x.cap")


@pytest.mark.parametrize("present", [False, True])
def test_repeated_control(present):
    """ui.frame.repeat_control: in presenter mode a copy of a URL-bound control on another slide;
    moving it moves the control and the address. Nothing in normal mode."""
    from streamlit.testing.v1 import AppTest

    from ui.chart import PRESENTING
    at = AppTest.from_function(_repeated_page)
    at.session_state[PRESENTING] = present
    at.run()
    assert len(at.slider) == (2 if present else 1)
    if not present:
        return
    assert at.slider(key="x.cap.again").value == 2
    at.slider(key="x.cap.again").set_value(6).run()
    assert at.slider(key="x.cap").value == 6 and at.markdown[0].value == "value 6"
    assert at.query_params["x.cap"] in ("6", ["6"])
    at.slider(key="x.cap").set_value(3).run()                 # and the copy follows the control
    assert at.slider(key="x.cap.again").value == 3
