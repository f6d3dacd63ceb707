"""A3 · Positional encoding: attention alone is blind to order; sine waves add it."""
import streamlit as st

from core.lab.first_block import repeated_rows
from core.lab.permutation import equivariance
from core.parts.positional import (
    first_block_input,
    frequencies,
    offset_similarities,
    offset_similarity,
    sinusoidal,
    sinusoidal_at,
)
from ui.a3_positions import D_SMALL, input_demo, order_demo, table_demo, wave_demo
from ui.frame import (
    code_panel,
    device,
    figure,
    fragment,
    header,
    lang,
    plain,
    ranged_slider,
    section_with_controls,
    shapes_table,
    slide,
    text_box,
    tr,
    try_this,
)
from ui.live import live_figure
from viz.common import label
from viz.positions import offsets, pair_rows, pe_table, side_by_side, waves

NS = "a3"
DEFAULT_PAIR = "我和你"
DEFAULT_LINE = "床前明月光，疑是地上霜。举头望明月"   # 明月 twice: the same character at two places

header(NS)


def order_controls():
    c1, c2, c3 = st.columns([3, 2, 1])
    with c1:
        text = text_box(f"{NS}.text", DEFAULT_PAIR, 16, tr(f"{NS}.text_label"))
    with c2:
        add_pe = st.toggle(tr(f"{NS}.add_pe"), value=False, key=f"{NS}.add_pe", bind="query-params")
    with c3:
        seed = st.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                               help=tr("common.seed_help"))
    return (text.text if not text.empty else DEFAULT_PAIR), add_pe, int(seed)


def table_controls():
    c1, c2 = st.columns(2)
    with c1:
        n_pos = st.slider(tr(f"{NS}.positions_label"), 4, 128, 64, key=f"{NS}.positions", bind="query-params")
    with c2:
        d = st.slider(tr(f"{NS}.d_label"), 4, 128, 64, step=2, key=f"{NS}.d_model", bind="query-params")
    return n_pos, max(4, d - d % 2)     # a hand-edited URL may ask for an odd width; pairs need even


def wave_controls(d: int):
    lo, hi = ranged_slider(tr(f"{NS}.dims_label"), 0, d - 1, (0, 10), key=f"{NS}.dims",
                           help=tr(f"{NS}.dims_help"))
    return sorted({lo, hi})


def offset_frames(n_pos: int, d: int, starts: list[int], dev: str) -> list:
    """The offset figure at every start p (the live slider's frames), from one Gram matrix."""
    pe = sinusoidal(n_pos, d, dev)                                       # (P, D)
    rows = [r.cpu().numpy() for r in offset_similarities(pe, [0, *starts])]
    return [offsets([(tr(f"{NS}.from_p", p=0), rows[0]), (tr(f"{NS}.from_p", p=start), dots)],
                    title=tr(f"{NS}.offset_fig", d=d), x_title=tr(f"{NS}.offset_axis"), y_title="PE(p) · PE(p + k)")
            for start, dots in zip(starts, rows[1:], strict=True)]


# 1. Order blindness -------------------------------------------------------------------------
st.subheader(tr(f"{NS}.blind_title"))
st.markdown(tr(f"{NS}.blind_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.blind_title")))
text, add_pe, seed = order_controls()
dev = device()
check = order_demo(text, add_pe, seed, dev)
tokens = check["tokens"]
left, right = st.columns([1, 1])
with left:
    figure(side_by_side([("A(X)", check["output"], tokens), ("A(PX)", check["output_permuted"], check["reversed"]),
                         ("P·A(X) − A(PX)", check["difference"], check["reversed"])],
                        names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value")),
                        height=max(300, 120 + 28 * len(tokens))), key=f"{NS}.equivariance")
    st.caption(tr(f"{NS}.panels"))
    if check["error"] <= 1e-6:
        st.success(tr(f"{NS}.same_set", error=check["error"]))
    else:
        st.warning(tr(f"{NS}.not_same", error=check["error"]))
    n = len(tokens)
    shapes_table([("X, X[perm]", f"({n}, {D_SMALL})"), ("W_q, W_k, W_v", f"({D_SMALL}, {D_SMALL})"),
                  (tr(f"{NS}.outputs"), f"({n}, {D_SMALL})")])
