"""Looking inside one LLaMA block of the course model or SmolLM2 (lesson C2).

Dimension legend (as in core/models/model.py)
    N       prompt positions (batch B = 1)
    D       model width;  H query heads, H_kv key/value heads, d_head = D / H
    F       SwiGLU hidden width
    L       blocks;  2L + 1 points along the residual stream (before block 0, after
            every attention add and every feed-forward add)

The model records every intermediate under the names of core/parts/trace.py; these helpers run
it once with a recorder and summarise what came out. Nothing re-computes a block.
"""
from __future__ import annotations

import torch

from core.lab.layer_trace import trace_text
from core.parts.norms import layer_norm, rms_norm
from core.parts.trace import Trace

# The parts of one block a learner can pick, in the order data flows through them; each
# id is the trace name under blocks.{i} (language-neutral, so it can live in the URL).
BLOCK_PARTS = ("resid_pre", "attn_norm", "attn.q", "attn.k", "attn.v", "attn.weights", "attn.out",
               "resid_mid", "ffn_norm", "ffn.gate", "ffn.up", "ffn_out", "resid_post")
HEAD_PARTS = ("attn.q", "attn.k", "attn.v", "attn.weights")    # these have a head axis
STREAM_PARTS = ("resid_pre", "attn.out", "resid_mid", "ffn_out", "resid_post")  # what residual_sizes reads


@torch.no_grad()
def trace_prompt(model: torch.nn.Module, tokenizer, text: str, device: str = "cpu",
                 bos: bool = False) -> tuple[list[str], Trace]:
    """Run the model once on ``text`` (``<bos>`` first if asked, cut to its context length)
    and record every intermediate.

    Example: tokens, tr = trace_prompt(model, tok, "君不见") -> tokens == ["君", "不", "见"],
             tr["blocks.0.attn_norm"].shape == (1, 3, D)
    """
    ids = tokenizer.encode(text, bos=bos)[: model.config.max_seq_len] or [tokenizer.bos_id]
    trace = Trace()
    model(torch.tensor([ids], device=device), trace=trace)           # logits (1, N, V), not needed here
    return tokenizer.tokens(ids), trace


def trace_block(model: torch.nn.Module, tokenizer, text: str, layer: int, limit: int,
                device: str = "cpu") -> tuple[list[str], int, Trace]:
    """One forward pass that keeps every part of block ``layer`` and, of every block, only what
    the residual stream's sizes need: a model of 30 blocks need not keep 30 blocks of tensors.

    Example: tokens, n, tr = trace_block(smollm2, tok, "Hello world", 5, 256)
             -> tr["blocks.5.ffn.gate"].shape == (1, 2, 1536); "blocks.4.ffn.gate" not in tr
    """
    def keep(name: str) -> bool:
        _, i, part = name.split(".", 2) if name.startswith("blocks.") else ("", "", "")
        return part in STREAM_PARTS or (i == str(layer) and part in BLOCK_PARTS)

    return trace_text(model, tokenizer, text, keep, limit, device)


def strip_stages(stages: list[dict], layer: int, most: int = 8) -> list[dict]:
    """The whole-model strip of a deep model, short enough to read: the first block, the chosen
    one and the last stay; each run of blocks between them becomes one "gap" stage (its layers
    ``first`` .. ``last``, their parameters summed). A model of at most ``most`` blocks is
    returned as it is.

    Example: names of strip_stages(model_stages(smollm2), 12) -> ids embed block(0) gap(1-11)
             block(12) gap(13-28) block(29) final_norm output softmax
    """
    blocks = [s for s in stages if s["name"] == "block"]
    if len(blocks) <= most:
        return stages
    keep = {0, layer, len(blocks) - 1}
    out, run = [], []
    for s in stages:
        if s["name"] == "block" and s["layer"] not in keep:
            run.append(s)
            continue
        if run:
            out.append({"name": "gap", "layer": None, "first": run[0]["layer"], "last": run[-1]["layer"],
                        "params": sum(b["params"] for b in run), "shape": run[-1]["shape"]})
            run = []
        out.append(s)
    return out


