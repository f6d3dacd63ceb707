"""The course map: every lesson of the curriculum, in order.

A lesson appears in the app only when its page file exists, so the map can name the
whole curriculum while the lessons are written one by one. URL paths are ASCII and the
same in every language (a teacher's link works for both).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    code: str      # curriculum code, "B1"; also the i18n namespace in lower case ("b1")
    file: str      # page file under lessons/
    url_path: str  # ASCII slug in the URL
    icon: str

    @property
    def ns(self) -> str:
        return self.code.lower()

    @property
    def exists(self) -> bool:
        return (ROOT / "lessons" / self.file).exists()


PARTS: list[tuple[str, list[Lesson]]] = [
    ("A", [
        Lesson("A1", "a1_tokens.py", "tokens", ":material/text_fields:"),
        Lesson("A2", "a2_embeddings.py", "embeddings", ":material/scatter_plot:"),
        Lesson("A3", "a3_positions.py", "positions", ":material/waves:"),
    ]),
    ("B", [
        Lesson("B1", "b1_attention.py", "attention", ":material/grid_on:"),
        Lesson("B2", "b2_heads.py", "heads", ":material/view_module:"),
        Lesson("B3", "b3_masks.py", "masks", ":material/visibility_off:"),
        Lesson("B4", "b4_cross.py", "cross-attention", ":material/compare_arrows:"),
        Lesson("B5", "b5_sparse.py", "sparse-attention", ":material/blur_on:"),
    ]),
    ("C", [
        Lesson("C1", "c1_encoder_decoder.py", "encoder-decoder", ":material/account_tree:"),
        Lesson("C2", "c2_llama_block.py", "llama-block", ":material/view_agenda:"),
        Lesson("C3", "c3_rope.py", "rope", ":material/rotate_right:"),
    ]),
    ("D", [
        Lesson("D1", "d1_generation.py", "generation", ":material/edit_note:"),
        Lesson("D2", "d2_kv_cache.py", "kv-cache", ":material/memory:"),
        Lesson("D3", "d3_memory_wall.py", "memory-wall", ":material/speed:"),
        Lesson("D4", "d4_gqa.py", "gqa", ":material/hub:"),
    ]),
    ("E", [
        Lesson("E1", "e1_moe.py", "moe", ":material/call_split:"),
        Lesson("E2", "e2_lora.py", "lora", ":material/tune:"),
    ]),
    ("F", [
        Lesson("F1", "f1_heads.py", "heads-at-work", ":material/psychology:"),
        Lesson("F2", "f2_logit_lens.py", "logit-lens", ":material/layers:"),
        Lesson("F3", "f3_learning.py", "learning", ":material/trending_down:"),
        Lesson("F4", "f4_patching.py", "patching", ":material/healing:"),
    ]),
]


def all_lessons() -> list[Lesson]:
    return [lesson for _, lessons in PARTS for lesson in lessons]


def existing_lessons() -> list[Lesson]:
    return [lesson for lesson in all_lessons() if lesson.exists]
