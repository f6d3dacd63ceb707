"""ui.chart.figure_json: one figure's JSON written once for every session, never a stale one."""
from __future__ import annotations

import numpy as np

from ui.chart import _to_json, figure_json
from viz.common import make


def _fig(z, title="Weights", text=None, extra=None):
    traces = [{"type": "heatmap", "z": z, "x": ["a", "b"], "y": ["c", "d"]}]
    if text is not None:
        traces.append({"type": "scatter", "x": [0, 1], "y": [1, 0], "text": text, "customdata": extra})
    return make(traces, {"xaxis": {"title": {"text": "keys"}}}, title=title)


def test_equal_figures_share_one_json_and_it_is_plotlys_own():
    z = np.arange(4, dtype=np.float32).reshape(2, 2)
    first, rev1 = figure_json(_fig(z.copy()))
    second, rev2 = figure_json(_fig(z.copy()))
    assert second is first and rev1 == rev2            # built once, shared
    assert first == _to_json(_fig(z.copy()))


def test_any_change_in_data_or_layout_gives_a_new_json():
    z = np.arange(4, dtype=np.float32).reshape(2, 2)
    base, rev = figure_json(_fig(z))
    z2 = z.copy()
    z2[1, 1] = 3.5
    changed = [
        _fig(z2),                                         # one value of an array
        _fig(z, title="Weights "),                        # one character of the layout
        _fig(z, text=["x", "y"]),                         # a trace more
        _fig(z, text=["x", "y"], extra=[np.zeros(2000, np.float32)]),   # an array inside a list
        _fig(z, text=["x", "y"], extra=[np.r_[np.zeros(1999, np.float32), 1]]),
    ]
    specs = {base}
    for fig in changed:
        spec, new_rev = figure_json(fig)
        assert spec == _to_json(fig)
        assert spec not in specs and new_rev != rev
        specs.add(spec)


def test_a_figure_written_once_is_not_hashed_again(monkeypatch):
    """Issue 39: a figure a cache hands to every session keeps its JSON: the second call neither
    walks its data for the digest nor writes it again."""
    import numpy as np

    from ui import chart
    from viz.common import make

    fig = make([{"type": "heatmap", "z": np.arange(12, dtype=np.float32).reshape(3, 4)}], {}, "t", 200)
    first = chart.figure_json(fig)
    walked, real_feed, real_write = [], chart._feed, chart._to_json
    monkeypatch.setattr(chart, "_feed", lambda h, v: walked.append(1) or real_feed(h, v))
    monkeypatch.setattr(chart, "_to_json", lambda f: (_ for _ in ()).throw(AssertionError("written again")))
    assert chart.figure_json(fig) is first and walked == []
    monkeypatch.setattr(chart, "_to_json", real_write)
    assert chart.figure_json({"data": fig["data"], "layout": fig["layout"]}) == first   # a plain dict: hashed
    assert walked
