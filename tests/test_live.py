"""Live controls (issue 25): each lesson's frames, computed by one batched core call, equal the
single-value core results value for value; the frames the browser applies rebuild every figure;
the URL values snap to the grid; a figure with its frames stays under 300 KB."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.apptest_util import decode
from tests.browser.test_live import LIVE
from ui.chart import _to_json
from ui.live import MAX_BYTES, frames_of, nearest, parse, snap, url_text


def compose(frames_json: str, base: dict, i: int) -> dict:
    """What ui/chart.js composeFrame does: the base figure with frame i's changing keys."""
    spec = json.loads(frames_json)
    fig = json.loads(_to_json(base))
    frame = spec["frames"][i]
    for (t, keys), src in zip(spec["traces"], frame["data"], strict=True):
        for k in keys:
            if k in src:
                fig["data"][t][k] = _resolve(spec, src[k])
            else:
                fig["data"][t].pop(k, None)
    for k in spec["layout"]:
        if k in frame["layout"]:
            fig["layout"][k] = frame["layout"][k]
        else:
            fig["layout"].pop(k, None)
    return fig


def _resolve(spec: dict, value):
    """A frame's value with its pooled arrays (ui.live._pooled) filled in, as ui/chart.js does."""
    if isinstance(value, dict) and "prefix" in value and set(value) <= {"prefix", "rows", "cols", "blank"}:
        full = spec["pool"][value["prefix"]]
        if isinstance(full, list):
            return full[: value["rows"]]
        full = decode(full)
        part = full[: value["rows"]] if "cols" not in value else full[: value["rows"], : value["cols"]]
        part = part.copy()
        a, b = value.get("blank", (0, 0))
        part[a:b] = np.nan
        return part.tolist()
    if isinstance(value, dict):
        return {k: _resolve(spec, v) for k, v in value.items()}
    return value


def _plain(obj):
    """A figure's JSON with typed arrays decoded, for comparing two of them (NaN as "NaN")."""
    if isinstance(obj, dict):
        if "bdata" in obj:
            return _plain(decode(obj).tolist())
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return "NaN"
    return obj


def assert_frames_rebuild(figures) -> None:
    frames = frames_of(figures)
    assert frames.bytes <= MAX_BYTES, frames.bytes
    for start in (0, len(figures) - 1):
        for i, fig in enumerate(figures):
            assert _plain(compose(frames.json, figures[start], i)) == _plain(json.loads(_to_json(fig)))


def test_grid_helpers():
    assert snap(0.07, [0.0, 0.05, 0.1]) == 0.05
    assert snap(0.075, [0.0, 0.05, 0.1]) == 0.05            # a tie: the lower
    assert snap(-3, [1, 2, 4]) == 1 and snap(99, [1, 2, 4]) == 4
    assert nearest(3.4, [1, 2, 4]) == 2
    assert parse("1.5", 0.0) == 1.5 and parse("abc", 0.0) == 0.0 and parse("nan", 2) == 2
    assert parse("inf", 1) == 1 and parse(None, 3) == 3 and parse("1e309", 0) == 0
    assert url_text(2.0) == "2" and url_text(0.35) == "0.35" and url_text(128) == "128"


