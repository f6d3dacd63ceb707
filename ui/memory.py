"""The garbage collector and a server that many students share."""
from __future__ import annotations

import gc


def settle_memory() -> None:
    """Move every object alive now (modules, plotly's validators, the course models, SmolLM2's
    tokenizer tables) into the collector's permanent generation.

    Why (issue 39): a full collection walks every tracked object, and with SmolLM2 loaded the
    process holds ~385,000 of them; each full collection held the GIL for 70-165 ms on a quiet
    machine, and under a class of 100 sixteen of them took 11.8 s of the server's 48 s of CPU
    in 120 s, up to 1.6 s at a time (every student's page and every static file waited). What
    is loaded here is never garbage, so it need not be walked again; the sessions' own objects
    are still collected as before. Called after the imports and again when the real model has
    loaded (ui.model._load_real)."""
    gc.collect()
    gc.freeze()
