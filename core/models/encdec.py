"""The original encoder-decoder Transformer (Vaswani et al. 2017), small, built from our parts.

Dimension legend
    B       batch
    S       source positions (the encoder's input, the keys of cross-attention)
    N       target positions fed to the decoder in this call (all of them, or 1 with a cache)
    T       target positions seen so far: cached + new (T == N without a cache)
    D       model width, d_model
    H       attention heads
    d_head  D / H
    F       feed-forward hidden width
    V       vocabulary size (V_src for the source, V_tgt for the target)

How it differs from the course model (C2): LayerNorm *after* each residual add (post-norm),
token embeddings scaled by sqrt(D) plus fixed sinusoidal positions (no RoPE), a ReLU
feed-forward of two linear layers, biases everywhere, and two stacks: an encoder that reads
the whole source at once and a decoder whose layers read the encoder's output C through
cross-attention (queries from the decoder, keys and values from C).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn

from core.models.model import sha256_file
from core.parts.activations import relu
from core.parts.kv_cache import KVCache
from core.parts.mha import MHAConfig, MultiHeadAttention
from core.parts.norms import LayerNorm
from core.parts.positional import sinusoidal
from core.parts.trace import Trace, record
from core.text.tokenizer import CharTokenizer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
WEIGHTS_FILE = "date_model.safetensors"
CONFIG_FILE = "date_model_config.json"
LOSS_FILE = "date_model_loss.json"
CHECKPOINTS_FILE = "date_model_checkpoints.json"   # earlier weights, float16, with sha256 and loss (C1)
REBUILD = "python scripts/train_date_model.py"


@dataclass(frozen=True)
class EncDecConfig:
    src_vocab: int            # V_src, rows of the source embedding
    tgt_vocab: int            # V_tgt, rows of the target embedding and outputs of the final linear layer
    d_model: int = 64         # D; the paper's base model has 512, dates need far less
    n_heads: int = 4          # H, each head d_head = D / H = 16 wide
    n_layers: int = 2         # layers in each stack (the paper: 6 and 6)
    ffn_hidden: int = 256     # F = 4 D, the paper's ratio (2048 for D = 512)
    max_len: int = 32         # longest source or target; sets the size of the sinusoid table
    norm_eps: float = 1e-5    # LayerNorm's epsilon, torch's default, so the layers match nn.Transformer*

    def __post_init__(self) -> None:
        MHAConfig(self.d_model, self.n_heads)  # raises when D does not split into H heads
        for name in ("src_vocab", "tgt_vocab", "n_layers", "ffn_hidden", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "EncDecConfig":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class _Renamed(Trace):
    """The multi-head module records ``attn.weights``; inside a layer it is ``self_attn.weights``
    or ``cross_attn.weights``, so a student can tell the two attentions of a decoder layer apart."""

    def __init__(self, parent: Trace, name: str):
        super().__init__(parent.tensors, parent.prefix)
        self.name = name

    def record(self, name: str, tensor: torch.Tensor) -> None:
        super().record(self.name + name.removeprefix("attn"), tensor)


def _renamed(trace: Trace | None, name: str) -> Trace | None:
    return None if trace is None else _Renamed(trace, name)


class FeedForward(nn.Module):
    """FFN(x) = ReLU(x W1 + b1) W2 + b2 (Vaswani et al. 2017,
    eq. 2), each position on its own."""

    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, hidden)   # D -> F, widen
        self.w2 = nn.Linear(hidden, d_model)   # F -> D, back

    def forward(self, x: torch.Tensor,
                trace: Trace | None = None) -> torch.Tensor:
        h = relu(self.w1(x))     # (B, N, F); 0: the unit is off
        record(trace, "ffn.hidden", h)
        return self.w2(h)           # (B, N, D)


class EncoderLayer(nn.Module):
    """x -> LayerNorm(x + SelfAttn(x)) -> LayerNorm(. + FFN(.)): post-norm, as in the paper."""

    def __init__(self, c: EncDecConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(MHAConfig(c.d_model, c.n_heads, bias=True))
        self.self_attn_norm = LayerNorm(c.d_model, c.norm_eps)
        self.ffn = FeedForward(c.d_model, c.ffn_hidden)
        self.ffn_norm = LayerNorm(c.d_model, c.norm_eps)

    def forward(self, x: torch.Tensor,
                src_mask: torch.Tensor | None,
                trace: Trace | None = None) -> torch.Tensor:
        record(trace, "input", x)                   # (B, S, D)
        a = self.self_attn(x, mask=src_mask,
                           trace=_renamed(trace, "self_attn"))
        x = x + a                                   # (B, S, D)
        record(trace, "self_attn_add", x)
        x = self.self_attn_norm(x)
        record(trace, "self_attn_norm", x)
        f = self.ffn(x, trace)                      # (B, S, D)
        record(trace, "ffn_out", f)
        x = x + f
        record(trace, "ffn_add", x)
        x = self.ffn_norm(x)
        record(trace, "ffn_norm", x)
        return x


@dataclass
class CrossKV:
    """K = C W_k and V = C W_v of one decoder layer's cross-attention, (B, H, S, d_head) each.

    They depend on the source only, so greedy decoding computes them once per source."""
    k: torch.Tensor
    v: torch.Tensor


def cross_kv(attn: MultiHeadAttention,
             memory: torch.Tensor) -> CrossKV:
    """K = C W_k, V = C W_v of the encoder output C (B, S, D),
    (B, H, S, d_head) each: the module's own projections."""
    return CrossKV(*attn.keys_values(memory))


