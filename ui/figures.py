"""Charts in a lesson: built once per setting for every session, drawn with their export buttons
in the page's language, and sized for presenter mode. Part of the lesson frame (ui/frame.py).
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st

import i18n
from ui.chart import PRESENTING, chart
from ui.words import lang, tr


@st.cache_resource(max_entries=256, show_spinner=False)
def built_figure(key: tuple | str, _build: Callable[[], object]):
    """The figure ``_build`` draws, built once per ``key`` for every session. ``key`` holds plain
    values only: the figure's name, every setting it shows, the language. A rerun with nothing
    changed (another control moved, the next student at the same defaults) does not rebuild it,
    and its JSON is written once too (ui.chart.figure_json). Shared: only ever read."""
    return _build()


def figure_key(draw: Callable, args: tuple = (), kwargs: dict | None = None) -> tuple:
    """The cache key of ``draw(*args, **kwargs)``: the function (module and name), then every
    argument. Nothing is written by hand, so no setting can be left out of it; ``draw`` must be a
    named function of a module (a lambda or a closure could read a value the key does not hold).

    Example: figure_key(viz.common.make, ([], {}, "T", 300)) -> ("viz.common", "make", ([], {}, "T", 300), ())
    """
    if not callable(draw) or getattr(draw, "__name__", "<lambda>") == "<lambda>" or getattr(draw, "__closure__", None):
        raise TypeError("drawn() takes a named module-level function: every value it reads must be an argument")
    return (draw.__module__, draw.__qualname__, tuple(args), tuple(sorted((kwargs or {}).items())))


def drawn(draw: Callable, *args, **kwargs):
    """The figure ``draw(*args, **kwargs)`` returns, built once for every session per function and
    arguments (``figure_key``): pass every setting the figure shows, the translated labels included
    (so the language is in the key). Shared: only ever read."""
    return built_figure(figure_key(draw, args, kwargs), functools.partial(draw, *args, **kwargs))


# plotly.js's own words (its toolbar's buttons, its notices), in English in plotly.js: each one's
# key under PLOTLY_KEYS in the catalogues. Given to the chart as a plotly.js locale.
PLOTLY_KEYS = "classroom.plotly"
PLOTLY_WORDS = {
    "Zoom": "zoom", "Pan": "pan", "Box Select": "box_select", "Lasso Select": "lasso_select",
    "Zoom in": "zoom_in", "Zoom out": "zoom_out", "Autoscale": "autoscale", "Reset axes": "reset_axes",
    "Reset view": "reset_view", "Toggle Spike Lines": "spikes", "Show closest data on hover": "closest",
    "Compare data on hover": "compare", "Double-click to zoom back out": "zoom_back",
    "Double-click on legend to isolate one trace": "isolate",
}


@functools.cache
def _plotly_words(language: str) -> dict[str, str]:
    return {english: i18n.t(language, f"{PLOTLY_KEYS}.{key}") for english, key in PLOTLY_WORDS.items()}


# The templates ui/chart/describe.js writes a chart's description with, for screen readers (issue 43).
DESCRIBE = "classroom.describe"
DESCRIBE_KEYS = ("chart", "heatmap", "heatmap_at", "axis_at", "axis_named", "label_only", "row_at", "column_at",
                 "panel", "panel_n", "grid", "bars", "bars_empty", "series", "diagram", "diagram_sep", "join")


@functools.cache
def _describe_words(language: str) -> dict[str, str]:
    return {key: i18n.t(language, f"{DESCRIBE}.{key}") for key in DESCRIBE_KEYS}


# Presenter mode (ui/classroom.py) draws every chart a quarter larger, type and height
# (ui/chart.js). A taller chart is given this height first, so that at 1280x720, the common
# projector size, it fits with a slide's title and controls above the presenter's bar
# (1.25 x 340 = 425 px of the ~670 px above the bar).
PRESENT_MAX_HEIGHT = 340


def figure(fig, key: str, live: dict | None = None, on_commit: Callable[[], None] | None = None,
           present_height: int | None = PRESENT_MAX_HEIGHT, on_select: Callable[[], None] | None = None,
           name: str | None = None) -> None:
    """A chart with a stable key: the next run with the same key updates the same plot in
    the browser (ui/chart.py). The figure carries its own look (viz.common.LOOK). ``live`` and
    ``on_commit``: a slider that redraws the chart from frames (ui.live.live_figure).
    ``present_height``: the most a figure with a slide to itself may take in presenter mode (None:
    its own height). ``on_select``: a callback run before the rerun when a point is clicked; it
    reads the point's ``customdata`` as ``st.session_state[key]["select"]`` (C1's diagram, F1's map).
    ``name``: what a screen reader calls a chart drawn without a title (ui/chart/describe.js; a
    titled chart is called by its title), e.g. F1's head maps under their section's heading."""
    # Presenter sizing is decided in one place, the browser (ui/chart/present.js: presenterFigure
    # caps the height at ``present_height``, then draws the type larger and fits the slide): the
    # figure sent is the one every session shares.
    chart(fig, key, tr("common.chart_failed"),
          export={"png": tr("classroom.png"), "svg": tr("classroom.svg"), "csv": tr("classroom.csv"), "file": key,
                  "locale": lang(), "words": _plotly_words(lang()) if lang() != "en" else None,
                  "describe": _describe_words(lang()), **({"name": name} if name else {})},
          on_select=on_select, live=live, on_commit=on_commit,
          present_most=present_height if st.session_state.get(PRESENTING) else None)