def test_frames_of_keeps_only_what_changes():
    from viz.common import array, make
    figs = [make([{"type": "bar", "x": ["a", "b"], "y": array([v, 1 - v]), "name": "p"},
                  {"type": "scatter", "x": [0, 1], "y": array([0.5, 0.5]), "name": "fixed"}],
                 {"annotations": [{"text": f"{v:.1f}", "x": 0, "y": 1}]}, title="t")
            for v in (0.1, 0.5, 0.9)]
    frames = frames_of(figs)
    spec = json.loads(frames.json)
    assert spec["traces"] == [[0, ["y"]]]
    assert set(spec["layout"]) == {"annotations", "datarevision"}
    assert_frames_rebuild(figs)
    grow = [make([{"type": "scatter", "x": array(np.arange(n)), "y": array(np.arange(n) ** 2.0)},
                  {"type": "heatmap", "z": array(np.arange(n * 3.0).reshape(n, 3))}], {}, title="t")
            for n in (1, 4, 2)]
    spec = json.loads(frames_of(grow).json)
    assert len(spec["pool"]) == 3 and spec["frames"][1]["data"][0]["x"] == {"prefix": 0, "rows": 4}
    assert_frames_rebuild(grow)
    # A growing matrix whose last rows are blank in each frame (D2's new rows), and a growing block.
    full = np.arange(36.0).reshape(6, 6)

    def cut(n, blank_from):
        z = full[:n, :n].copy()
        z[blank_from:] = np.nan
        return z
    blocks = [make([{"type": "heatmap", "z": array(cut(n, n - 1)), "y": [f"r{i}" for i in range(n)]}], {}, title="t")
              for n in (2, 4, 6, 3)]
    spec = json.loads(frames_of(blocks).json)
    assert spec["frames"][1]["data"][0]["z"] == {"prefix": 0, "rows": 4, "cols": 4, "blank": [3, 4]}
    assert spec["frames"][1]["data"][0]["y"] == {"prefix": 1, "rows": 4}
    assert_frames_rebuild(blocks)
    with pytest.raises(ValueError):
        frames_of([figs[0], make([], {}, title="t")])


# ---- D1: temperature -------------------------------------------------------------------------
def test_d1_sweep_equals_single_temperatures():
    from core.models.generate import at_temperature, sampling_probs, temperature_sweep
    from core.parts.attention import row_entropy
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(500, generator=g) * 3
    temps = [round(0.05 * i, 2) for i in range(101)]
    for k, p in ((None, None), (5, None), (None, 0.9), (40, 0.5)):
        rows = sampling_probs(logits, temps, k, p)                       # (T, V): every frame in one call
        for i, t in enumerate(temps):
            assert torch.equal(rows[i], sampling_probs(logits, t, k, p)), (t, k, p)
    model_probs = torch.softmax(logits, -1)
    ids = torch.topk(model_probs, 20).indices.tolist()
    shown, h = temperature_sweep(model_probs.numpy(), temps, ids, 5, 0.9)
    for i, t in enumerate(temps):
        single = at_temperature(model_probs, t, 5, 0.9)
        assert torch.equal(shown[i], single[ids])
        assert h[i] == row_entropy(single)
    assert h[0] == 0 and h[-1] > h[20]                        # greedy: one-hot; hot: flatter


def test_d1_frames_equal_single_value_figures():
    from core.models.generate import at_temperature, temperature_sweep
    from viz.generation import probability_bars
    g = torch.Generator().manual_seed(1)
    model_probs = torch.softmax(torch.randn(300, generator=g) * 2, -1)
    ids = torch.topk(model_probs, 20).indices.tolist()
    tokens = [f"t{i}" for i in ids]
    model_p = model_probs[ids].tolist()
    temps = [round(0.05 * i, 2) for i in range(101)]
    kw = {"title": "x", "names": ("m", "s"), "hover_names": ("tok", "m", "s"), "legend": ("a", "b", "c", "d"),
          "log": True}
    rows = temperature_sweep(model_probs, temps, ids)[0].tolist()
    figs = [probability_bars(tokens, model_p, row, None, **kw) for row in rows]
    for t, fig in zip(temps, figs, strict=True):
        single = probability_bars(tokens, model_p, at_temperature(model_probs, t)[ids].tolist(), None, **kw)
        assert np.array_equal(fig["data"][1]["y"], single["data"][1]["y"])
        assert fig["data"][0]["marker"] == single["data"][0]["marker"]
    assert_frames_rebuild(figs)


