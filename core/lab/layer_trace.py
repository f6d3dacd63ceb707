"""One forward pass that keeps only the intermediates a figure needs (lessons C2, C3).

Dimension legend (as in core/models/model.py)
    N       prompt positions (batch B = 1), at most ``limit``
    D       model width;  H query heads, H_kv key/value heads, d_head = D / H
    L       blocks

A full trace of SmolLM2 (30 blocks) on 256 tokens holds ~250 MB of tensors; a lesson shows one
block of it. The recorder below is handed to the model like any Trace and drops every name it
is not asked to keep, so the model runs unchanged (the same call, the same numbers) and only
the kept tensors are stored.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from core.parts.trace import Trace


class KeepTrace(Trace):
    """A Trace that records only the full names ``keep(name)`` accepts; its children too.

    Example: t = KeepTrace(lambda name: name.startswith("blocks.1."))
             t.child("blocks.0").record("attn_norm", x)   # dropped
             t.child("blocks.1").record("attn_norm", x)   # kept as "blocks.1.attn_norm"
    """

    def __init__(self, keep: Callable[[str], bool], store: dict[str, torch.Tensor] | None = None,
                 prefix: str = ""):
        super().__init__(store, prefix)
        self.keep = keep

    def child(self, name: str) -> "KeepTrace":
        return KeepTrace(self.keep, self.tensors, f"{self.prefix}{name}.")

    def record(self, name: str, tensor: torch.Tensor) -> None:
        if self.keep(self.prefix + name):
            super().record(name, tensor)


def capped_ids(tokenizer, text: str, limit: int) -> tuple[list[int], int]:
    """The text's token ids, cut to ``limit``, and how many there were before the cut. An empty
    text becomes the one token ``<bos>`` (a forward needs a position).

    Example: capped_ids(char_tokenizer, "君不见", 2) -> ([id 君, id 不], 3)
    """
    ids = tokenizer.encode(text)
    return (ids[:limit] or [tokenizer.bos_id]), len(ids)


@torch.no_grad()
def trace_text(model: torch.nn.Module, tokenizer, text: str, keep: Callable[[str], bool],
               limit: int, device: str = "cpu") -> tuple[list[str], int, Trace]:
    """Run the model once on ``text`` (at most ``limit`` tokens) and keep the names ``keep``
    accepts. Returns the tokens as text, the token count before the cut, and the recorder.

    Example: tokens, n, tr = trace_text(model, tok, "Hello world", lambda s: s == "logits", 256)
             -> tokens == ["Hello", " world"], n == 2, tr.names() == ["logits"]
    """
    ids, n_all = capped_ids(tokenizer, text, min(limit, model.config.max_seq_len))
    trace = KeepTrace(keep)
    model(torch.tensor([ids], device=device), trace=trace)          # logits (1, N, V), not needed here
    return tokenizer.tokens(ids), n_all, trace
