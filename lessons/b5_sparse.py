"""B5 · Sparse attention."""
import streamlit as st

from core.lab.sparse_lab import receptive_field
from core.parts.sparse import (
    PATTERNS,
    banded_attention,
    bigbird,
    block_local,
    fixed,
    gather_attention,
    longformer,
    strided,
    window,
)
from ui.b5_sparse import (
    MEASURED,
    SIZES,
    kernel_shapes,
    kernels_demo,
    measure_all,
    measure_controls,
    measure_notes,
    pattern_controls,
    pattern_table,
    patterns_demo,
    reach_controls,
    reach_demo,
    results_table,
    source_token,
)
from ui.frame import figure, sentences, shapes_table, tr, tr_items
from ui.lesson import Lesson
from viz.sparse import band_weights, density_bars, loglog, mask_gallery, receptive_map

NS = "b5"

lesson = Lesson(NS)

# The pattern controls at the top of the gallery move all three sections: one fragment draws them.
lesson.section("gallery", layout_only=True, code=(window, strided, fixed, longformer, bigbird, block_local),
               height=560, below=("table",))
lesson.section("reach", layout_only=True, code=(receptive_field,), height=420)
lesson.section("kernel", layout_only=True, code=(banded_attention, gather_attention), height=620, above=())


@lesson.body
def patterns(slots):
    """Sections 1-3: reruns alone when a pattern control moves."""
    gallery, reach_slots, kernel = slots["gallery"], slots["reach"], slots["kernel"]
    with gallery.controls:
        cfg = pattern_controls()
    demo = patterns_demo(cfg)
    names = dict(zip(PATTERNS, tr_items(f"{NS}.names"), strict=True))
    with gallery.figure:
        titles = [f"{names[p]}<br>{100 * demo[p]['density']:.0f} %" for p in PATTERNS]
        figure(mask_gallery([demo[p]["mask"] for p in PATTERNS], titles, hover=tr(f"{NS}.kept")),
               key=f"{NS}.gallery", name=tr(f"{NS}.gallery_title"))
        st.caption(tr(f"{NS}.gallery_caption", n=cfg.n, w=cfg.w, dil=cfg.dilation, g=cfg.n_global,
                      r=cfg.n_random, c=max(1, cfg.w // 8), keys=2 * cfg.w + 1))
    with gallery.table:
        # The bars, then the table under them at full width (side by side, its five columns
        # squeeze into one character per line at 1024 px in Chinese).
        left, right = st.columns([3, 2])
        with left:
            figure(density_bars([names[p] for p in PATTERNS], [demo[p]["density"] for p in PATTERNS],
                                title=tr(f"{NS}.density_fig", n=cfg.n), x_title=tr(f"{NS}.density_axis")),
                   key=f"{NS}.density")
        right.caption(tr(f"{NS}.table_caption", n=cfg.n, src=source_token(cfg)))
        st.markdown(pattern_table(cfg, demo, names))
    with reach_slots.controls:
        name, query, layers = reach_controls(cfg.n)
    with reach_slots.figure:
        reach, first = reach_demo(cfg, name, query, layers)             # (L, N)
        figure(receptive_map(reach, query, title=tr(f"{NS}.reach_fig", name=names[name], i=query),
                             x_title=tr(f"{NS}.position"), y_title=tr(f"{NS}.layer_axis"),
                             hover=(tr(f"{NS}.position"), tr(f"{NS}.layer_axis"))), key=f"{NS}.reach")
        src = source_token(cfg)
        first_text = (tr(f"{NS}.reach_first", src=src, first=first) if first is not None
                      else tr(f"{NS}.reach_never", src=src))
        st.caption(sentences(tr(f"{NS}.reach_caption", i=query, L=layers, seen=int(reach[-1].sum()), n=cfg.n,
                                all=demo[name]["all"]), first_text))
    with kernel.figure:
        k = kernels_demo(cfg.n, cfg.w, cfg.seed)
        figure(band_weights(k["band_weights"], title=tr(f"{NS}.band_fig", c=k["chunks"], b=cfg.w, L=k["keys"]),
                            x_title=tr(f"{NS}.slot"), y_title=tr("common.query"),
                            hover=(tr("common.query"), tr(f"{NS}.slot"), tr("common.weight"))),
               key=f"{NS}.band")
        st.caption(tr(f"{NS}.band_caption", L=k["keys"], n=cfg.n, err=k["err_band"], err_w=k["err_band_w"],
                      err_g=k["err_gather"]))
        shapes_table(kernel_shapes(cfg.n, cfg.w, k))


@lesson.section("measure", slide=False, above=())
def measure(s):
    """The kernels timed on a button; the last result stays in the session."""
    largest, w, flex, pressed = measure_controls()
    key = f"{NS}.result"
    if pressed:
        st.session_state[key] = measure_all([n for n in SIZES if n <= largest], w,
                                            MEASURED + (("flex",) if flex else ()))
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


lesson.run()
lesson.quiz([("try1", 2), ("try2", 0), ("try3", 1)])
