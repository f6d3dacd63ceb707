"""Helpers for lesson tests: open a lesson in AppTest, read the data of its figures."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from ui.chart import NAME as CHART_NAME

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 60  # the first run imports torch


def open_lesson(page_file: str, lang: str, params: dict[str, str] | None = None) -> AppTest:
    """Run the app on one lesson page in one language; fail on any exception."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    for key, value in (params or {}).items():
        at.query_params[key] = value
    # Run app.py once before switching: its st.navigation call is what registers the lessons,
    # so that switch_page can find them and each page then runs inside app.py's frame.
    at.run()
    at.switch_page(f"lessons/{page_file}")
    at.run()
    assert_ok(at)
    assert at.sidebar.children, "the page ran without the app frame"
    return at


def assert_ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    for md in at.markdown:
        assert "⟦" not in md.value, f"missing i18n key in: {md.value[:120]}"
    for title in at.title:
        assert "⟦" not in title.value


def decode(value):
    """A plotly array as numpy: typed arrays arrive as {'dtype', 'bdata', 'shape'}."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            dims = [int(s) for s in str(shape).split(",")] if isinstance(shape, str) else list(shape)
            arr = arr.reshape(dims)
        return arr
    if isinstance(value, list):
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return value
    return value


def charts(at: AppTest) -> list:
    """The chart elements (ui/chart.py) of the last run, in page order."""
    return [el for el in at.get("bidi_component") if el.proto.component_name == CHART_NAME]


def component_data(el) -> dict:
    """The data a component element carries to the browser (sent as a one-item list: ui/chart.py)."""
    data = json.loads(el.proto.json)
    return data[0] if isinstance(data, list) else data


def chart_spec(el) -> str:
    """The figure JSON a chart element carries to the browser."""
    return component_data(el)["figure"]


def chart_keys(at: AppTest) -> list[str]:
    return [el.proto.id for el in charts(at)]


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart_spec(el)) for el in charts(at)]


def figure_by_key(at: AppTest, key: str) -> dict:
    """The figure drawn with ``ui.frame.figure(fig, key=...)``."""
    for el in charts(at):
        if el.proto.id.endswith("-" + key):              # ids end in "-<key>"
            return json.loads(chart_spec(el))
    raise KeyError(f"no chart with key {key!r}; have {chart_keys(at)}")


def trace_array(fig: dict, index: int, field: str) -> np.ndarray:
    return decode(fig["data"][index][field])


def chart_bytes(at: AppTest) -> list[int]:
    return [len(chart_spec(el)) for el in charts(at)]



def _url_number(v) -> str:
    """A number as the browser writes it into the address: 40, not 40.0."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _shown(w, values) -> object:
    """A slider's proto numbers as the value the widget returns (int sliders hold ints)."""
    from streamlit.proto.Slider_pb2 import Slider as SliderProto
    vals = [int(v) if w.proto.data_type == SliderProto.INT else float(v) for v in values]
    return vals[0] if len(vals) == 1 else tuple(vals)


def as_browser(at: AppTest) -> AppTest:
    """Make the next ``at.run()`` send what a browser would after this run.

    AppTest sends back the value Streamlit's session state holds for each widget, and keeps in
    ``at.query_params`` only what the script wrote. A browser sends the value it *shows*: the
    value the run sent with the element, else the one it showed before under the same widget
    id, else (a new id: a slider whose bounds changed) the element's default. And the page writes
    each URL-bound widget's value into the address when it is not the widget's default, removing
    it when it is, so the next run reads it back. A test of what a student sees after a shared
    link or a range that shrank calls this between runs."""
    before = getattr(at, "_browser_nodes", {})      # last run's sliders: what they sent
    now = {}
    for w in at.slider:
        if w.proto.set_value:
            shown = _shown(w, w.proto.value)
        elif w.id in before and before[w.id]._value is not None:
            shown = before[w.id]._value
        else:
            shown = _shown(w, w.proto.default)
        now[w.id] = shown
        w.set_value(shown)
    at._browser_nodes = {w.id: w for w in at.slider}
    for w in [*at.slider, *at.select_slider, *at.text_input, *at.text_area, *at.number_input]:
        key = getattr(w.proto, "query_param_key", "")
        if not key:
            continue
        if w.type == "select_slider":
            value = w.value if isinstance(w.value, (list, tuple)) else [w.value]
            shown = [w.format_func(v) for v in value]
            default = [w.proto.options[int(i)] for i in w.proto.default]
        elif w.type == "slider":
            value = w._value if isinstance(w._value, (list, tuple)) else [w._value]
            shown, default = [_url_number(v) for v in value], [_url_number(v) for v in w.proto.default]
        elif w.type == "number_input":
            shown = [_url_number(w.value)] if w.value is not None else []
            default = [_url_number(w.proto.default)] if w.proto.HasField("default") else []
        else:
            shown, default = [w.value or ""], [w.proto.default]
        if shown == default:
            at.query_params.pop(key, None)
        else:
            at.query_params[key] = shown[0] if len(shown) == 1 else shown
    return at


# ---- Live controls (ui/live.py) --------------------------------------------------------------
# AppTest cannot drag a custom component's slider; the value is plain session state under the
# control's key, as the component's release writes it, so a test moves it there.
def set_live(at: AppTest, key: str, value: float) -> AppTest:
    """Move a live control (what letting go of its slider does), then rerun."""
    at.session_state[key] = value
    return at.run()


def live_of(at: AppTest, fig_key: str) -> dict:
    """The live part a chart carries: ``values``, ``index``, ``label``, ``texts``, ``frames`` (JSON)."""
    for el in charts(at):
        if el.proto.id.endswith("-" + fig_key):
            return component_data(el)["live"]
    raise KeyError(fig_key)


class _Table:
    def __init__(self, value):
        self.value = value


def tables(at: AppTest) -> list[_Table]:
    """Every markdown table on the page (ui.words.text_table), in page order, each as a pandas
    DataFrame in ``.value`` (cells unescaped; a column of whole numbers as ints), as
    ``at.dataframe`` gave them when the pages drew st.dataframe."""
    import re

    import pandas as pd

    def cells(line: str) -> list[str]:
        parts = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        return [re.sub(r"\\(.)", r"\1", c.strip()) for c in parts]

    found = []
    for md in at.markdown:
        lines = md.value.split("\n")
        for i in range(len(lines) - 1):
            if lines[i].startswith("| ") and re.fullmatch(r"\|(---:?\|)+", lines[i + 1].strip()):
                head, body = cells(lines[i]), []
                for line in lines[i + 2:]:
                    if not line.startswith("|"):
                        break
                    body.append(cells(line))
                frame = pd.DataFrame(body, columns=head)
                for col in frame.columns:
                    if len(frame) and frame[col].str.fullmatch(r"-?\d+").all():
                        frame[col] = frame[col].astype(int)
                found.append(_Table(frame))
    return found
