"""Streamlit helpers shared by every lesson page: language, device, the lesson frame.

Everything here is per-session: the language and the device live in
``st.session_state`` (bound to the URL), never in a process-global.
"""
