"""The shared figure look: what keeps a redraw to one drawing, and what the browser is sent."""
import numpy as np
import pytest

from tests.apptest_util import decode
from viz.attention import heatmap, lines
from viz.common import _axis_keys, _revision, line_mode, make


def test_no_template_object_and_a_data_revision():
    fig = heatmap(np.eye(3, dtype=np.float32), list("abc"), list("abc"), title="t").to_plotly_json()
    layout = fig["layout"]
    assert not isinstance(layout.get("template"), dict) or not layout["template"].get("layout")
    assert layout["paper_bgcolor"] == "white" and layout["xaxis"]["ticklabeloverflow"] == "allow"
    assert len(layout["datarevision"]) == 8


def test_revision_follows_the_data():
    a = [{"type": "heatmap", "z": np.eye(3, dtype=np.float32)}]
    b = [{"type": "heatmap", "z": np.eye(3, dtype=np.float32) * 2}]
    assert _revision(a) == _revision([dict(a[0])])
    assert _revision(a) != _revision(b)
    assert _revision([{"type": "bar", "y": ["x", "y"]}]) != _revision([{"type": "bar", "y": ["x", "z"]}])


def test_revision_sees_an_array_inside_a_dict_whole():
    """A marker's colours (an array in a dict): numpy's repr shortens a long array with "...", so a
    change in its middle once left the revision as it was, and plotly.js kept the old colours."""
    colours = np.arange(2000, dtype=np.float32)
    changed = colours.copy()
    changed[1000] = -1
    a = [{"type": "scatter", "marker": {"color": colours}}]
    assert _revision(a) != _revision([{"type": "scatter", "marker": {"color": changed}}])
    assert _revision(a) == _revision([{"type": "scatter", "marker": {"color": colours.copy()}}])
    assert _revision([{"x": [np.zeros(3)]}]) != _revision([{"x": [np.ones(3)]}])


def test_every_axis_gets_the_look():
    assert _axis_keys([{"xaxis": "x2", "yaxis": "y3"}], {"xaxis4": {}}) == {"xaxis", "yaxis", "xaxis2", "yaxis3", "xaxis4"}
    fig = make([{"type": "bar", "x": ["a"], "y": [1], "xaxis": "x2", "yaxis": "y2"}]).to_plotly_json()
    assert fig["layout"]["yaxis2"]["gridcolor"] == fig["layout"]["yaxis"]["gridcolor"]


def test_markers_only_on_short_lines():
    assert line_mode(40) == "lines+markers" and line_mode(41) == "lines"
    short = lines([1, 2, 3], {"a": np.ones(3)}).to_plotly_json()["data"][0]
    long = lines(np.arange(100), {"a": np.ones(100)}).to_plotly_json()["data"][0]
    assert short["mode"] == "lines+markers" and long["mode"] == "lines"
    assert lines(np.arange(100), {"a": np.ones(100)}, markers=True).to_plotly_json()["data"][0]["mode"] == "lines+markers"


def test_token_axes_name_every_token_up_to_48():
    """Issue 11: every token labelled up to at least 48 tokens, the font smaller as they get many,
    the chart taller so each row keeps room for its label."""
    for n, size in ((16, 14), (17, 12), (48, 9)):
        names = [chr(0x4E00 + i) for i in range(n)]
        fig = heatmap(np.eye(n, dtype=np.float32), names, names).to_plotly_json()
        for axis in ("xaxis", "yaxis"):
            assert fig["layout"][axis]["dtick"] == 1 and fig["layout"][axis]["tickfont"]["size"] == size
        assert fig["layout"]["height"] >= (size + 4) * n
    fig = heatmap(np.eye(49, dtype=np.float32), [str(i) for i in range(49)], [str(i) for i in range(49)]).to_plotly_json()
    assert "dtick" not in fig["layout"]["xaxis"]


def test_masked_cells_drawn_in_their_own_colour():
    """Issue 11: a cell the mask closed is painted by a layer of its own, not the white of 0."""
    from viz.attention import MASKED_COLOUR
    from viz.masks import masked_scores
    closed = ~np.tril(np.ones((4, 4), bool))
    fig = heatmap(np.where(closed, 0.0, 0.25).astype(np.float32), list("abcd"), list("abcd"),
                  masked=closed).to_plotly_json()
    layer = fig["data"][1]
    assert layer["colorscale"][0][1] == MASKED_COLOUR and layer["hoverinfo"] == "skip"
    assert np.array_equal(np.isnan(decode(layer["z"])), ~closed)
    scores = np.where(closed, -np.inf, 1.0).astype(np.float32)
    fig = masked_scores(scores, list("abcd"), list("abcd"), title="t", hover_names=("q", "k", "s")).to_plotly_json()
    assert np.isnan(decode(fig["data"][0]["z"])[closed]).all()
    assert (decode(fig["data"][1]["z"])[closed] == 1).all() and fig["data"][1]["text"][0][1] == "−∞"


def test_tilted_labels_get_room_below():
    """A figure that tilts its labels itself (tickangle) gets the slant's room even with few labels."""
    data = [{"type": "bar", "x": [f"{i}·attn" for i in range(4)], "y": [1, 2, 3, 4]}]
    flat = make(data, {"xaxis": {"tickangle": 0}}).to_plotly_json()["layout"]["margin"]["b"]
    tilted = make(data, {"xaxis": {"tickangle": -45}}).to_plotly_json()["layout"]["margin"]["b"]
    assert tilted == flat + 6 * 6            # six half-em units of "0·attn"


