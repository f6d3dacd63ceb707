"""The transformer in PyTorch only: no Streamlit, no plotly here.

Rooms, from the bottom up; each may import only from the rooms named in its own docstring
(tests/test_layers.py checks it):
    parts   the transformer's pieces (attention, masks, positions, RoPE, norms, FFN, KV cache, trace)
    text    tokenizers and the cleaning of typed text
    models  trained models and how they run: the course model, generation
    calc    real-model configs and the parameter, FLOP, byte and time counts made from them
    lab     the experiments single lessons run on all of the above
"""