# ---- A3: start position p --------------------------------------------------------------------
def test_a3_offsets_equal_single_starts():
    from core.parts.positional import offset_similarities, offset_similarity, sinusoidal
    for n, d in ((128, 128), (64, 64), (9, 4)):
        pe = sinusoidal(n, d)
        rows = offset_similarities(pe, list(range(n - 1)))
        for p, row in enumerate(rows):
            # One product against n - 1 matrix-vector products: the same sums, rounded apart in
            # float32 (2.7e-5 at most on values up to D/2 = 64).
            torch.testing.assert_close(row, offset_similarity(pe, p), rtol=1e-6, atol=5e-5)


# ---- B1: d_k -----------------------------------------------------------------------------------
def test_b1_widths_equal_single_experiments():
    from core.lab import toy
    from core.lab.attention_lab import scaling_by_width
    from core.parts.attention import scaling_experiment
    widths = [1, 2, 16, 1024]
    for w, got in zip(widths, scaling_by_width(widths, 64, 3), strict=True):
        single = scaling_experiment(*toy.unit_vectors(64, w, 3))
        for name, value in single.items():
            assert torch.equal(got[name], value), (w, name)
        assert got["mean_entropy_raw"] == single["entropy_raw"].mean()
    first, last = scaling_by_width([1, 1024], 256, 0)
    assert last["mean_entropy_raw"] < first["mean_entropy_raw"] / 10              # saturated: near one-hot rows


# ---- B3: the changed position ----------------------------------------------------------------
def test_b3_leaks_equal_single_positions():
    from core.lab.attention_lab import future_leak, future_leaks
    text = "君不见黄河之水天上来"
    for p, got in zip(range(1, 10), future_leaks(text, list(range(1, 10)), 2, 0), strict=True):
        single = future_leak(text, p, 2, 0)
        assert torch.equal(got["causal"], single["causal"]) and torch.equal(got["none"], single["none"])
        assert (got["causal"][:p] == 0).all() and (got["none"][:p] > 0).any()


# ---- C3: the query's position m ---------------------------------------------------------------
def test_c3_angles_equal_single_positions():
    from core.lab.rope_analysis import fixed_query_key, pair_angle, pair_angles, pair_path, rope_both_forms
    q, k = fixed_query_key(64, 0)
    ms = list(range(257))
    batched = pair_angles(q, k, ms, 4, 3, 10000.0)
    for i, m in enumerate(ms):
        single = pair_angle(q, k, m, 4, 3, 10000.0)
        # a batch of rotations and one rotation: the same products, 1 float32 ulp apart at most
        for name in ("q", "angle", "score"):
            torch.testing.assert_close(batched[name][i], single[name], rtol=0, atol=1e-6)
        assert torch.equal(batched["k"], single["k"])
    # The trail of positions 0..m is the first m + 1 rows of the trail of all positions.
    full = pair_path(rope_both_forms(q, torch.arange(257), 10000.0)["real"], 3)
    for m in (0, 12, 256):
        assert torch.equal(full[: m + 1], pair_path(rope_both_forms(q, torch.arange(m + 1), 10000.0)["real"], 3))


# ---- C3: the key's position n (the score against m - n) ---------------------------------------
def test_c3_key_angles_equal_single_positions():
    from core.lab.rope_analysis import fixed_query_key, pair_angle, pair_angles_by_key
    from core.parts.rope import apply_rope
    q, k = fixed_query_key(64, 0)
    ns = list(range(257))
    for m, pair in ((12, 3), (200, 0), (0, 31)):
        batched = pair_angles_by_key(q, k, m, ns, pair, 10000.0)
        assert batched["k"].shape == (257, 2) and batched["total"].shape == (257,)
        for i, n in enumerate(ns):
            single = pair_angle(q, k, m, n, pair, 10000.0)
            for name in ("k", "angle", "score"):
                torch.testing.assert_close(batched[name][i], single[name], rtol=0, atol=1e-6)
            assert torch.equal(batched["q"], single["q"])
            whole = apply_rope(q[None], torch.tensor([m]), 10000.0)[0] @ apply_rope(k[None], torch.tensor([n]), 10000.0)[0]
            torch.testing.assert_close(batched["total"][i], whole, rtol=0, atol=1e-6)
    # Only m - n counts: the query and the key moved 100 on give the same scores.
    a = pair_angles_by_key(q, k, 12, [0, 4, 12], 3, 10000.0)
    b = pair_angles_by_key(q, k, 112, [100, 104, 112], 3, 10000.0)
    torch.testing.assert_close(a["total"], b["total"], rtol=0, atol=1e-5)
    torch.testing.assert_close(a["angle"], b["angle"], rtol=0, atol=1e-4)


