"""Pictures of the encoder-decoder (C1, B4): both stacks as a diagram, a sub-layer's input and
output, LayerNorm's statistics per token, the softmax of each decoding step."""
from __future__ import annotations

import numpy as np

from viz.attention import token_font
from viz.common import DIVERGING_SCALE, WEIGHTS_SCALE, Figure, array, label, make, unique_labels

SELECTED = "#ff7f0e"
# The chosen part's name on SELECTED: white there was 2.5:1, this 7.5:1 (WCAG AA asks 4.5:1)
SELECTED_TEXT = "#111111"
COLORS = {"attn": "#fdf0e1", "norm": "#e8f1fa", "ffn": "#e9f6ea", "io": "#f2f2f2"}
# The date model's special tokens as one glyph each on an axis, in a colour of their own: written
# out ("<eos>", five characters) they met their one-character neighbours ("6", "∅"). The hover
# still names them in full; the lessons' captions give the key (c1.marks, b4.marks).
SPECIAL_MARKS = {"<bos>": "►", "<eos>": "■", "<pad>": "∅", "<unk>": "�"}
MARK_COLOR = "#8e44ad"
_MARKED = {label(token): mark for token, mark in SPECIAL_MARKS.items()}


def mark(value: str) -> str:
    """One axis category as its tick text: a special token (as ``unique_labels`` writes it, maybe
    with zero-width marks) becomes its coloured glyph, any other label stays as it is.

    Example: mark("&lt;eos&gt;") -> '<span style="color:#8e44ad">■</span>'; mark("6") -> "6"
    """
    glyph = _MARKED.get(value.rstrip("\u200b"))
    return value if glyph is None else f'<span style="color:{MARK_COLOR}">{glyph}</span>'


def token_ticks(values: list[str], every: int = 1) -> dict:
    """Axis settings that name every ``every``-th category of ``values`` (from ``unique_labels``),
    the special tokens by their marks (``SPECIAL_MARKS``).

    Example: token_ticks(["&lt;bos&gt;", "2"]) -> {"tickmode": "array", "tickvals": [...], "ticktext": ['<span ...>▸</span>', "2"]}
    """
    shown = list(values)[::max(1, every)]
    return {"tickmode": "array", "tickvals": shown, "ticktext": [mark(v) for v in shown]}


def with_marks(fig: Figure, axis: str = "yaxis") -> Figure:
    """``fig`` (one category axis of tokens, from another module: viz.block's tensor_heatmap) with
    the special tokens on ``axis`` drawn as their marks. A new layout; the data is shared."""
    trace = fig["data"][0]
    values = trace.get("y" if axis.startswith("y") else "x")
    if not (isinstance(values, list) and values and isinstance(values[0], str)):
        return fig                                 # pooled rows are numbered: no tokens to mark
    layout = {**fig["layout"], axis: {**fig["layout"].get(axis, {}), **token_ticks(values)}}
    return Figure(data=fig["data"], layout=layout)


def sublayers(stack: str) -> list[str]:
    """The sub-layers of one layer, bottom to top, by their trace names.

    Example: sublayers("encoder") -> ["self_attn", "self_attn_norm", "ffn", "ffn_norm"]
    """
    middle = ["cross_attn", "cross_attn_norm"] if stack == "decoder" else []
    return ["self_attn", "self_attn_norm", *middle, "ffn", "ffn_norm"]


def _kind(part: str) -> str:
    return "norm" if part.endswith("norm") else "ffn" if part == "ffn" else "attn"


