"""F3's core: the shipped checkpoints load (checksums verified), their losses are the losses
training logged, and what each checkpoint computes is what a direct computation gives."""
import json
import math
import shutil

import pytest
import torch

from core.lab import learning
from core.lab.learning import (
    CHECKPOINTS_FILE,
    batch_loss,
    continuations,
    count_models,
    draw_batch,
    encode_corpus,
    head_at_checkpoints,
    load_checkpoints,
    next_char_at,
    replay_batches,
    resemblance,
    window_means,
)
from core.models.model import ASSETS, CONFIG_FILE, LOSS_FILE, WEIGHTS_FILE, CourseModelUnavailable, load_course_model
from core.text.tokenizer import CharTokenizer

STEPS = [0, 50, 100, 200, 400, 1000, 1400]


@pytest.fixture(scope="module")
def ck():
    return load_checkpoints("cpu")


@pytest.fixture(scope="module")
def data(ck):
    return encode_corpus((ASSETS / learning.CORPUS_FILE).read_text(encoding="utf-8"), ck.tokenizer)


def test_the_shipped_checkpoints_and_their_size(ck):
    assert ck.steps == STEPS
    manifest = json.loads((ASSETS / CHECKPOINTS_FILE).read_text(encoding="utf-8"))
    files = [ASSETS / e["file"] for e in manifest["checkpoints"]]
    assert sum(f.stat().st_size for f in files) <= 20e6                  # <= 20 MB in all, the end included
    assert manifest["checkpoints"][-1]["file"] == WEIGHTS_FILE
    config = json.loads((ASSETS / CONFIG_FILE).read_text(encoding="utf-8"))
    assert manifest["checkpoints"][-1]["sha256"] == config["weights_sha256"]   # the end is the course model
    assert len(ck.step_loss) == manifest["steps"] == 1400


