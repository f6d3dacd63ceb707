"""E1 in both languages: every control to its minimum and maximum, figure data checked:
router rows sum to 1, no expert above capacity, overflow = assignments beyond capacity, the
marked text = the tokens that lost every expert (dark red, struck through) or one of them
(yellow, dotted underline)."""
import math

import numpy as np
import pytest

from tests.apptest_util import assert_ok, figure_by_key, open_lesson, set_live, trace_array

PAGE = "e1_moe.py"
N_DEFAULT = 20      # 「君不见，黄河之水天上来，奔流到海不复回。」


def check(at, n_tokens: int | None = None) -> dict:
    """The invariants of the routing figures; returns what was read."""
    assert_ok(at)
    router = figure_by_key(at, "e1.router")
    probs = trace_array(router, 0, "z")
    if n_tokens is not None:
        assert probs.shape == (n_tokens, 8)
    assert np.allclose(probs.sum(1), 1, atol=1e-5) and (probs >= 0).all()
    load_fig = figure_by_key(at, "e1.load")
    done, away = trace_array(load_fig, 0, "y"), trace_array(load_fig, 1, "y")
    line = load_fig["data"][2]                       # drawn in every frame, hidden with no limit
    capacity = trace_array(load_fig, 2, "y")[0] if line.get("visible", True) else math.inf
    assert (done <= capacity).all(), "no expert above capacity"
    wanted = done + away
    beyond = np.clip(wanted - capacity, 0, None).sum() if np.isfinite(capacity) else 0
    assert away.sum() == beyond, "turned away = assignments beyond capacity"
    # the crosses in the router map are the same assignments
    assert len(router["data"][2]["x"]) == away.sum()
    # every processed assignment is a ring and appears once in the device traffic
    assert len(router["data"][1]["x"]) == done.sum()
    traffic = trace_array(figure_by_key(at, "e1.devices"), 0, "z")
    assert traffic.sum() == done.sum()
    text = " ".join(m.value for m in at.markdown)
    assert f"**{int(beyond)}**" in text
    # the marked text pairs with the router map: a row without a ring lost every expert
    ran = set(router["data"][1]["y"])
    turned = set(router["data"][2]["y"])
    rows = list(router["data"][0]["y"])
    lost_all = [y for y in rows if y not in ran]
    lost_one = [y for y in rows if y in ran and y in turned]
    marked = next(m.value for m in at.markdown if f"**{int(beyond)}**" in m.value)
    from viz.moe import LOST_ALL, LOST_ONE
    assert marked.count(LOST_ALL.split("{}")[0]) == len(lost_all)
    assert marked.count(LOST_ONE.split("{}")[0]) == len(lost_one)
    assert f"**{len(lost_all)}**" in marked
    return {"probs": probs, "done": done, "away": away, "capacity": capacity, "traffic": traffic}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_e1_controls_and_figures(lang):
    at = open_lesson(PAGE, lang)
    r = check(at, N_DEFAULT)
    assert r["capacity"] == math.ceil(1.25 * N_DEFAULT * 2 / 8)       # 7
    assert (r["done"] + r["away"]).sum() == 2 * N_DEFAULT               # k = 2 per token

    for layer in (0, 3):
        at.slider(key="e1.layer").set_value(layer).run()
        check(at, N_DEFAULT)
        assert f" {layer} " in figure_by_key(at, "e1.router")["layout"]["title"]["text"]

    for k in (1, 8):
        at.slider(key="e1.k").set_value(k).run()
        r = check(at, N_DEFAULT)
        assert (r["done"] + r["away"]).sum() == k * N_DEFAULT
        assert r["capacity"] == math.ceil(1.25 * N_DEFAULT * k / 8)
    at.slider(key="e1.k").set_value(2).run()

    for n_used in (1, 8):
        at.slider(key="e1.n_used").set_value(n_used).run()
        r = check(at, N_DEFAULT)
        assert (r["probs"][:, n_used:] == 0).all()
        assert r["traffic"].shape == (n_used, n_used)
    for cap in ("0.25", "∞"):
        set_live(at, "e1.capacity", cap)
        r = check(at, N_DEFAULT)
        if cap == "∞":
            line = figure_by_key(at, "e1.load")["data"][2]          # no limit: the line is hidden
            assert r["away"].sum() == 0 and line["visible"] is False
        else:
            assert r["capacity"] == math.ceil(0.25 * N_DEFAULT * 2 / 8)   # 2 slots for 40 assignments
            assert r["done"].sum() <= 16 and r["away"].sum() >= 24
    shown = at.selectbox(key="e1.mode").options
    assert ("带噪 top-k" in shown) == (lang == "zh") and ("noisy top-k" in shown) == (lang == "en")
    for mode, per_token in (("switch", 1), ("gshard", None), ("noisy", 2), ("topk", 2)):
        at.selectbox(key="e1.mode").set_value(mode).run()
        # the URL holds the neutral value, and nothing for the default (topk)
        assert at.query_params.get("e1.mode", "topk") in (mode, [mode])
        r = check(at, N_DEFAULT)
        sent = (r["done"] + r["away"]).sum()
        if per_token:
            assert sent == per_token * N_DEFAULT
        else:                                                         # GShard: 1st always, 2nd sometimes
            assert N_DEFAULT <= sent <= 2 * N_DEFAULT
    at.selectbox(key="e1.mode").set_value("noisy").run()
    for noise in (0.0, 3.0):
        at.slider(key="e1.noise").set_value(noise).run()
        check(at, N_DEFAULT)
    for seed in (0, 9999):
        at.number_input(key="e1.seed").set_value(seed).run()
        check(at, N_DEFAULT)
    for layer in (0, 3):
        at.slider(key="e1.learned_layer").set_value(layer).run()
        assert_ok(at)

    loads = trace_array(figure_by_key(at, "e1.collapse"), 0, "z")
    assert loads.shape[1] == 8
    assert np.allclose(loads.sum(1), 100, atol=0.1)                 # shares of each layer add to 100 %
    memory = figure_by_key(at, "e1.memory")
    titles = memory["data"][2]["customdata"]
    assert "Mixtral 8x7B" in titles and "Mixtral 8x22B" in titles and len(titles) == 3   # + the MoE course model
    i = titles.index("Mixtral 8x7B")
    assert trace_array(memory, 2, "x")[i] == pytest.approx(2 * 46_702_792_704 / 2**30, rel=1e-6)   # GiB
    assert trace_array(memory, 2, "y")[i] == pytest.approx(2 * 12_879_925_248 / 1e9, rel=1e-6)
    # dense models on the dashed line GFLOP = 2^30 / 10^9 x GiB, which the MoEs sit below
    line_x, line_y = trace_array(memory, 0, "x"), trace_array(memory, 0, "y")
    assert np.allclose(line_y / line_x, 2**30 / 1e9)
    dense_x, dense_y = trace_array(memory, 1, "x"), trace_array(memory, 1, "y")
    assert np.allclose(dense_y / dense_x, 2**30 / 1e9, rtol=1e-3)
    assert (trace_array(memory, 2, "y") < trace_array(memory, 2, "x") * 2**30 / 1e9).all()
    labels = memory["data"][1]["text"]
    assert {"LLaMA-2 7B", "LLaMA-2 70B", "Llama-3 8B"} <= set(labels)
    assert "GiB" in memory["layout"]["xaxis"]["title"]["text"]
    assert any("46,702,792,704" in m.value and "12,879,925,248" in m.value for m in at.markdown)
    assert_scores_shown(at)


