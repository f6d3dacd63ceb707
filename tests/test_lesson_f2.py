"""F2 in both languages: every control at its minimum and maximum, figure data checked against
an independent run of the same model (SmolLM2 by default, the course model by the switch and
beside it); bad input, a malformed address, and the page without either model."""
import numpy as np
import pytest
import torch

import ui.model
from core.lab.logit_lens import TOKEN_LIMIT
from core.models.model import CourseModelUnavailable, load_course_model
from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array
from viz.lens import cell_word

PAGE = "f2_logit_lens.py"
TEXT = "The capital of France is"
IOI = "When Mary and John went to the store, John gave a drink to"
COURSE_TEXT = "床前明月光，疑是地上霜"
COURSE = {"f2.lm": "course"}


def _reference(model, tok, text):
    """The model's own next-token distribution at every position, outside the app."""
    ids = tok.encode(text)[:TOKEN_LIMIT]
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0]                                # (N, V)
    return ids, logits


@pytest.fixture(scope="module")
def smol():
    from tests.real_util import real
    return real()


def _grid(at, key="f2.grid"):
    fig = figure_by_key(at, key)
    return trace_array(fig, 0, "z"), fig["data"][0]["text"], fig


def _check_top_row(at, model, tok, text, key="f2.grid"):
    """The lens's last row is the model's prediction: its top token and that token's probability."""
    z, words, _ = _grid(at, key)
    ids, logits = _reference(model, tok, text)
    probs = logits.softmax(-1)
    assert z.shape == (model.config.n_layers + 1, len(ids))
    np.testing.assert_allclose(z[-1], probs.max(-1).values.numpy(), rtol=1e-4, atol=1e-5)
    top = logits.argmax(-1).tolist()
    shown = [tok.decode([i]) if hasattr(tok, "token_bytes") else tok.tokens([i])[0] for i in top]
    assert words[-1] == [cell_word(t, len(ids)) for t in shown]
    assert np.all((z >= 0) & (z <= 1))
    return ids, logits


