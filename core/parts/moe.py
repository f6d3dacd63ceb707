"""A sparse mixture-of-experts feed-forward layer (Shazeer et al. 2017; GShard, Lepikhin et al.
2020; Switch Transformer, Fedus et al. 2021; Mixtral, Jiang et al. 2024).

Dimension legend
    B   batch
    N   positions
    T   tokens routed together, B * N (one row each in the router's tables)
    D   model width
    F   hidden width of one expert (a SwiGLU feed-forward)
    E   experts in the layer;  E_used the first E_used of them that this call may use
    k   experts each token is sent to

A router (a D -> E linear layer, ``w_g``) scores every expert for every token; each token
goes to its k best experts and their outputs are mixed by the gate weights. Only k of
the E feed-forwards run per token: the parameters grow with E, the compute with k.
One call returns everything a lesson draws (probabilities, choices, load, overflow, the
auxiliary losses) together with the output, from the same tensors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.parts.ffn import SwiGLU
from core.parts.trace import Trace, record

MODES = ("topk", "noisy", "switch", "gshard")


@dataclass(frozen=True)
class Routing:
    mode: str = "topk"                     # topk (Mixtral), noisy (Shazeer), switch (top-1), gshard (top-2, random 2nd)
    k: int = 2                             # experts per token for topk / noisy; switch uses 1, gshard 2
    n_experts: int | None = None           # E_used: route among the first E_used experts only (None: all)
    capacity_factor: float | None = None   # None: no limit, as Mixtral at inference; Switch trains with 1.0-1.25
    noise_scale: float = 1.0               # multiplies Shazeer's learned noise (noisy mode only); 0 = none
    aux_weight: float = 0.01               # alpha of the Switch load-balancing loss (Fedus et al. use 0.01)
    z_weight: float = 0.001                # weight of the router z-loss (ST-MoE, Zoph et al. 2022, use 0.001)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.k < 1 or (self.n_experts is not None and self.n_experts < 1):
            raise ValueError("k and n_experts must be at least 1")
        if self.capacity_factor is not None and self.capacity_factor <= 0:
            raise ValueError("capacity_factor must be positive (or None for no limit)")

    def experts_used(self, n_experts: int) -> int:
        """Example: Routing(n_experts=3).experts_used(8) -> 3; Routing().experts_used(8) -> 8"""
        return n_experts if self.n_experts is None else min(self.n_experts, n_experts)

    def top(self, n_experts: int) -> int:
        """k as this mode uses it among E_used experts.

        Example: Routing("switch", k=4).top(8) -> 1; Routing("topk", k=4, n_experts=3).top(8) -> 3
        """
        k = {"switch": 1, "gshard": 2}.get(self.mode, self.k)
        return min(k, self.experts_used(n_experts))


def expert_capacity(tokens: int, k: int, n_experts: int,
                    factor: float | None) -> int | None:
    """Slots per expert: ceil(factor * T * k / E); None = no limit.

    With factor 1, a perfectly even router fills every slot.

    Example: expert_capacity(10, 2, 8, 1.0) -> 3
             expert_capacity(10, 2, 8, None) -> None
    """
    if factor is None:
        return None
    return math.ceil(factor * tokens * k / n_experts)


def choose_experts(logits: torch.Tensor, mode: str, k: int,
                   rng: torch.Generator | None = None):
    """Router logits (T, E) -> probs (T, E), experts, gates and
    dispatched (T, k) each.

    topk / noisy: softmax over the k best logits (Mixtral), the
      same as the softmax over all E renormalised on the k chosen.
    switch: top-1; the gate is the probability itself (Fedus et
      al. 2021, eq. 2), so the router still learns; not 1.
    gshard: top-2, g1 + g2 renormalised to 1; the second expert
      runs with probability min(1, 2 g2) (Lepikhin et al. 2020).

    Example: logits [[2, 1, 0]], topk, k=2
             -> experts [[0, 1]], gates [[0.731, 0.269]]
    """
    probs = torch.softmax(logits, dim=-1)                # (T, E)
    if mode == "switch":
        gates, experts = probs.max(dim=-1, keepdim=True)  # (T, 1)
        sent = torch.ones_like(experts, dtype=torch.bool)
        return probs, experts, gates, sent
    best, experts = logits.topk(k, dim=-1)               # (T, k)
    gates = torch.softmax(best, dim=-1)                  # (T, k)
    sent = torch.ones_like(experts, dtype=torch.bool)    # (T, k)
    if mode == "gshard" and k == 2:
        u = torch.rand(gates.shape[0], generator=rng,
                       device=gates.device)              # (T,)
        sent[:, 1] = u < 2 * gates[:, 1]
    return probs, experts, gates, sent


def fill_experts(experts: torch.Tensor, sent: torch.Tensor,
                 n_experts: int, capacity: int | None):
    """Which assignments find a slot -> fits (T, k) bool, and
    wanted (E,): the assignments each expert was sent.

    Every token's first choice is served first, then the second
    choices (GShard, Algorithm 1), each in position order: a full
    expert turns the later tokens away.

    Example: experts [[0], [0], [0]], capacity 2
             -> fits [[T], [T], [F]], wanted [3]
    """
    if capacity is None:                       # every sent one fits
        wanted = torch.bincount(experts[sent], minlength=n_experts)
        return sent.clone(), wanted            # (T, k), (E,)
    t, k = experts.shape
    order = experts.T.reshape(-1)              # (k*T,) choice-major
    onehot = F.one_hot(order, n_experts)       # (k*T, E)
    onehot = onehot * sent.T.reshape(-1, 1)    # unsent: no slot
    slot = ((onehot.cumsum(0) - 1) * onehot).sum(-1)  # (k*T,)
    fits = sent.T.reshape(-1) & (slot < capacity)  # (k*T,)
    return fits.view(k, t).T, onehot.sum(0)    # (T, k), (E,)


def switch_loss(probs: torch.Tensor, experts: torch.Tensor,
                n_experts: int) -> torch.Tensor:
    """E * sum_i f_i * P_i (Fedus et al. 2021, eq. 4, without
    alpha): f_i the share of token-expert assignments that chose
    expert i, P_i its mean router probability. 1 when both are
    uniform; E when one expert takes everything.

    Example: probs all 1/4, experts spread evenly over 4 -> 1.0
    """
    chosen = F.one_hot(experts.reshape(-1), n_experts)
    f = chosen.float().mean(0)                   # (E,)
    p = probs.mean(0)                            # (E,)
    return n_experts * (f * p).sum()


def z_loss(logits: torch.Tensor) -> torch.Tensor:
    """mean over tokens of logsumexp(logits)^2 (ST-MoE): keeps router logits small.

    Example: logits [[0, 0]] -> (log 2)^2 = 0.480
    """
    return torch.logsumexp(logits, dim=-1).pow(2).mean()


@dataclass
class MoEResult:
    output: torch.Tensor          # (..., D) the layer's output, shaped like its input
    logits: torch.Tensor          # (T, E) router logits (noise included in noisy mode)
    probs: torch.Tensor           # (T, E) router probabilities; experts beyond E_used get 0
    experts: torch.Tensor         # (T, k) chosen experts, best first
    gates: torch.Tensor           # (T, k) their gate weights
    dispatched: torch.Tensor      # (T, k) bool: sent (False only for GShard's skipped 2nd expert)
    fits: torch.Tensor            # (T, k) bool: sent and found a slot, so the expert ran on it
    wanted: torch.Tensor          # (E,) assignments each expert was sent
    load: torch.Tensor            # (E,) assignments each expert processed (<= capacity)
    capacity: int | None          # slots per expert; None = unlimited
    clean_logits: torch.Tensor    # (T, E) router logits before noise and masking
    routing: Routing              # the settings of this call
    n_used: int                   # E_used

    # The losses are computed when asked for (training, the lesson), not on every decoding step.
    @property
    def aux_loss(self) -> torch.Tensor:
        """alpha * E_used * sum_i f_i P_i, the Switch load-balancing loss."""
        e = self.n_used
        return self.routing.aux_weight * switch_loss(self.probs[:, :e], self.experts, e)

    @property
    def z_loss(self) -> torch.Tensor:
        """beta * mean logsumexp^2 of the clean logits, the router z-loss."""
        return self.routing.z_weight * z_loss(self.clean_logits[:, :self.n_used])

    # A turned-away assignment adds 0 to the output; the block's residual carries the token
    # on (GShard, Lepikhin et al. 2020; Switch, Fedus et al. 2021, sec. 2.2: "dropped" tokens
    # pass to the next layer through the residual connection).
    @property
    def overflow(self) -> torch.Tensor:
        """(T, k) bool: assignments turned away by a full expert."""
        return self.dispatched & ~self.fits

    @property
    def overflowed_tokens(self) -> torch.Tensor:
        """(T,) bool: tokens no expert processed (every assignment turned away): the
        layer adds nothing to them, and only the residual carries them on."""
        return ~self.fits.any(-1)

    @property
    def partly_overflowed(self) -> torch.Tensor:
        """(T,) bool: tokens that lost some assignment but kept at least one expert."""
        return self.overflow.any(-1) & self.fits.any(-1)


class MoE(nn.Module):
    """E SwiGLU experts and a router; the routing is chosen per call (``Routing``), so one
    shared model serves every student's settings."""

    def __init__(self, d_model: int, hidden: int, n_experts: int):
        super().__init__()
        self.w_g = nn.Linear(d_model, n_experts, bias=False)       # router (gate) logits
        self.w_noise = nn.Linear(d_model, n_experts, bias=False)   # Shazeer's learned noise scale
        self.experts = nn.ModuleList(SwiGLU(d_model, hidden) for _ in range(n_experts))

    @property
    def n_experts(self) -> int:
        return len(self.experts)

    def forward(self, x: torch.Tensor, routing: Routing = Routing(),
                rng: torch.Generator | None = None,
                trace: Trace | None = None) -> MoEResult:
        e_all = self.n_experts
        e_used = routing.experts_used(e_all)
        k = routing.top(e_all)
        h = x.reshape(-1, x.shape[-1])                   # (T, D)
        clean = self.w_g(h)                              # (T, E)
        logits = clean
        if routing.mode == "noisy" and routing.noise_scale > 0:
            std = F.softplus(self.w_noise(h))            # (T, E)
            eps = torch.randn(clean.shape, generator=rng,
                              device=h.device)           # (T, E)
            logits = clean + routing.noise_scale * eps * std
        if e_used < e_all:  # experts left out: probability 0
            off = torch.arange(e_all, device=h.device) >= e_used
            logits = logits.masked_fill(off, float("-inf"))
        probs, experts, gates, sent = choose_experts(
            logits, routing.mode, k, rng)     # (T, E), (T, k) x3
        cap = expert_capacity(h.shape[0], k, e_used,
                              routing.capacity_factor)
        fits, wanted = fill_experts(experts, sent, e_all, cap)

        out = torch.zeros_like(h)                        # (T, D)
        for e in experts[fits].unique().tolist():        # busy ones
            mine = (experts == e) & fits                 # (T, k)
            tok, slot = torch.nonzero(mine, as_tuple=True)
            y = self.experts[e](h[tok])                  # (n_e, D)
            g = gates[tok, slot, None]                   # (n_e, 1)
            out = out.index_add(0, tok, y * g)           # (T, D)

        record(trace, "moe.router_logits", logits)
        record(trace, "moe.router_probs", probs)
        record(trace, "moe.experts", experts)
        record(trace, "moe.gates", gates)
        record(trace, "moe.fits", fits)
        load = wanted if cap is None else wanted.clamp(max=cap)
        return MoEResult(
            output=out.view(x.shape), logits=logits, probs=probs,
            experts=experts, gates=gates, dispatched=sent,
            fits=fits, wanted=wanted, load=load, capacity=cap,
            clean_logits=clean, routing=routing,
            n_used=e_used)
