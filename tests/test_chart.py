"""ui.chart: plotly.js published for the server, figures carried whole, stable element ids."""
from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
from streamlit import config

from tests.apptest_util import (
    chart_keys,
    chart_spec,
    charts,
    component_data,
    decode,
    figure_by_key,
    open_lesson,
    trace_array,
)
from ui import chart
from viz.attention import heatmap
from viz.common import make


def test_publish_copies_the_wheels_plotly_once(tmp_path):
    target = chart.publish_plotly_js(tmp_path / "static")
    assert target.read_bytes()[:200] == chart.PLOTLY_JS.read_bytes()[:200]
    assert target.stat().st_size == chart.PLOTLY_JS.stat().st_size
    assert chart.publish_plotly_js(tmp_path / "static") == target      # cached: no second copy
    assert not list((tmp_path / "static").glob("*.tmp"))


def test_a_chart_element_carries_a_loader_and_the_module_is_published_once(tmp_path):
    """Issue 39: the chart's code (~110 KB) is a static file named by its digest; each element's
    ``js`` is a loader of a few hundred bytes that imports it (a browser evaluates it once a page)."""
    target = chart.publish_chart_js(tmp_path / "static")
    assert target.name == chart.CHART_MODULE and target.read_text(encoding="utf-8") == chart._JS
    assert len(chart._JS) > 50_000 and chart.publish_chart_js(tmp_path / "static") == target
    loader = chart.loader_js(chart.CHART_MODULE)
    assert len(loader.encode()) < 1_000 and f'"/app/static/{chart.CHART_MODULE}"' in loader
    assert chart.CHART_MODULE == chart.module_name(chart._JS, "anatomy-chart")
    assert chart.module_name(chart._JS + " ", "anatomy-chart") != chart.CHART_MODULE   # a new version, a new name
    at = open_lesson("b1_attention.py", "en")
    assert {el.proto.js_content for el in charts(at)} == {loader}
    from ui import classroom  # noqa: PLC0415 (the presenter's bar likewise)

    bar = [el for el in at.get("bidi_component") if el.proto.component_name == classroom.NAME]
    assert bar and all(el.proto.js_content == chart.loader_js(classroom.MODULE) for el in bar)
    assert (chart.static_dir() / classroom.MODULE).read_text(encoding="utf-8") == classroom._JS


def test_plotly_url_follows_the_base_path():
    assert chart.plotly_url().startswith("/app/static/plotly.min.js?v=")
    config.set_option("server.baseUrlPath", "/course/")
    try:
        assert chart.plotly_url().startswith("/course/app/static/plotly.min.js")
    finally:
        config.set_option("server.baseUrlPath", "")


def test_element_keeps_its_id_and_carries_the_figure():
    at = open_lesson("b1_attention.py", "en")
    ids = chart_keys(at)
    assert any(k.endswith("-b1.weights") for k in ids)
    before = figure_by_key(at, "b1.weights")
    at.slider(key="b1.d_k").set_value(64).run()
    assert chart_keys(at) == ids                       # same elements: the browser redraws in place
    after = figure_by_key(at, "b1.weights")
    assert after["layout"]["title"]["text"] != before["layout"]["title"]["text"]
    w = trace_array(after, 4, "z")                     # B1's panels: Q, K, V, scores, weights, output
    assert w.shape == (11, 11) and np.allclose(w.sum(-1), 1, atol=1e-5)
    for el in charts(at):                              # the revision names the figure exactly
        data = component_data(el)
        assert data["revision"] == f"{chart.zlib.crc32(chart_spec(el).encode()):08x}"
        assert data["plotly"].endswith("plotly.min.js?v=" + chart.plotly.__version__)


def test_arrays_travel_as_float32():
    """The figure JSON keeps numpy float32 arrays as typed arrays (base64), not number lists."""
    fig = heatmap(np.eye(3, dtype=np.float32), list("abc"), list("abc"))
    z = json.loads(chart.figure_json(fig)[0])["data"][0]["z"]
    assert z["dtype"] == "f4" and "bdata" in z
    assert decode(z).tolist() == np.eye(3).tolist()


def test_figure_json_is_plotlys_own_encoding():
    """viz.common.Figure (plain dicts) and plotly's Figure of the same dicts give the same JSON
    (numeric arrays typed, NaN as null, strings and ints as they were; None left out)."""
    data = [{"type": "heatmap", "z": np.array([[0.5, np.nan], [1, 2]], dtype=np.float32),
             "x": ["a", "b"], "y": np.array(["c", "d"]), "zmin": None, "zmax": np.float32(2)},
            {"type": "scatter", "x": np.arange(3), "y": [1.0, float("nan"), 3.0], "mode": "lines",
             "line": {"width": 2, "dash": None}}]
    layout = {"height": 300, "xaxis": {"range": np.array([0.0, 1.0])}, "shapes": [{"type": "line", "x0": 0}]}
    ours = json.loads(chart.figure_json(make([dict(t) for t in data], dict(layout)))[0])
    plotlys = json.loads(chart.figure_json(go.Figure(make([dict(t) for t in data], dict(layout)),
                                                    _validate=False))[0])

    def unset(obj):   # plotly.js reads a null attribute as unset; ours leaves it out
        if isinstance(obj, dict):
            return {k: unset(v) for k, v in obj.items() if v is not None}
        return [unset(v) for v in obj] if isinstance(obj, list) else obj

    assert ours == unset(plotlys)
