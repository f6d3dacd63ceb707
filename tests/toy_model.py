"""A small decoder with random weights for tests that need any LlamaDecoder, not a trained one."""
from __future__ import annotations

import torch

from core.models.model import LlamaDecoder, ModelConfig
from core.text.tokenizer import CharTokenizer


def toy_decoder(chars: str = "abcdef", tied: bool = True, seed: int = 0) -> tuple[LlamaDecoder, CharTokenizer]:
    """3 blocks, width 16, 4 heads over 2 key/value heads (GQA); weights from a local generator
    (norm gains near 1), so a test's model does not depend on the global seed."""
    tok = CharTokenizer.from_text(chars)
    c = ModelConfig(vocab_size=len(tok), d_model=16, n_layers=3, n_heads=4, n_kv_heads=2, ffn_hidden=24,
                    max_seq_len=32, tied_embeddings=tied)
    model = LlamaDecoder(c)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.2 * noise if name.endswith("norm.weight") else 0.5 * noise)
    return model.eval().requires_grad_(False), tok