with right:
    code_panel(equivariance, height=520)

# Sections 2-5: their fixed parts (prose, the code) are laid out once; the fragment below
# refills only the slots that depend on its controls.
slot = {}
slot["table_controls"], slot["table"] = section_with_controls(NS, "table", sinusoidal_at, frequencies)  # 2. The table
st.subheader(tr(f"{NS}.waves_title"))                              # 3. One dimension at a time
st.markdown(tr(f"{NS}.waves_text"))
slide(tr("classroom.slide.continued", title=tr(f"{NS}.waves_title")))
slot["waves"] = st.container()
slot["offset_controls"], slot["offsets"] = section_with_controls(  # 4. Distance, not place
    NS, "offset", offset_similarity, offset_similarities, height=360)
slot["input_controls"], slot["input"] = section_with_controls(    # 5. What the first block reads
    NS, "input", first_block_input, repeated_rows, height=420)


@fragment
def encoding_sections():
    """Sections 2-5 share the table's size; they rerun alone (st.fragment) when one of their
    controls moves, and write only into the slots above."""
    with slot["table_controls"]:
        n_pos, d = table_controls()
    table = table_demo(n_pos, d, dev)
    names = (tr(f"{NS}.position"), tr(f"{NS}.dimension"), tr(f"{NS}.value"))
    with slot["table"]:
        figure(pe_table(table["pe"], title=tr(f"{NS}.table_fig", p=n_pos, d=d), names=names), key=f"{NS}.pe")
        shapes_table([("PE", f"({n_pos}, {d})"), ("ω_i", f"({d // 2},)")])

    with slot["waves"]:
        dims = wave_controls(d)
        x_smooth, smooth, x_int, samples = wave_demo(n_pos, d, tuple(dims))
        lam = table["wavelengths"]
        labels = [tr(f"{NS}.wave_name", j=j, kind="sin" if j % 2 == 0 else "cos", lam=float(lam[j])) for j in dims]
        figure(waves(x_smooth, dict(zip(labels, smooth.T, strict=True)), x_int, dict(zip(labels, samples.T, strict=True)),
                     title=tr(f"{NS}.waves_fig"), x_title=tr(f"{NS}.position"), y_title="PE"), key=f"{NS}.waves")

    with slot["offsets"]:
        # Live (issue 25): the figure at every start p is sent with the page; its own slider moves it.
        starts = list(range(n_pos - 1))
        live_figure(lambda: offset_frames(n_pos, d, starts, dev), ("a3.offsets", n_pos, d, dev, lang()),
                    f"{NS}.offsets", f"{NS}.p", starts, min(20, n_pos - 2), tr(f"{NS}.p_label"))
        st.caption(tr(f"{NS}.offset_caption", half=d // 2))

    with slot["input_controls"]:
        line = text_box(f"{NS}.line", DEFAULT_LINE, 32, tr(f"{NS}.line_label"))
    line_text = line.text if not line.empty else DEFAULT_LINE
    block = input_demo(line_text, d, seed, dev)
    line_tokens = block["tokens"]
    with slot["input"]:
        figure(side_by_side([(tr(f"{NS}.emb"), block["emb"], line_tokens), ("PE", block["pe"], line_tokens),
                             (tr(f"{NS}.sum"), block["x0"], line_tokens)],
                            names=(tr(f"{NS}.token"), tr(f"{NS}.dimension"), tr(f"{NS}.value")),
                            height=max(320, 140 + 24 * len(line_tokens)), shared=False), key=f"{NS}.input")
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
        shapes_table([("E[ids]", f"({len(line_tokens)}, {d})"), (f"PE[:{len(line_tokens)}]", f"({len(line_tokens)}, {d})"),
                      ("x₀ = E[ids] + PE", f"({len(line_tokens)}, {d})")])


encoding_sections()

try_this(NS, [("try1", 0), ("try2", 2), ("try3", 1)])
