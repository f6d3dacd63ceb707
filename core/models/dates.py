"""The date task on the encoder-decoder: batches for training, accuracy, and one date read with
everything the lessons show (C1, B4).

Dimension legend
    B   batch of dates
    S   source characters (padded to the longest in the batch)
    L   target characters + <eos> = 11
    H   attention heads;  D model width;  V_tgt target vocabulary
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from core.models.encdec import Decoded, EncoderDecoder, greedy
from core.parts.trace import Trace
from core.text.dates import STYLES, TARGET_LEN, Rendered, random_date, render
from core.text.tokenizer import CharTokenizer

STEPS = TARGET_LEN + 1          # ten characters, then <eos>


def training_batches(seed: int, size: int) -> Iterator[list[Rendered]]:
    """The endless stream of training batches of scripts/train_date_model.py (seed 0 there): the
    n-th batch it yields is the one step n trained on, so a test can replay any step's batch."""
    rng = random.Random(seed)
    while True:
        yield [render(random_date(rng, "train"), rng.choice(STYLES)) for _ in range(size)]


def encode_sources(texts: list[str], src_tok: CharTokenizer) -> torch.Tensor:
    """Texts -> (B, S) ids, each ended by <eos>, right-padded with <pad> (0) to the longest.

    The <eos> marks where the text ends: the year of "30 Nov 2026" is then always the four
    characters before it, however long the weekday and the month are.
    Example: encode_sources(["30 Nov 2026", "1 May 1999"], tok).shape -> (2, 12)
    """
    ids = [src_tok.encode(t, eos=True) for t in texts]
    width = max(1, max(len(i) for i in ids))
    return torch.tensor([i + [src_tok.pad_id] * (width - len(i)) for i in ids], dtype=torch.long)  # (B, S)


def encode_batch(dates: list[Rendered], src_tok: CharTokenizer, tgt_tok: CharTokenizer
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(source (B, S), decoder input <bos> + ISO (B, L), expected output ISO + <eos> (B, L)).

    Teacher forcing: the decoder reads the right answer shifted one place right.
    """
    src = encode_sources([d.text for d in dates], src_tok)                                     # (B, S)
    tgt = torch.tensor([tgt_tok.encode(d.iso, bos=True, eos=True) for d in dates], dtype=torch.long)  # (B, L+1)
    return src, tgt[:, :-1], tgt[:, 1:]                                                        # (B, L) each


@torch.no_grad()
def accuracy(model: EncoderDecoder, dates: list[Rendered], src_tok: CharTokenizer,
             tgt_tok: CharTokenizer, batch: int = 500) -> float:
    """Fraction of dates whose greedy output is exactly the ISO date."""
    right = 0
    for i in range(0, len(dates), batch):
        chunk = dates[i:i + batch]
        src, _, _ = encode_batch(chunk, src_tok, tgt_tok)
        out = greedy(model, src, tgt_tok.bos_id, STEPS)
        right += sum(tgt_tok.decode(row[:TARGET_LEN]) == d.iso and int(row[TARGET_LEN]) == tgt_tok.eos_id
                     for row, d in zip(out.ids.tolist(), chunk, strict=True))
    return right / len(dates)


@dataclass(frozen=True)
class DateReading:
    """One source read by the model, with every intermediate the lessons draw."""
    source: list[str]           # source characters and <eos>, one per column
    output: str                 # what greedy decoding wrote (up to <eos>)
    target: list[str]           # the characters fed to the decoder: <bos> + output (one per row)
    written: list[str]          # the character each row chose (the output, then <eos>)
    decoded: Decoded            # ids (1, L) and the softmax of every step (1, L, V_tgt)
    trace: Trace                # teacher-forced pass on the model's own output: every named tensor


@torch.no_grad()
def read_date(model: EncoderDecoder, text: str, src_tok: CharTokenizer, tgt_tok: CharTokenizer
              ) -> DateReading:
    """Greedy-decode ``text``, then run the model once more on (text, <bos> + its own output),
    all positions at once, with a trace.

    The traced pass reproduces the decoding steps exactly (teacher forcing on the chosen
    characters gives the same softmax at every position; a test checks it), so its
    cross-attention rows are the ones each step used.
    """
    src = encode_sources([text], src_tok).to(model.pe.device)                 # (1, S)
    decoded = greedy(model, src, tgt_tok.bos_id, STEPS)
    ids = decoded.ids[0].tolist()
    end = ids.index(tgt_tok.eos_id) if tgt_tok.eos_id in ids else len(ids)
    # The decoder read <bos> and each written character but the last: one row per step,
    # at most STEPS rows even when no <eos> came.
    fed = torch.tensor([[tgt_tok.bos_id] + ids[:min(end, STEPS - 1)]], device=src.device)  # (1, N)
    trace = Trace()
    model(src, fed, trace)
    return DateReading(source=list(text) + ["<eos>"], output=tgt_tok.decode(ids[:end]),
                       written=tgt_tok.tokens(ids[:fed.shape[1]]),
                       target=tgt_tok.tokens(fed[0].tolist()), decoded=decoded, trace=trace)
