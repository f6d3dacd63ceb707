"""A LLaMA-style decoder (Touvron et al. 2023): one class for the course model and for
SmolLM2-135M-Instruct (core/models/gguf_llama.py), which differ only in their config and weights.

Dimension legend
    B       batch
    N       new positions in this call (the whole prompt, or 1 when decoding with a cache)
    S       key/value positions attended over: cached + new (S == N without a cache)
    D       model width, d_model
    H       query heads
    H_kv    key/value heads (GQA: fewer than H)
    d_head  D / H
    F       feed-forward hidden width
    V       vocabulary size

Differences from the original Transformer (C2): pre-normalisation with RMSNorm, RoPE on
q and k instead of added position vectors, grouped-query attention, SwiGLU feed-forward,
no biases. The output projection is its own matrix in the course model and LLaMA; tied to
the embedding (the same tensor, counted once) in SmolLM2, as in GPT-2.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from core.parts.ffn import SwiGLU
from core.parts.kv_cache import KVCache, LayerKV
from core.parts.mha import MHAConfig, MultiHeadAttention
from core.parts.norms import RMSNorm
from core.parts.trace import Trace, record
from core.text.tokenizer import CharTokenizer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
WEIGHTS_FILE = "course_model.safetensors"
CONFIG_FILE = "course_model_config.json"
VOCAB_FILE = "course_model_vocab.json"
LOSS_FILE = "course_model_loss.json"
REBUILD = "python scripts/train_course_model.py"


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int              # V, rows of the embedding and of the output projection
    d_model: int = 128           # D, width of the residual stream every block reads and writes
    n_layers: int = 4            # blocks stacked; LLaMA-7B has 32, four are enough to memorise 300 poems
    n_heads: int = 4             # H, query heads, each d_head = D / H = 32 wide
    n_kv_heads: int = 2          # H_kv, key/value heads shared by groups of H / H_kv query heads (GQA)
    ffn_hidden: int = 344        # F, SwiGLU hidden width; 8/3 * D rounded up to 8, like LLaMA, since SwiGLU has three matrices
    max_seq_len: int = 256       # longest context accepted; training windows are 128, RoPE scores depend only on distance
    rope_base: float = 10000.0   # RoPE base of theta_i = base^(-2i/d_head), the value of RoFormer and LLaMA
    norm_eps: float = 1e-5       # keeps RMSNorm finite for an all-zero vector
    tied_embeddings: bool = False  # output projection is the embedding matrix itself (SmolLM2), not its own (course model)

    def __post_init__(self) -> None:
        MHAConfig(self.d_model, self.n_heads, self.n_kv_heads)  # raises on bad head counts
        if (self.d_model // self.n_heads) % 2:
            raise ValueError("RoPE rotates pairs, so d_head = d_model / n_heads must be even")
        for name in ("vocab_size", "n_layers", "ffn_hidden", "max_seq_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def causal_mask_after(n: int, past: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(n, past + n) bool: new query i sits at position past + i and sees keys 0 .. past + i.

    With past = 0 this is the square causal mask; with one new token it is a single
    all-True row, because the newest token may look at everything before it.

    Example: causal_mask_after(2, 1) -> [[T, T, F],
                                         [T, T, T]]
    """
    return torch.ones(n, past + n, dtype=torch.bool, device=device).tril(diagonal=past)  # (N, S)


