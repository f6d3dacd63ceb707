"""GPUs as a roofline: how fast they compute, how fast they feed the computation.

Units
    FLOP/s  floating-point operations per second (dense fp16/bf16 tensor cores, no sparsity)
    B/s     bytes per second;  GB = 10^9 bytes (as the datasheets count capacity and bandwidth)
    KiB     2^10 bytes: on-chip memories are counted in powers of 2 (a whitepaper's "192 KB" of L1
            is 192 KiB), and every size the lessons compute is printed in KiB/MiB/GiB
    I       arithmetic intensity, FLOPs per byte moved from memory

The roofline model (Williams, Waterman, Patterson 2009): a kernel that does F FLOPs and
moves M bytes needs at least max(F / peak, M / bandwidth) seconds, so it reaches at most
min(peak, I × bandwidth) FLOP/s. Below the ridge point I* = peak / bandwidth it waits for
memory; above it, for arithmetic.

Published numbers (datasheets; dense = half of the "with sparsity" tensor figure):
    A100 40GB/80GB SXM  NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 312 TFLOPS,
                        HBM2 1,555 GB/s (40GB), HBM2e 2,039 GB/s (80GB); A100 whitepaper:
                        108 SMs, 192 KB L1/shared per SM, 40 MB L2, 1,410 MHz boost; PCIe 4.0.
    H100 SXM            NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 TFLOPS with sparsity
                        (989 dense), HBM3 3.35 TB/s, 80 GB; Hopper whitepaper: 132 SMs,
                        256 KB L1/shared per SM, 50 MB L2; PCIe 5.0.
    H200                NVIDIA H200 product page: 141 GB HBM3e, 4.8 TB/s, same compute as H100 SXM.
    RTX 4090            NVIDIA Ada Lovelace architecture whitepaper, Appendix A: 128 SMs,
                        2,520 MHz boost, 72 MB L2, 128 KB L1 per SM, 24 GB GDDR6X 1,008 GB/s,
                        FP16 tensor with FP32 accumulate 165.2 TFLOPS dense; PCIe 4.0.
    L4                  NVIDIA L4 datasheet: FP16/BF16 tensor 242 TFLOPS with sparsity (121 dense),
                        24 GB GDDR6, 300 GB/s; Ada whitepaper: 58 SMs, 48 MB L2, 128 KB L1 per SM;
                        2,040 MHz boost; PCIe 4.0.
    Host link           PCIe 4.0 x16 ≈ 32 GB/s, PCIe 5.0 x16 ≈ 64 GB/s per direction.
On-chip SRAM bandwidth is not on the datasheets; it is derived as SMs × 128 bytes per
clock × boost clock, which gives the ≈19 TB/s quoted for the A100 by FlashAttention
(Dao et al. 2022, Fig. 1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GIB_PER_GB = 1e9 / 2**30   # datasheets count GB = 10^9 bytes; the lessons' memory axes are in GiB = 2^30
SRAM_BYTES_PER_CLOCK = 128   # per SM: L1/shared memory delivers one 128-byte line a clock


@dataclass(frozen=True)
class GPU:
    name: str               # registry id, safe in a URL ("h100-sxm")
    title: str              # how the vendor writes it; a proper noun, not translated
    hbm_gb: float           # memory on the card, GB: where weights and the KV cache live
    hbm_gbps: float         # its bandwidth, GB/s: the roof of every memory-bound kernel
    peak_tflops: float      # dense fp16/bf16 tensor-core TFLOP/s: the flat roof
    sms: int                # streaming multiprocessors, each with its own SRAM
    l1_kb_per_sm: int       # L1 / shared memory per SM, KB: the SRAM a kernel tiles into
    l2_mb: float            # L2 cache shared by all SMs, MB
    boost_ghz: float        # clock used for the derived SRAM bandwidth
    host_gbps: float        # PCIe to host memory, GB/s per direction: offloading pays this

    @property
    def ridge(self) -> float:
        """I* = peak / bandwidth, FLOPs per byte where the two roofs meet.

        Example: A100 80GB: 312e12 / 2039e9 ≈ 153 FLOPs per byte
        """
        return self.peak_tflops * 1e12 / (self.hbm_gbps * 1e9)

    @property
    def sram_mib(self) -> float:
        """On-chip SRAM a kernel tiles into: the L1/shared memory of every SM, in MiB (the
        whitepapers' KB per SM are KiB). The same level as ``sram_gbps``; L2 (``l2_mb``) sits
        between it and HBM.

        Example: A100: 108 × 192 KiB / 1024 = 20.25 MiB (21.2 MB)
        """
        return self.sms * self.l1_kb_per_sm / 1024

    @property
    def hbm_gib(self) -> float:
        """The datasheet's capacity in GiB, the unit of every size the lessons compute.

        Example: A100 80GB: 80e9 / 2^30 ≈ 74.5 GiB
        """
        return self.hbm_gb * GIB_PER_GB

    @property
    def sram_gbps(self) -> float:
        """Derived L1/shared bandwidth of all SMs together, GB/s.

        Example: A100: 108 × 128 B × 1.41 GHz ≈ 19,492 GB/s
        """
        return self.sms * SRAM_BYTES_PER_CLOCK * self.boost_ghz


GPUS: dict[str, GPU] = {g.name: g for g in (
    # The A100 80GB's 2,039 GB/s is the SXM card's (the PCIe card has 1,935 GB/s): named as H100 SXM is.
    # Both 40 GB cards have 1,555 GB/s.
    GPU("a100-40gb", "A100 40GB", 40, 1555, 312, 108, 192, 40, 1.41, 32),
    GPU("a100-80gb", "A100 80GB SXM", 80, 2039, 312, 108, 192, 40, 1.41, 32),
    GPU("h100-sxm", "H100 SXM", 80, 3350, 989, 132, 256, 50, 1.83, 64),
    GPU("h200", "H200", 141, 4800, 989, 132, 256, 50, 1.83, 64),
    GPU("rtx-4090", "RTX 4090", 24, 1008, 165.2, 128, 128, 72, 2.52, 32),
    GPU("l4", "L4", 24, 300, 121, 58, 128, 48, 2.04, 32),
)}

# Host memory is not a property of the card; a typical two-socket inference server.
HOST_GB = 512


def names() -> list[str]:
    return list(GPUS)


def get(name: str) -> GPU:
    try:
        return GPUS[name]
    except KeyError:
        raise KeyError(f"unknown GPU {name!r}; known: {', '.join(GPUS)}") from None


def attainable_tflops(gpu: GPU, intensity: float) -> float:
    """The roofline: min(peak, I × bandwidth), in TFLOP/s.

    Example: H100 SXM at I = 1 FLOP/byte: min(989, 1 × 3.35) = 3.35 TFLOP/s,
             0.3 % of peak
    """
    return min(gpu.peak_tflops, intensity * gpu.hbm_gbps / 1000)


def step_seconds(gpu: GPU, flops: float, n_bytes: float) -> float:
    """Lower bound on the time of a step: whichever of compute and memory takes longer.

    Example: LLaMA-2-7B decode on an A100 80GB SXM, 13.2e9 bytes (12.3 GiB) of fp16 weights, 13.2 GFLOPs:
             max(13.2e9 / 312e12, 13.2e9 / 2039e9) = 6.5 ms, memory-bound
    """
    return max(flops / (gpu.peak_tflops * 1e12), n_bytes / (gpu.hbm_gbps * 1e9))


def is_memory_bound(gpu: GPU, intensity: float) -> bool:
    """Example: is_memory_bound(get("h100-sxm"), 1.0) -> True (ridge ≈ 295)"""
    return intensity < gpu.ridge


def hierarchy(gpu: GPU) -> list[dict[str, float | str]]:
    """The three levels of memory a token's data may sit in: size (bytes) and bandwidth (B/s).

    Example: hierarchy(get("a100-80gb"))[0]["bytes"] -> 20.25 * 2^20 (108 SMs × 192 KiB);
             hierarchy(get("a100-80gb"))[1] -> {"level": "hbm", "bytes": 80e9, "bytes_per_s": 2.039e12}
    """
    return [
        {"level": "sram", "bytes": gpu.sram_mib * 2**20, "bytes_per_s": gpu.sram_gbps * 1e9},
        {"level": "hbm", "bytes": gpu.hbm_gb * 1e9, "bytes_per_s": gpu.hbm_gbps * 1e9},
        {"level": "host", "bytes": HOST_GB * 1e9, "bytes_per_s": gpu.host_gbps * 1e9},
    ]


def place(gpu: GPU, flops: float, n_bytes: float) -> dict[str, float | bool]:
    """Where a step lands on ``gpu``'s roofline, and how long it takes at best.

    Example: place(get("a100-80gb"), 13.2e9, 13.2e9) -> intensity 1.0, 2.04 TFLOP/s,
             6.47 ms, memory-bound
    """
    i = flops / n_bytes
    return {"intensity": i, "tflops": attainable_tflops(gpu, i), "seconds": step_seconds(gpu, flops, n_bytes),
            "memory_bound": is_memory_bound(gpu, i)}


def gpus_needed(gpu: GPU, n_bytes: float) -> int:
    """How many of these cards it takes just to hold ``n_bytes`` (weights + KV cache).

    Example: gpus_needed(get("a100-80gb"), 140e9) -> 2   (LLaMA-2-70B's fp16 weights, 130 GiB)
    """
    return max(1, math.ceil(n_bytes / (gpu.hbm_gb * 1e9)))



def memory_sizes() -> list[tuple[float, str]]:
    """Each distinct card capacity (GB) with the cards that have it, smallest first.

    Example: memory_sizes()[0] -> (24, "RTX 4090 · L4")
    """
    by_size: dict[float, list[str]] = {}
    for gpu in GPUS.values():
        by_size.setdefault(gpu.hbm_gb, []).append(gpu.title)
    return [(size, " · ".join(titles)) for size, titles in sorted(by_size.items())]


# --- Weight formats: how many bits one weight costs in memory (D3) ---------------------------
# A block format stores ``block`` weights as small integers and, once per block, the numbers that
# turn them back into reals. llama.cpp's Q4_1 (ggml-common.h, block_q4_1): 32 weights of 4 bits,
# one fp16 scale d and one fp16 minimum m, w = d * q + m. Q8_0: 32 weights of 8 bits and one fp16
# scale, w = d * q. A plain float is a block of one with nothing beside it.

@dataclass(frozen=True)
class WeightFormat:
    name: str          # id, safe in a URL ("q4_1")
    title: str         # how llama.cpp or PyTorch writes it ("Q4_1"); not translated
    block: int         # weights per block
    value_bits: int    # bits of each stored weight
    scale_bits: int    # bits of the block's scale d (0: none)
    min_bits: int      # bits of the block's minimum m (0: none)

    @property
    def bits_per_weight(self) -> float:
        """(block · value_bits + scale_bits + min_bits) / block.

        Example: Q4_1: (32 · 4 + 16 + 16) / 32 = 5.0
                 Q8_0: (32 · 8 + 16) / 32 = 8.5
        """
        stored = self.block * self.value_bits             # the small integers
        beside = self.scale_bits + self.min_bits          # once per block
        return (stored + beside) / self.block

    @property
    def bytes_per_weight(self) -> float:
        """Example: Q4_1 -> 0.625; fp16 -> 2.0"""
        return self.bits_per_weight / 8


WEIGHT_FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    WeightFormat("fp32", "fp32", 1, 32, 0, 0),
    WeightFormat("fp16", "fp16", 1, 16, 0, 0),
    WeightFormat("q8_0", "Q8_0", 32, 8, 16, 0),
    WeightFormat("q4_1", "Q4_1", 32, 4, 16, 16),
)}


def gguf_weight_bytes(cfg, matrices: str = "q4_1", embedding: str = "q8_0", norms: str = "fp32"
                      ) -> dict[str, int]:
    """Bytes of a model's tensors laid out as llama.cpp quantises a LLaMA: the token embedding in
    one format, every weight matrix of every block in another, the norm gains as floats. An output
    matrix of its own (untied) is counted with the matrices. ``cfg`` is an ArchConfig.

    Example: SmolLM2-135M as its GGUF ships (Q4_1, embedding Q8_0, norms fp32):
             embedding 49,152 · 576 · 8.5 / 8 = 30,081,024; matrices 106,168,320 weights · 5 / 8
             = 66,355,200; norms 61 · 576 · 4 = 140,544; total 96,576,768, the sum of the file's
             tensor sizes (its other 1,785,664 bytes are the header: tokenizer, chat template)
    """
    d, kv, f = cfg.d_model, cfg.kv_dim, cfg.ffn_hidden
    q_width = cfg.n_heads * cfg.head_dim
    per_block = d * q_width + 2 * d * kv + q_width * d + 3 * d * f       # w_q, w_k, w_v, w_o, w1, w2, w3
    n_matrices = cfg.n_layers * per_block + (0 if cfg.tied_embeddings else cfg.vocab_size * d)
    n_norms = (2 * cfg.n_layers + 1) * d
    out = {"embedding": round(cfg.vocab_size * d * WEIGHT_FORMATS[embedding].bytes_per_weight),
           "matrices": round(n_matrices * WEIGHT_FORMATS[matrices].bytes_per_weight),
           "norms": round(n_norms * WEIGHT_FORMATS[norms].bytes_per_weight)}
    out["total"] = sum(out.values())
    return out
