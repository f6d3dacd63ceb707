"""The date model's checkpoints (C1's unsure decoder): they load with their checksums, the last
is the shipped model, each one's loss on the batch it was logged on is the logged loss, and an
earlier model is less sure of every character it writes than the final one."""
import itertools
import json
import shutil

import pytest
import torch
import torch.nn.functional as F

from core.models.dates import accuracy, encode_batch, read_date, training_batches
from core.models.encdec import (
    ASSETS,
    CHECKPOINTS_FILE,
    CONFIG_FILE,
    LOSS_FILE,
    WEIGHTS_FILE,
    DateModelUnavailable,
    date_checkpoints,
    load_date_checkpoint,
    load_date_model,
)
from core.text.dates import generate, source_tokenizer, target_tokenizer

STEPS = [40, 80, 150, 300, 1200]
DEFAULT_DATE = "MONDAY, 30 NOVEMBER 2026"        # C1's default example
TRAIN_SEED, BATCH, EVAL_SEED = 0, 128, 20261130  # scripts/train_date_model.py


@pytest.fixture(scope="module")
def models():
    return {e.step: load_date_checkpoint(e.step, "cpu") for e in date_checkpoints()}


def test_the_shipped_checkpoints_their_checksums_and_size():
    entries = date_checkpoints()
    assert [e.step for e in entries] == STEPS
    manifest = json.loads((ASSETS / CHECKPOINTS_FILE).read_text(encoding="utf-8"))
    assert manifest["steps"] == 1200 and manifest["seed"] == TRAIN_SEED and manifest["threads"] == 1
    config = json.loads((ASSETS / CONFIG_FILE).read_text(encoding="utf-8"))
    assert entries[-1].file == WEIGHTS_FILE and entries[-1].sha256 == config["weights_sha256"]
    for e in entries[:-1]:
        size = (ASSETS / e.file).stat().st_size
        assert 300e3 < size < 400e3, (e.file, size)          # float16: 173,199 parameters x 2 bytes + header
    # Accuracy grows along training: none right at first, every one at the end.
    assert [e.exact_match for e in entries] == sorted(e.exact_match for e in entries)
    assert entries[0].exact_match < 0.05 and entries[-1].exact_match == 1.0


def test_the_last_checkpoint_is_the_shipped_model(models):
    model, _, _ = load_date_model("cpu")
    for (name, a), b in zip(model.state_dict().items(), models[1200].state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_each_checkpoint_has_its_logged_loss_on_its_logged_batch(models):
    """Replay the training stream: the batch of step s, read by the weights saved before step s's
    update (float16, read back as float32), gives the loss the script logged at step s."""
    src_tok, tgt_tok = source_tokenizer(), target_tokenizer()
    logged = json.loads((ASSETS / LOSS_FILE).read_text(encoding="utf-8"))["loss"]
    entries = date_checkpoints()[:-1]
    stream = training_batches(TRAIN_SEED, BATCH)
    last = entries[-1].step
    batches = dict(zip(range(last + 1), itertools.islice(stream, last + 1), strict=True))
    for e in entries:
        assert e.loss == logged[e.step]
        src, tgt_in, tgt_out = encode_batch(batches[e.step], src_tok, tgt_tok)
        with torch.no_grad():
            logits = models[e.step](src, tgt_in)                                  # (B, L, V_tgt)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1)).item()
        assert loss == pytest.approx(e.loss, rel=5e-3, abs=2e-4), e.step          # float16 weights


def test_an_earlier_model_is_less_sure_of_each_character(models):
    src_tok, tgt_tok = source_tokenizer(), target_tokenizer()
    sure = {}
    for step, model in models.items():
        r = read_date(model, DEFAULT_DATE, src_tok, tgt_tok)
        sure[step] = r.decoded.probs[0].max(-1).values                           # (L,) per step
    final = sure[1200]
    for step in STEPS[:-1]:
        assert sure[step].mean() < final.mean(), step
    means = [float(sure[s].mean()) for s in STEPS]
    assert means == sorted(means)                                                 # surer with every checkpoint
    assert sure[80].min() < 0.3 and final.min() > 0.8                            # unsure at some digit; 81 % at worst
    outputs = {s: read_date(models[s], DEFAULT_DATE, src_tok, tgt_tok).output for s in (80, 300)}
    assert outputs == {80: "2036-10-23", 300: "2026-11-30"}                      # wrong digits, then right


def test_a_checkpoints_recorded_accuracy(models):
    src_tok, tgt_tok = source_tokenizer(), target_tokenizer()
    entry = next(e for e in date_checkpoints() if e.step == 150)
    got = accuracy(models[150], generate(1000, EVAL_SEED, split="held_out"), src_tok, tgt_tok)
    assert got == entry.exact_match


def test_a_damaged_or_missing_checkpoint_says_how_to_rebuild(tmp_path):
    for f in ASSETS.glob("date_model*"):
        shutil.copy(f, tmp_path / f.name)
    path = tmp_path / "date_model_step0080.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(DateModelUnavailable, match="checksum.*train_date_model"):
        load_date_checkpoint(80, "cpu", tmp_path)
    load_date_checkpoint(40, "cpu", tmp_path)                                     # the others still load
    with pytest.raises(DateModelUnavailable, match="no checkpoint at step 81"):
        load_date_checkpoint(81, "cpu", tmp_path)
    (tmp_path / CHECKPOINTS_FILE).write_text("{", encoding="utf-8")
    with pytest.raises(DateModelUnavailable, match="train_date_model"):
        date_checkpoints(tmp_path)
