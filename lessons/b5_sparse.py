"""B5 · Sparse attention."""
import streamlit as st

from core.lab.sparse_lab import fit_slope, receptive_field
from core.parts.sparse import (
    PATTERNS,
    PatternConfig,
    banded_attention,
    bigbird,
    block_local,
    fixed,
    gather_attention,
    longformer,
    strided,
    window,
)
from ui.b5_sparse import kernels_demo, measured, patterns_demo, reach_demo, source_token
from ui.frame import (
    beside_code,
    choice,
    figure,
    fragment,
    header,
    ranged_slider,
    send_now,
    sentences,
    shapes_table,
    slide,
    tr,
    tr_items,
    try_this,
)
from viz.sparse import band_weights, density_bars, loglog, mask_gallery, receptive_map

NS = "b5"
SIZES = [256, 512, 1024, 2048, 4096, 8192, 16384]
# The live run stops at 8,192 by default: a few seconds on a shared classroom server, and far
# enough past the small sizes, where fixed per-call costs hide the slopes (w = 32: 3w = 96 keys a
# chunk, so at N = 256 the banded kernel is barely cheaper than dense attention).
LARGEST = 8192
MEASURE_W = 32
MEASURED = ("dense", "fused", "banded", "gather")

header(NS)


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


# The memory column is measured by PyTorch's profiler (core.lab.sparse_lab.peak_bytes). ui/preload.py
# starts that profiler once before any session, in the thread that loaded torch, with kineto's log
# lines turned off, so a measurement writes nothing to the server's stderr.


# The fixed parts (prose, code panels) are laid out once; the fragment refills the slots.
st.subheader(tr(f"{NS}.gallery_title"))
st.markdown(tr(f"{NS}.gallery_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.gallery_title")))
slot = {"controls": st.container()}
slot["gallery"] = beside_code(window, strided, fixed, longformer, bigbird, block_local, height=560)
slot["table"] = st.container()
st.subheader(tr(f"{NS}.reach_title"))
st.markdown(tr(f"{NS}.reach_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.reach_title")))
slot["reach_controls"] = st.container()
slot["reach"] = beside_code(receptive_field, height=420)
st.subheader(tr(f"{NS}.kernel_title"))
st.markdown(tr(f"{NS}.kernel_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.kernel_title")))
slot["kernel"] = beside_code(banded_attention, gather_attention, height=620)


