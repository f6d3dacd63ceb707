"""The floor under bench_lessons' redraw column: one slider and one small heatmap, drawn the
way the lessons draw (ui.frame.figure, viz.common.make). A lesson's redraw beyond this row is
the lesson's own; this row is Streamlit, plotly.js and the machine at the time of the run."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import streamlit as st  # noqa: E402

from ui.frame import figure  # noqa: E402
from ui.nodelay import tcp_nodelay  # noqa: E402
from viz.attention import heatmap  # noqa: E402

tcp_nodelay()   # as the app does in ui/preload.py
TOKENS = list("君不见，黄河之水天上来")

seed = st.slider("seed", 0, 100, 50, key="seed")
z = np.random.default_rng(seed).random((len(TOKENS), len(TOKENS))).astype(np.float32)
figure(heatmap(z / z.sum(-1, keepdims=True), TOKENS, TOKENS, title="floor"), key="floor")