def test_the_last_checkpoint_is_the_course_model(ck):
    model, _ = load_course_model("cpu")
    for (name, a), b in zip(model.state_dict().items(), ck.models[-1].state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_step_zero_is_the_seeded_initialisation(ck):
    """Step 0 is init_weights with the script's seed, rounded to float16; norms start at 1."""
    gen = torch.Generator().manual_seed(1234)
    fresh = learning.LlamaDecoder(ck.models[0].config)
    learning.init_weights(fresh, fresh.config.n_layers, gen)
    for (name, a), b in zip(fresh.state_dict().items(), ck.models[0].state_dict().values(), strict=True):
        assert torch.equal(a.half().float(), b), name


def test_the_logged_curve_is_the_mean_of_every_step(ck):
    """Every step's loss, averaged over the script's 25-step windows, is the logged curve."""
    curve = json.loads((ASSETS / LOSS_FILE).read_text(encoding="utf-8"))
    means = window_means(ck.step_loss, 25)
    assert [s for s, _ in means] == [p["step"] for p in curve]
    for (_, mean), p in zip(means, curve, strict=True):
        assert mean == pytest.approx(p["loss"], abs=1.5e-4)         # both rounded (5 and 4 places)


def test_each_checkpoint_has_the_loss_training_logged(ck, data):
    """Replay the seeded batches: a checkpoint's loss on the batch its next update used is the
    loss the script logged at that step (and, at the end, on the batch a next step would draw)."""
    manifest = json.loads((ASSETS / CHECKPOINTS_FILE).read_text(encoding="utf-8"))
    batches = replay_batches(ck.models[0].config, data, 128, 32, manifest["seed"], set(STEPS))
    for model, entry in zip(ck.models, ck.entries, strict=True):
        with torch.no_grad():
            loss = float(batch_loss(model, batches[entry.step]))
        if entry.step < 1400:
            assert entry.loss == pytest.approx(ck.step_loss[entry.step], abs=1e-5)
        # float16 weights against the float32 ones training used: a few thousandths at most
        assert loss == pytest.approx(entry.loss, abs=5e-3), entry.step
    assert ck.entries[0].loss == pytest.approx(math.log(len(ck.tokenizer)), abs=0.05)   # uniform at the start
    assert [e.loss for e in ck.entries] == sorted((e.loss for e in ck.entries), reverse=True)


def test_a_changed_byte_is_refused(tmp_path):
    for f in ASSETS.glob("course_model*"):
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(ASSETS / learning.CORPUS_FILE, tmp_path / learning.CORPUS_FILE)
    assert load_checkpoints("cpu", tmp_path).steps == STEPS
    path = tmp_path / "course_model_step0200.safetensors"
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(CourseModelUnavailable, match="checksum"):
        load_checkpoints("cpu", tmp_path)
    (tmp_path / CHECKPOINTS_FILE).unlink()
    with pytest.raises(CourseModelUnavailable, match="train_course_model"):
        load_checkpoints("cpu", tmp_path)


def test_window_means_and_draw_batch():
    assert window_means([4, 2, 3, 1, 5], 2) == [(2, 3.0), (4, 2.0), (5, 5.0)]
    data = torch.arange(10)
    batch = draw_batch(data, 3, 5, torch.Generator().manual_seed(0))            # (B, T+1)
    assert batch.shape == (5, 4)
    assert torch.equal(batch[:, 1:] - batch[:, :-1], torch.ones(5, 3, dtype=torch.long))   # consecutive windows


def test_count_models_by_hand():
    counts = count_models(torch.tensor([1, 4, 4, 5]), 6)
    assert counts.unigram.tolist() == pytest.approx([0, 0, 0, 0, 2 / 3, 1 / 3])
    assert counts.bigram(torch.tensor(4)).tolist() == pytest.approx([0, 0, 0, 0, 0.5, 0.5])
    assert counts.bigram(torch.tensor([1])).tolist() == [pytest.approx([0, 0, 0, 0, 1, 0])]
    assert counts.bigram(torch.tensor(2)).tolist() == pytest.approx(counts.unigram.tolist())   # never a first token
    assert counts.unigram_loss == pytest.approx(-(2 * math.log(2 / 3) + math.log(1 / 3)) / 3)
    assert counts.bigram_loss == pytest.approx(-(math.log(1) + 2 * math.log(0.5)) / 3)
    every = counts.bigram(torch.arange(6))                                          # (V, V)
    assert every.shape == (6, 6) and torch.allclose(every.sum(1), torch.ones(6))
    assert counts.bigram(torch.tensor([[1, 4], [4, 2]])).shape == (2, 2, 6)


def test_counts_equal_the_dense_table(ck, data):
    """The sparse counts give, row for row, what the dense (V, V) table of every pair gave
    (float64 counts divided by their row sums, the unigram for a row with none; then float32)."""
    V = len(ck.tokenizer)
    counts = count_models(data, V)
    prev, nxt = data[:-1], data[1:]
    dense = torch.zeros(V, V, dtype=torch.float64)
    dense.index_put_((prev, nxt), torch.ones(len(nxt), dtype=torch.float64), accumulate=True)
    rows = dense.sum(1, keepdim=True)
    table = torch.where(rows > 0, dense / rows.clamp(min=1), counts.unigram.double())
    assert torch.equal(counts.bigram(torch.arange(V)), table.float())
    assert counts.bigram_loss == pytest.approx(float(-table[prev, nxt].log().mean()), rel=1e-12)


def test_the_curve_passes_the_counting_models_in_order(ck, data):
    """Frequencies first, then pairs: the logged loss passes the unigram level before step 100
    and the bigram level before step 400; at the end it is far below both."""
    counts = count_models(data, len(ck.tokenizer))
    assert counts.bigram_loss < counts.unigram_loss < math.log(len(ck.tokenizer))
    means = window_means(ck.step_loss, 25)
    passed_uni = next(s for s, v in means if v < counts.unigram_loss)
    passed_bi = next(s for s, v in means if v < counts.bigram_loss)
    assert passed_uni <= 100 < passed_bi <= 400
    assert means[-1][1] < counts.bigram_loss / 4


def test_resemblance_peaks_in_order(ck, data):
    counts = count_models(data, len(ck.tokenizer))
    windows = draw_batch(data, 128, 8, torch.Generator().manual_seed(0))
    res = resemblance(ck.models, counts, windows)
    for name in ("unigram", "bigram", "truth"):
        assert all(0 <= v <= 1 for v in res[name])
    peak = {name: ck.steps[max(range(len(STEPS)), key=res[name].__getitem__)] for name in ("unigram", "bigram")}
    assert peak["unigram"] < peak["bigram"] < 1400                     # frequencies, then pairs, then beyond
    assert res["truth"] == sorted(res["truth"]) and res["truth"][-1] > 0.9
    assert res["loss"][0] == pytest.approx(math.log(len(ck.tokenizer)), abs=0.05)
    # The loss measured here is the same cross-entropy as batch_loss on the same windows.
    with torch.no_grad():
        assert res["loss"][3] == pytest.approx(float(batch_loss(ck.models[3], windows)), abs=1e-4)


def test_next_char_grows_certain(ck, data):
    counts = count_models(data, len(ck.tokenizer))
    ids = ck.tokenizer.encode("床前明月光，疑是地上霜。")
    nc = next_char_at(ck.models, ck.tokenizer, counts, ids, 10)
    assert nc.target == "霜" and "霜" in nc.chars and nc.chars[0] == "霜"        # the final model's order
    assert nc.probs.shape == (7, len(nc.chars) + 1)
    assert torch.allclose(nc.probs.sum(1), torch.ones(7), atol=1e-5)
    assert nc.entropy_bits[0] == pytest.approx(math.log2(len(ck.tokenizer)), abs=0.05)   # uniform
    assert nc.entropy_bits[-1] < 0.5 and nc.top_char[-1] == "霜" and nc.top_prob[-1] > 0.9   # near one-hot
    assert nc.top_prob[-1] > nc.top_prob[2] > nc.top_prob[0]
    # Direct: the final model's probability of 霜 after the first ten characters.
    with torch.no_grad():
        p = torch.softmax(ck.models[-1](torch.tensor([ids[:10]]))[0, -1], -1)
    assert float(nc.probs[-1, 0]) == pytest.approx(float(p[ids[10]]), abs=1e-6)
    assert torch.allclose(nc.unigram.sum(), torch.tensor(1.0)) and torch.allclose(nc.bigram.sum(), torch.tensor(1.0))
    end = next_char_at(ck.models, ck.tokenizer, counts, ids, len(ids))               # past the opening
    assert end.target is None and torch.allclose(end.probs.sum(1), torch.ones(7), atol=1e-5)


def test_step_50_guesses_the_frequencies(ck, data):
    """At step 50 the guess after 「疑是地上」 is close to the plain frequencies (try1 says so)."""
    counts = count_models(data, len(ck.tokenizer))
    ids = ck.tokenizer.encode("床前明月光，疑是地上霜。")
    nc = next_char_at(ck.models, ck.tokenizer, counts, ids, 10)
    at50 = nc.probs[1]
    assert nc.top_char[1] in ("，", "。")
    assert float((at50 - nc.unigram).abs().sum()) < float((nc.probs[-1] - nc.unigram).abs().sum())


def test_head_at_checkpoints_is_the_traced_weights(ck):
    ids = ck.tokenizer.encode("白日依山尽，黄河入海流。")
    w = head_at_checkpoints(ck.models, ids, 1, 2)
    n = len(ids)
    assert w.shape == (7, n, n)
    assert torch.allclose(w.sum(-1), torch.ones(7, n), atol=1e-5)
    assert torch.all(w.triu(1) == 0)                                           # causal
    start = w[0]                                                               # tiny random weights: ~uniform
    assert torch.allclose(start, torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None], atol=0.02)


