"""The E1 experiments on the MoE course model: route a prompt, count what the experts
took over the corpus, the all-to-all traffic between devices, memory against compute.

Dimension legend
    N   tokens of the prompt
    T   tokens routed together (N here: one prompt)
    E   experts per layer;  k experts per token
    G   devices (one expert each)
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.calc.configs import ArchConfig
from core.calc.params import count_params
from core.models.moe_model import INFERENCE, MoEConfig, MoEModel
from core.parts.moe import MoEResult, Routing
from core.text.tokenizer import CharTokenizer


@dataclass
class RoutedPrompt:
    tokens: list[str]            # the prompt's characters as the model read them
    ids: list[int]               # their token ids
    results: list[MoEResult]     # one per layer, from the same forward pass
    next_ids: torch.Tensor       # (N,) the model's greedy next character after each position

    @property
    def hits(self) -> int:
        """Positions whose greedy prediction is the prompt's next character (N - 1 at most)."""
        return sum(int(p) == t for p, t in zip(self.next_ids.tolist()[:-1], self.ids[1:], strict=True))


@torch.inference_mode()
def route_prompt(model: MoEModel, tok: CharTokenizer, text: str, routing: Routing,
                 seed: int = 0) -> RoutedPrompt:
    """One forward pass of the whole prompt with ``routing`` in every MoE layer."""
    ids = (tok.encode(text) or [tok.bos_id])[-model.config.max_seq_len:]
    device = next(model.parameters()).device
    rng = torch.Generator(device=device).manual_seed(int(seed))
    results: list[MoEResult] = []
    logits = model(torch.tensor([ids], device=device), routing=routing, rng=rng,
                   results=results)                                  # (1, N, V)
    return RoutedPrompt(tok.tokens(ids), ids, results, logits[0].argmax(-1))


def all_to_all(experts: torch.Tensor, fits: torch.Tensor,
               n_devices: int) -> torch.Tensor:
    """(G, G): tokens sent from the device holding them (row) to
    the device of their expert (column). Expert e lives on device
    e; the batch is split over the devices in position order (data
    parallel). Off the diagonal a token crosses to another device,
    and its result crosses back (a second all-to-all).

    Example: experts [[0], [1], [1], [0]], 2 devices
             -> [[1, 1], [1, 1]]
    """
    t = experts.shape[0]
    dev = experts.device
    home = torch.arange(t, device=dev) * n_devices // t   # (T,)
    src = home[:, None].expand_as(experts)[fits]          # (A,)
    dst = experts[fits]                                   # (A,)
    traffic = torch.zeros(n_devices, n_devices,
                          dtype=torch.long, device=dev)   # (G, G)
    ones = torch.ones_like(src)
    return traffic.index_put_((src, dst), ones, accumulate=True)


def arch_of(c: MoEConfig, name: str = "course-moe",
            title: str = "MoE course model") -> ArchConfig:
    """The MoE course model as a registry config, so that
    core.calc counts it exactly as it counts Mixtral."""
    return ArchConfig(
        name, title, vocab_size=c.vocab_size, d_model=c.d_model,
        n_layers=c.n_layers, n_heads=c.n_heads,
        n_kv_heads=c.n_kv_heads, ffn_hidden=c.ffn_hidden,
        max_seq_len=c.max_seq_len, rope_base=c.rope_base,
        n_experts=c.n_experts,
        experts_per_token=c.experts_per_token)


def memory_and_compute(c: ArchConfig,
                       bytes_per_param: float = 2.0) -> dict:
    """What a model must hold against what one token computes.
    Every expert sits in memory; a token multiplies only with k
    of them: 2 FLOPs (multiply, add) per active weight.

    Example: Mixtral 8x7B -> 46.7 B held (93.4 GB in bf16),
             12.9 B active, 25.8 GFLOP per token
    """
    total = count_params(c)
    active = count_params(c, active=True)
    return {"name": c.name, "title": c.title,
            "total": total, "active": active,
            "bytes": total * bytes_per_param,
            "flops_per_token": 2 * active}


@torch.inference_mode()
def expert_stats(model: MoEModel, tok: CharTokenizer,
                 windows: torch.Tensor, top: int = 12,
                 min_count: int = 20, batch: int = 16) -> dict:
    """What each expert took over a corpus (``windows``: (W, T)
    token ids), with inference routing. Per layer and expert: its
    share of the assignments, the characters it takes most often,
    and those it takes most exclusively (the share of the
    character's occurrences sent to it; characters seen at least
    ``min_count`` times).
    """
    n_layers, n_exp = model.config.n_layers, model.config.n_experts
    counts = [[Counter() for _ in range(n_exp)]
              for _ in range(n_layers)]
    seen: Counter = Counter()
    for i in range(0, len(windows), batch):
        ids = windows[i: i + batch]                    # (b, T)
        results: list[MoEResult] = []
        model(ids, routing=INFERENCE, results=results)
        flat = ids.reshape(-1).tolist()                # (b*T,)
        seen.update(flat)
        for layer, r in enumerate(results):
            for pos, row in enumerate(r.experts.tolist()):
                for e in row:                          # k of them
                    counts[layer][e][flat[pos]] += 1
    layers = []
    for per_expert in counts:
        assigned = sum(sum(c.values()) for c in per_expert)
        experts = []
        for c in per_expert:
            often = [[tok.tokens([t])[0], n]
                     for t, n in c.most_common(top)]
            share = sorted(((n / seen[t], t) for t, n in c.items()
                            if seen[t] >= min_count), reverse=True)
            own = [[tok.tokens([t])[0], round(s, 3)]
                   for s, t in share[:top]]
            load = round(sum(c.values()) / assigned, 4)
            experts.append({"load": load, "often": often,
                            "exclusive": own})
        layers.append(experts)
    return {"tokens": int(sum(seen.values())),
            "min_count": min_count, "layers": layers}


def loss_windows(ids: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Non-overlapping (input + next) windows covering ``ids``: (W, seq_len + 1).
    The tail that does not fill a window is left out.

    Example: ids 0..9, seq_len 4 -> [[0..4], [4..8]]
    """
    n = (len(ids) - 1) // seq_len
    return torch.stack([ids[i * seq_len: i * seq_len + seq_len + 1] for i in range(n)])


@torch.inference_mode()
def mean_loss(model: torch.nn.Module, ids: torch.Tensor, seq_len: int = 128,
              batch: int = 16) -> float:
    """Cross-entropy (nats per predicted character) over the whole of ``ids``, in
    fixed windows, in order: no sampling, the same number every time. Works on the
    dense and the MoE course model alike (the MoE routes with INFERENCE)."""
    w = loss_windows(ids, seq_len)                               # (W, T+1)
    total, count = 0.0, 0
    for i in range(0, len(w), batch):
        b = w[i: i + batch]                                      # (b, T+1)
        logits = model(b[:, :-1])                                # (b, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), b[:, 1:].flatten(),
                                 reduction="sum").item()
        count += b[:, 1:].numel()
    return total / count


def route_prompt_at(model: MoEModel, tok: CharTokenizer, text: str, routings: list[Routing],
                    seed: int = 0) -> list[RoutedPrompt]:
    """``route_prompt`` once for each of ``routings`` (E1's live capacity slider sends the load
    at every capacity factor with the page): entry i is ``route_prompt(model, tok, text,
    routings[i], seed)``, each pass with its own generator seeded the same."""
    return [route_prompt(model, tok, text, routing, seed) for routing in routings]
