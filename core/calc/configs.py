"""Architectures of real models, by name: the numbers every calculator in the course reads.

Dimension legend
    V       vocabulary size
    D       model width, d_model
    L       blocks (layers)
    H       query heads;  H_kv key/value heads (GQA when H_kv < H)
    d_head  D / H
    F       feed-forward hidden width
    E       experts per MoE layer (1 = a dense feed-forward);  k experts used per token

Sources (published config.json files on the Hugging Face Hub, and the papers):
    llama-2-*    Touvron et al. 2023, "Llama 2", Table 1; meta-llama/Llama-2-{7b,13b,70b}-hf
                 config.json: vocab 32000, max_position_embeddings 4096, rope_theta 10000,
                 7B 4096/32 layers/32 heads/11008, 13B 5120/40/40/13824,
                 70B 8192/80/64 heads, 8 KV heads/28672.
    llama-3-*    Meta 2024, "The Llama 3 Herd of Models", Table 3; meta-llama/Meta-Llama-3-{8B,70B}
                 config.json: vocab 128256, 8192 positions, rope_theta 500000, 8 KV heads,
                 8B 4096/32/32/14336, 70B 8192/80/64/28672.
    mistral-7b   Jiang et al. 2023, "Mistral 7B", Table 1; mistralai/Mistral-7B-v0.1 config.json:
                 vocab 32000, 4096/32/32 heads, 8 KV heads, 14336, rope_theta 10000,
                 sliding window 4096, max_position_embeddings 32768.
    mixtral-8x7b Jiang et al. 2024, "Mixtral of Experts", Table 1; mistralai/Mixtral-8x7B-v0.1
                 config.json: as Mistral-7B but 8 experts, 2 per token, rope_theta 1e6,
                 32768 positions, no sliding window.
    mixtral-8x22b Mistral AI 2024, "Cheaper, Better, Faster, Stronger" (39 B active of 141 B);
                 mistralai/Mixtral-8x22B-Instruct-v0.1 config.json: vocab 32768, 6144/56 layers/
                 48 heads, 8 KV heads, 16384, 8 experts, 2 per token, rope_theta 1e6, 65536 positions.
    gpt2-small   Radford et al. 2019; openai-community/gpt2 config.json: vocab 50257, n_embd 768,
                 n_layer 12, n_head 12, n_positions 1024, 4*768 GELU MLP, LayerNorm, biases,
                 learned positions, output tied to the token embedding.
    gpt3-175b    Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1: 96 layers,
                 d_model 12288, 96 heads of 128, context 2048; the GPT-2 tokenizer (vocab 50257),
                 d_ff = 4 d_model, learned positions, LayerNorm, biases, tied output as GPT-2
                 (sec. 2.1). Its alternating locally banded sparse attention has no field here.
    smollm2-135m HuggingFaceTB/SmolLM2-135M-Instruct (Allal et al. 2025, "SmolLM2"), the real model
                 this app runs (core/models/gguf_llama.py): read from the GGUF's metadata, through
                 the JSON its cache keeps; before the cache exists, the same numbers as the model's
                 config.json: vocab 49152, 576/30 layers/9 heads, 3 KV heads/1536, rope_theta 100000,
                 8192 positions, output tied to the embedding. 134,515,008 parameters.
    course       the course model of this app, read from assets/course_model_config.json.
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

NORMS = ("rms", "layer")
FFNS = ("swiglu", "gelu")


@dataclass(frozen=True)
class ArchConfig:
    name: str                        # registry id, language-neutral and safe in a URL ("llama-2-7b")
    title: str                       # how people write it ("LLaMA-2 7B"); a proper noun, not translated
    vocab_size: int                  # V, rows of the embedding table (and of the output projection)
    d_model: int                     # D, width of the residual stream
    n_layers: int                    # L, blocks stacked
    n_heads: int                     # H, query heads
    n_kv_heads: int                  # H_kv, key/value heads; < H is GQA, 1 is MQA; sizes the KV cache
    ffn_hidden: int                  # F, hidden width of one feed-forward (of one expert in an MoE)
    max_seq_len: int                 # context length the model was trained for
    rope_base: float | None = 10000.0  # base of theta_i = base^(-2i/d_head); None without RoPE
    norm: str = "rms"                # "rms" (RMSNorm: weight only) or "layer" (LayerNorm: weight and bias)
    ffn: str = "swiglu"              # "swiglu" (three matrices w1, w2, w3) or "gelu" (two, like GPT-2)
    n_experts: int = 1               # E, feed-forward experts per block; 1 means a dense model
    experts_per_token: int = 1       # k, experts each token is routed to (Mixtral: 2 of 8)
    tied_embeddings: bool = False    # output projection shares the embedding matrix (GPT-2) or not (LLaMA)
    bias: bool = False               # biases on the linear layers (GPT-2 keeps them, LLaMA drops them)
    learned_positions: bool = False  # a learned (max_seq_len, D) position table added to the input (GPT-2)
    sliding_window: int | None = None  # attention looks back at most this many tokens (Mistral-7B v0.1)

    def __post_init__(self) -> None:
        for field in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "ffn_hidden",
                      "max_seq_len", "n_experts", "experts_per_token"):
            if getattr(self, field) <= 0:
                raise ValueError(f"{self.name}: {field} must be positive")
        if self.d_model % self.n_heads:
            raise ValueError(f"{self.name}: d_model={self.d_model} must split evenly into n_heads={self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{self.name}: n_heads={self.n_heads} must be a multiple of "
                             f"n_kv_heads={self.n_kv_heads} (each KV head serves an equal group)")
        if self.experts_per_token > self.n_experts:
            raise ValueError(f"{self.name}: cannot route to {self.experts_per_token} of {self.n_experts} experts")
        if self.norm not in NORMS:
            raise ValueError(f"{self.name}: norm must be one of {NORMS}, got {self.norm!r}")
        if self.ffn not in FFNS:
            raise ValueError(f"{self.name}: ffn must be one of {FFNS}, got {self.ffn!r}")
        if self.rope_base is not None and self.learned_positions:
            raise ValueError(f"{self.name}: RoPE and a learned position table are alternatives, not both")
        if self.rope_base is not None and self.head_dim % 2:
            raise ValueError(f"{self.name}: RoPE rotates pairs, so head_dim={self.head_dim} must be even")

    @property
    def head_dim(self) -> int:
        """d_head = D / H."""
        return self.d_model // self.n_heads

    @property
    def kv_dim(self) -> int:
        """Width of the keys (and of the values) of one token in one layer: H_kv * d_head."""
        return self.n_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1


_LLAMA2 = dict(vocab_size=32000, max_seq_len=4096, rope_base=10000.0)
_LLAMA3 = dict(vocab_size=128256, max_seq_len=8192, rope_base=500000.0, n_kv_heads=8)

_REGISTRY: dict[str, ArchConfig] = {c.name: c for c in (
    ArchConfig("llama-2-7b", "LLaMA-2 7B", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=32,
               ffn_hidden=11008, **_LLAMA2),
    ArchConfig("llama-2-13b", "LLaMA-2 13B", d_model=5120, n_layers=40, n_heads=40, n_kv_heads=40,
               ffn_hidden=13824, **_LLAMA2),
    ArchConfig("llama-2-70b", "LLaMA-2 70B", d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8,
               ffn_hidden=28672, **_LLAMA2),
    ArchConfig("llama-3-8b", "Llama-3 8B", d_model=4096, n_layers=32, n_heads=32, ffn_hidden=14336, **_LLAMA3),
    ArchConfig("llama-3-70b", "Llama-3 70B", d_model=8192, n_layers=80, n_heads=64, ffn_hidden=28672, **_LLAMA3),
    ArchConfig("mistral-7b", "Mistral 7B", vocab_size=32000, d_model=4096, n_layers=32, n_heads=32,
               n_kv_heads=8, ffn_hidden=14336, max_seq_len=32768, rope_base=10000.0, sliding_window=4096),
    ArchConfig("mixtral-8x7b", "Mixtral 8x7B", vocab_size=32000, d_model=4096, n_layers=32, n_heads=32,
               n_kv_heads=8, ffn_hidden=14336, max_seq_len=32768, rope_base=1e6,
               n_experts=8, experts_per_token=2),
    # --- mixture of experts (issue 14) ---
    ArchConfig("mixtral-8x22b", "Mixtral 8x22B", vocab_size=32768, d_model=6144, n_layers=56, n_heads=48,
               n_kv_heads=8, ffn_hidden=16384, max_seq_len=65536, rope_base=1e6,
               n_experts=8, experts_per_token=2),
    # --- end mixture of experts ---
    ArchConfig("gpt2-small", "GPT-2 small", vocab_size=50257, d_model=768, n_layers=12, n_heads=12,
               n_kv_heads=12, ffn_hidden=3072, max_seq_len=1024, rope_base=None, norm="layer",
               ffn="gelu", tied_embeddings=True, bias=True, learned_positions=True),
)}

# SmolLM2-135M-Instruct: the real model of the course (issue 24). Its entry is read from the GGUF
# metadata that core/models/gguf_llama.py wrote beside its cache (calc may not import models, so
# the file is read here as data); these numbers stand in until the cache exists, and a test checks
# that they are the GGUF's (tests/test_real_model.py).
SMOLLM2 = "smollm2-135m"
REAL_CACHE_ENV = "ANATOMY_MODEL_CACHE"                 # the same variable and folder as gguf_llama's
REAL_CACHE_DEFAULT = Path(__file__).resolve().parents[2] / "assets" / "cache"
REAL_CONFIG_FILE = "smollm2-135m-instruct.json"
_SMOLLM2_PLACEHOLDER = dict(vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3,
                            ffn_hidden=1536, max_seq_len=8192, rope_base=100000.0)


def smollm2_config() -> ArchConfig:
    """SmolLM2-135M as an ArchConfig: from the cache's JSON when there is one.

    Example: count_params(smollm2_config()) -> 134_515_008 (core.calc.params)
    """
    folder = Path(os.environ.get(REAL_CACHE_ENV) or REAL_CACHE_DEFAULT)
    return _smollm2_from_file(folder / REAL_CONFIG_FILE)


@functools.lru_cache(maxsize=4)
def _smollm2_from_file(path: Path) -> ArchConfig:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))["config"]
        fields = {k: type(v)(meta[k]) for k, v in _SMOLLM2_PLACEHOLDER.items()}
        tied = bool(meta["tied_embeddings"])
    except (OSError, ValueError, KeyError, TypeError):
        fields, tied = dict(_SMOLLM2_PLACEHOLDER), True
    return ArchConfig(SMOLLM2, "SmolLM2 135M", tied_embeddings=tied, **fields)


# GPT-3 175B (E2: the LoRA paper's counts, 4.7 M and 37.7 M trainable parameters, are for it).
_REGISTRY["gpt3-175b"] = ArchConfig(
    "gpt3-175b", "GPT-3 175B", vocab_size=50257, d_model=12288, n_layers=96, n_heads=96, n_kv_heads=96,
    ffn_hidden=4 * 12288, max_seq_len=2048, rope_base=None, norm="layer", ffn="gelu",
    tied_embeddings=True, bias=True, learned_positions=True)

COURSE = "course"
# The course model's config as training wrote it (the file core.models.model reads too). calc may
# not import models, so the file is read here as data. Used when assets/ holds no config (a fresh
# checkout before training): ModelConfig's defaults with the shipped tokenizer's vocabulary.
COURSE_CONFIG_FILE = Path(__file__).resolve().parents[2] / "assets" / "course_model_config.json"
_COURSE_PLACEHOLDER = dict(vocab_size=2582, d_model=128, n_layers=4, n_heads=4, n_kv_heads=2,
                           ffn_hidden=344, max_seq_len=256, rope_base=10000.0)


@functools.cache
def course_config() -> ArchConfig:
    """The course model as an ArchConfig, read once from assets/."""
    return _course_from_file(COURSE_CONFIG_FILE)


def _course_from_file(path: Path) -> ArchConfig:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))["config"]
        fields = {k: type(v)(meta[k]) for k, v in _COURSE_PLACEHOLDER.items()}
    except (OSError, ValueError, KeyError, TypeError):
        fields = dict(_COURSE_PLACEHOLDER)
    return from_model_config(SimpleNamespace(**fields))


def from_model_config(m) -> ArchConfig:
    """The ArchConfig of a core.models.model.ModelConfig (RMSNorm, RoPE, GQA, SwiGLU, untied, no bias)."""
    return ArchConfig(COURSE, "Course model", vocab_size=m.vocab_size, d_model=m.d_model,
                      n_layers=m.n_layers, n_heads=m.n_heads, n_kv_heads=m.n_kv_heads,
                      ffn_hidden=m.ffn_hidden, max_seq_len=m.max_seq_len, rope_base=float(m.rope_base))


def names() -> list[str]:
    """Every registered name, SmolLM2 after the Llama-3 models, the course model last.

    Example: names()[:2] -> ["llama-2-7b", "llama-2-13b"]
    """
    published = list(_REGISTRY)
    at = published.index("llama-3-70b") + 1
    return [*published[:at], SMOLLM2, *published[at:], COURSE]


def get(name: str) -> ArchConfig:
    """The config registered under ``name``.

    Example: get("llama-2-7b").head_dim -> 128
    """
    if name == COURSE:
        return course_config()
    if name == SMOLLM2:
        return smollm2_config()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown model config {name!r}; known: {', '.join(names())}") from None