def stacks_diagram(selected: str, n_layers: int, labels: dict[str, str], *, height: int = 560) -> Figure:
    """The encoder (left) and the decoder (right), data flowing upwards, each layer a column of
    sub-layer boxes. ``selected`` is a dotted name ("decoder.layers.1.cross_attn"), drawn orange.
    ``labels`` holds the translated text of every part ("self_attn", "self_attn_norm",
    "cross_attn", "ffn", "masked", "embed_src", "embed_tgt", "linear", "encoder", "decoder").
    The encoder's output C goes to every cross-attention box (blue dotted line); a residual
    (skip) arrow runs from each sub-layer's input, round its side, into its Add & Norm.
    The last trace holds invisible points across every box with its dotted name as customdata:
    a click anywhere on a box names it (lessons/c1: click a sub-layer).

    Boxes are filled outlines, one trace per colour, not layout shapes: plotly.js lays out
    every shape again on each redraw (30 shapes cost more than the rest of the page)."""
    box_h, gap, layer_gap = 0.8, 0.25, 0.55
    xs = {"encoder": 1.75, "decoder": 6.05}
    names, px, py, texts = [], [], [], []
    outlines: dict[str, tuple[list, list]] = {kind: ([], []) for kind in (*COLORS, "selected", "layer")}

    def outline(kind, x0, x1, y0, y1):
        xs_, ys_ = outlines[kind]
        xs_ += [x0, x1, x1, x0, x0, None]
        ys_ += [y0, y0, y1, y1, y0, None]
    tops, cross_y = {}, []

    cx, cy, cnames = [], [], []                   # click points: seven across every box
    rx, ry, heads_x, heads_y = [], [], [], []     # residual arrows and their heads

    def box(name, x, y, text, kind, w=3.1):
        outline("selected" if name == selected else kind, x - w / 2, x + w / 2, y, y + box_h)
        names.append(name)
        px.append(x)
        py.append(y + box_h / 2)
        texts.append(text)
        for f in (-0.43, -0.29, -0.14, 0.0, 0.14, 0.29, 0.43):
            cx.append(x + f * w)
            cy.append(y + box_h / 2)
            cnames.append(name)

    def residual(x, y_from, y_to):
        # From the sub-layer's input (just below its box), up its right side, into the Add.
        side = x + 1.64
        rx.extend([x + 0.9, x + 0.9, side, side, x + 1.55, None])
        ry.extend([y_from - 0.02, y_from - gap / 2, y_from - gap / 2, y_to, y_to, None])
        heads_x.append(x + 1.58)
        heads_y.append(y_to)

    for stack, x in xs.items():
        y = 0.0
        box(f"{stack}.embed", x, y, labels["embed_src" if stack == "encoder" else "embed_tgt"], "io")
        y += box_h + layer_gap
        for i in range(n_layers):
            y0 = y
            for part in sublayers(stack):
                text = labels["masked"] if (stack, part) == ("decoder", "self_attn") else labels[part]
                box(f"{stack}.layers.{i}.{part}", x, y, text, _kind(part))
                if not part.endswith("norm"):
                    residual(x, y, y + box_h + gap + box_h / 2)
                if part == "cross_attn":
                    cross_y.append(y + box_h / 2)
                y += box_h + gap
            outline("layer", x - 1.7, x + 1.7, y0 - 0.12, y - gap + 0.12)
            names.append(f"{stack}.layers.{i}")
            px.append(x - 1.95 if stack == "encoder" else x + 1.95)
            py.append((y0 + y - gap) / 2)
            texts.append(str(i))
            y += layer_gap - gap
        tops[stack] = y
    box("logits", xs["decoder"], tops["decoder"], labels["linear"], "io")
    top = max(tops.values()) + box_h + 0.5
    # The encoder's output C goes across to every cross-attention (data flows upwards).
    ax, ay = [], []
    c_x, c_y = xs["encoder"], tops["encoder"]
    for y in cross_y:
        ax += [c_x, c_x + 2.15, c_x + 2.15, xs["decoder"] - 1.55, None]
        ay += [c_y - 0.1, c_y + 0.1, y, y, None]
    data = [{"type": "scatter", "mode": "lines", "x": outlines["layer"][0], "y": outlines["layer"][1],
             "hoverinfo": "skip", "showlegend": False, "line": {"color": "#bbb", "dash": "dash", "width": 1}}]
    for kind, color in (*COLORS.items(), ("selected", SELECTED)):
        chosen = kind == "selected"
        data.append({"type": "scatter", "mode": "lines", "x": outlines[kind][0], "y": outlines[kind][1],
                     "fill": "toself", "fillcolor": color, "hoverinfo": "skip", "showlegend": False,
                     "line": {"color": "#333" if chosen else "#888", "width": 3 if chosen else 1}})
    data += [
        {"type": "scatter", "mode": "lines", "x": ax, "y": ay, "hoverinfo": "skip", "showlegend": False,
         "line": {"color": "#1f77b4", "width": 2, "dash": "dot"}},
        {"type": "scatter", "mode": "text", "x": list(xs.values()) + [c_x + 2.35], "y": [top - 0.2] * 2 + [c_y + 0.35],
         "text": [f"<b>{labels['encoder']}</b>", f"<b>{labels['decoder']}</b>", "C"],
         "textfont": {"size": 15, "color": ["#333", "#333", "#1f77b4"]}, "hoverinfo": "skip", "showlegend": False},
        {"type": "scatter", "mode": "lines", "x": rx, "y": ry, "hoverinfo": "skip", "showlegend": False,
         "line": {"color": "#555", "width": 1.5}},
        {"type": "scatter", "mode": "markers", "x": heads_x, "y": heads_y, "hoverinfo": "skip",
         "showlegend": False, "marker": {"symbol": "triangle-left", "size": 8, "color": "#555"}},
        {"type": "scatter", "mode": "text", "x": px, "y": py, "text": texts, "hoverinfo": "skip",
         "textfont": {"size": 12, "color": [SELECTED_TEXT if n == selected else "#222" for n in names]},
         "showlegend": False},
        {"type": "scatter", "mode": "markers", "x": cx, "y": cy, "customdata": cnames,
         "hovertemplate": "%{customdata}<extra></extra>", "marker": {"size": 24, "opacity": 0},
         "showlegend": False},
    ]
    layout = {"dragmode": False, "margin": {"l": 4, "r": 4, "t": 4, "b": 4},
              "xaxis": {"range": [-0.35, 8.15], "visible": False, "fixedrange": True},
              "yaxis": {"range": [-0.4, top + 0.1], "visible": False, "fixedrange": True}}
    return make(data, layout, None, height)


