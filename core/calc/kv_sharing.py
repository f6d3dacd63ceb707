"""Who shares key/value heads, and how many: published models as MHA, GQA or MQA.

Dimension legend (as in core/calc/configs.py)
    H       query heads;  H_kv key/value heads;  H / H_kv query heads per group

A model in the registry (configs.py) is read from there; the others are written out with their
source. MQA (Shazeer 2019) is the smallest cache but can cost quality and training stability;
GQA (Ainslie et al. 2023) with 8 groups came close to MHA's quality at nearly MQA's speed, and
LLaMA-2-70B, Llama-3 and Mistral chose it.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.calc import configs


@dataclass(frozen=True)
class Sharing:
    title: str       # the model as people write it
    n_heads: int     # H
    n_kv_heads: int  # H_kv
    source: str      # where the numbers are published

    @property
    def kind(self) -> str:
        """"mha" (H_kv = H), "mqa" (H_kv = 1) or "gqa" (in between).

        Example: Sharing("x", 64, 8, "").kind -> "gqa"
        """
        return "mha" if self.n_kv_heads == self.n_heads else ("mqa" if self.n_kv_heads == 1 else "gqa")


# Not in the registry: (title, H, H_kv, source).
_OTHERS = (
    ("PaLM 540B", 48, 1, "Chowdhery et al. 2022, PaLM, sec. 2 and Table 1"),
    ("Falcon-7B", 71, 1, "tiiuae/falcon-7b config.json: n_head 71, multi_query"),
)
# From the registry, with the source of each config (see configs.py).
_REGISTERED = (
    ("llama-2-7b", "Touvron et al. 2023, Llama 2, Table 1"),
    ("llama-2-70b", "Touvron et al. 2023, Llama 2, sec. 2.2 (GQA for 34B and 70B)"),
    ("llama-3-8b", "Llama 3 Herd of Models 2024, Table 3"),
    ("mistral-7b", "Jiang et al. 2023, Mistral 7B, Table 1"),
)


def used_by() -> list[Sharing]:
    """Published models with their query and key/value heads, MHA first, then GQA, then MQA.

    Example: {s.title: s.kind for s in used_by()}["LLaMA-2 70B"] -> "gqa"; ["PaLM 540B"] -> "mqa"
    """
    rows = [Sharing(configs.get(name).title, configs.get(name).n_heads, configs.get(name).n_kv_heads, source)
            for name, source in _REGISTERED]
    rows += [Sharing(*row) for row in _OTHERS]
    order = {"mha": 0, "gqa": 1, "mqa": 2}
    return sorted(rows, key=lambda s: order[s.kind])