def part_matrix(trace: Trace, layer: int, part: str, head: int, n_rep: int) -> torch.Tensor:
    """The 2-D matrix of one part for the figure: (N, D), (N, F), or one head's (N, d_head) /
    (N, N). Key and value heads are shared by n_rep query heads (GQA): query head h reads
    key/value head h // n_rep.

    Example: part_matrix(tr, 0, "attn.k", head=3, n_rep=2) is tr["blocks.0.attn.k"][0, 1]
    """
    t = trace[f"blocks.{layer}.{part}"][0]                            # drop the batch axis
    if part in ("attn.k", "attn.v"):
        return t[head // n_rep]                                        # (N, d_head)
    if part in HEAD_PARTS:
        return t[head]                                                 # (N, d_head) or (N, N)
    return t                                                           # (N, D) or (N, F)


def rms(x: torch.Tensor) -> torch.Tensor:
    """Root mean square over the last axis: the 'size' RMSNorm divides by (without eps).

    Example: rms(torch.tensor([3.0, 4.0])) -> 3.5355
    """
    return x.pow(2).mean(dim=-1).sqrt()                                # (...,)


def residual_sizes(trace: Trace, n_layers: int) -> dict[str, torch.Tensor]:
    """RMS of the residual stream at its 2L + 1 points, and of what each sub-layer adds,
    averaged over the prompt's tokens.

    Example: residual_sizes(tr, 4)["stream"].shape == (9,), ["added"].shape == (8,)
    """
    stream = [rms(trace["blocks.0.resid_pre"][0]).mean()]
    added = []
    for i in range(n_layers):
        for sub, after in (("attn.out", "resid_mid"), ("ffn_out", "resid_post")):
            added.append(rms(trace[f"blocks.{i}.{sub}"][0]).mean())
            stream.append(rms(trace[f"blocks.{i}.{after}"][0]).mean())
    return {"stream": torch.stack(stream), "added": torch.stack(added)}   # (2L+1,), (2L,)


def compare_norms(
    x: torch.Tensor, shift: float, eps: float = 1e-5
) -> dict[str, torch.Tensor]:
    """LayerNorm and RMSNorm (gain 1, no bias) of the same vectors x (N, D)
    moved by ``shift``.

    LayerNorm removes the shift (it subtracts the mean); RMSNorm keeps the
    direction of the shifted vector, so a large shift pushes every entry
    towards the same value.

    Example: compare_norms(torch.tensor([[1.0, 3.0]]), 0.0, eps=0.0)["layer"]
             -> [[-1., 1.]]
    """
    shifted = x + shift                                  # (N, D)
    ones = torch.ones(x.shape[-1], device=x.device)      # (D,) gain g = 1
    zeros = torch.zeros_like(ones)                       # (D,) bias b = 0
    out = {"input": shifted,
           "layer": layer_norm(shifted, ones, zeros, eps),  # (N, D)
           "rms": rms_norm(shifted, ones, eps)}              # (N, D)
    for name in ("input", "layer", "rms"):
        mean = out[name].mean(dim=-1)                    # (N,)
        out[f"{name}_mean"] = mean
        out[f"{name}_rms"] = rms(out[name])              # (N,)
        out[f"{name}_largest_mean"] = mean.abs().max()   # ()
    return out


def gate_effect(
    gate: torch.Tensor, up: torch.Tensor, closed: float = 0.1
) -> dict[str, torch.Tensor]:
    """What the SwiGLU gate does to one token: the value x w3 is multiplied
    unit by unit by SiLU(x w1). Units whose |gate| < ``closed`` pass (almost)
    nothing. ``order`` sorts the units by their gate, so a figure can show
    closed gates on the left and open ones on the right.

    Example: gate_effect(torch.tensor([2.0, 0.0]), torch.tensor([1.0, 5.0]))
             -> passed [2., 0.], closed_fraction 0.5, order [1, 0]
    """
    passed = gate * up                                   # (F,)
    return {"gate": gate, "up": up, "passed": passed, "order": gate.argsort(),
            "closed_fraction": (gate.abs() < closed).float().mean()}