@fragment
def pattern_sections():
    """Sections 1-3: reruns alone when a pattern control moves."""
    with slot["controls"]:
        cfg = pattern_controls()
    demo = patterns_demo(cfg)
    names = dict(zip(PATTERNS, tr_items(f"{NS}.names"), strict=True))
    with slot["gallery"]:
        titles = [f"{names[p]}<br>{100 * demo[p]['density']:.0f} %" for p in PATTERNS]
        figure(mask_gallery([demo[p]["mask"] for p in PATTERNS], titles, hover=tr(f"{NS}.kept")),
               key=f"{NS}.gallery")
        st.caption(tr(f"{NS}.gallery_caption", n=cfg.n, w=cfg.w, dil=cfg.dilation, g=cfg.n_global,
                      r=cfg.n_random, c=max(1, cfg.w // 8), keys=2 * cfg.w + 1))
    with slot["table"]:
        # The bars, then the table under them at full width (side by side, its five columns
        # squeeze into one character per line at 1024 px in Chinese).
        left, right = st.columns([3, 2])
        with left:
            figure(density_bars([names[p] for p in PATTERNS], [demo[p]["density"] for p in PATTERNS],
                                title=tr(f"{NS}.density_fig", n=cfg.n), x_title=tr(f"{NS}.density_axis")),
                   key=f"{NS}.density")
        right.caption(tr(f"{NS}.table_caption", n=cfg.n, src=source_token(cfg)))
        never = tr(f"{NS}.never")
        head = "| " + " | ".join(tr_items(f"{NS}.table_head")).replace("{src}", str(source_token(cfg)))
        rows = [f"| {names[p]} | {demo[p]['pairs']:,} | 1/{demo[p]['dense_flops'] / demo[p]['flops']:.1f} | "
                f"{demo[p]['first_to_last'] or never} | {demo[p]['all']} |" for p in PATTERNS]
        st.markdown(head + " |\n|---|--:|--:|--:|--:|\n" + "\n".join(rows))
    with slot["reach_controls"]:
        name, query, layers = reach_controls(cfg.n)
    with slot["reach"]:
        reach, first = reach_demo(cfg, name, query, layers)             # (L, N)
        figure(receptive_map(reach, query, title=tr(f"{NS}.reach_fig", name=names[name], i=query),
                             x_title=tr(f"{NS}.position"), y_title=tr(f"{NS}.layer_axis"),
                             hover=(tr(f"{NS}.position"), tr(f"{NS}.layer_axis"))), key=f"{NS}.reach")
        seen = int(reach[-1].sum())
        src = source_token(cfg)
        first_text = (tr(f"{NS}.reach_first", src=src, first=first) if first is not None
                      else tr(f"{NS}.reach_never", src=src))
        st.caption(sentences(tr(f"{NS}.reach_caption", i=query, L=layers, seen=seen, n=cfg.n, all=demo[name]["all"]),
                             first_text))
    with slot["kernel"]:
        k = kernels_demo(cfg.n, cfg.w, cfg.seed)
        figure(band_weights(k["band_weights"], title=tr(f"{NS}.band_fig", c=k["chunks"], b=cfg.w, L=k["keys"]),
                            x_title=tr(f"{NS}.slot"), y_title=tr("common.query"),
                            hover=(tr("common.query"), tr(f"{NS}.slot"), tr("common.weight"))),
               key=f"{NS}.band")
        st.caption(tr(f"{NS}.band_caption", L=k["keys"], n=cfg.n, err=k["err_band"], err_w=k["err_band_w"],
                      err_g=k["err_gather"]))
        c = -(-cfg.n // cfg.w) * cfg.w
        shapes_table([("q, k, v", f"({cfg.n}, 16)"), (tr(f"{NS}.row_chunks"), f"({k['chunks']}, {cfg.w}, 16)"),
                      (tr(f"{NS}.row_keys"), f"({k['chunks']}, 16, {k['keys']})"),
                      (tr(f"{NS}.row_scores"), f"({k['chunks']}, {cfg.w}, {k['keys']})"),
                      (tr(f"{NS}.row_weights"), f"({c}, {k['keys']})"),
                      (tr(f"{NS}.row_dense"), f"({cfg.n}, {cfg.n})")])


pattern_sections()

# ---------------------------------------------------------------- measured
st.subheader(tr(f"{NS}.measure_title"))
st.markdown(tr(f"{NS}.measure_text"))


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


@fragment
def measure_section():
    largest, w, flex, pressed = measure_controls()
    sizes = [n for n in SIZES if n <= largest]
    kernels = MEASURED + (("flex",) if flex else ())
    key = f"{NS}.result"
    if pressed:
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
        st.session_state[key] = {"sizes": sizes, "w": w, "table": table, "kernels": kernels,
                                 "failed": failed}
    result = st.session_state.get(key)
    if not result:
        st.info(tr(f"{NS}.measure_hint"))
        return
    sizes, table, kernels = result["sizes"], result["table"], result["kernels"]
    labels = dict(zip(MEASURED + ("flex",), tr_items(f"{NS}.kernels"), strict=True))
    series = {m: {labels[kern]: [table[(kern, n)][m] if table[(kern, n)] else None for n in sizes]
                  for kern in kernels} for m in ("ms", "bytes")}
    columns, tables = st.columns(2), []
    for col, metric, name, unit, scale in ((columns[0], "ms", "time", "ms", 1.0),
                                           (columns[1], "bytes", "memory", "MiB", 2.0**-20)):
        values = {k: [None if v is None else v * scale for v in ys] for k, ys in series[metric].items()}
        with col:
            title = tr(f"{NS}.time_fig", w=result["w"]) if name == "time" else tr(f"{NS}.memory_fig", w=result["w"])
            figure(loglog(sizes, values, title=title, y_title=unit), key=f"{NS}.{name}")
        tables.append(results_table(sizes, values, unit))
    # Full width, one under the other: side by side, five columns each do not fit at 1024 px.
    for title, text in zip((tr(f"{NS}.time_table"), tr(f"{NS}.memory_table")), tables, strict=True):
        st.markdown(f"**{title}**\n\n{text}")
    measure_notes(sizes, table, kernels)
    for kern, error in result.get("failed", {}).items():
        st.warning(tr(f"{NS}.failed", kernel=labels[kern], error=error))


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


measure_section()

try_this(NS, [("try1", 2), ("try2", 0), ("try3", 1)])
