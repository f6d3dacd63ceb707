"""Lesson B5's controls, its results computed once for every session per setting, and its timings
measured once.
"""
from __future__ import annotations

import streamlit as st
import torch

from core.lab.sparse_lab import (
    fit_slope,
    gallery,
    layers_to_connect_all,
    layers_to_reach,
    measure_one,
    receptive_field,
)
from core.parts.attention import scaled_dot_product_attention
from core.parts.sparse import (
    PATTERNS,
    PatternConfig,
    banded_attention,
    dense_weights,
    gather_attention,
    index_sets,
    pattern_mask,
    window,
)
from ui.frame import choice, ranged_slider, send_now, tr, tr_items


@st.cache_data(max_entries=64, show_spinner=False)
def source_token(cfg: PatternConfig) -> int:
    """The token whose reach the table counts: the first one that is not global (a global token
    reaches every query in one layer, which would make Longformer look like one hop)."""
    return min(cfg.n_global, cfg.n - 1)


@st.cache_data(max_entries=64, show_spinner=False)
def patterns_demo(cfg: PatternConfig) -> dict:
    table = gallery(cfg)
    for row in table.values():
        mask = row["mask"]
        row["first_to_last"] = layers_to_reach(mask, cfg.n - 1, source_token(cfg))
        row["all"] = layers_to_connect_all(mask)
        row["mask"] = mask.numpy()
    return table


@st.cache_data(max_entries=256, show_spinner=False)
def reach_demo(cfg: PatternConfig, name: str, query: int, layers: int) -> tuple:
    """The receptive field of ``query`` (L, N) and the layers the table's source token needs."""
    mask = pattern_mask(name, cfg)
    return receptive_field(mask, query, layers).numpy(), layers_to_reach(mask, query, source_token(cfg))


