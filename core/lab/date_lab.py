"""What lessons C1 and B4 compute on the trained date model: alignment of the cross-attention
with the fields of the date, LayerNorm's effect on each token, the ReLU's switched-off units.

Dimension legend
    L   decoder layers
    H   heads
    N   target rows: the characters fed to the decoder (<bos> + output); row t writes character t
    S   source characters
    D   model width;  F feed-forward hidden width
"""
from __future__ import annotations

import torch

from core.lab.attention_lab import embed_tokens, seeded_mha
from core.models.dates import encode_sources
from core.models.encdec import EncoderDecoder, cross_attend, cross_kv
from core.parts.trace import Trace
from core.text.dates import TARGET_FIELDS, Rendered, parse
from core.text.tokenizer import CharTokenizer


def field_alignment(parsed: Rendered, n_rows: int, n_source: int) -> torch.Tensor:
    """(N, S) reference: row t is spread evenly over the source characters of the field that
    output character t copies (the year digits read the year, ...); rows of '-' and <eos> are 0.

    Example: "30 Nov 2026" -> row 0 (writes the first year digit) is 0.25 on columns 7..10
    """
    ref = torch.zeros(n_rows, n_source)                                    # (N, S)
    for t, name in enumerate(TARGET_FIELDS[:n_rows]):
        if name is not None:
            a, b = parsed.spans[name]
            ref[t, a:b] = 1.0 / (b - a)
    return ref


def alignment_scores(weights: torch.Tensor, parsed: Rendered) -> torch.Tensor:
    """(L, H, N, S) cross-attention -> (L, H): the weight each head puts on the right field,
    averaged over the output characters that copy a field (1 = always reads the right field).

    Example: a head whose row for the first year digit is all on "2026" scores 1 on that row.
    """
    n, s = weights.shape[-2:]
    ref = field_alignment(parsed, n, s)                                     # (N, S)
    rows = ref.sum(-1) > 0                                                  # (N,) rows that copy a field
    on_field = (weights * (ref > 0)).sum(-1)                                # (L, H, N)
    return on_field[..., rows].mean(-1)                                     # (L, H)


def norm_stats(before: torch.Tensor, after: torch.Tensor,
               eps: float = 1e-5) -> dict[str, torch.Tensor]:
    """Each token's mean and variance over its D entries:
    ``before`` the norm (x + sub-layer), standardised, and
    ``after`` LayerNorm (standardised, then gain g and bias b).

    Standardising gives every token mean 0 and variance 1;
    g and b then move all tokens the same way.
    Example: before [[1., 3.]] -> mean 2, var 1; standardised
             [[-1., 1.]] -> mean 0, var 1
    """
    standard = standardise(before, eps)            # (N, D)
    out = {}
    for stage, x in (("before", before),
                     ("standard", standard), ("after", after)):
        out[f"mean_{stage}"] = x.mean(-1)          # (N,)
        out[f"var_{stage}"] = x.var(-1, unbiased=False)
    return out


def standardise(x: torch.Tensor, eps: float) -> torch.Tensor:
    """LayerNorm without its gain and bias, per token:
    (x - mean) / sqrt(var + eps).

    Example: standardise(tensor([[1., 3.]]), 0.0) -> [[-1., 1.]]
    """
    mean = x.mean(-1, keepdim=True)                # (N, 1)
    var = x.var(-1, unbiased=False, keepdim=True)  # (N, 1)
    return (x - mean) / torch.sqrt(var + eps)      # (N, D)


def relu_off(hidden: torch.Tensor) -> dict[str, torch.Tensor]:
    """(N, F) ReLU output -> the fraction of hidden units at
    exactly 0, per token and overall.

    Example: relu_off(tensor([[0., 2.], [0., 0.]]))
             -> per_token [0.5, 1.0], overall 0.75
    """
    off = (hidden == 0).float()                    # (N, F)
    return {"per_token": off.mean(-1),             # (N,)
            "overall": off.mean()}


def softmax_rows(logits: torch.Tensor) -> torch.Tensor:
    """(N, V) logits of the teacher-forced pass -> (N, V) next-character probabilities.

    Example: softmax_rows(tensor([[0., 0.]])) -> [[0.5, 0.5]]
    """
    return torch.softmax(logits, dim=-1)                                   # (N, V)


def random_cross_attention(target: list[str], source: list[str],
                           n_heads: int, seed: int,
                           d_model: int = 32,
                           device: str = "cpu") -> Trace:
    """The untrained contrast: the trained model's cross-
    attention functions on seeded random weights and embeddings.
    Queries from the target tokens, keys and values from the
    source. The trace holds attn.q, k, v, scores, weights
    (1, H, N, S), concat and out."""
    both = embed_tokens(target + source, d_model, seed, device)
    # both: (N + S, D), one row per token of the two texts
    x = both[: len(target)].unsqueeze(0)   # (1, N, D) decoder
    c = both[len(target):].unsqueeze(0)    # (1, S, D) encoder
    attn = seeded_mha(d_model, n_heads, seed, device)
    trace = Trace()
    cross_attend(attn, x, cross_kv(attn, c), None, trace)
    return trace


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest absolute difference of two equal-shaped tensors: teacher forcing against decoding.

    Example: max_difference(tensor([0.5, 0.5]), tensor([0.5, 0.4])) -> 0.1
    """
    return float((a - b).abs().max())


def right_answer(text: str) -> str | None:
    """The ISO date ``text`` means, also when its letters are in a case the model never saw
    (C1's out-of-style example): None when it is no date of a learned style in any case.

    Example: right_answer("MONDAY, 30 NOVEMBER 2026") -> "2026-11-30"; right_answer("hello") -> None
    """
    for form in (text, text.title(), text.lower()):
        parsed = parse(form)
        if parsed is not None:
            return parsed.iso
    return None


@torch.no_grad()
def teacher_forced(model: EncoderDecoder, text: str,
                   answer: str, src_tok: CharTokenizer,
                   tgt_tok: CharTokenizer) -> torch.Tensor:
    """Training's view: one pass with the decoder fed
    <bos> + ``answer``, every position at once. (N, V)
    softmax; row t predicts character t of the answer (the
    last row <eos>). Fed the model's own output it equals
    the steps; fed the right answer where the model is wrong,
    the rows after its first mistake differ: at inference it
    goes on from its own mistake (exposure bias).

    Example: teacher_forced(m, "30 Nov 2026", "2026-11-30",
             s, t).argmax(-1) -> the ids of "2026-11-30<eos>"
    """
    src = encode_sources([text], src_tok)            # (1, S)
    src = src.to(model.pe.device)
    fed = [tgt_tok.encode(answer, bos=True)]
    fed = torch.tensor(fed, device=src.device)        # (1, N)
    logits = model(src, fed)[0]                       # (N, V)
    return torch.softmax(logits, dim=-1)              # (N, V)
