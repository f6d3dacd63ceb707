"""B4 in both languages: the trained date model's cross-attention, (N_target, N_source) per head and
averaged, with the best-aligned head; then the untrained two-texts demo, a rectangle per head."""
import inspect

import numpy as np
import pytest

from core.models.dates import read_date
from core.models.encdec import cross_attend, cross_kv, load_date_model
from core.text.dates import STYLE_EXAMPLES
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "b4_cross.py"
DATE = "Monday, 30 November 2026"


@pytest.fixture(scope="module")
def model():
    return load_date_model("cpu")


def _trained(at, text, layer, model, head=None):
    """The large map (head ``head`` from 0, None = their average) and the strip of the average and
    every head: each (11 steps, len(text) + 1 read), rows summing to 1, equal to a run outside the
    app. Rows are named by the character read (<bos> first), the source ends with <eos> (as C1)."""
    m, src_tok, tgt_tok = model
    r = read_date(m, text, src_tok, tgt_tok)
    h, n = m.config.n_heads, len(r.target)
    want = r.trace[f"decoder.layers.{layer}.cross_attn.weights"][0].numpy()       # (H, N, S)
    strip = figure_by_key(at, "b4.strip")
    assert len(strip["data"]) == h + 1
    panels = np.stack([trace_array(strip, i, "z") for i in range(h + 1)])
    assert panels.shape == (h + 1, n, len(text) + 1)                     # (target length, source length + <eos>)
    np.testing.assert_allclose(panels.sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(panels[1:], want, atol=1e-5)
    np.testing.assert_allclose(panels[0], want.mean(0), atol=1e-5)
    titles = [a["text"] for a in strip["layout"]["annotations"]]          # every panel labelled
    assert len(titles) == h + 1 and all(titles) and titles[1].endswith("0") is (at.query_params["lang"] == "en")
    big = figure_by_key(at, "b4.trained")
    z = trace_array(big, 0, "z")
    np.testing.assert_allclose(z, panels[0 if head is None else head + 1], atol=1e-6)
    labels = big["data"][0]["x"]
    assert len(labels) == len(text) + 1 and labels[-1].startswith("&lt;eos&gt;")   # escaped: plotly reads <b> as markup
    assert labels[0] == (text[0] if text[0] != " " else "␣")
    rows = big["data"][0]["y"]
    assert rows[0] == "&lt;bos&gt;" and len(rows) == n
    # On the axes <bos> and <eos> are one coloured glyph each (written out they met their neighbours);
    # the categories (what the hover names) stay the tokens.
    x_ticks, y_ticks = big["layout"]["xaxis"], big["layout"]["yaxis"]
    assert x_ticks["tickvals"] == labels and y_ticks["tickvals"] == rows
    assert "■" in x_ticks["ticktext"][-1] and x_ticks["ticktext"][:-1] == labels[:-1]
    assert "►" in y_ticks["ticktext"][0] and y_ticks["ticktext"][1:] == rows[1:]
    return r


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b4_trained_model(lang, model):
    at = open_lesson(PAGE, lang)
    n_layers, n_heads = model[0].config.n_layers, model[0].config.n_heads
    default = STYLE_EXAMPLES["zh_digits" if lang == "zh" else "en_weekday"]  # the page's language
    assert at.text_input(key="b4.date").value == default
    r = _trained(at, default, 0, model)
    assert r.output == "2026-11-30"
    assert at.success and not at.warning
    assert any("■ (`<eos>`" in c.value or "■（`<eos>`" in c.value for c in at.caption)   # the marks' key
    heads = at.segmented_control(key="b4.head")
    assert heads.options[0] != "0" and heads.value == "avg"              # the average is not head 0
    for layer in (0, n_layers - 1):
        at.slider(key="b4.layer").set_value(layer).run()
        for head in (0, n_heads - 1):
            at.segmented_control(key="b4.head").set_value(str(head)).run()
            assert_ok(at)
            assert at.query_params["b4.head"] == str(head)                  # the URL holds the neutral value
            _trained(at, default, layer, model, head)
        at.segmented_control(key="b4.head").set_value("avg").run()
        _trained(at, default, layer, model)
        scores = trace_array(figure_by_key(at, "b4.align"), 0, "z")
        assert scores.shape == (n_layers, n_heads) and (scores <= 1 + 1e-6).all()
        assert figure_by_key(at, "b4.align")["data"][0]["x"] == [str(j) for j in range(n_heads)]  # heads from 0
        best = np.unravel_index(scores.argmax(), scores.shape)
        line = next(m.value for m in at.markdown if "%" in m.value and "**" in m.value)
        assert f"{best[1]}" in line and f"{best[0]}" in line
    examples = list(STYLE_EXAMPLES.values())
    for i, example in enumerate(examples):                                # every example is one press
        language, k = ("en", i) if i < 3 else ("zh", i - 3)
        at.button(key=f"b4.ex_{language}{k}").click().run()
        assert_ok(at)
        assert at.text_input(key="b4.date").value == example
        assert _trained(at, example, n_layers - 1, model).output == "2026-11-30"
        assert at.success
    at.text_input(key="b4.date").set_value("30 Nov 2026").run()           # typing still works after a press
    assert _trained(at, "30 Nov 2026", n_layers - 1, model).output == "2026-11-30"


def test_b4_url_head_and_bad_head():
    at = open_lesson(PAGE, "en", {"b4.head": "2"})
    assert at.segmented_control(key="b4.head").value == "2"
    at = open_lesson(PAGE, "zh", {"b4.head": "9"})                        # unknown: the average
    assert at.segmented_control(key="b4.head").value == "avg"


def test_b4_best_head_aligns(model):
    """The best head of an English day-month-year date puts most of the year digits' weight on the
    year, at the end of the source: the alignment crosses; a Chinese date's runs straight."""
    at = open_lesson(PAGE, "en", {"b4.date": "30 Nov 2026"})
    scores = trace_array(figure_by_key(at, "b4.align"), 0, "z")
    assert scores.max() > 0.5
    layer, head = np.unravel_index(scores.argmax(), scores.shape)
    at.slider(key="b4.layer").set_value(int(layer)).run()
    at.segmented_control(key="b4.head").set_value(str(head)).run()
    w = trace_array(figure_by_key(at, "b4.trained"), 0, "z")
    assert w[:4, 7:11].sum(1).mean() > 0.5                                # "2026" sits at 7..10


@pytest.mark.parametrize("text, message", [
    ("", "info"), ("   ", "info"), ("🙂" * 300, "warning"), ("<script>alert(1)</script>", "warning"),
    ("黄河 river 🙂 ﷽", "warning"), ("31 February 2026", "warning"), ("hello", "warning"),
    ("30 Nov 2026 and a great deal more text", "warning")])
def test_b4_bad_date_input(text, message, model):
    at = open_lesson(PAGE, "zh")
    at.text_input(key="b4.date").set_value(text).run()
    assert_ok(at)
    assert getattr(at, message), (text, message)
    fig = figure_by_key(at, "b4.trained")                                 # the model's attempt is still shown
    w = trace_array(fig, 0, "z")
    assert 2 <= w.shape[1] <= 32
    np.testing.assert_allclose(w.sum(1), 1, atol=1e-5)
    if "🙂" in text:
        assert any("🙂" in m.value for m in at.warning)                  # the unknown character is named
    if text.startswith("<script>"):
        assert any("\\<" in m.value for m in at.warning)               # named as text, never as markup
        assert "&lt;" in fig["data"][0]["x"]


def test_b4_code_panel_is_lesson_sized():
    """B4 shows cross_kv and cross_attend (tests/test_encdec.py proves them equal to
    MultiHeadAttention.forward), short enough to read without scrolling sideways."""
    for fn in (cross_kv, cross_attend):
        lines = inspect.getsource(fn).splitlines()
        assert len(lines) <= 25 and max(len(line) for line in lines) <= 64


def _check(at, n_target, n_source, h):
    fig = figure_by_key(at, "b4.cross")
    assert len(fig["data"]) == h
    for i in range(h):
        w = trace_array(fig, i, "z")
        assert w.shape == (n_target, n_source)                            # rectangular
        assert np.allclose(w.sum(1), 1, atol=1e-5) and (w > 0).all()      # no mask in cross-attention
    assert len(trace_array(fig, 0, "y")) == n_target and len(trace_array(fig, 0, "x")) == n_source
    axes = fig["layout"]
    assert len(axes["yaxis"]["ticktext"]) == n_target * -(-h // 2)    # target tokens, once per row of panels
    assert len(axes["xaxis"]["ticktext"]) == n_source * min(h, 2)     # source tokens under each column
    table = next(m.value for m in at.markdown if "| Q = X W_q |" in m.value)
    assert f"(1, {h}, {n_target}, {n_source})" in table
    assert f"(1, {n_target}, 32)" in table and f"(1, {n_source}, 32)" in table


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_b4_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    _check(at, 10, 7, 2)              # "The water of the Yellow River comes from the sky" × 「黄河之水天上来」
    for h in (1, 8):
        at.select_slider(key="b4.heads").set_value(h).run()
        assert_ok(at)
        _check(at, 10, 7, h)
    for seed in (0, 9999):
        at.number_input(key="b4.seed").set_value(seed).run()
        assert_ok(at)
    at.text_input(key="b4.source").set_value("君不见，黄河之水天上来").run()
    assert_ok(at)
    _check(at, 10, 11, 8)
    at.text_input(key="b4.target").set_value("River").run()
    assert_ok(at)
    _check(at, 1, 11, 8)                                                  # one query row: a single row of weights


def test_b4_bad_text():
    at = open_lesson(PAGE, "en")
    for field in ["b4.target", "b4.source"]:
        for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽"]:
            at.text_input(key=field).set_value(text).run()
            assert_ok(at)
            fig = figure_by_key(at, "b4.cross")
            w = trace_array(fig, 0, "z")
            assert 1 <= w.shape[0] <= 24 and 1 <= w.shape[1] <= 24
            assert np.allclose(w.sum(1), 1, atol=1e-5)
            if text.startswith("<script>"):
                labels = fig["layout"]["yaxis" if field == "b4.target" else "xaxis"]["ticktext"]
                assert "&lt;" in labels and "script" in labels                   # shown as text, not markup


