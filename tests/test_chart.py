"""ui.chart: plotly.js published for the server, figures carried whole, stable element ids."""
from __future__ import annotations

import json

import numpy as np
from streamlit import config

from tests.apptest_util import chart_keys, chart_spec, charts, figure_by_key, open_lesson, trace_array
from ui import chart
from viz.attention import heatmap


def test_publish_copies_the_wheels_plotly_once(tmp_path):
    target = chart.publish_plotly_js(tmp_path / "static")
    assert target.read_bytes()[:200] == chart.PLOTLY_JS.read_bytes()[:200]
    assert target.stat().st_size == chart.PLOTLY_JS.stat().st_size
    assert chart.publish_plotly_js(tmp_path / "static") == target      # cached: no second copy
    assert not list((tmp_path / "static").glob("*.tmp"))


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
        data = json.loads(el.proto.json)
        assert data["revision"] == f"{chart.zlib.crc32(chart_spec(el).encode()):08x}"
        assert data["plotly"].endswith("plotly.min.js?v=" + chart.plotly.__version__)


def test_arrays_travel_as_float32():
    """The figure JSON keeps numpy float32 arrays as typed arrays (base64), not number lists."""
    fig = heatmap(np.eye(3, dtype=np.float32), list("abc"), list("abc"))
    z = json.loads(chart.pio.to_json(fig, validate=False))["data"][0]["z"]
    assert z["dtype"] == "f4" and "bdata" in z
