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
