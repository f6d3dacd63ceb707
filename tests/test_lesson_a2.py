"""A2 in both languages: the lookup equals the model's rows, neighbours and map follow every control;
without the trained model the page says how to rebuild it and falls back to a random table."""
import numpy as np
import pytest
import streamlit as st

import core.models.model
from core.lab.embedding import frequent_ids, nearest
from core.models.model import CourseModelUnavailable, load_course_model
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "a2_embeddings.py"

try:
    MODEL, TOK = load_course_model()
except CourseModelUnavailable:
    MODEL = TOK = None
needs_model = pytest.mark.skipif(MODEL is None, reason="course model not built")


def _neighbours(at):
    fig = figure_by_key(at, "a2.neighbours")
    return list(fig["data"][0]["y"]), trace_array(fig, 0, "x")


@needs_model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a2_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    z = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
    table = MODEL.embed.weight.detach()
    ids = TOK.encode("君不见，黄河之水天上来")
    assert z.shape == (11, table.shape[1])
    assert np.allclose(z, table[ids].numpy(), atol=1e-6)            # the heatmap is E[ids]
    assert np.allclose(z[3], table[TOK.stoi["，"]].numpy(), atol=1e-6)

    labels, sims = _neighbours(at)                                  # opens on 春 in E (review A2 #1)
    assert len(labels) == 10 and "春" not in labels and {"花", "风"} <= set(labels)
    ref_ids, ref_sims = nearest(table, TOK.stoi["春"], 10, frequent_ids(len(table), 300))
    assert labels == TOK.tokens(ref_ids.tolist()) and np.allclose(sims, ref_sims.numpy(), atol=1e-5)
    pca = figure_by_key(at, "a2.pca")                               # review A2 #2: the neighbours on the map
    assert list(pca["data"][4]["text"]) == labels and len(trace_array(pca, 4, "x")) == 10
    assert any("10" in c.value and "春" in c.value for c in at.caption)
    shown = [o for o in at.segmented_control(key="a2.near_table").options]
    assert shown == (["E (input)", "output layer"] if lang == "en" else ["E（输入）", "输出层"])
    at.segmented_control(key="a2.near_table").set_value("output").run()
    assert_ok(at)
    assert at.query_params["a2.near_table"] in ("output", ["output"])
    out = MODEL.output.weight.detach()
    at.text_input(key="a2.char").set_value("一").run()
    labels, sims = _neighbours(at)
    assert {"二", "三", "四", "五"} <= set(labels)                   # the output rows group numbers
    ref_ids, ref_sims = nearest(out, TOK.stoi["一"], 10, frequent_ids(len(out), 300))
    assert labels == TOK.tokens(ref_ids.tolist()) and np.allclose(sims, ref_sims.numpy(), atol=1e-5)

    for k in (3, 20):
        at.slider(key="a2.k").set_value(k).run()
        assert_ok(at)
        labels, sims = _neighbours(at)
        assert len(labels) == k and (np.diff(sims) <= 1e-7).all() and (np.abs(sims) <= 1 + 1e-6).all()

    n_chars = len(TOK) - 4
    for top in (100, n_chars):
        at.select_slider(key="a2.top").set_value(top).run()
        assert_ok(at)
        pca = figure_by_key(at, "a2.pca")
        assert len(trace_array(pca, 0, "x")) == top
        assert list(pca["data"][2]["text"]) == ["一"]

    for char in ("山", "水"):
        at.text_input(key="a2.char").set_value(char).run()
        assert_ok(at)
        assert char not in _neighbours(at)[0]

    at.segmented_control(key="a2.table").set_value("output").run()
    assert_ok(at)
    z = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
    assert np.allclose(z, MODEL.output.weight.detach()[ids].numpy(), atol=1e-6)


@needs_model
@pytest.mark.parametrize("char", ["🙂", "月亮", "<", "", "x"])
def test_a2_odd_characters(char):
    at = open_lesson(PAGE, "zh")
    at.text_input(key="a2.char").set_value(char).run()
    assert_ok(at)
    assert len(_neighbours(at)[0]) == 10
    if char in ("🙂", "<", "x", "月亮"):
        assert at.warning
    if not char:
        assert at.info


@pytest.mark.parametrize("text", ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"])
def test_a2_bad_text(text):
    at = open_lesson(PAGE, "en")
    at.text_input(key="a2.text").set_value(text).run()
    assert_ok(at)
    z = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
    assert 1 <= z.shape[0] <= 48
    if not text.strip():
        assert at.info
    if len(text) > 48:
        assert at.warning


def test_a2_malformed_url_params():
    at = open_lesson(PAGE, "zh", {"a2.k": "-5", "a2.top": "<b>", "a2.table": "nope", "a2.seed": "abc",
                                  "a2.char": "%%"})
    assert_ok(at)
    assert trace_array(figure_by_key(at, "a2.matrix"), 0, "z").shape[0] == 11


def test_a2_without_the_model(monkeypatch):
    def unavailable(*args, **kwargs):
        raise CourseModelUnavailable("missing for the test")

    monkeypatch.setattr(core.models.model, "load_course_model", unavailable)
    st.cache_resource.clear()
    try:
        for lang in ("en", "zh"):
            at = open_lesson(PAGE, lang)
            assert any("train_course_model" in w.value for w in at.warning), "must say how to rebuild"
            z = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
            assert z.shape == (11, 64)
            assert np.isfinite(z).all()
            for seed in (0, 9999):
                at.number_input(key="a2.seed").set_value(seed).run()
                assert_ok(at)
            again = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
            assert not np.allclose(again, z)                                  # the seed draws another table
            with pytest.raises(KeyError):
                figure_by_key(at, "a2.neighbours")
    finally:
        st.cache_resource.clear()


@needs_model
def test_a1_and_a2_share_one_vocabulary():
    """Issue 16: A1's char ids are the course model's ids, so an id in A1 is the same row in A2."""
    a1 = open_lesson("a1_tokens.py", "en", {"a1.text": "一二月"})
    table = next(el for el in a1.dataframe if "id" in el.value.columns).value
    assert list(table["id"]) == TOK.encode("一二月", bos=True, eos=True)
    assert list(table["id"])[:2] == [TOK.bos_id, TOK.stoi["一"]]