def test_continuations_from_noise_to_the_poem(ck):
    runs = continuations(ck.models, ck.tokenizer, "床前明月光，", 12, seed=0)
    assert len(runs) == 7
    assert runs[-1]["greedy"].startswith("疑是地上霜。")
    assert "疑是地上霜" not in runs[0]["greedy"]
    assert runs == continuations(ck.models, ck.tokenizer, "床前明月光，", 12, seed=0)   # seeded: the same


@pytest.mark.parametrize("text, seed", [("床前明月光，", 0), ("君", 7), ("？", 3)])
def test_a_shorter_continuation_is_the_start_of_the_longest(ck, text, seed):
    """ui.f3_learning serves every value of the slider from one run of NEW_MAX characters: each
    shorter continuation, greedy and sampled, must be its start, draw for draw (or all of it,
    when a checkpoint stopped early)."""
    from ui.f3_learning import NEW_MAX

    longest = continuations(ck.models, ck.tokenizer, text, NEW_MAX, seed=seed)
    for n in (1, 4, 13, 24, NEW_MAX - 1):
        assert continuations(ck.models, ck.tokenizer, text, n, seed=seed) == [
            {kind: written[:n] for kind, written in run.items()} for run in longest]


def test_encode_corpus_marks_each_poem():
    tok = CharTokenizer.from_text("ab")
    assert encode_corpus("a\n\nb", tok).tolist() == [1, tok.encode("a")[0], 2, 1, tok.encode("b")[0], 2]


def test_the_heads_the_lesson_names(ck):
    """F3's text: at the end, block 2 head 2 looks six characters back (the same place in the
    half-line before) far more than at step 0, and block 2 head 3 parks its weight on the first."""
    ids = ck.tokenizer.encode("床前明月光，疑是地上霜。")
    n = len(ids)
    w = head_at_checkpoints(ck.models, ids, 2, 2)
    back6 = w[:, torch.arange(6, n), torch.arange(0, n - 6)].mean(-1)          # (C,)
    assert back6[-1] > 0.25 and back6[-1] > 2.5 * back6[0]
    sink = head_at_checkpoints(ck.models, ids, 2, 3)[:, 1:, 0].mean(-1)          # (C,), row 0 must be 1
    assert sink[-1] > 0.5 and sink[-1] > 2 * sink[0]