def in_out(before, after, tokens: list[str], *, titles: tuple[str, str], hover_names: tuple[str, str, str],
           height: int = 360) -> Figure:
    """Two (N, D) matrices side by side on one axis pair: a sub-layer's input and its output,
    one row per token (rows labelled), columns numbered 0..D-1 under each panel. Diverging
    colours centred on 0, one scale for both panels so their sizes compare by eye."""
    a, b = array(before), array(after)
    n, d = a.shape
    gap = max(3.0, 0.2 * d)
    lim = float(max(np.abs(a).max(), np.abs(b).max(), 1e-6))
    rows = unique_labels(tokens)
    tok, col, val = hover_names
    data = [{"type": "heatmap", "z": z, "x": array(i * (d + gap) + np.arange(d)), "y": rows,
             "zmin": -lim, "zmax": lim, "zmid": 0.0, "colorscale": DIVERGING_SCALE, "showscale": i == 1,
             "customdata": np.tile(np.arange(d), (n, 1)),
             "hovertemplate": f"{titles[i]}<br>{tok}: %{{y}}<br>{col}: %{{customdata}}<br>{val}: %{{z:.3f}}"
                              "<extra></extra>"}
            for i, z in enumerate((a, b))]
    notes = [{"text": t, "x": i * (d + gap) + (d - 1) / 2, "y": 1.0, "xref": "x", "yref": "paper",
              "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 15}}
             for i, t in enumerate(titles)]
    layout = {"annotations": notes, "margin": {"t": 34},
              "xaxis": {"showticklabels": False, "ticks": "",   # hover names the dimension
                        "showgrid": False, "zeroline": False, "range": [-0.5, 2 * d + gap - 0.5]},
              "yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 13}, **token_ticks(rows)}}
    return make(data, layout, None, height)


def norm_stats(tokens: list[str], stats: dict[str, np.ndarray], *, names: tuple[str, str, str],
               titles: tuple[str, str], height: int = 340) -> Figure:
    """Each token's mean (left panel) and variance (right panel) over its D entries:
    before the norm (x + sub-layer), after standardising, and after the gain and bias.
    Traces 0-2 are means, 3-5 variances, in that order."""
    x = unique_labels(tokens)
    data = []
    for panel, stat in enumerate(("mean", "var")):
        for k, (stage, symbol) in enumerate((("before", "circle"), ("standard", "diamond"), ("after", "x"))):
            data.append({"type": "scatter", "mode": "markers", "x": x, "y": array(stats[f"{stat}_{stage}"]),
                         "name": names[k], "legendgroup": stage, "showlegend": panel == 0,
                         "marker": {"symbol": symbol, "size": 9, "color": ["#7f7f7f", "#d62728", "#1f77b4"][k]},
                         "xaxis": "x" if panel == 0 else "x2", "yaxis": "y" if panel == 0 else "y2"})
    notes = [{"text": t, "x": 0.22 + 0.56 * i, "y": 1.0, "xref": "paper", "yref": "paper", "xanchor": "center",
              "yanchor": "bottom", "showarrow": False, "font": {"size": 15}} for i, t in enumerate(titles)]
    # Every token named while they fit (one glyph in ~12 px at 32 tokens), else every other one.
    axis = {"type": "category", "tickangle": 0, "tickfont": {"size": 11}, **token_ticks(x, 1 if len(x) <= 26 else 2)}
    layout = {"annotations": notes, "margin": {"t": 70},
              "legend": {"orientation": "h", "y": 1.12, "yanchor": "bottom"},
              "xaxis": {**axis, "domain": [0, 0.44]}, "xaxis2": {**axis, "domain": [0.56, 1], "anchor": "y2"},
              "yaxis": {"zeroline": True}, "yaxis2": {"anchor": "x2", "zeroline": True, "rangemode": "tozero"}}
    return make(data, layout, None, height)


def step_probs(vocab: list[str], probs, chosen: int, *, title: str | None, y_title: str,
               forced=None, names: tuple[str, str] = ("", ""), height: int = 300) -> Figure:
    """The softmax over the output vocabulary at one decoding step; the chosen character in orange.
    ``forced``: the teacher-forced pass's softmax at the same position, drawn as black marks on
    the bars (trace 1), so the two can differ where the fed prefix differs."""
    p = array(probs)
    x = unique_labels(vocab)                      # "<bos>", "<eos>" as C1 and B4 write them
    colors = [SELECTED if i == chosen else "#1f77b4" for i in range(len(p))]
    data = [{"type": "bar", "x": x, "y": p, "marker": {"color": colors}, "name": names[0],
             "hovertemplate": "%{x}: %{y:.4f}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "tickangle": 0, "tickfont": {"size": token_font(len(x))},
                        **token_ticks(x)},
              "yaxis": {"range": [0, 1.05], "title": {"text": y_title}},
              "bargap": 0.15, "showlegend": False}
    if forced is not None:
        data.append({"type": "scatter", "mode": "markers", "x": x, "y": array(forced), "name": names[1],
                     "marker": {"symbol": "line-ew", "size": 22, "line": {"width": 3, "color": "#111"}},
                     "hovertemplate": f"{names[1]}<br>%{{x}}: %{{y:.4f}}<extra></extra>"})
        layout.update(showlegend=True, legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
                      margin={"t": 40})
    return make(data, layout, title, height)


def forcing_grid(probs, rows: list[str], vocab: list[str], step: int, *, title: str | None,
                 hover_names: tuple[str, str, str], height: int = 380) -> Figure:
    """Teacher forcing: the softmax of every position at once, (N, V), one row per character the
    decoder read; the row of the chosen step is framed."""
    z = array(probs)
    n, v = z.shape
    tok, ch, val = hover_names
    x, y = unique_labels(vocab), unique_labels(rows)
    data = [{"type": "heatmap", "z": z, "x": x, "y": y, "zmin": 0, "zmax": 1,
             "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1,
             "hovertemplate": f"{tok}: %{{y}}<br>{ch}: %{{x}}<br>{val}: %{{z:.4f}}<extra></extra>"}]
    frame = {"type": "rect", "xref": "x", "yref": "y", "x0": -0.5, "x1": v - 0.5, "y0": step - 0.5,
             "y1": step + 0.5, "line": {"color": SELECTED, "width": 3}}
    layout = {"shapes": [frame], "xaxis": {"side": "top", "type": "category", "tickangle": 0,
                                           "tickfont": {"size": token_font(len(x))}, **token_ticks(x)},
              "yaxis": {"autorange": "reversed", "type": "category", **token_ticks(y)},
              "margin": {"t": 120 if title else 70}}
    return make(data, layout, title, height)


def score_grid(scores, *, row_names: list[str], col_names: list[str], title: str,
               hover_names: tuple[str, str, str], height: int = 240) -> Figure:
    """A small (rows, cols) table of numbers in 0..1, the value written in each cell (layers x heads)."""
    z = array(scores)
    r, c, val = hover_names
    data = [{"type": "heatmap", "z": z, "x": col_names, "y": row_names, "zmin": 0, "zmax": 1,
             "colorscale": WEIGHTS_SCALE, "xgap": 2, "ygap": 2, "texttemplate": "%{z:.2f}",
             "hovertemplate": f"{r}: %{{y}}<br>{c}: %{{x}}<br>{val}: %{{z:.3f}}<extra></extra>"}]
    layout = {"xaxis": {"type": "category", "side": "top", "tickangle": 0},
              "yaxis": {"type": "category", "autorange": "reversed"}, "margin": {"t": 80}}
    return make(data, layout, title, height)


def alignment_map(weights, rows: list[str], cols: list[str], *, hover_names: tuple[str, str, str],
                  height: int = 380) -> Figure:
    """One (N_target, N_source) weight matrix, every row and column named (dtick 1, level labels):
    the target characters down the left, the source characters along the top."""
    z = array(weights)
    q, k, val = hover_names
    x, y = unique_labels(cols), unique_labels(rows)
    data = [{"type": "heatmap", "z": z, "x": x, "y": y, "zmin": 0, "zmax": 1,
             "colorscale": WEIGHTS_SCALE, "xgap": 1, "ygap": 1,
             "hovertemplate": f"{q}: %{{y}}<br>{k}: %{{x}}<br>{val}: %{{z:.3f}}<extra></extra>"}]
    layout = {"xaxis": {"side": "top", "type": "category", "tickangle": 0,
                        "tickfont": {"size": max(11, min(13, token_font(len(x))))},   # 11 px at least: read on a laptop
                        **token_ticks(x)},
              "yaxis": {"autorange": "reversed", "type": "category", "tickfont": {"size": 13}, **token_ticks(y)},
              "margin": {"t": 60}}
    return make(data, layout, None, height)


def head_strip(panels, titles: list[str], *, height: int = 200) -> Figure:
    """Small (N, S) weight maps side by side on one axis pair, unlabelled: the shape of every
    head at a glance (the large map above names the characters). One trace per panel."""
    w = array(panels)
    h, n, s = w.shape
    gap = max(2.0, 0.15 * s)
    data = [{"type": "heatmap", "z": w[i], "x0": i * (s + gap), "dx": 1, "y0": 0, "dy": 1, "zmin": 0, "zmax": 1,
             "colorscale": WEIGHTS_SCALE, "showscale": False,
             "hovertemplate": f"{titles[i]}<br>%{{z:.3f}}<extra></extra>"} for i in range(h)]
    notes = [{"text": titles[i], "x": i * (s + gap) + (s - 1) / 2, "y": 1.0, "xref": "x", "yref": "paper",
              "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 13}} for i in range(h)]
    layout = {"annotations": notes, "margin": {"t": 28, "l": 10, "b": 10},
              "xaxis": {"visible": False, "range": [-0.5, h * (s + gap) - gap - 0.5]},
              "yaxis": {"visible": False, "autorange": "reversed"}}
    return make(data, layout, None, height)
