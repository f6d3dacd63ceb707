"""The date task and the shipped date model: generator, parser, checksum, load time, accuracy on
fresh held-out dates, and the lesson helpers of core/lab/date_lab.py."""
import datetime as dt
import json
import time

import pytest
import torch

from core.lab.date_lab import alignment_scores, field_alignment, norm_stats, relu_off, standardise
from core.models.dates import accuracy, read_date
from core.models.encdec import ASSETS, CONFIG_FILE, LOSS_FILE, WEIGHTS_FILE, load_date_model
from core.models.model import sha256_file
from core.text.dates import (
    STYLE_EXAMPLES,
    STYLES,
    generate,
    in_split,
    parse,
    render,
    unknown_characters,
    zh_number,
    zh_year,
)

FRESH_SEED = 4242      # neither the training seed (0) nor the script's evaluation seed


@pytest.fixture(scope="module")
def model():
    return load_date_model("cpu")


def test_every_style_renders_the_example():
    for style in STYLES:
        assert render(dt.date(2026, 11, 30), style).text == STYLE_EXAMPLES[style]
    assert [zh_number(n) for n in (1, 10, 11, 20, 21, 31)] == ["一", "十", "十一", "二十", "二十一", "三十一"]
    assert zh_year(2008) == "二〇〇八"


def test_generator_is_seeded_valid_and_splits():
    a, b = generate(2000, 7), generate(2000, 7)
    assert a == b and a != generate(2000, 8)
    assert {r.style for r in a} == set(STYLES)
    for r in a:
        assert parse(r.text) == r                                         # a real date, read back exactly
        for i, j in r.spans.values():
            assert r.text[i:j]                                            # every field is in the text
    train, held = generate(500, 1, split="train"), generate(500, 1, split="held_out")
    assert all(not in_split(dt.date.fromisoformat(r.iso), "held_out") for r in train)
    assert all(in_split(dt.date.fromisoformat(r.iso), "held_out") for r in held)


@pytest.mark.parametrize("text", ["31 February 2026", "29 Feb 2023", "Tuesday, 30 November 2026", "30 nov 2026",
                                  "30 Nov 2026 ", "05 Nov 2026", "2026年13月1日", "二〇二六年二月三十日", "1 Jan 1899", "hello"])
def test_parse_rejects_what_the_model_never_saw(text):
    assert parse(text) is None


def test_unknown_characters_are_named_once_in_order():
    assert unknown_characters("30 Nov 2026 🙂!🙂") == ["🙂", "!"]
    assert unknown_characters("二〇二六年十一月三十日") == []


def test_weights_checksum_size_and_load_time():
    meta = json.loads((ASSETS / CONFIG_FILE).read_text(encoding="utf-8"))
    path = ASSETS / WEIGHTS_FILE
    assert sha256_file(path) == meta["weights_sha256"]
    assert path.stat().st_size <= 5_000_000
    assert meta["evaluation"]["exact_match"] >= 0.98 and meta["evaluation"]["dates"] == 1000
    loss = json.loads((ASSETS / LOSS_FILE).read_text(encoding="utf-8"))["loss"]
    assert len(loss) == meta["training"]["steps"] and loss[-1] < loss[0] / 20
    load_date_model("cpu")                                                # imports warm
    t = time.perf_counter()
    load_date_model("cpu")
    assert time.perf_counter() - t < 1.0


def test_damaged_weights_are_refused(tmp_path):
    for name in (WEIGHTS_FILE, CONFIG_FILE):
        (tmp_path / name).write_bytes((ASSETS / name).read_bytes())
    with open(tmp_path / WEIGHTS_FILE, "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\0\0\0\1")
    from core.models.encdec import DateModelUnavailable
    with pytest.raises(DateModelUnavailable, match="checksum"):
        load_date_model("cpu", tmp_path)


def test_accuracy_on_fresh_held_out_dates(model):
    m, src_tok, tgt_tok = model
    dates = generate(300, FRESH_SEED, split="held_out")                   # days never seen in training
    assert accuracy(m, dates, src_tok, tgt_tok) >= 0.97


def test_reading_matches_decoding_and_aligns(model):
    m, src_tok, tgt_tok = model
    r = read_date(m, "30 Nov 2026", src_tok, tgt_tok)
    assert r.output == "2026-11-30" and r.target[0] == "<bos>" and len(r.target) == 11
    forced = torch.softmax(r.trace["logits"][0], -1)                       # (11, V)
    torch.testing.assert_close(forced, r.decoded.probs[0], atol=1e-5, rtol=0)
    weights = torch.stack([r.trace[f"decoder.layers.{i}.cross_attn.weights"][0] for i in range(m.config.n_layers)])
    scores = alignment_scores(weights, parse("30 Nov 2026"))
    assert scores.shape == (m.config.n_layers, m.config.n_heads) and scores.max() > 0.5


def test_lab_helpers():
    parsed = parse("30 Nov 2026")
    ref = field_alignment(parsed, 11, 11)
    assert torch.allclose(ref[0, 7:11], torch.full((4,), 0.25)) and ref[4].sum() == 0 and ref[10].sum() == 0
    assert torch.allclose(ref[5, 3:6], torch.full((3,), 1 / 3))            # the month digits read "Nov"
    perfect = ref.expand(2, 3, 11, 11)
    assert torch.allclose(alignment_scores(perfect, parsed), torch.ones(2, 3))
    off = relu_off(torch.tensor([[0.0, 2.0], [0.0, 0.0]]))
    assert torch.allclose(off["per_token"], torch.tensor([0.5, 1.0])) and float(off["overall"]) == 0.75
    x = torch.randn(5, 16) * 3 + 2
    s = norm_stats(x, x)
    assert torch.allclose(s["mean_standard"], torch.zeros(5), atol=1e-5)
    assert torch.allclose(s["var_standard"], torch.ones(5), atol=1e-4)


def test_standardise_is_layernorm_before_its_gain(model):
    m, src_tok, tgt_tok = model
    r = read_date(m, "2026年11月30日", src_tok, tgt_tok)
    norm = m.decoder[1].cross_attn_norm
    x = r.trace["decoder.layers.1.cross_attn_add"]
    torch.testing.assert_close(standardise(x, norm.eps) * norm.weight + norm.bias,
                               r.trace["decoder.layers.1.cross_attn_norm"], atol=1e-5, rtol=0)
    ref = torch.nn.functional.layer_norm(x, (m.config.d_model,), norm.weight, norm.bias, norm.eps)
    torch.testing.assert_close(r.trace["decoder.layers.1.cross_attn_norm"], ref, atol=1e-5, rtol=0)