class Block(nn.Module):
    """x + Attn(RMSNorm(x)), then + FFN(RMSNorm(...)): pre-norm keeps the
    residual path clean. The feed-forward is SwiGLU here; the MoE course
    model's block (core/models/moe_model.py) puts experts in its place."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(c.d_model, c.norm_eps)
        heads = MHAConfig(c.d_model, c.n_heads, c.n_kv_heads, bias=False)
        self.attn = MultiHeadAttention(heads)
        self.ffn_norm = RMSNorm(c.d_model, c.norm_eps)
        self.add_ffn(c)
        self.rope_base = c.rope_base

    def add_ffn(self, c: ModelConfig) -> None:
        self.ffn = SwiGLU(c.d_model, c.ffn_hidden)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        trace: Trace | None = None,
        cache: LayerKV | None = None,
        head_mask: torch.Tensor | None = None,
        head_fill: torch.Tensor | None = None,
        **ffn_args,
    ) -> torch.Tensor:
        """``ffn_args`` go to the feed-forward (the MoE block's routing)."""
        record(trace, "resid_pre", x)                                # (B, N, D)
        h = self.attn_norm(x)                                        # (B, N, D)
        record(trace, "attn_norm", h)
        a = self.attn(h, mask=mask, trace=trace, rope_base=self.rope_base,
                      cache=cache, positions=positions,
                      head_mask=head_mask, head_fill=head_fill)      # (B, N, D), attn.out
        return self.feed_forward(x + a, trace, **ffn_args)

    def feed_forward(self, x: torch.Tensor, trace: Trace | None = None, **ffn_args) -> torch.Tensor:
        """The block's second half, x + FFN(RMSNorm(x)), on the stream after the attention's add
        (resid_mid). Position by position: activation patching (core/lab/patching.py) enters a
        block here to replace what its attention wrote."""
        record(trace, "resid_mid", x)                                # (B, N, D)
        h = self.ffn_norm(x)                                         # (B, N, D)
        record(trace, "ffn_norm", h)
        x = x + self.ffn_out(h, trace, **ffn_args)                   # (B, N, D)
        record(trace, "resid_post", x)
        return x

    def ffn_out(self, h: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """SwiGLU(h): (B, N, D) -> what the feed-forward adds to the stream (B, N, D)."""
        f = self.ffn(h, trace=trace)                                 # (B, N, D)
        record(trace, "ffn_out", f)
        return f


class LlamaDecoder(nn.Module):
    """ids (B, N) -> next-token logits (B, N, V). Holds weights only; caches and traces are passed in."""

    block_type = Block    # the MoE course model builds the same decoder from its MoEBlock

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model,
                                  _weight=torch.empty(config.vocab_size, config.d_model))
        # N(0, 1), as nn.Embedding draws it (the same numbers from the same generator); not on the
        # meta device (shapes only: SmolLM2's load, LoRA's view), where there is nothing to draw and
        # PyTorch's Python stand-in for normal_ imports its compiler, 68 MB a process (issue 39).
        if not self.embed.weight.is_meta:
            nn.init.normal_(self.embed.weight)
        self.blocks = nn.ModuleList(self.block_type(config) for _ in range(config.n_layers))
        self.final_norm = RMSNorm(config.d_model, config.norm_eps)
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tied_embeddings:
            self.output.weight = self.embed.weight       # one (V, D) tensor read twice
    def new_cache(self) -> KVCache:
        """An empty cache for one generation; the caller keeps it, the model does not."""
        return KVCache(self.config.n_layers)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None, trace: Trace | None = None,
                head_mask: torch.Tensor | None = None, head_fill: torch.Tensor | None = None,
                **ffn_args) -> torch.Tensor:
        """``head_mask`` (L, H): 1 keeps head h of block l, 0 switches it off (lesson F1's
        ablation); ``head_fill`` (L, H, d_head): what a switched-off head writes instead (its
        mean output, say), zeros when None. Without a mask every head runs as it is.
        ``ffn_args`` go to every block's feed-forward (the MoE model's routing)."""
        x = self.embed(ids)                                                  # (B, N, D)
        record(trace, "embed", x)
        x = self.run_blocks(x, 0, cache=cache, trace=trace, head_mask=head_mask, head_fill=head_fill,
                            **ffn_args)
        x = self.final_norm(x)                                               # (B, N, D)
        record(trace, "final_norm", x)
        logits = self.output(x)                                              # (B, N, V)
        record(trace, "logits", logits)
        return logits

    def run_blocks(self, x: torch.Tensor, start: int = 0, stop: int | None = None,
                   cache: KVCache | None = None, trace: Trace | None = None,
                   head_mask: torch.Tensor | None = None, head_fill: torch.Tensor | None = None,
                   **ffn_args) -> torch.Tensor:
        """blocks[start:stop] on the residual stream x (B, N, D) entering block ``start`` -> the
        stream leaving block stop - 1 (B, N, D). ``forward`` runs them all; activation patching
        (core/lab/patching.py) resumes from a block with an edited stream. The new positions
        continue after what block ``start``'s cache holds; ``head_mask``/``head_fill`` are
        indexed by block, as in ``forward``."""
        stop = len(self.blocks) if stop is None else stop
        if start >= stop:
            return x                                                         # no block to run
        n = x.shape[1]
        past = 0 if cache is None else cache.layers[start].length
        if past + n > self.config.max_seq_len:
            raise ValueError(f"{past + n} positions exceed max_seq_len={self.config.max_seq_len}")
        # Positions continue after the cache, so RoPE turns a new token by its true position.
        positions = torch.arange(past, past + n, device=x.device)            # (N,)
        mask = causal_mask_after(n, past, x.device)                          # (N, S)
        for i in range(start, stop):
            x = self.blocks[i](
                x, mask, positions,
                trace=None if trace is None else trace.child(f"blocks.{i}"),
                cache=None if cache is None else cache.layers[i],
                head_mask=None if head_mask is None else head_mask[i],     # (H,)
                head_fill=None if head_fill is None else head_fill[i],     # (H, d_head)
                **ffn_args,
            )                                                                # (B, N, D)
        return x