def _check_cells(at, logits, n_layers):
    """The cell view at 0 blocks and at all of them: ten guesses best first, each the grid's
    probability there; after every block, the model's own top ten."""
    slider = at.slider(key="f2.row")
    assert (slider.min, slider.max) == (0, n_layers)
    z, _, _ = _grid(at)
    pos = at.slider(key="f2.pos").value
    for row in (0, n_layers):
        at.slider(key="f2.row").set_value(row).run()
        assert_ok(at)
        probs = trace_array(figure_by_key(at, "f2.cell"), 0, "x")
        assert len(probs) == 10 and np.all(np.diff(probs) <= 1e-7)
        assert probs[0] == pytest.approx(float(z[row, pos]), rel=1e-5)
    np.testing.assert_allclose(probs, logits[pos].softmax(-1).topk(10).values.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f2_smollm2_grid_curve_and_attribution(lang, smol):
    model, tok = smol
    at = open_lesson(PAGE, lang)
    assert at.segmented_control(key="f2.lm").value == "smollm2"
    ids, logits = _check_top_row(at, model, tok, TEXT)
    n = len(ids)
    probs = logits.softmax(-1)
    slider = at.slider(key="f2.pos")
    assert (slider.min, slider.max, slider.value) == (0, n - 1, n - 1)
    for pos in (0, n - 1):
        at.slider(key="f2.pos").set_value(pos).run()
        assert_ok(at)
        fig = figure_by_key(at, "f2.answer")
        answer_p, top_p = trace_array(fig, 0, "y"), trace_array(fig, 1, "y")
        assert len(answer_p) == len(top_p) == 31
        assert answer_p[-1] == pytest.approx(float(probs[pos].max()), rel=1e-4)
        assert np.all(answer_p <= top_p + 1e-6)                               # never above the top guess
        top_token = tok.decode([int(logits[pos].argmax())]).replace(" ", "\u00a0")
        assert top_token in fig["layout"]["title"]["text"]
        options = at.selectbox(key="f2.target").options
        assert len(options) == 10
        for target in ("logit", "9"):
            at.selectbox(key="f2.target").set_value(target).run()
            assert_ok(at)
            bars = figure_by_key(at, "f2.dla")
            embed, attn, ffn = (trace_array(bars, i, "y") for i in range(3))
            assert len(attn) == len(ffn) == 30 and len(embed) == 1
            best = logits[pos].topk(10)
            want = float(best.values[0]) - (0.0 if target == "logit" else float(best.values[9]))
            assert float(embed.sum() + attn.sum() + ffn.sum()) == pytest.approx(want, abs=5e-4)
            heads = trace_array(figure_by_key(at, "f2.heads"), 0, "z")
            assert heads.shape == (9, 30)                                       # heads down, blocks across
            np.testing.assert_allclose(heads.sum(0), attn, rtol=1e-4, atol=1e-4)   # the 9 heads add up to a block
        at.selectbox(key="f2.target").set_value("logit").run()
    at.slider(key="f2.pos").set_value(n - 1).run()
    assert "Paris" in figure_by_key(at, "f2.answer")["layout"]["title"]["text"]
    _check_cells(at, logits, 30)
    if lang == "en":
        assert any("17.371" in c.value and "add up to" in c.value for c in at.caption)
    # The course model beside it, on its own line of verse.
    cm, ct = load_course_model("cpu")
    _check_top_row(at, cm, ct, COURSE_TEXT, key="f2.course")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f2_mary_minus_john(lang, smol):
    """The issue's example: " Mary" is the answer, " John" one of the ten to compare it with; the
    lead's terms add up to the logit difference, and the largest head sits in a late block."""
    model, tok = smol
    at = open_lesson(PAGE, lang, {"f2.prompt": IOI})
    ids, logits = _check_top_row(at, model, tok, IOI)
    best = logits[-1].topk(10)
    names = [tok.decode([i]) for i in best.indices.tolist()]
    assert names[0] == " Mary"
    john = names.index(" John")
    at.selectbox(key="f2.target").set_value(str(john)).run()
    assert_ok(at)
    bars = figure_by_key(at, "f2.dla")
    total = sum(float(trace_array(bars, i, "y").sum()) for i in range(3))
    assert total == pytest.approx(float(best.values[0] - best.values[john]), abs=5e-4)
    assert "John" in bars["layout"]["title"]["text"]
    heads = trace_array(figure_by_key(at, "f2.heads"), 0, "z")                  # (H, L)
    head, layer = np.unravel_index(np.argmax(heads), heads.shape)
    assert layer >= 20 and heads.max() > 1.0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f2_on_the_course_model(lang):
    """The switch on the course model: 5 rows (embedding + 4 blocks), 4 × 4 heads, its own text."""
    model, tok = load_course_model("cpu")
    at = open_lesson(PAGE, lang, COURSE)
    ids, logits = _check_top_row(at, model, tok, COURSE_TEXT)
    assert at.slider(key="f2.pos").max == len(ids) - 1
    for pos in (0, len(ids) - 1):
        at.slider(key="f2.pos").set_value(pos).run()
        for target in ("logit", "9"):
            at.selectbox(key="f2.target").set_value(target).run()
            assert_ok(at)
            bars = figure_by_key(at, "f2.dla")
            attn = trace_array(bars, 1, "y")
            assert len(attn) == 4
            heads = trace_array(figure_by_key(at, "f2.heads"), 0, "z")
            assert heads.shape == (4, 4)
            np.testing.assert_allclose(heads.sum(0), attn, rtol=1e-4, atol=1e-4)
            best = logits[pos].topk(10).values
            want = float(best[0] - (0 if target == "logit" else best[9]))
            total = sum(float(trace_array(bars, i, "y").sum()) for i in range(3))
            assert total == pytest.approx(want, abs=5e-4)
    _check_cells(at, logits, 4)
    with pytest.raises(KeyError):
        figure_by_key(at, "f2.course")                                         # no contrast with itself


def test_f2_bad_text(smol):
    model, tok = smol
    at = open_lesson(PAGE, "en", {"f2.prompt": "🙂" * 300})           # the first through the link
    for i, text in enumerate(["🙂" * 300, "", "a", "<script>alert(1)</script>**x** $y$", "黄河 river 🙂 ﷽ <|im_end|>",
                              "word " * 200]):
        if i:
            at.text_input(key="f2.prompt").set_value(text).run()
        assert_ok(at)
        z, _, _ = _grid(at)
        assert z.shape[0] == 31 and 1 <= z.shape[1] <= TOKEN_LIMIT
        if not text:
            assert z.shape[1] == 5                                             # the default text instead
        n_ids = len(tok.encode(text))
        if n_ids > TOKEN_LIMIT:
            assert any(str(TOKEN_LIMIT) in w.value for w in at.warning)
            assert z.shape[1] == TOKEN_LIMIT
        if text and n_ids <= TOKEN_LIMIT:
            assert z.shape[1] == n_ids
        if z.shape[1] == 1:
            assert not [s for s in at.slider if s.key == "f2.pos"]                 # one position: a caption
        figure_by_key(at, "f2.dla")
        figure_by_key(at, "f2.heads")


def test_f2_course_model_bad_text():
    at = open_lesson(PAGE, "zh", COURSE)
    for text in ["", "君", "🙂" * 30, "<b>x</b>", "黄河 river"]:
        at.text_input(key="f2.ctext").set_value(text).run()
        assert_ok(at)
        z, _, _ = _grid(at)
        assert z.shape[0] == 5 and 1 <= z.shape[1] <= TOKEN_LIMIT


def test_f2_url_params_are_applied(smol):
    at = open_lesson(PAGE, "en", {"f2.prompt": IOI, "f2.pos": "3", "f2.target": "2"})
    assert at.slider(key="f2.pos").value == 3 and at.selectbox(key="f2.target").value == "2"
    title = figure_by_key(at, "f2.dla")["layout"]["title"]["text"]
    assert "−" in title and "after “\u00a0John”" in title                    # position 3: " John"


def test_f2_without_the_real_model(monkeypatch):
    """Without the package: the install note, and the whole lesson on the course model."""
    from core.models import gguf_llama
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "zh")
    assert any(gguf_llama.INSTALL in i.value for i in at.info)
    z, _, _ = _grid(at)
    assert z.shape == (5, 11)
    assert trace_array(figure_by_key(at, "f2.heads"), 0, "z").shape == (4, 4)


