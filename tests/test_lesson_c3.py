"""C3 in both languages: every control to its minimum and maximum, figure data checked."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, trace_array

PAGE = "c3_rope.py"


def _toeplitz_spread(z: np.ndarray) -> float:
    n = z.shape[0]
    return max(float(np.ptp(np.diagonal(z, k))) for k in range(-(n - 1), n))


def _hands_angle(plane) -> float:
    """The angle from k's hand (trace 3) to q's hand (trace 1), in (-pi, pi]."""
    q = complex(trace_array(plane, 1, "x")[-1], trace_array(plane, 1, "y")[-1])
    k = complex(trace_array(plane, 3, "x")[-1], trace_array(plane, 3, "y")[-1])
    return float(np.angle(q / k))


def _check(at, m: int, d: int, n: int, base: int = 10000):
    plane = figure_by_key(at, "c3.plane")
    xs, ys = trace_array(plane, 0, "x"), trace_array(plane, 0, "y")
    assert len(xs) == m + 1                                      # positions 0 .. m
    radius = np.hypot(xs, ys)
    assert np.allclose(radius, radius[0], atol=1e-5)             # a rotation keeps the length
    hand_x, hand_y = trace_array(plane, 1, "x"), trace_array(plane, 1, "y")
    assert hand_x[-1] == pytest.approx(xs[-1]) and hand_y[-1] == pytest.approx(ys[-1])

    z = trace_array(figure_by_key(at, "c3.matrix"), 0, "z")
    assert z.shape == (n, n)
    assert _toeplitz_spread(z) <= 1e-5                          # q_m·k_n depends on m - n only
    assert np.abs(z).max() <= 1 + 1e-5                           # unit q and k: a cosine

    freq = figure_by_key(at, "c3.freq")
    curves = 2 if base in (10000, 500000) else 3                 # the slider's base is a third curve
    assert len(freq["data"]) == curves and len(figure_by_key(at, "c3.bound")["data"]) == curves
    if curves == 3:
        theta = trace_array(freq, 2, "y")
        assert theta[1] == pytest.approx(base ** (-2 / d), rel=1e-4)
    for i in (0, 1):
        theta = trace_array(freq, i, "y")
        assert len(theta) == d // 2 and theta[0] == pytest.approx(1.0)
        assert np.all(np.diff(theta) < 0)
    assert trace_array(freq, 1, "y")[-1] < trace_array(freq, 0, "y")[-1]   # base 500 000 is slower

    bound = figure_by_key(at, "c3.bound")
    b10k, b500k, dist = trace_array(bound, 0, "y"), trace_array(bound, 1, "y"), trace_array(bound, 0, "x")
    start = (d // 2 + 1) / 2                                     # the bound at distance 0
    assert 0.9 * start <= b10k[0] <= start + 1e-4                # distance 1: little cancels yet
    assert b10k[-1] < 0.75 * b10k[0]
    at_1000 = np.searchsorted(dist, 1000)
    if d >= 32:                                                  # (with 4 pairs the curves wobble)
        assert b500k[at_1000] > b10k[at_1000]                    # a larger base decays later

    diff = float(at.metric[0].value)
    assert diff <= 1e-5                                          # real form == complex form


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    _check(at, m=12, d=64, n=24)
    for m in (0, 256):
        at.slider(key="c3.m").set_value(m).run()
        assert_ok(at)
        _check(at, m=m, d=64, n=24)
    for d in (8, 128):
        at.select_slider(key="c3.d").set_value(d).run()
        assert_ok(at)
        _check(at, m=256, d=d, n=24)
    for pair in (0, 63):                                         # 63 > d/2 - 1 at d = 8: the last pair
        at.slider(key="c3.pair").set_value(pair).run()
        assert_ok(at)
        _check(at, m=256, d=128, n=24)
    for base in (100, 1000000):
        at.select_slider(key="c3.base").set_value(base).run()
        assert_ok(at)
        _check(at, m=256, d=128, n=24, base=base)
    at.select_slider(key="c3.base").set_value(10000).run()
    for n in (4, 64):
        at.slider(key="c3.n").set_value(n).run()
        assert_ok(at)
        _check(at, m=256, d=128, n=n)
    for seed in (0, 9999):
        at.number_input(key="c3.seed").set_value(seed).run()
        assert_ok(at)
        _check(at, m=256, d=128, n=64)


def test_c3_pair_zero_turns_one_radian_per_position():
    at = open_lesson(PAGE, "en", {"c3.m": "1", "c3.pair": "0"})
    plane = figure_by_key(at, "c3.plane")
    xs, ys = trace_array(plane, 0, "x"), trace_array(plane, 0, "y")
    turned = np.angle(complex(xs[1], ys[1]) / complex(xs[0], ys[0]))
    assert turned == pytest.approx(1.0, abs=1e-5)                # theta_0 = 1 for every base


def test_c3_deterministic():
    a = trace_array(figure_by_key(open_lesson(PAGE, "en"), "c3.matrix"), 0, "z")
    b = trace_array(figure_by_key(open_lesson(PAGE, "zh"), "c3.matrix"), 0, "z")
    assert np.array_equal(a, b)


@pytest.mark.parametrize("params", [
    {"c3.m": "-5", "c3.d": "7", "c3.base": "<b>x</b>", "c3.n": "9999", "c3.pair": "abc", "c3.seed": "1e99",
     "c3.key_n": "nan"},
    {"c3.m": "🙂" * 300, "c3.d": "", "c3.base": "10000.5", "lang": "xx"},
])
def test_c3_malformed_url_params(params):
    at = open_lesson(PAGE, "zh", params)
    assert_ok(at)
    assert trace_array(figure_by_key(at, "c3.matrix"), 0, "z").shape[0] >= 4


def test_c3_pair_range_follows_the_width():
    """Issue 16: the pair slider offers the pairs of the chosen width, 0 … d/2 − 1, and a pair
    beyond a narrower width is clamped to the last one, not reset."""
    at = open_lesson(PAGE, "en", {"c3.d": "128"})
    assert at.slider(key="c3.pair").max == 63
    at.slider(key="c3.pair").set_value(63).run()
    at.select_slider(key="c3.d").set_value(8).run()
    assert_ok(at)
    assert (at.slider(key="c3.pair").max, at.slider(key="c3.pair").value) == (3, 3)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_key_hand_angle_depends_on_distance_only(lang):
    """Review C3 #4: a second hand for k at position n; the angle between the hands is the
    same for (m, n) = (12, 4) and (40, 32), and moves by (m - n) theta when n moves."""
    at = open_lesson(PAGE, lang, {"c3.pair": "0"})
    plane = figure_by_key(at, "c3.plane")
    assert len(plane["data"]) == 6
    first = _hands_angle(plane)
    at.slider(key="c3.m").set_value(40).run()
    at.slider(key="c3.key_n").set_value(32).run()
    assert_ok(at)
    assert _hands_angle(figure_by_key(at, "c3.plane")) == pytest.approx(first, abs=1e-4)
    at.slider(key="c3.key_n").set_value(39).run()                # m - n from 8 to 1: 7 rad less (theta_0 = 1)
    moved = _hands_angle(figure_by_key(at, "c3.plane"))
    assert np.remainder(first - 7.0 - moved + np.pi, 2 * np.pi) - np.pi == pytest.approx(0.0, abs=1e-4)
    label = figure_by_key(at, "c3.plane")["data"][5]["text"][0]
    assert label.endswith(f"{moved:.2f}")
    for key in (0, 256):
        at.slider(key="c3.key_n").set_value(key).run()
        assert_ok(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_plot_text_has_no_raw_underscores(lang):
    """Review C3 #5: plot text uses subscripts, not θ_i or q_m; "rad", not "1 radians"."""
    at = open_lesson(PAGE, lang, {"c3.pair": "0"})
    for key in ("c3.plane", "c3.freq", "c3.bound", "c3.matrix"):
        fig = figure_by_key(at, key)
        texts = [fig["layout"]["title"]["text"]] + [fig["layout"].get(ax, {}).get("title", {}).get("text", "")
                                                    for ax in ("xaxis", "yaxis")]
        texts += [t.get("name", "") for t in fig["data"]] + [t.get("hovertemplate", "") for t in fig["data"]]
        assert not any("_" in t for t in texts if "x[" not in t), texts
    assert not any("1 radians" in c.value for c in at.caption)
