"""A2 in both languages: the lookup equals the model's rows, neighbours and map follow every control;
without the trained model the page says how to rebuild it and falls back to a random table."""
import numpy as np
import pytest
import streamlit as st

import core.models.model
import ui.model
from core.lab.embedding import frequent_ids, nearest
from core.models.model import CourseModelUnavailable, load_course_model
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, tables, trace_array

PAGE = "a2_embeddings.py"
DEFAULT_WORDS = ("king queen man woman prince princess Paris France Rome Italy Tokyo Japan "
                 "cat dog kitten puppy apple banana tangerine")

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


def test_a2_bad_text():
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"]:
        at.text_input(key="a2.text").set_value(text).run()
        assert_ok(at)
        z = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
        assert 1 <= z.shape[0] <= 48


def test_a2_without_the_model(monkeypatch):
    def unavailable(*args, **kwargs):
        raise CourseModelUnavailable("missing for the test")

    monkeypatch.setattr(core.models.model, "load_course_model", unavailable)
    monkeypatch.setattr(ui.model, "load_course_model", unavailable)    # the page reads ui.model's copy
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
    table = next(el for el in tables(a1) if "id" in el.value.columns).value
    assert list(table["id"]) == TOK.encode("一二月", bos=True, eos=True)
    assert list(table["id"])[:2] == [TOK.bos_id, TOK.stoi["一"]]


# --- on SmolLM2 (issue 24 §4) ----------------------------------------------------------------
REAL = {"a2.lm": "smollm2"}


def _visible(tokens):
    """Neighbour labels as the figure writes them: a token's leading space as ␣."""
    return [t.replace(" ", "␣") for t in tokens]


def _reference_neighbours(table, query, exclude, k):
    """Cosine top-k with torch's own cosine_similarity, the query's tokens left out."""
    import torch

    sims = torch.nn.functional.cosine_similarity(table, query[None], dim=-1)
    sims[exclude] = -2
    top = sims.topk(k)
    return top.indices.tolist(), top.values.numpy()


def _pca_reference(x):
    """PCA coordinates by torch.pca_lowrank at full rank (exact), each axis up to its sign."""
    import torch

    q = min(x.shape) - 1
    _, _, v = torch.pca_lowrank(x, q=q, center=True, niter=10)
    return ((x - x.mean(dim=0)) @ v[:, :2]).numpy()


def _same_up_to_sign(a, b, atol=1e-4):
    signs = np.sign((a * b).sum(axis=0))
    return np.allclose(a, b * signs, atol=atol)


def _map_points(at):
    fig = figure_by_key(at, "a2.word_map")
    # each point's word, from its hover ("word: its tokens"): a crowded word is labelled by a number
    words = [h.split(": ")[0] for i in (0, 1) for h in fig["data"][i]["customdata"]]
    xy = np.concatenate([np.stack([trace_array(fig, i, "x"), trace_array(fig, i, "y")], axis=1)
                         for i in (0, 1) if len(fig["data"][i]["text"])])
    return fig, words, xy


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a2_on_smollm2(lang):
    import torch

    from core.lab.embedding import word_list, word_vectors
    from tests.real_util import real

    model, tok = real()
    table = model.embed.weight.detach()
    at = open_lesson(PAGE, lang, REAL)
    ids = tok.encode("君不见，黄河之水天上来")
    z = trace_array(figure_by_key(at, "a2.matrix"), 0, "z")
    assert z.shape == (22, 576)
    assert np.allclose(z, table[ids].numpy(), atol=1e-6)                  # X = E[ids], SmolLM2's E

    labels, sims = _neighbours(at)                                       # " king", k = 10
    ref_ids, ref_sims = _reference_neighbours(table, table[4197], [4197], 10)
    assert labels == _visible(tok.tokens(ref_ids)) and np.allclose(sims, ref_sims, atol=1e-5)
    assert {"␣queen", "␣kings", "␣King"} <= set(labels) and labels[0] == "␣King"

    for k in (3, 20):
        at.slider(key="a2.k").set_value(k).run()
        assert_ok(at)
        labels, sims = _neighbours(at)
        ref_ids, ref_sims = _reference_neighbours(table, table[4197], [4197], k)
        assert labels == _visible(tok.tokens(ref_ids)) and np.allclose(sims, ref_sims, atol=1e-5)

    at.toggle(key="a2.space").set_value(False).run()                     # "king", not " king"
    assert_ok(at)
    labels, sims = _neighbours(at)
    assert tok.encode("king") == [644]
    ref_ids, ref_sims = _reference_neighbours(table, table[644], [644], 20)
    assert labels == _visible(tok.tokens(ref_ids)) and np.allclose(sims, ref_sims, atol=1e-5)
    at.toggle(key="a2.space").set_value(True).run()

    at.text_input(key="a2.word").set_value("tangerine").run()            # three tokens: their mean
    assert_ok(at)
    pieces = tok.encode(" tangerine")
    assert len(pieces) == 3
    labels, sims = _neighbours(at)
    ref_ids, ref_sims = _reference_neighbours(table, table[pieces].mean(dim=0), pieces, 20)
    assert labels == _visible(tok.tokens(ref_ids)) and np.allclose(sims, ref_sims, atol=1e-5)
    assert any("3" in m.value and "anger" in m.value for m in at.markdown)

    # the map of the default word list: the PCA of the words' vectors, tangerine at its mean
    fig, words, xy = _map_points(at)
    default = word_list(DEFAULT_WORDS, 30)[0]   # the page's default list
    assert sorted(words) == sorted(default) and list(fig["data"][1]["text"]) == ["tangerine"]
    order = [default.index(w) for w in words]
    x = word_vectors(table, [tok.encode(" " + w) for w in default])
    assert _same_up_to_sign(xy, _pca_reference(x)[order])
    king, queen, banana = (xy[words.index(w)] for w in ("king", "queen", "banana"))
    assert np.linalg.norm(king - queen) < np.linalg.norm(king - banana)   # royals together

    # the word list at its edges: 3 words (the fewest), 30 (the most), more, too few, empty, markup
    for typed, n in (("cat dog horse", 3), (" ".join(f"w{i}" for i in range(30)), 30),
                     (" ".join(f"w{i}" for i in range(45)), 30), ("cat dog", len(default)), ("", len(default)),
                     ("<b>x</b> $y$ **z** 🙂 北京", 5)):
        at.text_area(key="a2.words").set_value(typed).run()
        assert_ok(at)
        fig, words, xy = _map_points(at)
        assert len(words) == n and np.isfinite(xy).all()
        if n == 30 and "w44" in typed:
            assert at.warning
        if n == len(default):
            assert at.info
    wanted = word_list("<b>x</b> $y$ **z** 🙂 北京", 30)[0]
    x = word_vectors(table, [tok.encode(" " + w) for w in wanted])
    assert _same_up_to_sign(xy, _pca_reference(x)[[wanted.index(w.replace("&lt;", "<").replace("&gt;", ">"))
                                                    for w in words]])
    assert torch.isfinite(x).all()
    questions = [r.label for r in at.radio]
    assert any("49152" in q for q in questions) and not any("2582" in q for q in questions)


