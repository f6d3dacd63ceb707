"""A3 · Positional encoding: attention alone is blind to order; sine waves add it."""
import streamlit as st

from core.lab.first_block import repeated_rows
from core.lab.permutation import equivariance
from core.parts.positional import (
    first_block_input,
    frequencies,
    offset_similarities,
    offset_similarity,
    sinusoidal_at,
)
from ui.a3_positions import (
    D_SMALL,
    input_demo,
    line_controls,
    offset_frames,
    order_controls,
    order_demo,
    table_controls,
    table_demo,
    wave_controls,
    wave_demo,
)
from ui.frame import device, figure, lang, plain, shapes_table, tr
from ui.lesson import Lesson
from ui.live import live_figure
from viz.common import label
from viz.positions import pair_rows, pe_table, side_by_side, waves

NS = "a3"

lesson = Lesson(NS)


# 1. Order blindness: its text and seed are the page's (the seed is also the last section's).
@lesson.section("blind", code=(equivariance,))
def blind(s, text, add_pe, seed, dev):
    check = order_demo(text, add_pe, seed, dev)
    tokens = check["tokens"]
    figure(side_by_side([("A(X)", check["output"], tokens), ("A(PX)", check["output_permuted"], check["reversed"]),
                         ("P·A(X) − A(PX)", check["difference"], check["reversed"])],
                        names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value")),
                        height=max(300, 120 + 28 * len(tokens))), key=f"{NS}.equivariance",
           name=tr(f"{NS}.blind_title"))
    st.caption(tr(f"{NS}.panels"))
    if check["error"] <= 1e-6:
        st.success(tr(f"{NS}.same_set", error=check["error"]))
    else:
        st.warning(tr(f"{NS}.not_same", error=check["error"]))
    n = len(tokens)
    shapes_table([("X, X[perm]", f"({n}, {D_SMALL})"), ("W_q, W_k, W_v", f"({D_SMALL}, {D_SMALL})"),
                  (tr(f"{NS}.outputs"), f"({n}, {D_SMALL})")])


# 2-5 share the table's size: one fragment draws them, rerun alone when one of their controls moves.
lesson.section("table", layout_only=True, code=(sinusoidal_at, frequencies))
lesson.section("waves", layout_only=True, above=())
lesson.section("offset", layout_only=True, code=(offset_similarity, offset_similarities), height=360)
lesson.section("input", layout_only=True, code=(first_block_input, repeated_rows), height=420)


@lesson.body
def encoding(slots, seed, dev):
    with slots["table"].controls:
        n_pos, d = table_controls()
    table = table_demo(n_pos, d, dev)
    names = (tr(f"{NS}.position"), tr(f"{NS}.dimension"), tr(f"{NS}.value"))
    with slots["table"].figure:
        figure(pe_table(table["pe"], title=tr(f"{NS}.table_fig", p=n_pos, d=d), names=names), key=f"{NS}.pe")
        shapes_table([("PE", f"({n_pos}, {d})"), ("ω_i", f"({d // 2},)")])

    with slots["waves"].figure:
        dims = wave_controls(d)
        x_smooth, smooth, x_int, samples = wave_demo(n_pos, d, tuple(dims))
        lam = table["wavelengths"]
        labels = [tr(f"{NS}.wave_name", j=j, kind="sin" if j % 2 == 0 else "cos", lam=float(lam[j])) for j in dims]
        figure(waves(x_smooth, dict(zip(labels, smooth.T, strict=True)), x_int, dict(zip(labels, samples.T, strict=True)),
                     title=tr(f"{NS}.waves_fig"), x_title=tr(f"{NS}.position"), y_title="PE"), key=f"{NS}.waves")

    with slots["offset"].figure:
        # Live (issue 25): the figure at every start p is sent with the page; its own slider moves it.
        live_figure(offset_frames, (n_pos, d, dev, lang()), f"{NS}.offsets", f"{NS}.p", list(range(n_pos - 1)),
                    min(20, n_pos - 2), tr(f"{NS}.p_label"))
        st.caption(tr(f"{NS}.offset_caption", half=d // 2))

    with slots["input"].controls:
        line = line_controls()
    block = input_demo(line, d, seed, dev)
    tokens, n = block["tokens"], len(block["tokens"])
    with slots["input"].figure:
        figure(side_by_side([(tr(f"{NS}.emb"), block["emb"], tokens), ("PE", block["pe"], tokens),
                             (tr(f"{NS}.sum"), block["x0"], tokens)],
                            names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value")),
                            height=max(320, 140 + 24 * n), shared=False), key=f"{NS}.input",
               name=tr(f"{NS}.input_title"))
        st.caption(tr(f"{NS}.own_scales"))
        twice = block["repeat"]
        if twice is None:
            st.info(tr(f"{NS}.no_repeat"))
        else:
            (p, q), ch = twice["positions"], plain(twice["token"])
            figure(pair_rows(twice["rows"], twice["difference"],
                             row_names=(f"x₀[{p}]", f"x₀[{q}]", f"x₀[{p}] − x₀[{q}]"),
                             title=tr(f"{NS}.repeat_fig", token=label(twice["token"]), p=p, q=q),
                             names=(tr(f"{NS}.row"), tr(f"{NS}.dimension"), tr(f"{NS}.value"))), key=f"{NS}.repeat")
            st.caption(tr(f"{NS}.repeat_caption", token=ch, p=p, q=q, e_gap=twice["embedding_gap"],
                          largest=twice["largest"], pe_gap=twice["pe_gap"]))
        shapes_table([("E[ids]", f"({n}, {d})"), (f"PE[:{n}]", f"({n}, {d})"), ("x₀ = E[ids] + PE", f"({n}, {d})")])


slots = lesson.arrange()
with slots["blind"].controls:                  # the text, PE on or off, the seed: a change reruns the page
    text, add_pe, seed = order_controls()
lesson.draw(text=text, add_pe=add_pe, seed=seed, dev=device())
lesson.quiz([("try1", 0), ("try2", 2), ("try3", 1)])
