"""A3 in both languages: equivariance with the real attention code, the PE table equal to the formula
at every slider extreme, waves, distance-only similarity, embedding + PE."""

import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, set_live, trace_array

PAGE = "a3_positions.py"


def _formula(n, d):
    pos = np.arange(n)[:, None]
    i = np.arange(d // 2)[None, :]
    angle = pos / 10000 ** (2 * i / d)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def _equivariance(at):
    fig = figure_by_key(at, "a3.equivariance")
    return fig, [trace_array(fig, i, "z") for i in range(3)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a3_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    fig, (out, out_rev, diff) = _equivariance(at)
    assert list(fig["data"][0]["y"]) == ["我", "和", "你"] and list(fig["data"][1]["y"]) == ["你", "和", "我"]
    assert np.abs(out[::-1] - out_rev).max() <= 1e-6                   # same outputs, rows permuted alike
    assert np.abs(diff).max() <= 1e-6
    assert at.success

    at.toggle(key="a3.add_pe").set_value(True).run()
    assert_ok(at)
    _, (out, out_rev, diff) = _equivariance(at)
    assert np.abs(diff).max() > 1e-3 and at.warning                     # positions break the symmetry
    at.toggle(key="a3.add_pe").set_value(False).run()

    for seed in (0, 9999):
        at.number_input(key="a3.seed").set_value(seed).run()
        assert_ok(at)
        assert np.abs(_equivariance(at)[1][2]).max() <= 1e-6

    for n in (4, 128):
        for d in (4, 128):
            at.slider(key="a3.positions").set_value(n)
            at.slider(key="a3.d_model").set_value(d).run()
            assert_ok(at)
            z = trace_array(figure_by_key(at, "a3.pe"), 0, "z")
            assert z.shape == (n, d)
            assert np.allclose(z, _formula(n, d), atol=1e-5)             # PE values equal the formula

            for dims in ((0, 0), (0, d - 1)):
                at.slider(key="a3.dims").set_value(dims).run()
                assert_ok(at)
                waves = figure_by_key(at, "a3.waves")
                chosen = sorted(set(dims))
                assert len(waves["data"]) == 2 * len(chosen)
                for c, j in enumerate(chosen):
                    samples = trace_array(waves, 2 * c + 1, "y")
                    assert np.allclose(samples, _formula(n, d)[:, j], atol=1e-5)

            for p in (0, n - 2):
                set_live(at, "a3.p", p)
                assert_ok(at)
                off = figure_by_key(at, "a3.offsets")
                assert len(off["data"]) == 2                              # the same two traces in every frame
                from_0, from_p = trace_array(off, 0, "y"), trace_array(off, 1, "y")
                assert len(from_p) == n - p
                assert np.allclose(from_0[: n - p], from_p, atol=1e-4)    # distance only, not place
                assert from_0[0] == pytest.approx(d / 2, abs=1e-4)

            fig = figure_by_key(at, "a3.input")
            emb, pe, x0 = (trace_array(fig, i, "z") for i in range(3))
            assert emb.shape == (17, d)                              # 床前明月光，疑是地上霜。举头望明月
            assert np.allclose(pe, _formula(17, d), atol=1e-5) and np.allclose(x0, emb + pe, atol=1e-5)
            for i, z in enumerate((emb, pe, x0)):                    # review A3 #1: a colour scale per panel
                assert fig["data"][i]["zmax"] == pytest.approx(float(np.abs(z).max()), rel=1e-5)
            repeat = trace_array(figure_by_key(at, "a3.repeat"), 0, "z")
            assert repeat.shape == (3, d)
            assert np.allclose(repeat[0], x0[2]) and np.allclose(repeat[1], x0[15])   # 明 at 2 and 15
            assert np.allclose(repeat[2], _formula(16, d)[2] - _formula(16, d)[15], atol=1e-5)


def test_a3_bad_text():
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽", "a"]:
        at.text_input(key="a3.text").set_value(text)
        at.text_input(key="a3.line").set_value(text).run()
        assert_ok(at)
        _, (out, out_rev, diff) = _equivariance(at)
        assert 1 <= out.shape[0] <= 16 and np.abs(diff).max() <= 1e-6


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a3_no_repeat_says_so(lang):
    at = open_lesson(PAGE, lang)
    at.text_input(key="a3.line").set_value("君不见，黄河之水天上来").run()
    assert_ok(at)
    assert at.info
    with pytest.raises(KeyError):
        figure_by_key(at, "a3.repeat")
    at.text_input(key="a3.line").set_value("<b>x</b><b>").run()      # a repeated "<": drawn as text
    assert_ok(at)
    assert "<b>" not in figure_by_key(at, "a3.repeat")["layout"]["title"]["text"]
