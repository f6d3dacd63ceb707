"""The transformer parts, in PyTorch only. No Streamlit, no plotly here."""