@pytest.mark.parametrize("word", ["", "🙂", "<b>", "北京", "x" * 40, "  "])
def test_a2_smollm2_odd_words(word):
    at = open_lesson(PAGE, "zh", REAL)
    at.text_input(key="a2.word").set_value(word).run()
    assert_ok(at)
    labels, sims = _neighbours(at)
    assert len(labels) == 10 and (np.diff(sims) <= 1e-7).all()
    if not word.strip():
        assert at.info


def test_a2_without_the_real_model(monkeypatch):
    """Without SmolLM2's package: the install note, and the course model's lesson as before."""
    import ui.model

    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    for lang in ("en", "zh"):
        at = open_lesson(PAGE, lang, REAL)
        assert any("requirements-model.txt" in i.value for i in at.info)
        assert trace_array(figure_by_key(at, "a2.matrix"), 0, "z").shape[0] == 11
        with pytest.raises(KeyError):
            figure_by_key(at, "a2.word_map")


def _label_boxes(fig) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Every label the word map prints, with its box in the pixels labels were placed in
    (viz.embeddings.word_frame on the figure's fixed ranges, the width from viz.common's text width)."""
    from viz.embeddings import WORD_PLOT, label_box
    (x0, x1), (y0, y1) = fig["layout"]["xaxis"]["range"], fig["layout"]["yaxis"]["range"]
    out = []
    for i, t in enumerate(fig["data"][:2]):
        xs, ys = trace_array(fig, i, "x"), trace_array(fig, i, "y")
        for x, y, text, where in zip(xs, ys, t["text"], t["textposition"], strict=True):
            px = ((x - x0) / (x1 - x0) * WORD_PLOT[0], (y - y0) / (y1 - y0) * WORD_PLOT[1])
            if text:
                out.append((text, label_box(px, text, where)))
    return out


def _no_overprint(fig) -> None:
    from viz.embeddings import _overlap
    boxes = _label_boxes(fig)
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert _overlap(box_a, box_b) == 0, (a, b)


def test_word_map_labels_never_overprint():
    """Issue 38 §5: a crowded cluster (capitals that PCA puts on one spot) gets labels that do not
    meet; words crowded out are numbered and named under the title, none is lost."""
    import numpy as np

    from viz.embeddings import word_map
    rng = np.random.default_rng(0)
    words = ["Paris", "France", "Rome", "Italy", "Tokyo", "Japan", "Berlin", "king", "queen", "cat", "dog"]
    coords = np.concatenate([rng.normal(0, 0.01, (7, 2)), rng.normal(3, 1, (4, 2))])   # seven on one spot
    fig = word_map(coords, words, [1] * 11, title="map")
    _no_overprint(fig)
    printed = {text for text, _ in _label_boxes(fig)}
    title = fig["layout"]["title"]["text"]
    for w in words:
        assert w in printed or f" {w}" in title or f", {w}" in title, w   # on the map, or named under the title
    for text in printed:
        assert not text.isdigit() or f"{text} " in title         # a number on the map is named in the key
    again = word_map(coords, words, [1] * 11, title="map")
    assert again["data"][0]["textposition"] == fig["data"][0]["textposition"]     # deterministic


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a2_word_map_labels_do_not_overlap(lang):
    """The lecturer's case: SmolLM2's default word list (Japan, Paris, Italy, the capitals)."""
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, lang, {"a2.lm": "smollm2"})
    fig = figure_by_key(at, "a2.word_map")
    _no_overprint(fig)
    assert len(_label_boxes(fig)) >= 15                          # most words still named on the map
