"""The training script runs end to end on a slice of the corpus, and its loss goes down."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "assets" / "tang300.txt"


@pytest.mark.skipif(not CORPUS.exists(), reason="run scripts/build_corpus.py first")
def test_a_few_steps_on_a_slice(tmp_path):
    cmd = [sys.executable, str(ROOT / "scripts" / "train_course_model.py"),
           "--steps", "40", "--max-chars", "1500", "--out", str(tmp_path), "--log-every", "10",
           "--batch-size", "8", "--seq-len", "64", "--d-model", "64", "--n-heads", "4",
           "--n-kv-heads", "2", "--ffn-hidden", "96", "--n-layers", "2", "--max-seq-len", "64"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    curve = json.loads((tmp_path / "course_model_loss.json").read_text())
    assert [p["step"] for p in curve] == [10, 20, 30, 40]
    assert curve[-1]["loss"] < curve[0]["loss"] - 0.5

    from core.models.model import load_course_model
    model, tok = load_course_model(assets=tmp_path)        # what was written loads back
    assert model.config.d_model == 64 and len(tok) == model.config.vocab_size
    meta = json.loads((tmp_path / "course_model_config.json").read_text(encoding="utf-8"))
    assert meta["training"]["steps"] == 40


def test_corpus_has_no_colour_codes_and_keeps_the_poem():
    text = CORPUS.read_text(encoding="utf-8")
    assert "\x1b" not in text and "%" not in text
    assert "《将进酒》\n作者：李白\n君不见，黄河之水天上来，奔流到海不复回。" in text


def test_build_corpus_parser():
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_corpus import parse_fortunes, strip_ansi
    assert strip_ansi("\x1b[32m《春晓》\x1b[m") == "《春晓》"
    raw = "\x1b[32mT\x1b[m\n\x1b[33m作者：A\x1b[m\nx\n%\nU\nB\ny\n"
    assert parse_fortunes(raw) == [["T", "作者：A", "x"], ["U", "B", "y"]]