def test_c3_distance_frames_rebuild():
    from ui.c3_rope import by_key
    from viz.rope import score_by_offset
    ns = list(range(0, 257, 8))
    curve = by_key(64, 10000.0, 12, ns, 3, 0, "cpu")
    figs = [score_by_offset([12 - n for n in ns], {"all": curve["total"], "pair": curve["score"]}, i,
                            title=f"n = {n}", x_title="m − n", y_title="score") for i, n in enumerate(ns)]
    spec = json.loads(frames_of(figs).json)
    assert [t for t, _ in spec["traces"]] == [2, 3]                    # only the two points move
    assert set(spec["layout"]) <= {"title", "datarevision"}           # no axis changes with n
    # One pair of axes for every n (issue 38: the marker's autorange padding gave each n its own x
    # range), holding every point of both lines with room for the marker at either end.
    xr, yr = figs[0]["layout"]["xaxis"]["range"], figs[0]["layout"]["yaxis"]["range"]
    offsets = [12 - n for n in ns]
    assert xr[0] < min(offsets) and xr[1] > max(offsets)
    values = np.concatenate([curve["total"], curve["score"]])
    assert yr[0] < values.min() and yr[1] > values.max()
    assert_frames_rebuild(figs)


# ---- D2: the decode step ----------------------------------------------------------------------
def test_d2_histories_equal_single_steps():
    from core.lab.cache_steps import cache_histories, cache_history, watch_cache
    from core.models.generate import Generation
    from ui.model import _load
    model, tok = _load("cpu")
    steps = watch_cache(Generation(model, tok, "君不见，黄河之水", 6))
    uptos = list(range(len(steps)))
    for t, got in zip(uptos, cache_histories(steps, 1, 2, uptos), strict=True):
        single = cache_history(steps, 1, 2, t)
        assert got["kv_head"] == single["kv_head"]
        for name in ("q", "k", "v", "weights"):
            assert torch.equal(got[name], single[name])
        assert got["k"].shape[0] == 8 + t                            # the cache grows one row a step


# ---- D3: the batch size ------------------------------------------------------------------------
def test_d3_batches_equal_single_batches():
    from core.calc import configs
    from core.calc.flops import prefill_and_decode, prefill_and_decode_at
    cfg = configs.get("llama-2-7b")
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    got = prefill_and_decode_at(cfg, 4096, batches, 2, 2)
    for b, entry in zip(batches, got, strict=True):
        assert entry == prefill_and_decode(cfg, 4096, b, 2, 2)
    assert got[0]["decode"]["intensity"] < got[-1]["decode"]["intensity"]       # the point moves right


# ---- E1: the capacity factor ------------------------------------------------------------------
def test_e1_capacities_equal_single_runs():
    from core.lab.moe_lab import route_prompt, route_prompt_at
    from core.models.moe_model import load_moe_model
    from core.parts.moe import Routing
    from ui.moe import MAIN
    model, tok = load_moe_model("cpu", prefix=MAIN)
    routings = [Routing(mode="noisy", k=2, n_experts=8, noise_scale=1.0, capacity_factor=c) for c in (0.25, 1.25, None)]
    runs = route_prompt_at(model, tok, "君不见，黄河之水天上来", routings, 3)
    for routing, got in zip(routings, runs, strict=True):
        single = route_prompt(model, tok, "君不见，黄河之水天上来", routing, 3)
        for a, b in zip(got.results, single.results, strict=True):
            assert torch.equal(a.load, b.load) and torch.equal(a.wanted, b.wanted) and a.capacity == b.capacity
    assert runs[0].results[0].load.sum() < runs[2].results[0].load.sum()     # a tight capacity turns tokens away
    assert snap("1.3", ["1", "1.5", "∞"]) == "1.5" and snap("∞", ["1", "∞"]) == "∞"