def assert_scores_shown(at):
    """The table of losses shows the training script's numbers: the dense model and both MoE
    models on the same three texts, the last (song100, new to every model) in bold."""
    import json

    from core.models.model import ASSETS
    main = json.loads((ASSETS / "moe_model_config.json").read_text(encoding="utf-8"))
    noaux = json.loads((ASSETS / "moe_model_noaux_config.json").read_text(encoding="utf-8"))
    table = next(m.value for m in at.markdown if "|---|---:|---:|---:|" in m.value and "**" in m.value)
    rows = [r for r in table.splitlines() if r.startswith("|") and "---" not in r][1:]
    assert len(rows) == 3
    dense_row, main_row, noaux_row = rows
    for key in ("dense_training_split_loss", "dense_validation_loss"):
        assert f"{main[key]:.3f}" in dense_row
    assert f"**{main['dense_song100_loss']:.3f}**" in dense_row
    for row, meta in ((main_row, main), (noaux_row, noaux)):
        assert f"{meta['training_split_loss']:.3f}" in row and f"{meta['validation_loss']:.3f}" in row
        assert f"**{meta['song100_loss']:.3f}**" in row
    assert noaux["dense_song100_loss"] == main["dense_song100_loss"]       # one dense model, one text
    caption = " ".join(c.value for c in at.caption)
    assert f"{math.log(2582):.2f}" in caption and "331" in caption and "7,459" in caption
    assert any(f"{main['training_split_loss']:.2f}" in m.value and f"{main['validation_loss']:.2f}" in m.value
               and "ST-MoE" in m.value for m in at.markdown)                # fine-tuning over-fits


