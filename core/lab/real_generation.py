"""D1 on SmolLM2-135M-Instruct: a student's text as the ids the model reads (a plain text to
continue, or a question in the ChatML chat template), the ids that end a generation, and one
step's next-token distribution as the few numbers its figure draws.

Dimension legend
    V   vocabulary size (49,152 for SmolLM2)
    T   tokens of the student's text (at most PROMPT_TOKENS are kept)
    K   candidates shown, likeliest first (20)

The generation itself is core.models.generate.Generation, the same loop the course model runs:
fed these ids, it stops at <|im_end|> (SmolLM2's end-of-turn, its GGUF eos) or <|endoftext|>.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from core.models.generate import at_temperature, sampling_probs
from core.text.byte_bpe import ByteBPE, pre_tokenize

PROMPT_TOKENS = 256          # tokens of the student's text the model reads; the rest is cut
END_OF_TEXT = "<|endoftext|>"    # SmolLM2's document separator: the start of an empty prompt
SENTINEL = "\x00QUESTION\x00"    # stands for the question while the template is cut around it


def encode_text(tok: ByteBPE, text: str) -> list[int]:
    """Text -> ids, every character as text: "<|im_end|>" typed in a question is ten
    characters, not the end of the turn (``tok.encode`` makes it the special token).

    Example (SmolLM2): encode_text(tok, "Hello world") -> [19556, 905] (as tok.encode);
             encode_text(tok, "<|im_end|>") -> the ids of "<|", "im", "_", "end", "|>"
    """
    if not any(special for _, special in tok.split(text)):
        return tok.encode(text)
    ids: list[int] = []
    for piece in pre_tokenize(text, tok.pre):
        ids += tok.encode_bytes(piece.encode("utf-8"))                 # bytes without a token dropped
    return ids


@dataclass(frozen=True)
class RealPrompt:
    ids: list[int]     # what the model is fed
    own: int           # tokens of the student's text, before the cut
    cut: int           # tokens cut from its front (beyond PROMPT_TOKENS)


def chat_ids(tok: ByteBPE, question: str, limit: int = PROMPT_TOKENS) -> RealPrompt:
    """A question in SmolLM2-Instruct's chat template (ChatML, ``ByteBPE.chat``): system
    message, <|im_start|>user\\n question <|im_end|>\\n, then <|im_start|>assistant\\n, where
    the model writes its answer and ends it with <|im_end|>. A question longer than ``limit``
    tokens keeps its last ``limit``.

    Example: chat_ids(tok, "hi").ids == tok.encode(tok.chat([{"role": "user", "content": "hi"}]))
    """
    own = encode_text(tok, question)                                   # (T,)
    cut = max(0, len(own) - limit)
    plain = not any(special for _, special in tok.split(question))
    if plain and not cut:
        return RealPrompt(tok.encode(tok.chat([{"role": "user", "content": question}])), len(own), 0)
    # The template around the question, encoded apart: the question's own ids go in between.
    head, tail = tok.chat([{"role": "user", "content": SENTINEL}]).split(SENTINEL)
    return RealPrompt(tok.encode(head) + own[cut:] + tok.encode(tail), len(own), cut)


def text_ids(tok: ByteBPE, text: str, limit: int = PROMPT_TOKENS) -> RealPrompt:
    """A text to continue: its last ``limit`` tokens (the model continues from the end); an
    empty text is <|endoftext|> alone, where a new document starts.

    Example: text_ids(tok, "Hello world").ids -> [19556, 905]; text_ids(tok, "").ids -> [0]
    """
    own = encode_text(tok, text)
    cut = max(0, len(own) - limit)
    ids = own[cut:] or [tok.special.get(END_OF_TEXT, tok.bos_id)]
    return RealPrompt(ids, len(own), cut)


def stop_ids(tok: ByteBPE) -> set[int]:
    """The ids that end a generation: <|im_end|> (the end of the assistant's turn, SmolLM2's
    eos) and <|endoftext|> (the end of a document). Example (SmolLM2): {2, 0}"""
    return {i for i in (tok.eos_id, tok.special.get(END_OF_TEXT)) if i is not None}


@torch.inference_mode()
def next_logits(model: torch.nn.Module, ids: Sequence[int]) -> torch.Tensor:
    """The model's logits for the token after ``ids``: (T,) ids -> (V,) float32 on the CPU.
    The same forward as a generation's first step (the prefill); for a later step, ``ids`` is
    the prompt and the tokens drawn before it."""
    device = next(model.parameters()).device
    x = torch.tensor([list(ids)], device=device)                       # (1, T)
    return model(x)[0, -1].float().cpu().clone()                       # (V,) not a view of (1, T, V)


def step_numbers(logits: torch.Tensor, tok: ByteBPE, temperature: float, top_k: int | None,
                 top_p: float | None, show: int, chosen: int | None = None) -> dict:
    """One step as the plain numbers its figure draws: the ``show`` likeliest tokens by the
    model, each with the model's probability and the one the draw uses (0: cut by T = 0, top-k
    or top-p), how many of the V tokens survive the cut; with ``chosen`` (the token drawn) its
    rank and its two probabilities.

    logits: (V,). Example: logits log([0.6, 0.3, 0.1]), T = 0, show 2 ->
            ids [0, 1], model [0.6, 0.3], sample [1, 0], kept 1
    """
    model_probs = torch.softmax(logits.float(), dim=-1)                # (V,) what the model believes
    probs = sampling_probs(logits, temperature, top_k, top_p)          # (V,) what the draw uses
    ids = torch.topk(model_probs, min(show, model_probs.numel())).indices.tolist()   # (K,)
    out = {"ids": ids, "tokens": tok.tokens(ids), "model": model_probs[ids].tolist(),
           "sample": probs[ids].tolist(), "kept": int((probs > 0).sum()), "vocab": int(model_probs.numel()),
           "best_token": tok.tokens([ids[0]])[0]}
    if chosen is not None:
        out.update(chosen=chosen, chosen_token=tok.tokens([chosen])[0],
                   rank=int((model_probs > model_probs[chosen]).sum()) + 1,
                   chosen_model=float(model_probs[chosen]), chosen_sample=float(probs[chosen]))
    return out


def strip_numbers(logits: torch.Tensor, ids: Sequence[int], temperatures: Sequence[float],
                  top_k: int | None, top_p: float | None) -> dict[float, list[float]]:
    """The draw's probabilities of the tokens ``ids`` at each temperature (same top-k, top-p):
    (V,) logits -> {T: (len(ids),)}. Example: logits [2, 1, 0], ids [0], T 1 and 2 ->
    {1: [0.665], 2: [0.506]}"""
    model_probs = torch.softmax(logits.float(), dim=-1)                # (V,)
    rows = at_temperature(model_probs, list(temperatures), top_k, top_p)[:, list(ids)]   # (T, len(ids))
    return dict(zip(temperatures, rows.tolist(), strict=True))


# C0 controls (but tab, line feed, carriage return: ui.frame.plain draws those), DEL and C1
# controls: drawn as visible marks, not sent raw.
_CONTROL = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)} | {0x7F: "\u2421"} | {
    c: "\ufffd" for c in range(0x80, 0xA0)}


def printable(text: str) -> str:
    """Generated or typed text with its control characters made visible (U+2400's pictures):
    a model can write any byte, and ESC or NUL reach no page raw.

    Example: printable("a\\x1b[31mb\\x00") -> "a␛[31mb␀"; printable("a\\nb") -> "a\\nb"
    """
    return text.translate(_CONTROL)
