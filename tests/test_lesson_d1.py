"""D1 in both languages: Step adds one token, greedy is deterministic, bars are a sorted
sub-distribution, every control at its extremes, bad prompts get a notice."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "d1_generation.py"


def _poem(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("### "))


def _new_text(at) -> str:
    poem = _poem(at)
    return poem.split(":red[**", 1)[1].split("**]", 1)[0] if ":red[**" in poem else ""


def _bars(at):
    fig = figure_by_key(at, "d1.bars")
    return trace_array(fig, 0, "y"), trace_array(fig, 1, "y"), fig


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d1_step_run_reset_and_bars(lang):
    at = open_lesson(PAGE, lang)
    assert at.slider(key="d1.steps").value == 0
    for n in (1, 2, 3):
        at.button(key="d1.step_btn").click().run()
        assert_ok(at)
        assert at.slider(key="d1.steps").value == n
        assert len(_new_text(at)) == n                            # exactly one more token each Step
    assert "天上来" in _poem(at)                                   # greedy recites the poem
    model_p, sample_p, _ = _bars(at)
    assert model_p.sum() <= 1 + 1e-6 and np.all(np.diff(model_p) <= 1e-7)   # a sorted sub-distribution
    assert sample_p.max() == pytest.approx(1.0)                              # greedy: all mass on one token

    at.button(key="d1.run_btn").click().run()
    assert_ok(at)
    assert at.slider(key="d1.steps").value > 3
    at.button(key="d1.reset_btn").click().run()
    assert at.slider(key="d1.steps").value == 0
    assert "天上来" not in _poem(at)


def test_d1_greedy_ignores_the_seed_and_sampling_follows_it():
    at = open_lesson(PAGE, "en", {"d1.steps": "12"})
    greedy = _poem(at)
    at.number_input(key="d1.seed").set_value(42).run()
    assert _poem(at) == greedy
    at.slider(key="d1.temperature").set_value(1.5).run()
    first = _poem(at)
    at.number_input(key="d1.seed").set_value(43).run()
    at.number_input(key="d1.seed").set_value(42).run()
    assert _poem(at) == first                                      # the same seed replays


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d1_every_control_at_its_extremes(lang):
    at = open_lesson(PAGE, lang, {"d1.steps": "5"})
    for key, values in (("d1.temperature", (0.0, 2.0)), ("d1.top_k", (0, 50)), ("d1.top_p", (0.05, 1.0)),
                        ("d1.steps", (0, 48))):
        for value in values:
            at.slider(key=key).set_value(value).run()
            assert_ok(at)
            model_p, sample_p, _ = _bars(at)
            assert model_p.sum() <= 1 + 1e-6 and sample_p.sum() <= 1 + 1e-6
    at.slider(key="d1.temperature").set_value(1.0).run()
    at.slider(key="d1.top_k").set_value(3).run()
    at.slider(key="d1.steps").set_value(4).run()
    model_p, sample_p, _ = _bars(at)
    assert (sample_p > 0).sum() <= 3 + 1                           # top-3 (plus the chosen, if outside)
    for seed in (0, 9999):
        at.number_input(key="d1.seed").set_value(seed).run()
        assert_ok(at)


@pytest.mark.parametrize("prompt,notice", [("", "info"), ("🙂🙂🙂", "warning"), ("hello <b>x</b>", "warning"),
                                           ("黄" * 300, "warning"), ("   ", "info")])
def test_d1_bad_prompts(prompt, notice):
    at = open_lesson(PAGE, "en")
    at.text_input(key="d1.prompt").set_value(prompt).run()
    assert_ok(at)
    assert getattr(at, notice), f"expected a visible {notice} for {prompt[:20]!r}"
    at.button(key="d1.step_btn").click().run()
    assert_ok(at)


def test_d1_malformed_url():
    at = open_lesson(PAGE, "zh", {"d1.steps": "-5", "d1.temperature": "hot", "d1.top_k": "999", "d1.seed": "x"})
    assert at.slider(key="d1.steps").value == 0


def test_d1_sampling_is_visible_on_a_line_the_model_never_read():
    """Issue 16: an opening it never read (a Song line) spreads its choices out; the bars are on
    a log axis by default; T reaches 5 and then flattens what the draw uses."""
    at = open_lesson(PAGE, "en")
    assert at.slider(key="d1.temperature").max == 5.0
    at.pills(key="d1.example").set_value("大江东去，").run()
    assert_ok(at)
    assert at.text_input(key="d1.prompt").value == "大江东去，"
    at.slider(key="d1.temperature").set_value(1.0).run()
    at.slider(key="d1.steps").set_value(1).run()
    fig = figure_by_key(at, "d1.bars")
    assert fig["layout"]["yaxis"]["type"] == "log"
    model = trace_array(fig, 0, "y")
    assert model[0] < 0.5 and model[1] > 0.1                     # genuinely unsure between choices
    at.slider(key="d1.temperature").set_value(5.0).run()
    hot = trace_array(figure_by_key(at, "d1.bars"), 1, "y")
    warm = trace_array(fig, 1, "y")
    assert hot[0] < warm[0] and hot[0] / hot[-1] < warm[0] / warm[-1]    # flatter: the gaps shrink


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d1_bars_name_every_candidate_and_keep_their_legend(lang):
    """Review D1 #1, #2, #4: every candidate labelled (dtick 1, the page's width), four legend
    entries whose colours never change (chosen, kept, cut, the draw), hover with .3g."""
    from viz.generation import CHOSEN, CUT, DRAW, OTHER
    at = open_lesson(PAGE, lang, {"d1.temperature": "1", "d1.top_k": "5", "d1.steps": "0"})
    for steps in (0, 3):
        at.slider(key="d1.steps").set_value(steps).run()
        fig = figure_by_key(at, "d1.bars")
        assert fig["layout"]["xaxis"]["dtick"] == 1 and fig["layout"]["xaxis"]["type"] == "category"
        assert len(fig["data"][0]["x"]) >= 20
        legend = [t for t in fig["data"] if t.get("showlegend", True)]
        assert [t["marker"]["color"] for t in legend] == [CHOSEN, OTHER, CUT, DRAW]
        assert all(t["y"] == [None] for t in legend)                      # entries only, no data
        assert not fig["data"][0]["showlegend"] and not fig["data"][1]["showlegend"]
        assert ".3g" in fig["data"][0]["hovertemplate"] and ".3f" not in fig["data"][0]["hovertemplate"]
        colours = fig["data"][0]["marker"]["color"]
        assert CUT in colours and (CHOSEN in colours) == (steps > 0)    # top-5 cuts the rest of the 20
    # Positions count from 0: the prompt 君不见，黄河之水 holds positions 0-7, the 3rd new token is at 10.
    assert "10" in fig["layout"]["title"]["text"]


def test_d1_empty_prompt_has_one_notice_that_says_what_happens():
    """Review D1 #3: one notice, <bos>, not the generic "uses its example text"."""
    at = open_lesson(PAGE, "en")
    at.text_input(key="d1.prompt").set_value("").run()
    assert_ok(at)
    assert [i.value for i in at.info] and all("<bos>" in i.value for i in at.info)
    assert not any("example text" in i.value for i in at.info)
    at.button(key="d1.step_btn").click().run()
    assert "《" in _new_text(at)                                  # after <bos> the model writes a title


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d1_bos_switch_feeds_bos_first(lang):
    """A1 #3: a typed line is fed without <bos> (the caption says why); the switch puts it in front."""
    at = open_lesson(PAGE, lang, {"d1.steps": "1"})
    assert "bos\\> → " not in _ids_caption(at)                    # tokens are escaped for markdown: \<bos\>
    before = trace_array(figure_by_key(at, "d1.bars"), 0, "y")
    at.toggle(key="d1.bos").set_value(True).run()
    assert_ok(at)
    assert "\\<bos\\> → 1 · 君 → 32" in _ids_caption(at)
    after = trace_array(figure_by_key(at, "d1.bars"), 0, "y")
    assert not np.allclose(before, after)                         # the model reads <bos> differently
    assert "天上来"[0] in _poem(at)


