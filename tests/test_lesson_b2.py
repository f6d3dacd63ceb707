"""B2 in both languages: H heads of width D/H, the reshapes, equal parameter counts, the explorer."""
import numpy as np
import pytest

import core.models.model
import i18n
from tests.apptest_util import (
    assert_ok,
    chart_keys,
    chart_spec,
    charts,
    component_data,
    figure_by_key,
    open_lesson,
    trace_array,
)
from ui import explorer as explorer_ui
from ui import model as model_ui
from viz.attention import weight_top

PAGE = "b2_heads.py"
REAL_TOKENS_OF_PROMPT = ["bos", "The", " cat", " sat", " on", " the", " mat", " because", " it", " was", " tired",
                         "."]                                   # SmolLM2 on ui.explorer.REAL_PROMPT, start token first


def _heatmaps(fig) -> int:
    """The heads of a head grid (its key labels are one text trace after them)."""
    return sum(t["type"] == "heatmap" for t in fig["data"])
# The explorer starts closed (it costs redraw time); these tests open it through the URL.
OPEN = {"b2.ex_open": "true"}


def _check(at, n, h, d):
    grid = figure_by_key(at, "b2.grid")
    assert _heatmaps(grid) == h                                          # one panel per head (+ key labels)
    for i in range(h):
        w = trace_array(grid, i, "z")
        assert w.shape == (n, n)
        assert np.allclose(w.sum(1), 1, atol=1e-5) and (w >= 0).all()
    assert trace_array(figure_by_key(at, "b2.concat"), 0, "z").shape == (n, d)
    assert grid["data"][0]["zmax"] == pytest.approx(weight_top(np.stack([trace_array(grid, i, "z")
                                                                         for i in range(h)])))   # sharper than 0..1
    assert grid["layout"]["annotations"][0]["text"] in ("head 0", "头 0")                       # heads from 0
    params = figure_by_key(at, "b2.params")                              # traces: head 0..H-1, then one head
    assert params["layout"]["legend"]["orientation"] == "h"              # in rows under the axis: wide bars (issue 38)
    assert len(params["data"]) == h + 1
    heads = sum(trace_array(params, i, "x") for i in range(h))
    one = trace_array(params, h, "x")
    assert heads[0::2].tolist() == [d * d] * 4 and one[1::2].tolist() == [d * d] * 4   # split, not multiplied
    assert all(trace_array(params, i, "x")[0] == d * (d // h) for i in range(h))       # each head: D x d_head
    split = figure_by_key(at, "b2.split")
    w_q, q, stacked = (trace_array(split, i, "z") for i in range(3))
    assert w_q.shape == (d, d) and q.shape == (n, d) and stacked.shape == (h * n, d // h)
    for i in range(h):                                                   # head i = column block i of Q
        assert np.allclose(stacked[i * n:(i + 1) * n], q[:, i * (d // h):(i + 1) * (d // h)], atol=1e-6)
    rows, at_rows = split["layout"]["yaxis3"]["ticktext"], split["layout"]["yaxis3"]["tickvals"]
    names = list(split["layout"]["yaxis2"].get("ticktext") or split["data"][1]["y"])[:n]
    assert rows == [names[j % n] for j in at_rows]                       # rows named by their tokens
    trained = figure_by_key(at, "b2.trained")
    assert _heatmaps(trained) == 4                                       # every head of one trained layer
    for i in range(4):
        assert np.allclose(trace_array(trained, i, "z").sum(1), 1, atol=1e-4)
    table = next(m.value for m in at.markdown if "| X |" in m.value)
    d_head = d // h
    for shape in (f"(1, {n}, {d})", f"(1, {n}, {h}, {d_head})", f"(1, {h}, {n}, {d_head})", f"(1, {h}, {n}, {n})"):
        assert shape in table, shape


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b2_controls_and_figures(lang):
    at = open_lesson(PAGE, lang, OPEN)
    _check(at, 11, 4, 32)                                                # 「君不见，黄河之水天上来」
    d = 32
    for h in (1, 8):
        at.select_slider(key="b2.heads").set_value(h).run()
        assert_ok(at)
        _check(at, 11, h, d)
        for d in (16, 128):
            at.select_slider(key="b2.d_model").set_value(d).run()
            assert_ok(at)
            _check(at, 11, h, d)
    for seed in (0, 9999):
        at.number_input(key="b2.seed").set_value(seed).run()
        assert_ok(at)
    at.text_input(key="b2.text").set_value("之水之").run()
    assert_ok(at)
    grid = figure_by_key(at, "b2.grid")
    w = trace_array(grid, 0, "z")
    assert w.shape == (3, 3) and np.allclose(w[0], w[2])                 # same character, same row, every head
    assert any("merge_heads(split_heads(X))" in c.value and ("yes" in c.value or "：是" in c.value) for c in at.caption)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b2_explorer(lang):
    at = open_lesson(PAGE, lang, OPEN)
    n = len("君不见，黄河之水天上来，奔流到海不复回。") + 1
    assert at.slider(key="b2.ex_layer").min == 0 and at.slider(key="b2.ex_layer").max == 3    # from 0
    for layer in (0, 3):
        for head in (0, 3):
            at.slider(key="b2.ex_layer").set_value(layer).run()
            at.slider(key="b2.ex_head").set_value(head).run()
            assert_ok(at)
            w = trace_array(figure_by_key(at, "b2.ex_fig_head"), 0, "z")
            assert w.shape == (n, n) and np.allclose(w.sum(1), 1, atol=1e-4)
    score_fig = figure_by_key(at, "b2.ex_fig_scores")
    scores = trace_array(score_fig, 0, "z")
    assert scores.shape == (16, 5)                                       # (4 layers × 4 heads) × 5 patterns
    labels = score_fig["data"][0]["y"]
    assert labels[0] == "L0·H0" and labels[-1] == "L3·H3"
    assert score_fig["layout"]["margin"]["l"] >= 10 * len("L3·H3")      # the labels are not cut
    # The trained model has a head well above chance at the previous character and at punctuation.
    text = "\n".join(m.value for m in at.markdown)
    assert ("previous character" in text) if lang == "en" else ("前一个字" in text)
    at.toggle(key="b2.ex_grid").set_value(True).run()
    assert_ok(at)
    grid = figure_by_key(at, "b2.ex_fig_grid")
    assert len(grid["data"]) == 16
    assert all(trace_array(grid, i, "z").shape == (n, n) for i in range(16))
    # drawn without a title (each head has its own): a name for screen readers (issue 43 §3)
    el = next(el for el in charts(at) if el.proto.id.endswith("-b2.ex_fig_grid"))
    assert component_data(el)["export"]["name"] == i18n.t(lang, "explorer.grid_name", n=16)


def test_explorer_on_b1():
    at = open_lesson("b1_attention.py", "zh")
    assert all("b1.ex_fig" not in k for k in chart_keys(at))
    at.toggle(key="b1.ex_open").set_value(True).run()                      # closed on B1 until opened
    assert_ok(at)
    w = trace_array(figure_by_key(at, "b1.ex_fig_head"), 0, "z")
    assert w.shape[0] == w.shape[1] and (np.triu(w, k=1) == 0).all()


def test_explorer_without_the_model(tmp_path, monkeypatch):
    monkeypatch.setattr(core.models.model, "ASSETS", tmp_path)                   # an empty assets folder
    model_ui._load.clear()
    explorer_ui.traced.clear()
    try:
        at = open_lesson(PAGE, "en", OPEN)
        assert any("train_course_model.py" in e.value for e in at.error)  # why, and the rebuild command
        assert all("b2.ex_fig" not in k for k in chart_keys(at))
        trace_array(figure_by_key(at, "b2.grid"), 0, "z")                 # the lesson itself still runs
    finally:
        model_ui._load.clear()
        explorer_ui.traced.clear()


def test_b2_bad_text():
    at = open_lesson(PAGE, "en", OPEN)
    for text in ["", "   ", "<script>alert(1)</script>", "黄河 river 🙂 ﷽", "🙂" * 300]:
        at.text_input(key="b2.text").set_value(text).run()
        assert_ok(at)
        w = trace_array(figure_by_key(at, "b2.grid"), 0, "z")
        assert 1 <= w.shape[0] <= 32 and np.allclose(w.sum(1), 1, atol=1e-5)
        at.text_input(key="b2.ex_text").set_value(text).run()
        assert_ok(at)
        w = trace_array(figure_by_key(at, "b2.ex_fig_head"), 0, "z")
        assert np.allclose(w.sum(1), 1, atol=1e-4)
        if text.startswith("🙂"):
            assert any("<unk>" in i.value for i in at.info)                  # emoji are not in the poems


def test_b2_split_figure_is_x_times_w_q():
    """The middle panel is X·W_q for the page's own X and W_q (seed 0, D = 32, H = 4)."""
    from core.lab import toy
    at = open_lesson(PAGE, "en")
    split = figure_by_key(at, "b2.split")
    _, x = toy.embed_text("君不见，黄河之水天上来", 32, 0)
    w_q = trace_array(split, 0, "z")
    assert np.allclose(trace_array(split, 1, "z"), x.numpy() @ w_q, atol=1e-4)


def test_b2_the_text_decides_the_heads():
    """Issue 22: 「床前明月光，疑是地上霜」 no longer draws the heads of 「君不见，黄河之水天上来」."""
    at = open_lesson(PAGE, "en")
    first = np.stack([trace_array(figure_by_key(at, "b2.grid"), i, "z") for i in range(4)])
    at.text_input(key="b2.text").set_value("床前明月光，疑是地上霜").run()
    assert_ok(at)
    second = np.stack([trace_array(figure_by_key(at, "b2.grid"), i, "z") for i in range(4)])
    assert first.shape == second.shape == (4, 11, 11) and np.abs(first - second).max() > 0.01


# --- SmolLM2-135M: the trained layer and the explorer on the model switch (issue 24 §4) ------
REAL_PROMPT = "The cat sat on the mat because it was tired."


def _core(text: str):
    from core.lab.real_attention import prompt_attention
    from tests.real_util import real
    model, tok = real()
    return prompt_attention(model, tok, text)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b2_trained_layer_on_smollm2(lang):
    ref = _core(REAL_PROMPT).weights.numpy()                              # (30, 9, 12, 12)
    at = open_lesson(PAGE, lang, {"b2.lm": "smollm2"})
    slider = at.slider(key="b2.trained_layer")
    assert (slider.min, slider.max, slider.value) == (0, 29, 16)
    for layer in (0, 29):
        at.slider(key="b2.trained_layer").set_value(layer).run()
        assert_ok(at)
        fig = figure_by_key(at, "b2.trained")
        assert _heatmaps(fig) == 9                                        # 9 query heads
        for h in range(9):
            assert np.allclose(trace_array(fig, h, "z"), ref[layer, h], atol=1e-3)   # float16 cache
        names = [a["text"] for a in fig["layout"]["annotations"]][:9]
        assert names[4] == ("head 4 · KV 1" if lang == "en" else "头 4 · 键值头 1")   # GQA: 4 // 3
    at.slider(key="b2.trained_layer").set_value(16).run()
    assert np.diag(trace_array(figure_by_key(at, "b2.trained"), 0, "z"), -1).mean() > 0.5   # previous-token head


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explorer_on_smollm2(lang):
    from core.lab.head_analysis import head_scores
    got = _core(REAL_PROMPT)
    ref, n = got.weights.numpy(), len(got.tokens)
    scores = {k: v.numpy() for k, v in head_scores(got.weights, got.tokens).items()}
    at = open_lesson(PAGE, lang, {**OPEN, "b2.ex.lm": "smollm2"})
    assert (at.slider(key="b2.ex_layer").min, at.slider(key="b2.ex_layer").max) == (0, 29)
    assert (at.slider(key="b2.ex_head").min, at.slider(key="b2.ex_head").max) == (0, 8)
    assert (at.slider(key="b2.ex_layer").value, at.slider(key="b2.ex_head").value) == (16, 0)
    for layer, head in ((0, 0), (29, 8), (0, 8), (29, 0)):
        at.slider(key="b2.ex_layer").set_value(layer).run()
        at.slider(key="b2.ex_head").set_value(head).run()
        assert_ok(at)
        big = figure_by_key(at, "b2.ex_fig_head")
        w = trace_array(big, 0, "z")
        assert w.shape == (n, n) and np.allclose(w, ref[layer, head], atol=1e-3)
        assert np.allclose(w.sum(1), 1, atol=1e-2) and (np.triu(w, 1) == 0).all()
        assert big["data"][0]["y"][0] == "&lt;|im_start|&gt;"                 # labelled with the tokens
        m = figure_by_key(at, "b2.ex_fig_map")
        assert np.allclose(trace_array(m, 0, "z"), scores["previous"].T, atol=1e-5, equal_nan=True)   # (9, 30)
        box = m["layout"]["shapes"][0]
        assert (box["x0"] + 0.5, box["y0"] + 0.5) == (layer, head)            # the shown head, outlined
    assert trace_array(m, 0, "z").shape == (9, 30)
    at.segmented_control(key="b2.ex_stat").set_value("first").run()
    assert_ok(at)
    sink = trace_array(figure_by_key(at, "b2.ex_fig_map"), 0, "z")
    assert np.allclose(sink, scores["first"].T, atol=1e-5) and np.nanmax(sink) > 0.9   # an attention sink
    text = "\n".join(md.value for md in at.markdown)
    assert "<|im_start|>" in text                                             # the sink is named
    at.toggle(key="b2.ex_grid").set_value(True).run()
    assert_ok(at)
    mosaic = trace_array(figure_by_key(at, "b2.ex_fig_grid"), 0, "z")
    assert mosaic.shape == (9 * 13 - 1, 30 * 13 - 1)
    assert np.allclose(mosaic[13 * 2: 13 * 2 + 12, 13 * 5: 13 * 5 + 12], ref[5, 2], atol=1e-5)  # layer 5, head 2
    sizes = {el.proto.id.rsplit("-", 1)[-1]: len(chart_spec(el)) for el in charts(at)}
    assert max(sizes.values()) <= 300_000, sizes                             # ≤ 300 KB of chart data each


def test_explorer_on_smollm2_long_and_odd_text():
    at = open_lesson(PAGE, "en", {**OPEN, "b2.ex.lm": "smollm2"})
    long = "the" + " the" * 299                                                # 300 tokens + start token
    at.text_input(key="b2.ex_rtext").set_value(long).run()
    assert_ok(at)
    assert any("301 tokens" in w.value and "256" in w.value for w in at.warning)
    big = trace_array(figure_by_key(at, "b2.ex_fig_head"), 0, "z")
    assert big.shape == (128, 128)                                            # 256 × 256 pooled by 2
    at.toggle(key="b2.ex_grid").set_value(True).run()
    sizes = [len(chart_spec(el)) for el in charts(at)]
    assert max(sizes) <= 300_000, sizes
    for text in ["", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽", "\x00\x1b[31m"]:
        at.text_input(key="b2.ex_rtext").set_value(text).run()
        assert_ok(at)
        w = trace_array(figure_by_key(at, "b2.ex_fig_head"), 0, "z")
        assert np.allclose(np.nansum(w, 1)[: min(len(w), 2)], 1, atol=1e-2) or w.shape == (128, 128)


def test_explorer_map_click_picks_the_head(monkeypatch):
    state = {"b2.ex_fig_map": {"select": "21,7"}}
    monkeypatch.setattr(explorer_ui.st, "session_state", state)
    explorer_ui._picked("b2")
    assert (state["b2.ex_layer"], state["b2.ex_head"]) == (21, 7)
    state["b2.ex_fig_map"] = {"select": "<b>,1"}                            # anything else: nothing moves
    explorer_ui._picked("b2")
    assert (state["b2.ex_layer"], state["b2.ex_head"]) == (21, 7)


def test_explorer_and_layer_without_smollm2(monkeypatch):
    """Without the package: the install note in both places, the course model in its place."""
    monkeypatch.setattr(model_ui, "real_model_available", lambda: False)
    at = open_lesson(PAGE, "zh", {**OPEN, "b2.ex.lm": "smollm2", "b2.lm": "smollm2"})
    assert sum("pip install" in i.value for i in at.info) >= 2
    assert trace_array(figure_by_key(at, "b2.ex_fig_scores"), 0, "z").shape == (16, 5)   # the course model's heads
    assert _heatmaps(figure_by_key(at, "b2.trained")) == 4
    assert at.slider(key="b2.ex_layer").max == 3


def _key_labels_hold(fig, n: int, cols: int) -> int:
    """Under every panel but the last row's (the axis names those keys), the key tokens are
    written, every k-th, as the rows name them, each at its column's x. Returns k."""
    heads = _heatmaps(fig)
    rows = -(-heads // cols)
    labelled = sum(1 for i in range(heads) if i // cols < rows - 1)
    i = next(i for i, t in enumerate(fig["data"]) if t["type"] == "scatter" and t.get("mode") == "text")
    xs, names = trace_array(fig, i, "x"), fig["data"][i]["text"]
    assert len(names) % labelled == 0
    per_panel = len(names) // labelled
    k = -(-n // per_panel)
    labels = fig["layout"]["yaxis"]["ticktext"][:n]                        # the row names: the same tokens
    assert names[:per_panel] == [labels[j] for j in range(0, n, k)]
    assert xs[:per_panel].tolist() == [float(j) for j in range(0, n, k)]  # each key under its column
    return k


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b2_grids_name_their_keys_and_params_read(lang):
    """Issue 38 §4: the rows of heads name their key tokens too (thinned where SmolLM2's words are
    wider than a column); the parameter chart has short row names and its legend under the axis."""
    from tests.real_util import real
    real()
    at = open_lesson(PAGE, lang, {"b2.lm": "smollm2"})
    assert _key_labels_hold(figure_by_key(at, "b2.grid"), 11, 2) == 1          # 4 random heads: every character
    k = _key_labels_hold(figure_by_key(at, "b2.trained"), len(REAL_TOKENS_OF_PROMPT), 2)
    assert 1 < k < 12                                                           # words: thinned, not dropped
    params = figure_by_key(at, "b2.params")
    rows = list(params["data"][0]["y"])
    assert rows[:2] == (["W_q · H heads", "W_q · 1 head"] if lang == "en" else ["W_q · H 个头", "W_q · 1 个头"])
    assert params["layout"]["legend"]["orientation"] == "h" and params["layout"]["margin"]["r"] <= 20
    # the text box says how each model reads it, and that SmolLM2 reads an English stand-in
    box = at.text_input(key="b2.text")
    assert "BPE" in box.label
    assert any("The cat sat" in c.value for c in at.caption)
    at.text_input(key="b2.text").set_value("Hello world").run()
    assert not any("The cat sat" in c.value for c in at.caption) and "BPE" in at.text_input(key="b2.text").label