def test_f2_without_the_course_model(monkeypatch, smol):
    """The course model missing: SmolLM2's sections run, the contrast says why it is absent."""
    monkeypatch.setattr(ui.model, "_load", lambda device: CourseModelUnavailable("assets missing (test)"))
    at = open_lesson(PAGE, "en")
    assert at.error and "assets missing (test)" in at.error[0].value
    assert _grid(at)[0].shape == (31, 5)
    with pytest.raises(KeyError):
        figure_by_key(at, "f2.course")


# --- the page's helpers (ui/f2_lens.py, viz/lens.py) ---------------------------------------
def test_f2_helpers():
    from ui.f2_lens import attribution, bar_labels, fig_word, top_heads, visible
    from viz.lens import fitted_tokens
    assert visible(" Paris") == " Paris" and visible(" ") == "␣" and visible("\n") == "↵"
    assert fig_word("<b>") == "&lt;b&gt;" and fig_word(" Paris") == "\u00a0Paris"
    assert bar_labels([" ", "␣", "a"]) == ["␣", "␣\u200b", "a"]
    assert cell_word(" capital", 24) == " ca›" and cell_word("  ", 5) == "␣␣" and cell_word("<b>", 5) == "&lt;b&gt;"
    assert top_heads(np.array([[1.0, -2.0], [3.0, 0.0]]), 1) == ([(1, 0, 3.0)], [(0, 1, -2.0)])
    assert fitted_tokens(["上", "\\xe6\\x9d"] * 12, 10) == ["上", "\ufffd"] * 12     # too narrow: pieces as �
    assert fitted_tokens(["上", "\\xe6\\x9d"], 10) == ["上", "\\xe6\\x9d"]            # they fit: kept
    # attribution: candidate c's difference is the difference of the rows; the value follows.
    data = {"terms": np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2),
            "heads": np.arange(2 * 1 * 2 * 2, dtype=float).reshape(2, 1, 2, 2),
            "cand_logits": np.array([[5.0, 1.0], [7.0, 2.0]])}
    terms, heads, value = attribution(data, 1, "logit")
    assert terms.tolist() == [1.0, 3.0, 5.0] and heads.tolist() == [[1.0, 3.0]] and value == 7.0
    terms, heads, value = attribution(data, 1, "1")
    assert terms.tolist() == [-6.0, -6.0, -6.0] and heads.tolist() == [[-4.0, -4.0]] and value == 5.0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_f2_captions_say_what_the_grid_shows(lang, smol):
    """Issue 38: the answer settles "after block 29" (the row's block, no quotes), computed from the
    lens's ranks; the grid caption names the cut sign and the missing start token; no cell label
    is cut with "…" (it looked like the space sign "␣"); the third question quotes no number."""
    from core.lab.logit_lens import logit_lens, settles_at
    from viz.lens import CUT

    model, tok = smol
    r = logit_lens(model, tok, TEXT)
    settle = settles_at(r.grid.answer_ranks[:, -1].tolist())
    assert settle > 1
    at = open_lesson(PAGE, lang)
    captions = [c.value for c in at.caption]
    want = f"after block {settle - 1}" if lang == "en" else f"在第 {settle - 1} 个模块之后"
    answer = next(c for c in captions if want in c)
    assert "“" + str(settle - 1) not in answer and "「" + str(settle - 1) not in answer
    grid = next(c for c in captions if "␣" in c and CUT in c)
    assert ("start token" in grid) if lang == "en" else ("起始词元" in grid)
    assert not any("…" in cell for row in _grid(at)[1] for cell in row)
    assert cell_word(" capital", 5).endswith(CUT) and CUT not in ("…", "␣")
    question = next(r.label for r in at.radio if r.key.startswith("f2.try3"))
    assert not any(ch.isdigit() for ch in question), question
