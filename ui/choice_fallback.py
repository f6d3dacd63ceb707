"""TODO(frame.choice): a stand-in for ``ui.frame.choice`` until the frame branch lands.

Streamlit 1.67 writes a URL-bound selectbox/radio/segmented control's *formatted* label to the
URL (``button_group.py``: ``serialize`` returns ``formatted_options[index]``), so a bound control
with translated labels would put Chinese words in the address. Here the widget is unbound, shows
the translated labels, and the language-neutral id is written to ``st.query_params`` by hand.
The lessons import ``ui.frame.choice`` first and fall back to this one; delete this file when
``ui.frame.choice`` exists.
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def choice(label: str, options: Sequence[str], key: str, labels: dict[str, str], widget: str = "selectbox",
           default: str | None = None, **kwargs) -> str:
    """A choice among language-neutral ``options`` shown with translated ``labels`` (id -> label);
    the URL holds the id under ``key``. A malformed URL value gives the default."""
    options = list(options)
    default = default if default in options else options[0]
    held = st.session_state.get(key)
    if held not in options:                  # first run (or a stale value): the URL's id, else the default
        url = st.query_params.get(key)
        st.session_state[key] = url if url in options else default
    show = lambda o: labels.get(o, str(o))  # noqa: E731
    if widget == "segmented":
        value = st.segmented_control(label, options, key=key, format_func=show, required=True, **kwargs)
    elif widget == "radio":
        value = st.radio(label, options, key=key, format_func=show, **kwargs)
    else:
        value = st.selectbox(label, options, key=key, format_func=show, **kwargs)
    value = value if value in options else default
    if st.query_params.get(key) != value:
        st.query_params[key] = value
    return value
