"""ui/lesson.py (issue 41): a lesson is a list of declared sections. The frame lays each out (title,
prose, slide mark, its slots, the code panel) under a stable address, draws each in its own
fragment with the values it names, and refuses a slot a section did not declare."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from ui.lesson import Slots
from ui.live import _takes_arguments


def _page():
    """Two sections of B1's catalogue (its keys exist in both languages): "scale" with prose and no
    code, "batch" with code and a slot above and below; each records what it was given."""
    import streamlit as st

    from core.lab import toy
    from ui.lesson import Lesson

    lesson = Lesson("b1")
    st.session_state.setdefault("calls", [])

    @lesson.section("scale", above=())
    def scale(s, seed):
        st.session_state.calls.append(("scale", seed))
        st.slider("width", 1, 8, 2, key="t.width")
        st.write("scale figure")

    @lesson.section("batch", code=(toy.batch_attention,), above=("controls", "wide"), below=("notes",),
                    slide="controls")
    def batch(s, dev, seed):
        st.session_state.calls.append(("batch", dev, seed))
        with s.controls:
            st.slider("d_k", 1, 8, 4, key="t.d_k")
        with s.notes:
            st.caption("batch notes")
        try:
            getattr(s, "nothing")  # noqa: B009
        except AttributeError as e:
            st.caption(f"refused: {e}")

    lesson.run(seed=7, dev="cpu", unused="x")
    lesson.quiz([("try1", 1)])


@pytest.fixture
def at():
    at = AppTest.from_function(_page, default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_sections_are_laid_out_in_order_with_their_titles_prose_and_code(at):
    assert [h.value for h in at.subheader][:2] == ["Why divide by √d_k?", "A whole batch at once"]
    assert any("batch_attention" in c.value for c in at.code)           # "The code" of the batch section
    assert "scale figure" in [m.value for m in at.markdown]
    assert at.caption.values.count("batch notes") == 1


def test_each_section_is_in_a_container_with_a_stable_address(at):
    ids = [getattr(block.proto, "id", "") for block in at.main.children.values()]
    sections = [i.rsplit("-section-", 1)[1] for i in ids if "-section-" in i]
    assert sections == ["b1-scale", "b1-batch"], ids      # the browser's .st-key-section-b1-scale


def test_a_draw_function_receives_only_the_values_it_names(at):
    assert ("scale", 7) in at.session_state.calls
    assert ("batch", "cpu", 7) in at.session_state.calls


def test_a_slot_not_declared_is_refused(at):
    refused = [c for c in at.caption.values if c.startswith("refused:")]
    assert refused == ["refused: section 'batch' has no slot 'nothing'"]


def test_moving_a_control_in_a_section_keeps_the_page(at):
    at.slider(key="t.d_k").set_value(8).run()
    assert not at.exception
    assert at.slider(key="t.d_k").value == 8
    assert [h.value for h in at.subheader][:2] == ["Why divide by √d_k?", "A whole batch at once"]


def test_slots_by_name():
    slots = Slots("x", {"figure": 1, "controls": 2})
    assert (slots.figure, slots["controls"]) == (1, 2)
    with pytest.raises(AttributeError, match="section 'x' has no slot 'wide'"):
        getattr(slots, "wide")  # noqa: B009


def _frames_of(seed, language):
    return [seed, language]


def test_live_figure_derives_its_key_only_from_a_named_function_with_arguments():
    """live_figure(draw, args, ...) keys the frames by draw and args (ui.figures.figure_key); a
    function of no arguments or a lambda keeps the older call with a key written by hand."""
    assert _takes_arguments(_frames_of)
    assert not _takes_arguments(lambda: [])

    def no_arguments():
        return []

    assert not _takes_arguments(no_arguments)
