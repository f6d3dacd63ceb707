"""TODO(frame.choice): a stand-in for ``ui.frame.choice`` until the frame's helper is merged.

A URL-bound segmented control writes its *formatted* label to the URL, so a translated label
would put Chinese into a shared link and lose it in the other language. This control is not
bound: it shows the translated labels, and keeps the language-neutral value in the URL itself
(read once when the session starts, written after each change). Lessons import
``ui.frame.choice`` first and fall back to this one; delete this file once it exists.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st


def choice(label: str, options: Sequence[str], key: str, labels: Sequence[str] | Mapping[str, str],
           default: str | None = None) -> str:
    """One of ``options`` (language-neutral: they go into the URL), shown with ``labels``
    (translated, a list beside the options or a dict). Unknown URL values are ignored."""
    options = list(options)
    names = dict(labels) if isinstance(labels, Mapping) else dict(zip(options, labels, strict=True))
    default = options[0] if default is None else default
    if key not in st.session_state:
        wanted = st.query_params.get(key)
        st.session_state[key] = wanted if wanted in options else default
    elif st.session_state[key] not in options:
        st.session_state[key] = default
    value = st.segmented_control(label, options, format_func=lambda o: names.get(o, o), key=key) or default
    if value == default:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != value:
        st.query_params[key] = value
    return value