def cross_attend(attn: MultiHeadAttention, x: torch.Tensor,
                 kv: CrossKV, mask: torch.Tensor | None,
                 trace: Trace | None = None) -> torch.Tensor:
    """Queries from the decoder x (B, N, D); K, V of C from kv.

    What attn(x, context=C, mask=mask) computes (a test checks
    it), with K, V made once per source instead of at every
    step: the module's own queries and attention.
    """
    q = attn.queries(x)                      # (B, H, N, d_head)
    # weights (B, H, N, S): one row per query, each sums to 1
    return attn.attend(q, kv.k, kv.v, mask, trace)  # (B, N, D)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over C, feed-forward; each followed by Add & Norm."""

    def __init__(self, c: EncDecConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(MHAConfig(c.d_model, c.n_heads, bias=True))
        self.self_attn_norm = LayerNorm(c.d_model, c.norm_eps)
        self.cross_attn = MultiHeadAttention(MHAConfig(c.d_model, c.n_heads, bias=True))
        self.cross_attn_norm = LayerNorm(c.d_model, c.norm_eps)
        self.ffn = FeedForward(c.d_model, c.ffn_hidden)
        self.ffn_norm = LayerNorm(c.d_model, c.norm_eps)

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                self_mask: torch.Tensor | None,
                src_mask: torch.Tensor | None,
                trace: Trace | None = None,
                cache: "DecodeCache | None" = None,
                layer: int = 0) -> torch.Tensor:
        record(trace, "input", x)                   # (B, N, D)
        own = cache.self_kv.layers[layer] if cache else None
        a = self.self_attn(x, mask=self_mask, cache=own,
                           trace=_renamed(trace, "self_attn"))
        x = x + a                                   # (B, N, D)
        record(trace, "self_attn_add", x)
        x = self.self_attn_norm(x)
        record(trace, "self_attn_norm", x)
        # K, V of C: computed here when teacher forcing, once
        # per source when decoding (the cache holds them).
        kv = (cross_kv(self.cross_attn, memory) if cache is None
              else cache.cross[layer])
        c = cross_attend(self.cross_attn, x, kv, src_mask,
                         _renamed(trace, "cross_attn"))
        x = x + c                                   # (B, N, D)
        record(trace, "cross_attn_add", x)
        x = self.cross_attn_norm(x)
        record(trace, "cross_attn_norm", x)
        f = self.ffn(x, trace)                      # (B, N, D)
        record(trace, "ffn_out", f)
        x = x + f
        record(trace, "ffn_add", x)
        x = self.ffn_norm(x)
        record(trace, "ffn_norm", x)
        return x


