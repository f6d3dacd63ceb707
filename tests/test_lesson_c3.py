"""C3 in both languages: every control to its minimum and maximum, figure data checked."""
import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, set_live, trace_array

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
        set_live(at, "c3.m", m)
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
    at = open_lesson(PAGE, "en", {"c3.m": "2", "c3.pair": "0"})   # the live grid: every other m
    plane = figure_by_key(at, "c3.plane")
    xs, ys = trace_array(plane, 0, "x"), trace_array(plane, 0, "y")
    turned = np.angle(complex(xs[1], ys[1]) / complex(xs[0], ys[0]))
    assert turned == pytest.approx(1.0, abs=1e-5)                # theta_0 = 1 for every base


def test_c3_deterministic():
    a = trace_array(figure_by_key(open_lesson(PAGE, "en"), "c3.matrix"), 0, "z")
    b = trace_array(figure_by_key(open_lesson(PAGE, "zh"), "c3.matrix"), 0, "z")
    assert np.array_equal(a, b)


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
    set_live(at, "c3.m", 40)
    set_live(at, "c3.key_n", 32)
    assert_ok(at)
    assert _hands_angle(figure_by_key(at, "c3.plane")) == pytest.approx(first, abs=1e-4)
    set_live(at, "c3.key_n", 39)               # m - n from 8 to 1: 7 rad less (theta_0 = 1)
    moved = _hands_angle(figure_by_key(at, "c3.plane"))
    assert np.remainder(first - 7.0 - moved + np.pi, 2 * np.pi) - np.pi == pytest.approx(0.0, abs=1e-4)
    label = figure_by_key(at, "c3.plane")["data"][5]["text"][0]
    assert label.endswith(f"{moved:.2f}")
    for key in (0, 256):
        set_live(at, "c3.key_n", key)
        assert_ok(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_distance_figure_follows_the_key(lang):
    """Issue 25: the key's live slider draws the score against m - n; the point at the key's n is
    the core's single-value score (pair_angle's share, the whole q.k), and the caption says it."""
    import torch

    from core.lab.rope_analysis import fixed_query_key, pair_angle
    from core.parts.rope import apply_rope
    from tests.apptest_util import live_of
    at = open_lesson(PAGE, lang, {"c3.pair": "2", "c3.key_n": "30", "c3.m": "40"})
    assert_ok(at)
    live = live_of(at, "c3.dist")
    assert live["values"] == list(range(257)) and live["index"] == 30
    fig = figure_by_key(at, "c3.dist")
    assert len(fig["data"]) == 4
    assert trace_array(fig, 0, "x")[0] == 40 and trace_array(fig, 0, "x")[-1] == 40 - 256
    q, k = fixed_query_key(64, 0)
    single = pair_angle(q, k, 40, 30, 2, 10000.0)
    whole = float(apply_rope(q[None], torch.tensor([40]), 1e4)[0] @ apply_rope(k[None], torch.tensor([30]), 1e4)[0])
    assert trace_array(fig, 2, "x")[0] == 10
    assert trace_array(fig, 2, "y")[0] == pytest.approx(whole, abs=1e-5)
    assert trace_array(fig, 3, "y")[0] == pytest.approx(float(single["score"]), abs=1e-5)
    assert any(f"{whole:.3f}" in c.value and "m − n = 10" in c.value for c in at.caption)
    set_live(at, "c3.key_n", 41)                                 # the key after the query: m - n = -1
    assert_ok(at)
    assert trace_array(figure_by_key(at, "c3.dist"), 2, "x")[0] == -1
    assert st_query(at)["c3.key_n"] == "41"


def st_query(at) -> dict:
    return {k: at.query_params[k][-1] if isinstance(at.query_params[k], list) else at.query_params[k]
            for k in at.query_params}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_plot_text_has_no_raw_underscores(lang):
    """Review C3 #5: plot text uses subscripts, not θ_i or q_m; "rad", not "1 radians"."""
    at = open_lesson(PAGE, lang, {"c3.pair": "0"})
    for key in ("c3.plane", "c3.dist", "c3.freq", "c3.bound", "c3.matrix"):
        fig = figure_by_key(at, key)
        texts = [fig["layout"]["title"]["text"]] + [fig["layout"].get(ax, {}).get("title", {}).get("text", "")
                                                    for ax in ("xaxis", "yaxis")]
        texts += [t.get("name", "") for t in fig["data"]] + [t.get("hovertemplate", "") for t in fig["data"]]
        assert not any("_" in t for t in texts if "x[" not in t), texts
    assert not any("1 radians" in c.value for c in at.caption)


# --- a trained model's own q and k (issue 24 §4) --------------------------------------------
REAL_TEXT = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog again."


@pytest.fixture(scope="module")
def real_reference():
    """SmolLM2 on the section's default text, fully traced, outside the app."""
    import torch

    from core.parts.trace import Trace
    from tests.real_util import real
    model, tok = real()
    trace = Trace()
    with torch.no_grad():
        model(torch.tensor([tok.encode(REAL_TEXT)]), trace=trace)
    return model, tok, trace


@pytest.mark.parametrize("layer", [0, 17, 29])
def test_c3_real_rerotation_equals_the_trace(layer, real_reference):
    """q and k recomputed before RoPE, turned with base 100,000, are the trace's q and k; with
    10,000 they are not. The score at the true distance is the trace's attn.scores."""
    import torch

    from core.lab.rope_analysis import real_query_key, score_by_distance
    from core.parts.rope import apply_rope
    model, tok, ref = real_reference
    out = real_query_key(model, tok, REAL_TEXT, layer, 256)
    n = len(out["tokens"])
    positions = torch.arange(n)
    q, k = ref[f"blocks.{layer}.attn.q"][0], ref[f"blocks.{layer}.attn.k"][0]
    assert out["q_pre"].shape == (9, n, 64) and out["k_pre"].shape == (3, n, 64)
    torch.testing.assert_close(apply_rope(out["q_pre"], positions, 100000.0), q, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(apply_rope(out["k_pre"], positions, 100000.0), k, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(apply_rope(q, -positions, 100000.0), out["q_pre"], rtol=1e-4, atol=1e-4)  # undone
    assert (apply_rope(out["q_pre"], positions, 10000.0) - q).abs().max() > 0.1
    scores = ref[f"blocks.{layer}.attn.scores"][0]                      # (H, N, N), q k^T / sqrt(d)
    for head, i, j in ((0, n - 1, 0), (8, n - 1, 3), (4, 10, 10)):
        s = score_by_distance(out["q_pre"][head, i], out["k_pre"][head // 3, j], torch.tensor([i - j]), 100000.0)
        assert float(s[0]) == pytest.approx(float(scores[head, i, j]), abs=1e-4)


def _real_figures(at):
    fig = figure_by_key(at, "c3.real")
    return fig, {t["name"]: t for t in fig["data"]}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_smollm2_section(lang, real_reference):
    import torch

    from core.parts.rope import apply_rope
    model, tok, ref = real_reference
    n = len(tok.encode(REAL_TEXT))
    at = open_lesson(PAGE, lang, {"c3.lm": "smollm2"})
    assert (at.slider(key="c3.layer").max, at.slider(key="c3.head").max) == (29, 8)
    assert (at.slider(key="c3.query").max, at.slider(key="c3.query").value) == (n - 1, n - 1)
    names = ("base 10,000 (LLaMA-2)", "base 100,000 (SmolLM2)") if lang == "en" else \
            ("底数 10,000（LLaMA-2）", "底数 100,000（SmolLM2）")
    for layer in (0, 29):
        at.slider(key="c3.layer").set_value(layer).run()
        for head in (0, 8):
            at.slider(key="c3.head").set_value(head).run()
            for query, key in ((n - 1, 0), (0, 0), (n - 1, n - 1)):
                at.slider(key="c3.query").set_value(query).run()
                if query > 0:
                    assert at.slider(key="c3.rkey").max == query
                    at.slider(key="c3.rkey").set_value(key).run()
                assert_ok(at)
                fig = figure_by_key(at, "c3.real")
                x, slow, fast = (trace_array(fig, 0, "x"), trace_array(fig, 1, "y"), trace_array(fig, 0, "y"))
                assert [t["name"] for t in fig["data"][:2]] == list(names)
                assert len(x) == 8191 and x[0] == 1 and x[-1] == 8191
                r = query - key
                traced = float(ref[f"blocks.{layer}.attn.scores"][0, head, query, key])
                # LLaMA-2's base on the same vectors: the trace's q and k turned back (base 100,000),
                # then forward with 10,000, the key at n, the query at n + 1 000.
                q0 = apply_rope(ref[f"blocks.{layer}.attn.q"][0, head, query], torch.tensor([-query]), 1e5)
                k0 = apply_rope(ref[f"blocks.{layer}.attn.k"][0, head // 3, key], torch.tensor([-key]), 1e5)
                other = apply_rope(q0, torch.tensor([1000 + key]), 1e4) @ apply_rope(k0, torch.tensor([key]), 1e4).T
                assert fast[999] == pytest.approx(float(other) / 8, abs=1e-3)
                if r >= 1:                                   # the model's own score sits on its own base's curve
                    assert len(fig["data"]) == 3
                    assert trace_array(fig, 2, "y")[0] == pytest.approx(traced, abs=1e-4)
                    assert slow[r - 1] == pytest.approx(traced, abs=1e-4)
                else:
                    assert len(fig["data"]) == 2
                caption = next(c.value for c in at.caption if f"r = {r}" in c.value)
                assert f"{traced:.4f}" in caption
    wave = figure_by_key(at, "c3.wave")
    for i, base in enumerate((10000, 100000)):
        w = trace_array(wave, i, "y")
        assert len(w) == 32
        np.testing.assert_allclose(w, 2 * np.pi * base ** (2 * np.arange(32) / 64), rtol=1e-5)
    assert trace_array(wave, 2, "y").tolist() == [8192, 8192]                  # the context


def test_c3_course_model_section():
    """On the course model (the default) the same section: base 10,000 is its own, d = 32, 256 positions."""
    at = open_lesson(PAGE, "en")
    fig = figure_by_key(at, "c3.real")
    assert len(trace_array(fig, 0, "x")) == 255
    assert len(fig["data"]) == 3
    assert trace_array(fig, 2, "y")[0] == pytest.approx(trace_array(fig, 0, "y")[int(trace_array(fig, 2, "x")[0]) - 1],
                                                         abs=1e-4)
    assert len(trace_array(figure_by_key(at, "c3.wave"), 0, "y")) == 16
    assert at.slider(key="c3.layer").max == 3


def test_c3_smollm2_bad_text():
    at = open_lesson(PAGE, "en", {"c3.lm": "smollm2"})
    for text in ["", "🙂" * 300, "<b>x</b>\x00\u202e", "黄河 river <|im_start|>"]:
        at.text_input(key="c3.rtext").set_value(text).run()
        assert_ok(at)
        figure_by_key(at, "c3.real")
        if text.startswith("🙂"):
            assert any("256" in w.value for w in at.warning)
            assert at.slider(key="c3.query").max == 255


def test_c3_without_the_real_model(monkeypatch):
    import ui.model
    from core.models import gguf_llama
    monkeypatch.setattr(ui.model, "real_model_available", lambda: False)
    monkeypatch.setattr(gguf_llama, "available", lambda: False)
    at = open_lesson(PAGE, "zh", {"c3.lm": "smollm2"})
    assert any(gguf_llama.INSTALL in i.value for i in at.info)
    assert len(trace_array(figure_by_key(at, "c3.wave"), 0, "y")) == 16            # the course model's d = 32


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_c3_switch_to_smollm2_and_back(lang):
    at = open_lesson(PAGE, lang)
    assert at.segmented_control(key="c3.lm").value == "course"
    at.segmented_control(key="c3.lm").set_value("smollm2").run()
    assert_ok(at)
    assert len(trace_array(figure_by_key(at, "c3.wave"), 0, "y")) == 32
    assert len(trace_array(figure_by_key(at, "c3.real"), 0, "x")) == 8191
    at.segmented_control(key="c3.lm").set_value("course").run()
    assert_ok(at)
    assert len(trace_array(figure_by_key(at, "c3.real"), 0, "x")) == 255