class CourseModelUnavailable(RuntimeError):
    """The shipped course model is missing or damaged; the message says how to rebuild it."""


def sha256_file(path: Path | str) -> str:
    """The sha256 of a file's bytes, read in chunks (SmolLM2's GGUF is 100 MB): the checksum every
    shipped weight file is checked against (course, MoE and date models, their checkpoints, the GGUF).

    Example: sha256_file(an empty file) -> "e3b0c442...7852b855"
    """
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def load_trained(model_type: type[nn.Module], config_type: type[ModelConfig], folder: Path,
                 config_file: str, weights_file: str, require_checksum: bool = True
                 ) -> tuple[nn.Module, CharTokenizer]:
    """A trained model that reads the course vocabulary (the course model, the MoE model) from
    ``folder``: its config, the vocabulary, then the weights, checked against the sha256 in the
    config and read with safetensors (plain tensors, no pickled objects can run code) as float32.
    Without ``require_checksum`` a config that names no checksum is taken unchecked.

    Raises what reading raises (OSError, ValueError, KeyError, ...); each loader says how to
    rebuild its model.
    """
    from safetensors.torch import load_file

    meta = json.loads((folder / config_file).read_text(encoding="utf-8"))
    config = config_type.from_dict(meta["config"])
    tokenizer = CharTokenizer.from_json((folder / VOCAB_FILE).read_text(encoding="utf-8"))
    weights_path = folder / weights_file
    expected = meta["weights_sha256"] if require_checksum else meta.get("weights_sha256")
    if (require_checksum or expected) and sha256_file(weights_path) != expected:
        raise ValueError(f"{weights_path.name} does not match the checksum in {config_file}")
    state = load_file(str(weights_path))
    if len(tokenizer) != config.vocab_size:
        raise ValueError(f"vocabulary has {len(tokenizer)} entries, config says {config.vocab_size}")
    model = model_type(config)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model, tokenizer


def load_course_tokenizer(assets: Path | str | None = None) -> CharTokenizer:
    """The course model's character vocabulary alone (no weights): ids 0-3 are <pad> <bos> <eos>
    <unk>, then the characters of the corpus. The same id is the same row of the embedding table.

    Raises CourseModelUnavailable when assets/ holds no vocabulary.
    """
    path = (Path(assets) if assets is not None else ASSETS) / VOCAB_FILE
    try:
        return CharTokenizer.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CourseModelUnavailable(f"{path.name}: {err}") from err


def load_course_model(device: str | torch.device = "cpu", assets: Path | str | None = None
                      ) -> tuple[LlamaDecoder, CharTokenizer]:
    """The trained course model (eval mode, float32) and its tokenizer, from assets/
    (``load_trained``; a config without a checksum is taken as it is)."""
    folder = Path(assets) if assets is not None else ASSETS
    hint = f"Rebuild it with `{REBUILD}` (see assets/CORPUS.md)."
    try:
        model, tokenizer = load_trained(LlamaDecoder, ModelConfig, folder, CONFIG_FILE, WEIGHTS_FILE,
                                        require_checksum=False)
    except CourseModelUnavailable:
        raise
    except Exception as err:  # missing file, bad JSON, truncated tensors, wrong shapes
        raise CourseModelUnavailable(f"The course model in {folder} cannot be loaded ({err}). {hint}") from err
    return model.to(device).eval(), tokenizer