@dataclass
class DecodeCache:
    """Everything greedy decoding keeps between steps; the caller holds it, never the model."""
    memory: torch.Tensor               # (B, S, D) encoder output C, computed once
    src_mask: torch.Tensor             # (B, 1, 1, S) True on real source characters
    cross: list[CrossKV]               # one per decoder layer, computed once from C
    self_kv: KVCache = field(default_factory=lambda: KVCache(0))  # the decoder's own past k, v


def source_mask(src_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, S) ids -> (B, 1, 1, S) bool: True on real characters; broadcasts over heads and queries.

    Example: source_mask(tensor([[5, 6, 0]]), 0) -> [[[[T, T, F]]]]
    """
    return (src_ids != pad_id)[:, None, None, :]                             # (B, 1, 1, S)


def target_mask(tgt_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, N) ids -> (B, 1, N, N) bool: causal AND the key is not padding.

    Example: target_mask(tensor([[1, 5, 0]]), 0)[0, 0] -> [[T, F, F], [T, T, F], [T, T, F]]
    """
    n = tgt_ids.shape[1]
    causal = torch.ones(n, n, dtype=torch.bool, device=tgt_ids.device).tril()  # (N, N)
    return causal & (tgt_ids != pad_id)[:, None, None, :]                       # (B, 1, N, N)


