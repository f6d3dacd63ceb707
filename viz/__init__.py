"""Tensors -> plotly Figures. Pure functions, no Streamlit; every label is passed in
by the page (already translated), so nothing here knows the language."""