@st.cache_data(max_entries=64, show_spinner=False)
def kernels_demo(n: int, w: int, seed: int) -> dict:
    """Both kernels and the dense one on the same window, on seeded random q, k, v."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, 16, generator=g) for _ in range(3))         # (N, 16) each
    mask = window(n, w)                                                   # (N, N)
    dense = scaled_dot_product_attention(q, k, v, mask)
    band = banded_attention(q, k, v, w)
    gathered = gather_attention(q, k, v, *index_sets(mask))
    return {"band_weights": band.weights.numpy(), "dense": dense.weights.numpy(),
            "err_band": float((band.output - dense.output).abs().max()),
            "err_band_w": float((dense_weights(band, n) - dense.weights).abs().max()),
            "err_gather": float((gathered.output - dense.output).abs().max()),
            "chunks": -(-n // w), "keys": band.weights.shape[-1]}


@st.cache_data(max_entries=256, show_spinner=False)
def measured(kernel: str, n: int, w: int) -> dict | None:
    """One kernel at one size: cached, so the second press (by anyone) is instant."""
    return measure_one(kernel, n, w)


# --- The page's controls (lessons/b5_sparse.py lays out the sections that read them) -------------
NS = "b5"
SIZES = [256, 512, 1024, 2048, 4096, 8192, 16384]
# The live run stops at 8,192 by default: a few seconds on a shared classroom server, and far
# enough past the small sizes, where fixed per-call costs hide the slopes (w = 32: 3w = 96 keys a
# chunk, so at N = 256 the banded kernel is barely cheaper than dense attention).
LARGEST = 8192
MEASURE_W = 32
MEASURED = ("dense", "fused", "banded", "gather")


def pattern_controls() -> PatternConfig:
    c = st.columns(6)
    n = c[0].slider("N", 16, 256, 64, 16, key=f"{NS}.n", bind="query-params")
    w = c[1].slider("w", 1, 32, 4, key=f"{NS}.w", bind="query-params", help=tr(f"{NS}.w_help"))
    dil = c[2].slider(tr(f"{NS}.dilation"), 1, 8, 2, key=f"{NS}.dil", bind="query-params")
    glob = c[3].slider(tr(f"{NS}.globals"), 0, 16, 2, key=f"{NS}.glob", bind="query-params")
    rand = c[4].slider(tr(f"{NS}.random"), 0, 16, 2, key=f"{NS}.rand", bind="query-params")
    seed = c[5].number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                             help=tr("common.seed_help"))
    return PatternConfig(n, w, dil, glob, rand, int(seed))


def reach_controls(n: int) -> tuple[str, int, int]:
    # The eight patterns on a row of their own: beside two sliders they are cut off at 1024 px.
    name = choice(tr(f"{NS}.pattern"), PATTERNS, f"{NS}.pat", tr_items(f"{NS}.names"), widget="segmented")
    c2, c3 = st.columns(2)
    # The query's range follows N: ranged_slider clamps it, URL included (a new N makes a new
    # widget, and its stale value 40 once beat the clamp: StreamlitValueAboveMaxError at N = 32).
    with c2:
        query = ranged_slider(tr(f"{NS}.query"), 0, n - 1, n - 1, key=f"{NS}.query")
    layers = c3.slider(tr(f"{NS}.layers"), 1, 32, 6, key=f"{NS}.layers", bind="query-params")
    return name, query, layers


def pattern_table(cfg: PatternConfig, demo: dict, names: dict[str, str]) -> str:
    """A row per pattern: pairs kept, FLOPs against dense, layers from the source token to the
    last, layers until every token reaches every other (markdown)."""
    never = tr(f"{NS}.never")
    head = "| " + " | ".join(tr_items(f"{NS}.table_head")).replace("{src}", str(source_token(cfg)))
    rows = [f"| {names[p]} | {demo[p]['pairs']:,} | 1/{demo[p]['dense_flops'] / demo[p]['flops']:.1f} | "
            f"{demo[p]['first_to_last'] or never} | {demo[p]['all']} |" for p in PATTERNS]
    return head + " |\n|---|--:|--:|--:|--:|\n" + "\n".join(rows)


def kernel_shapes(n: int, w: int, k: dict) -> list[tuple[str, str]]:
    """The banded kernel's tensors, chunk by chunk, against the dense scores."""
    c = -(-n // w) * w
    return [("q, k, v", f"({n}, 16)"), (tr(f"{NS}.row_chunks"), f"({k['chunks']}, {w}, 16)"),
            (tr(f"{NS}.row_keys"), f"({k['chunks']}, 16, {k['keys']})"),
            (tr(f"{NS}.row_scores"), f"({k['chunks']}, {w}, {k['keys']})"),
            (tr(f"{NS}.row_weights"), f"({c}, {k['keys']})"),
            (tr(f"{NS}.row_dense"), f"({n}, {n})")]


# The memory column is measured by PyTorch's profiler (core.lab.sparse_lab.peak_bytes). ui/preload.py
# starts that profiler once before any session, in the thread that loaded torch, with kineto's log
# lines turned off, so a measurement writes nothing to the server's stderr.
def measure_controls() -> tuple[int, int, bool, bool]:
    c1, c2 = st.columns(2)
    largest = c1.select_slider(tr(f"{NS}.largest"), SIZES[2:], value=LARGEST, key=f"{NS}.largest",
                               bind="query-params", help=tr(f"{NS}.largest_help"))
    w = c2.select_slider(tr(f"{NS}.measure_w"), [16, 32, 64, 128, 256], value=MEASURE_W, key=f"{NS}.mw",
                         bind="query-params")
    c3, c4 = st.columns(2)
    flex = c3.toggle("flex_attention", False, key=f"{NS}.flex", bind="query-params",
                     help=tr(f"{NS}.flex_help"))
    pressed = c4.button(tr(f"{NS}.measure_button"), key=f"{NS}.measure_btn", type="primary")
    return largest, w, flex, pressed


def measure_all(sizes: list[int], w: int, kernels: tuple) -> dict:
    """Every kernel at every size, under a progress bar; a kernel that fails once (flex without
    a C++ compiler) is not tried again. The result the section draws from."""
    send_now()   # the progress bar shows as it moves
    bar = st.progress(0.0, text=tr(f"{NS}.measuring"))
    runs = [(kern, n) for n in sizes for kern in kernels]
    table, failed = {}, {}
    for step, (kern, n) in enumerate(runs):
        bar.progress(step / len(runs), text=tr(f"{NS}.measuring_one", kernel=kern, n=n))
        if kern in failed:
            table[(kern, n)] = None
            continue
        try:
            table[(kern, n)] = measured(kern, n, w)
        except Exception as err:  # torch.compile (flex) needs a C++ compiler on the server
            failed[kern], table[(kern, n)] = type(err).__name__, None
    bar.empty()
    return {"sizes": sizes, "w": w, "table": table, "kernels": kernels, "failed": failed}


def results_table(sizes: list[int], values: dict[str, list[float | None]], unit: str) -> str:
    """A row per N and a last row with each line's fitted slope (sizes that ran)."""
    names = list(values)
    lines = ["| N | " + " | ".join(names) + " |", "|--:|" + "--:|" * len(names)]
    for i, n in enumerate(sizes):
        cells = ["–" if values[k][i] is None else f"{values[k][i]:,.1f}" for k in names]
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    slopes = []
    for k in names:
        kept = [(n, v) for n, v in zip(sizes, values[k], strict=True) if v]
        slopes.append(f"**{fit_slope(*zip(*kept, strict=True)):.2f}**" if len(kept) > 1 else "–")
    lines.append(f"| {tr(f'{NS}.slope')} ({unit}) | " + " | ".join(slopes) + " |")
    return "\n".join(lines)


def measure_notes(sizes: list[int], table: dict, kernels: tuple) -> None:
    skipped = [n for n in sizes if table[("dense", n)] is None]
    if skipped:
        st.warning(tr(f"{NS}.skipped", sizes=", ".join(f"{n:,}" for n in skipped)))
    st.caption(tr(f"{NS}.measure_caption"))
    firsts = [table[("flex", n)]["first_ms"] for n in sizes if "flex" in kernels and table[("flex", n)]]
    if firsts:
        st.caption(tr(f"{NS}.flex_caption", s=max(firsts) / 1000))