class EncoderDecoder(nn.Module):
    """(source ids (B, S), target ids (B, N)) -> next-character logits (B, N, V_tgt).

    Holds weights only: masks, traces and decoding caches are made per call."""

    pad_id = 0   # CharTokenizer puts <pad> at 0 in both vocabularies

    def __init__(self, config: EncDecConfig):
        super().__init__()
        c = self.config = config
        self.src_embed = nn.Embedding(c.src_vocab, c.d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab, c.d_model)
        self.encoder = nn.ModuleList(EncoderLayer(c) for _ in range(c.n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(c) for _ in range(c.n_layers))
        self.output = nn.Linear(c.d_model, c.tgt_vocab)
        # Embeddings start at std 1/sqrt(D), so that after the sqrt(D) scale in ``embed`` a
        # token vector has entries of size ~1, like the sinusoids added to it. With torch's
        # default std 1 the scaled token would be sqrt(D) times larger and drown the positions.
        for table in (self.src_embed, self.tgt_embed):
            nn.init.normal_(table.weight, std=c.d_model ** -0.5)
        # A fixed table, not a weight: kept out of the state dict (persistent=False).
        self.register_buffer("pe", sinusoidal(c.max_len, c.d_model), persistent=False)  # (max_len, D)

    def embed(self, ids: torch.Tensor, table: nn.Embedding, start: int = 0) -> torch.Tensor:
        """table(ids) * sqrt(D) + PE(start ...): the scale keeps the learned vectors as large as
        the unit-sized sinusoids (Vaswani et al. 2017, sec. 3.4)."""
        n = ids.shape[1]
        if start + n > self.config.max_len:
            raise ValueError(f"{start + n} positions exceed max_len={self.config.max_len}")
        return table(ids) * math.sqrt(self.config.d_model) + self.pe[start:start + n]  # (B, N, D)

    def encode(self, src_ids: torch.Tensor, trace: Trace | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Source ids (B, S) -> (C (B, S, D), source mask (B, 1, 1, S))."""
        src_mask = source_mask(src_ids, self.pad_id)
        x = self.embed(src_ids, self.src_embed)                              # (B, S, D)
        record(trace, "encoder.embed", x)
        for i, layer in enumerate(self.encoder):
            x = layer(x, src_mask, None if trace is None else trace.child(f"encoder.layers.{i}"))
        return x, src_mask

    def decode(self, tgt_ids: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
               trace: Trace | None = None, cache: DecodeCache | None = None) -> torch.Tensor:
        """Target ids (B, N) -> logits (B, N, V_tgt). With a cache, the ids are the new positions only."""
        past = 0 if cache is None else cache.self_kv.length
        if cache is None:
            self_mask = target_mask(tgt_ids, self.pad_id)                    # (B, 1, N, N)
        else:   # new positions past..past+N-1 see every cached one and the new ones up to themselves
            n = tgt_ids.shape[1]
            self_mask = torch.ones(n, past + n, dtype=torch.bool, device=tgt_ids.device).tril(past)  # (N, T)
        x = self.embed(tgt_ids, self.tgt_embed, start=past)                  # (B, N, D)
        record(trace, "decoder.embed", x)
        for i, layer in enumerate(self.decoder):
            x = layer(x, memory, self_mask, src_mask,
                      None if trace is None else trace.child(f"decoder.layers.{i}"), cache, i)
        logits = self.output(x)                                              # (B, N, V_tgt)
        record(trace, "logits", logits)
        return logits

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """Teacher forcing: every target position at once, each behind the causal mask."""
        memory, src_mask = self.encode(src_ids, trace)
        return self.decode(tgt_ids, memory, src_mask, trace)

    def start(self, src_ids: torch.Tensor, trace: Trace | None = None) -> DecodeCache:
        """Run the encoder once and compute every layer's cross-attention K, V once."""
        memory, src_mask = self.encode(src_ids, trace)
        return DecodeCache(memory, src_mask, [cross_kv(layer.cross_attn, memory) for layer in self.decoder],
                           KVCache(self.config.n_layers))


@dataclass(frozen=True)
class Decoded:
    ids: torch.Tensor     # (B, L) chosen target ids, <bos> not included
    probs: torch.Tensor   # (B, L, V_tgt) the softmax each choice was taken from


@torch.no_grad()
def greedy(model: EncoderDecoder, src_ids: torch.Tensor,
           bos_id: int, steps: int,
           use_cache: bool = True) -> Decoded:
    """Pick the most likely next character ``steps`` times.

    use_cache=True: the encoder and the cross-attention K, V
    run once; each step feeds only the newest character (its
    own k, v are cached). use_cache=False: every step reruns
    the whole model on the prefix. Both give the same ids (a
    test checks it); the cache only saves work.
    """
    b = src_ids.shape[0]
    ids = torch.full((b, 1), bos_id, dtype=torch.long,
                     device=src_ids.device)       # (B, 1)
    cache = model.start(src_ids) if use_cache else None
    probs = []
    for _ in range(steps):
        if cache is not None:    # only the newest character
            logits = model.decode(ids[:, -1:], cache.memory,
                                  cache.src_mask, cache=cache)
            # logits (B, 1, V)
        else:                    # the whole prefix, again
            logits = model(src_ids, ids)          # (B, t, V)
        p = torch.softmax(logits[:, -1], dim=-1)  # (B, V)
        probs.append(p)
        best = p.argmax(-1, keepdim=True)         # (B, 1)
        ids = torch.cat([ids, best], dim=1)       # (B, t + 1)
    return Decoded(ids[:, 1:], torch.stack(probs, dim=1))


# --- The shipped date model ------------------------------------------------------------------

class DateModelUnavailable(RuntimeError):
    """The shipped date model is missing or damaged; the message says how to rebuild it."""


def checkpoint_file(step: int) -> str:
    """Example: checkpoint_file(60) -> 'date_model_step0060.safetensors'"""
    return f"date_model_step{step:04d}.safetensors"


def load_date_model(device: str | torch.device = "cpu", assets: Path | str | None = None
                    ) -> tuple[EncoderDecoder, CharTokenizer, CharTokenizer]:
    """The trained date model (eval mode) and its source and target tokenizers, from assets/."""
    from core.text.dates import source_tokenizer, target_tokenizer

    folder = Path(assets) if assets is not None else ASSETS
    try:
        from safetensors.torch import load_file

        meta = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        config = EncDecConfig.from_dict(meta["config"])
        path = folder / WEIGHTS_FILE
        if sha256_file(path) != meta["weights_sha256"]:
            raise ValueError(f"{path.name} does not match the checksum in {CONFIG_FILE}")
        src_tok, tgt_tok = source_tokenizer(), target_tokenizer()
        if (len(src_tok), len(tgt_tok)) != (config.src_vocab, config.tgt_vocab):
            raise ValueError("the vocabularies in core/text/dates.py do not match the config")
        model = EncoderDecoder(config)
        model.load_state_dict({k: v.float() for k, v in load_file(str(path)).items()}, strict=True)
    except Exception as err:  # missing file, bad JSON, wrong checksum, wrong shapes
        raise DateModelUnavailable(f"The date model in {folder} cannot be loaded ({err}). "
                                   f"Rebuild it with `{REBUILD}` (see assets/DATE_MODEL.md).") from err
    return model.to(device).eval(), src_tok, tgt_tok


@dataclass(frozen=True)
class DateCheckpoint:
    """One entry of date_model_checkpoints.json: the weights after ``step`` updates."""
    step: int
    file: str
    sha256: str
    loss: float            # the batch loss logged at this step, with exactly these weights
    exact_match: float     # greedy exact match on the 1,000 held-out dates of the final evaluation


def date_checkpoints(assets: Path | str | None = None) -> list[DateCheckpoint]:
    """The manifest's checkpoints in step order, the final model (``WEIGHTS_FILE``) last."""
    folder = Path(assets) if assets is not None else ASSETS
    try:
        manifest = json.loads((folder / CHECKPOINTS_FILE).read_text(encoding="utf-8"))
        entries = [DateCheckpoint(int(e["step"]), str(e["file"]), str(e["sha256"]), float(e["loss"]),
                                  float(e["exact_match"])) for e in manifest["checkpoints"]]
    except Exception as err:  # missing file, bad JSON, a missing field
        raise DateModelUnavailable(f"{CHECKPOINTS_FILE} in {folder} cannot be read ({err}). "
                                   f"Rebuild it with `{REBUILD}` (see assets/DATE_MODEL.md).") from err
    if not entries or entries[-1].file != WEIGHTS_FILE or [e.step for e in entries] != sorted({e.step for e in entries}):
        raise DateModelUnavailable(f"{CHECKPOINTS_FILE} must list distinct steps in order, {WEIGHTS_FILE} last")
    return entries


def load_date_checkpoint(step: int, device: str | torch.device = "cpu", assets: Path | str | None = None
                         ) -> EncoderDecoder:
    """The date model as it was after ``step`` updates (eval mode), its file checked against the
    manifest's sha256 first. The last step is the shipped model itself (float32); the others are
    float16 files, read back as float32."""
    folder = Path(assets) if assets is not None else ASSETS
    entry = next((e for e in date_checkpoints(folder) if e.step == step), None)
    if entry is None:
        raise DateModelUnavailable(f"no checkpoint at step {step} in {CHECKPOINTS_FILE}")
    try:
        from safetensors.torch import load_file

        config = EncDecConfig.from_dict(json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))["config"])
        path = folder / entry.file
        if sha256_file(path) != entry.sha256:
            raise ValueError(f"{entry.file} does not match its checksum in {CHECKPOINTS_FILE}")
        model = EncoderDecoder(config)
        model.load_state_dict({k: v.float() for k, v in load_file(str(path)).items()}, strict=True)
    except Exception as err:  # missing file, a changed byte, wrong shapes
        raise DateModelUnavailable(f"The date model's checkpoint {entry.file} cannot be loaded ({err}). "
                                   f"Rebuild it with `{REBUILD}` (see assets/DATE_MODEL.md).") from err
    return model.to(device).eval()