# ---- E2: the rank r ---------------------------------------------------------------------------
def test_e2_ranks_equal_single_ranks():
    from core.calc import configs
    from core.calc.lora import lora_split, lora_splits
    ranks = [1, 2, 4, 8, 16, 32, 64]
    for name in ("course", "llama-2-7b", "gpt3-175b"):
        cfg = configs.get(name)
        got = lora_splits(cfg, ranks, ("w_q", "w_v"))
        assert got == [lora_split(cfg, r, ("w_q", "w_v")) for r in ranks]
        assert got[1]["trainable"] == 2 * got[0]["trainable"] and got[0]["frozen"] == got[-1]["frozen"]


# ---- every live figure on its page: small enough, and its frames rebuild the figure sent -------
PAGES = [("d1_generation.py", "d1.bars"), ("a3_positions.py", "a3.offsets"), ("b1_attention.py", "b1.hist"),
         ("b3_masks.py", "b3.leak"), ("c3_rope.py", "c3.plane"), ("c3_rope.py", "c3.dist"),
         ("d2_kv_cache.py", "d2.fig"), ("d3_memory_wall.py", "d3.roofline"),
         ("e1_moe.py", "e1.load"), ("e2_lora.py", "e2.counts")]


@pytest.mark.parametrize("page,fig_key", PAGES)
def test_page_live_figure(page, fig_key):
    from tests.apptest_util import chart_spec, charts, live_of, open_lesson
    at = open_lesson(page, "zh")
    live = live_of(at, fig_key)
    spec = next(chart_spec(el) for el in charts(at) if el.proto.id.endswith("-" + fig_key))
    assert len(spec.encode()) + len(live["frames"].encode()) <= MAX_BYTES
    assert len(live["values"]) == len(live["texts"]) == len(json.loads(live["frames"])["frames"]) >= 2
    # The frame at the value sent, applied to the figure sent, is that figure.
    assert _plain(compose(live["frames"], json.loads(spec), live["index"])) == _plain(json.loads(spec))


@pytest.mark.parametrize("path,fig_key,key", LIVE)
def test_url_values_snap_to_the_grid(path, fig_key, key):
    """Each live control of tests/browser/test_live.py given, in a shared link, a value that is no
    number, one between its last two grid values (nearer the last) and one far beyond its end: the
    chart's live part (the frames and the index the browser shows) opens on the default's frame, the
    nearer grid value and the last one; no exception. Was the browser's test_bad_url_values (three
    page loads a control), checked here where the index is chosen (issue 40)."""
    from tests.apptest_util import assert_ok, live_of, open_lesson
    from ui.course import existing_lessons

    page = next(lesson.file for lesson in existing_lessons() if lesson.url_path == path)
    at = open_lesson(page, "zh", {key: "abc"})
    assert_ok(at)
    live = live_of(at, fig_key)
    grid, default_index = live["values"], live["index"]
    values = grid
    if isinstance(values[0], str):       # options (E1's capacity factors, "∞"): by the numbers they name
        values = [float("inf") if v == "∞" else float(v) for v in values[:-1]]
    assert default_index == values.index(min(values, key=lambda v: abs(v - values[default_index])))
    between = (values[-2] + values[-1]) / 2 + (values[-1] - values[-2]) * 0.1   # nearer the last
    at = open_lesson(page, "zh", {key: str(between)})
    assert_ok(at)
    assert grid[live_of(at, fig_key)["index"]] in (grid[len(values) - 1], values[-1])
    at = open_lesson(page, "zh", {key: str(values[-1] * 100 + 1000)})
    assert_ok(at)
    assert live_of(at, fig_key)["index"] in (len(values) - 1, len(grid) - 1)   # beyond: its end