def test_long_titles_break_in_two_lines():
    """Issue 11: plotly never wraps a title; one wider than a half-page chart is split."""
    from viz.common import title_lines
    assert title_lines("Attention weights, d_k = 8") == "Attention weights, d_k = 8"
    en = title_lines("X: 11 tokens × 128 dimensions (trained course model, table «embed»)")
    assert en == "X: 11 tokens × 128 dimensions<br>(trained course model, table «embed»)"
    zh = title_lines("X：11 个词元 × 128 维（训练好的课程模型，表「embed」）")
    assert zh.split("<br>")[1].startswith("（")
    fig = make([], None, en).to_plotly_json()
    assert fig["layout"]["title"]["text"] == en and fig["layout"]["margin"]["t"] == 90


def test_pca_labels_of_near_points_go_to_different_sides():
    """Issue 11 (A2's PCA labels wrote over each other): labels of close points are spread."""
    from viz.embeddings import label_positions
    extent = np.array([[-1.0, -1.0], [1.0, 1.0]])
    assert label_positions(np.array([[0, 0], [0, 0.01]]), extent) == ["bottom center", "top center"]
    crowd = np.array([[0, 0], [0.01, 0], [0, 0.01], [0.01, 0.01]])
    assert len(set(label_positions(crowd, extent))) == 4
    far = np.array([[-0.9, -0.9], [0.9, 0.9]])
    assert label_positions(far, extent) == ["top center", "top center"]


def test_steady_margins_one_plot_area_for_every_frame():
    """A live slider's frames get the widest margins and the tallest height, and no frame's plot gets
    shorter than it was: D3's legend names wrap to one more row at some batch sizes."""
    from viz.common import steady_margins
    from viz.roofline import roofline_chart

    def frame(b: int, span=()):
        points = [{"name": f"prefill: 4096 tokens × {b}", "intensity": 4000.0 * b ** 0.5, "tflops": 300.0},
                  {"name": f"decode: 1 token × {b}, T = 4096", "intensity": 1.0 * b, "tflops": 2.0 * b}]
        return roofline_chart(312, 2039, points, title="t", x_title="x", y_title="y", roof_name="roofline",
                              ridge_text="r", span=span)

    alone = [frame(b) for b in (1, 512)]
    assert alone[0]["layout"]["height"] != alone[1]["layout"]["height"]       # the case this is for
    assert alone[0]["layout"]["xaxis"]["range"] != alone[1]["layout"]["xaxis"]["range"]
    span = [4000.0 * 512 ** 0.5, 512.0, 4000.0, 1.0]
    figs = steady_margins([frame(b, span) for b in (1, 512)])
    layouts = [f["layout"] for f in figs]
    assert layouts[0]["height"] == layouts[1]["height"] == max(f["layout"]["height"] for f in alone)
    assert layouts[0]["margin"] == layouts[1]["margin"]
    assert layouts[0]["xaxis"]["range"] == layouts[1]["xaxis"]["range"]      # span: one x axis
    for f, before in zip(figs, alone, strict=True):
        plot = lambda lay: lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]   # noqa: E731
        assert plot(f["layout"]) >= plot(before["layout"])


def test_hover_names_are_never_cut():
    """Every figure's hover label shows a trace's whole name (plotly cuts at 15 characters by
    default: "q·k (not sca…" in B1), also where a layout brings a hover label of its own."""
    name = "q·k (not scaled by 1/√d_k)"
    assert make([{"type": "scatter", "y": [1, 2], "name": name}])["layout"]["hoverlabel"]["namelength"] == -1
    own = make([{"type": "bar", "y": [1]}], {"hoverlabel": {"bgcolor": "black"}})["layout"]["hoverlabel"]
    assert own["namelength"] == -1 and own["bgcolor"] == "black"


def test_validation_once_per_shape_still_refuses_a_bad_value(monkeypatch):
    """viz.common._validate (tests validate every figure): plotly's validation runs once per figure
    shape, and a value plotly would refuse is still refused after its shape's good twin passed."""
    from viz import common
    go = common.go
    monkeypatch.setattr(common, "_ACCEPTED", set())
    built, figure = [], go.Figure
    monkeypatch.setattr(common.go, "Figure", lambda fig: built.append(fig) or figure(fig))
    for m in range(5):                       # five frames of one slider: new numbers, new titles
        common._validate([{"type": "scatter", "x": np.arange(m + 1), "y": np.ones(m + 1) * m,
                           "name": f"m = {m}"}], {"title": {"text": f"frame {m}"}})
    assert len(built) == 1
    trace = {"type": "heatmap", "z": np.eye(2)}      # validated on a copy: the figure sent is the same
    common._validate([trace], {"title": {"text": "t"}})
    assert list(trace) == ["type", "z"]
    for bad in ({"marker": {"size": [-1.0, 2.0]}}, {"opacity": 2}, {"mode": "lines+bogus"},
                {"marker": {"color": ["not a colour"]}}, {"bogus": 1}):
        with pytest.raises(ValueError):
            common._validate([{"type": "scatter", "x": [1, 2], "y": [1, 2], **bad}], {})