def test_e1_noisy_seed_replays_and_noise_changes_routing():
    at = open_lesson(PAGE, "en", {"e1.mode": "noisy", "e1.noise": "3.0", "e1.seed": "5"})
    assert at.selectbox(key="e1.mode").value == "noisy"                     # read from the URL
    a = trace_array(figure_by_key(at, "e1.router"), 0, "z")
    at.number_input(key="e1.seed").set_value(6).run()
    b = trace_array(figure_by_key(at, "e1.router"), 0, "z")
    at.number_input(key="e1.seed").set_value(5).run()
    c = trace_array(figure_by_key(at, "e1.router"), 0, "z")
    assert not np.allclose(a, b) and np.array_equal(a, c)


def test_e1_bad_text():
    at = open_lesson(PAGE, "en")
    for text in ["", "   ", "🙂" * 300, "<script>alert(1)</script>", "黄河 river 🙂 ﷽", "x"]:
        at.text_input(key="e1.prompt").set_value(text).run()
        assert 1 <= check(at)["probs"].shape[0] <= 64


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_e1_both_experts_full_keeps_the_residual(lang):
    """Capacity 0.5 on the default text, layer 0: 8 tokens lose one expert, 6 both (as the
    lesson's text says); the counts in the sentence are those of the router map (check), and
    the plural agrees in English."""
    at = open_lesson(PAGE, lang, {"e1.capacity": "0.5"})
    check(at, N_DEFAULT)
    router = figure_by_key(at, "e1.router")
    ran, turned = set(router["data"][1]["y"]), set(router["data"][2]["y"])
    rows = router["data"][0]["y"]
    assert sum(y not in ran for y in rows) == 6 and sum(y in ran and y in turned for y in rows) == 8
    if lang == "en":
        assert any("assignments beyond capacity" in m.value and "tokens lost every expert" in m.value
                   for m in at.markdown)


def _luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of "#rrggbb"."""
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _lab(hex_colour: str) -> np.ndarray:
    """CIE L*a*b* (D65) of an sRGB "#rrggbb"."""
    channels = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    lin = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_e1_marks_differ_strongly_and_keep_their_text_readable():
    """Review E1 #3: the marks were rgb(255,241,242) and rgb(255,246,237), two near-white tints
    (CIE76 distance ~5) that a projector shows alike. Now: grounds ΔE ≥ 40 and lightness 30 apart,
    a second cue besides colour (strike-through, dotted underline), text contrast ≥ 4.5:1."""
    from viz.moe import LOST_ALL, LOST_ALL_COLOURS, LOST_ONE, LOST_ONE_COLOURS
    old = np.linalg.norm(_lab("#fff1f2") - _lab("#fff6ed"))
    assert old < 10                                                        # the tints the review saw
    (all_ground, all_text), (one_ground, one_text) = LOST_ALL_COLOURS, LOST_ONE_COLOURS
    assert np.linalg.norm(_lab(all_ground) - _lab(one_ground)) >= 40
    assert abs(_lab(all_ground)[0] - _lab(one_ground)[0]) >= 30            # apart in grey too
    assert _contrast(all_ground, all_text) >= 4.5 and _contrast(one_ground, one_text) >= 4.5
    assert "line-through" in LOST_ALL and "underline dotted" in LOST_ONE
    assert _contrast("#ffffff", "#000000") == pytest.approx(21)
    assert _contrast("#b3261e", "#ffffff") == pytest.approx(6.5, abs=0.1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_e1_marked_prompt_is_html_with_escaped_text(lang):
    """The marks are HTML spans drawn with unsafe_allow_html; the prompt inside them stays text
    (a markup prompt: its characters are backslash-escaped inside the spans, no tag of its own)."""
    from viz.moe import LOST_ALL
    at = open_lesson(PAGE, lang, {"e1.capacity": "0.25"})
    marked = next(m for m in at.markdown if LOST_ALL.split("{}")[0] in m.value)
    assert marked.allow_html
    at.text_input(key="e1.prompt").set_value("<b>x</b><i>y</i>" * 3).run()
    assert_ok(at)
    marked = next(m.value for m in at.markdown if m.allow_html and "\\<" in m.value)
    # The tags' letters are not in the vocabulary: each reads as <unk>, shown as text, not a tag.
    assert "<b>" not in marked and "<i>" not in marked and "<unk>" not in marked and "\\<unk\\>" in marked
