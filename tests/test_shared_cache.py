"""A class shares one server: what one student's page computed, the next student's page takes
from a cache every session shares (issue 39).

For every lesson (and the lessons that open on SmolLM2 or offer it), a first student opens the
page; then a second student, a new session of the same process, opens it at the same settings.
Every call the second run makes into ``core/`` is counted with a profile hook on both the test
thread and the script's thread. Only cheap bookkeeping may run again (cleaning the typed text,
tokenising a short line, counting parameters and bytes, the toy attention of B1's 11 × 32
example); a forward pass, a generation, an experiment of ``core/lab``, anything else must come
from the cache. No timing: a call is a call on any machine.
"""
from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_util import APP, assert_ok
from ui.course import existing_lessons

ROOT = Path(__file__).resolve().parent.parent
CORE = str(ROOT / "core") + "/"

# What may run on every page run: pure bookkeeping, microseconds each. "path" is a module under
# core/; a name after ":" limits it to those functions.
CHEAP = (
    "text/clean.py", "text/bpe.py:token_text,corpora", "text/tokenizer.py", "text/dates.py",
    "text/byte_bpe.py",                          # one short line of the student's text
    "calc/",                                     # parameter, FLOP and byte counts: arithmetic
    "models/gguf_llama.py:available,cache_files,cache_dir,gguf_path",
    "models/model.py:d_head",
    "lab/cache_steps.py:cache_history,<listcomp>",   # D2: one step's rows of the cached steps
    "lab/d_real_kv.py:projection_shapes,<dictcomp>",
    "parts/sparse.py:__post_init__", "parts/trace.py:__getitem__,__init__",
    "lab/block_anatomy.py:part_matrix,gate_effect",   # C2: a slice of the cached trace; one token's gate
    "lab/patching.py:tokenize_pair,differ,<listcomp>",  # F4: the pair's four short texts tokenised, ids compared
    "lab/date_lab.py:right_answer", "lab/learning.py:steps,first_below,<listcomp>,<genexpr>",
    "lab/head_analysis.py:is_break",
    "lab/attention_lab.py:phrases,cell_arithmetic,with_mask", "parts/masks.py",   # B1's worked cell: one row
    "lab/embedding.py:word_list,<genexpr>", "lab/logit_lens.py:settles_at",
    "lab/real_attention.py:prompt_ids", "lab/real_tokens.py",
    "lab/real_generation.py:text_ids,encode_text,printable,<genexpr>,<listcomp>",
    "lab/lora_finetune.py:__post_init__",
    # B1's first figure: the toy example (11 characters, D = 32) computed from the typed text.
    "lab/toy.py", "parts/attention.py:scaled_dot_product_attention",
)


def _cheap(where: str, name: str) -> bool:
    for rule in CHEAP:
        path, _, names = rule.partition(":")
        if where.startswith(path) and (not names or name in names.split(",")):
            return True
    return False


def _open(lesson, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = "en"
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(f"lessons/{lesson.file}")
    return at


def core_calls_of_second_student(lesson, params: dict[str, str]) -> Counter:
    first = _open(lesson, params)
    first.run()
    assert_ok(first)
    second = _open(lesson, params)
    calls: Counter = Counter()

    def hook(frame, event, _arg):
        if event == "call" and frame.f_code.co_filename.startswith(CORE):
            where = frame.f_code.co_filename[len(CORE):]
            if not _cheap(where, frame.f_code.co_name):
                calls[f"{where}:{frame.f_code.co_name}"] += 1

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        second.run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert_ok(second)
    return calls


def _cases():
    from bench.bench_lessons import REAL_LESSONS, REAL_QUERY
    from ui.model import real_model_available

    for lesson in existing_lessons():
        yield pytest.param(lesson, {}, id=f"{lesson.ns}-course")
        if lesson.ns in REAL_LESSONS and real_model_available():
            yield pytest.param(lesson, REAL_QUERY.get(lesson.ns, {f"{lesson.ns}.lm": "smollm2"}),
                               id=f"{lesson.ns}-smollm2")


@pytest.mark.parametrize(("lesson", "params"), list(_cases()))
def test_a_second_student_computes_nothing_again(lesson, params):
    calls = core_calls_of_second_student(lesson, params)
    assert not calls, f"{lesson.ns} recomputed for a second student: {dict(calls.most_common(12))}"