def _ids_caption(at) -> str:
    return next(c.value for c in at.caption if "→" in c.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d1_temperature_strip(lang):
    """The same step at T = 0.5, 1, 2: what sampling_probs gives, flatter as T grows."""
    import torch

    from core.models.generate import sampling_probs
    at = open_lesson(PAGE, lang, {"d1.prompt": "大江东去，", "d1.steps": "1"})
    strip = figure_by_key(at, "d1.strip")
    assert len(strip["data"]) == 3
    cold, warm, hot = (trace_array(strip, i, "y") for i in range(3))
    assert cold[0] > warm[0] > hot[0] and cold[-1] < warm[-1] < hot[-1]
    bars = figure_by_key(at, "d1.bars")
    model = trace_array(bars, 0, "y")[:10]
    assert list(strip["data"][0]["x"]) == list(bars["data"][0]["x"][:10])
    # At T = 1 with no cut the draw uses the model's own probabilities.
    assert warm == pytest.approx(model, rel=1e-4)
    # T = 2 is softmax(log p / 2): p^(1/2) renormalised over the whole vocabulary (here: the ratio of two).
    assert hot[1] / hot[0] == pytest.approx((model[1] / model[0]) ** 0.5, rel=1e-3)
    assert sampling_probs(torch.tensor([2.0, 1.0, 0.0]), 2.0)[0] < sampling_probs(torch.tensor([2.0, 1.0, 0.0]), 0.5)[0]
    for key, value in (("d1.temperature", 2.0), ("d1.top_k", 3)):
        at.slider(key=key).set_value(value).run()
        assert_ok(at)
    cut = trace_array(figure_by_key(at, "d1.strip"), 0, "y")
    assert (cut[3:] == 0).all() and cut[:3].sum() == pytest.approx(1, abs=1e-5)    # top-3 in every panel
