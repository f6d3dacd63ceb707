"""Lesson F1's core: the four head scores on hand-made heads, the probe, the losses, the head mask
in the model's forward, and the ablation on the course model and on SmolLM2."""
import math

import pytest
import torch

from core.lab import head_scores as hs
from core.models.model import LlamaDecoder, ModelConfig, load_course_model

# <bos> a b c a b c: the probe's shape with T = 3 (ids 5, 6, 7 for a, b, c)
PROBE = [1, 5, 6, 7, 5, 6, 7]


def _one_hot(targets: list[int]) -> torch.Tensor:
    """(N, N) weights where query t puts all its weight on key targets[t]."""
    n = len(targets)
    w = torch.zeros(n, n)
    w[torch.arange(n), torch.tensor(targets)] = 1.0
    return w


def test_copies_and_induction_targets():
    copies = hs.earlier_copies(PROBE)
    assert copies[4].tolist() == [False, True, False, False, False, False, False]      # a: the a at 1
    assert not copies[:4].any()                                                         # first copy: none
    targets = hs.induction_targets(PROBE)
    assert targets[4].tolist() == [False, False, True, False, False, False, False]      # a was followed by b
    assert targets[6].tolist() == [False] * 4 + [True, False, False]                    # c was followed by a
    assert hs.induction_targets([5, 7, 5])[2].tolist() == [False, True, False]


def test_each_score_is_one_on_a_head_that_does_exactly_that():
    n = len(PROBE)
    previous = _one_hot([0] + list(range(n - 1)))
    sink = _one_hot([0] * n)
    induction = _one_hot([0, 0, 0, 0, 2, 3, 4])          # second copy: the token after the earlier copy
    duplicate = _one_hot([0, 0, 0, 0, 1, 2, 3])          # second copy: the earlier copy itself
    got = {name: hs.head_scores(w, PROBE) for name, w in
           (("previous", previous), ("sink", sink), ("induction", induction), ("duplicate", duplicate))}
    for name in hs.SCORES:
        assert got[name][name].item() == pytest.approx(1.0), name
    # and the others, computed by hand
    assert got["previous"]["sink"].item() == pytest.approx(1 / 6)        # only query 1 looks at 0
    assert got["previous"]["induction"].item() == pytest.approx(0.0)
    assert got["previous"]["duplicate"].item() == pytest.approx(0.0)
    assert got["sink"]["previous"].item() == pytest.approx(1 / 6)        # only query 1's previous is 0
    assert got["induction"]["duplicate"].item() == pytest.approx(0.0)
    assert got["duplicate"]["induction"].item() == pytest.approx(0.0)
    # a previous-token head in the second copy looks at the earlier token, which for query 4
    # (the second a) is the last c: neither a copy nor an induction target


def test_scores_are_batched_in_range_and_nan_without_repeats():
    n = len(PROBE)
    uniform = torch.ones(n, n).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    stack = torch.stack([torch.stack([uniform, _one_hot([0] * n)])] * 3)    # (L=3, H=2, N, N)
    scores = hs.head_scores(stack, PROBE)
    for name in hs.SCORES:
        assert scores[name].shape == (3, 2)
        assert ((scores[name] >= 0) & (scores[name] <= 1)).all()
    # uniform: query 4 (sees 5 keys) gives 1/5 to its one target, query 5 1/6, query 6 1/7
    assert scores["induction"][0, 0].item() == pytest.approx((1 / 5 + 1 / 6 + 1 / 7) / 3)
    no_repeat = hs.head_scores(uniform[:4, :4], PROBE[:4])
    assert math.isnan(no_repeat["induction"].item()) and math.isnan(no_repeat["duplicate"].item())


def test_word_like_and_the_probe_is_seeded_and_repeated():
    assert [hs.word_like(t) for t in [" cat", "君", "<|im_start|>", "，", "\ufffd", " "]] == [
        True, True, False, False, False, False]
    _, tok = load_course_model()
    ids = hs.repeated_probe(tok, 16, 3)
    assert len(ids) == 33 and ids[0] == tok.bos_id and ids[1:17] == ids[17:]
    assert len(set(ids[1:17])) == 16                                        # distinct: one copy each
    assert all(hs.word_like(t) for t in tok.tokens(ids[1:]))
    assert hs.repeated_probe(tok, 16, 3) == ids and hs.repeated_probe(tok, 16, 4) != ids


def test_token_losses_and_copy_losses():
    logits = torch.zeros(4, 4)
    assert hs.token_losses(logits, [0, 1, 2, 3]).tolist() == pytest.approx([math.log(4)] * 3)
    logits[0, 2] = 100.0                                    # position 0 is sure the next id is 2
    assert hs.token_losses(logits, [0, 2, 2, 3])[0].item() == pytest.approx(0.0, abs=1e-6)
    assert hs.copy_losses(torch.tensor([9.0, 8, 8, 9, 1, 1]), 3) == (8.0, 1.0)


def test_top_random_heads_and_mask():
    assert hs.top_heads(torch.tensor([[0.1, 0.9], [0.5, float("nan")]]), 2) == [(0, 1), (1, 0)]
    picked = hs.random_heads(30, 9, 5, 0, exclude=[(18, 6)])
    assert len(set(picked)) == 5 and (18, 6) not in picked and picked == hs.random_heads(30, 9, 5, 0, [(18, 6)])
    assert hs.head_mask(2, 2, [(1, 0)]).tolist() == [[1, 1], [0, 1]]


def test_control_groups_are_seeded_draws_outside_the_kept_out_heads():
    out = [(18, 6), (17, 3), (17, 4)]
    groups = hs.control_groups(30, 9, 5, 7, 20, exclude=out)
    assert len(groups) == 20 and groups == hs.control_groups(30, 9, 5, 7, 20, exclude=out)
    assert groups[0] == hs.random_heads(30, 9, 5, 7, exclude=out)           # the figure's draw is draw 1
    assert all(len(set(g)) == 5 and not set(g) & set(out) for g in groups)
    assert len({tuple(g) for g in groups}) == 20                             # 20 different groups
    scores = torch.arange(270.0).view(30, 9)                                 # head (29, 8) the best
    assert hs.kept_out(scores, 5) == hs.top_heads(scores, 20)                # the top 20 of 270
    assert hs.kept_out(torch.arange(16.0).view(4, 4), 5) == hs.top_heads(torch.arange(16.0).view(4, 4), 8)


def test_spread_is_median_and_range():
    assert hs.spread([0.3, -0.1, 2.0, 0.1]) == pytest.approx((0.2, -0.1, 2.0))
    values = torch.randn(21, generator=torch.Generator().manual_seed(1)).tolist()
    assert hs.spread(values) == pytest.approx((float(torch.tensor(values).median()), min(values), max(values)))


def _small_model() -> LlamaDecoder:
    torch.manual_seed(0)
    return LlamaDecoder(ModelConfig(vocab_size=20, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2,
                                    ffn_hidden=24)).eval()


def test_an_all_ones_mask_is_the_normal_forward():
    model = _small_model()
    ids = torch.tensor([[1, 5, 6, 7, 5, 6, 7]])
    with torch.no_grad():
        plain = model(ids)
        ones = model(ids, head_mask=torch.ones(2, 4))
        filled = model(ids, head_mask=torch.ones(2, 4), head_fill=torch.randn(2, 4, 4))
    assert torch.equal(plain, ones) and torch.equal(plain, filled)


def test_a_masked_head_writes_zero_or_its_fill_before_w_o():
    from core.lab.layer_trace import KeepTrace

    model = _small_model()
    ids = torch.tensor([[1, 5, 6, 7]])
    mask = hs.head_mask(2, 4, [(1, 2)])                                    # block 1, head 2 off
    fill = torch.zeros(2, 4, 4)
    fill[1, 2] = torch.arange(4.0)

    def concat(**kwargs) -> torch.Tensor:
        trace = KeepTrace(lambda name: name == "blocks.1.attn.concat")
        with torch.no_grad():
            model(ids, trace=trace, **kwargs)
        return trace["blocks.1.attn.concat"][0]                            # (N, H*d_head)

    whole = concat()
    for given, want in ((None, torch.zeros(4)), (fill, torch.arange(4.0))):
        got = concat(head_mask=mask, head_fill=given)
        assert torch.equal(got[:, 8:12], want.expand(4, 4))                # head 2: d_head columns 8..11
        assert torch.equal(got[:, :8], whole[:, :8]) and torch.equal(got[:, 12:], whole[:, 12:])


def test_course_model_probe_and_ablation_shapes():
    model, tok = load_course_model()
    ids = hs.repeated_probe(tok, 12, 0)
    run = hs.run_probe(model, ids)
    c = model.config
    assert run.weights.shape == (c.n_layers, c.n_heads, 25, 25)
    assert run.head_means.shape == (c.n_layers, c.n_heads, c.d_head)
    assert run.whole.losses.shape == (24,)
    study = hs.ablation_study(model, run, 2, "zero", 0)
    assert study["none"] is run.whole and len(study["top"].heads) == 2 and len(study["random"].heads) == 2
    assert not set(study["top"].heads) & set(study["random"].heads)
    with pytest.raises(ValueError):
        hs.ablate(model, run, [], "half")
    # switching nothing off is the model itself
    same = hs.ablate(model, run, [], "zero")
    assert same.second == pytest.approx(run.whole.second, abs=1e-5)


@pytest.mark.slow
def test_smollm2_copies_and_its_induction_heads_do_it():
    """On SmolLM2 the second copy is far easier than the first, and switching off the top
    five induction heads costs the second copy far more than five random heads do."""
    from tests.real_util import real

    model, tok = real()
    ids = hs.repeated_probe(tok, 20, 0)
    run = hs.run_probe(model, ids)
    assert run.weights.shape == (30, 9, 41, 41)
    assert run.whole.first > run.whole.second + 5                        # ~15.6 against ~5.3 nats
    scores = hs.head_scores(run.weights, ids)
    assert scores["induction"].shape == (30, 9)
    best = hs.top_heads(scores["induction"], 5)
    assert all(12 <= layer <= 25 for layer, _ in best)                   # the middle of the stack, not the start
    assert float(scores["sink"].mean()) > 0.3                            # much attention parks on <bos>
    for mode in hs.MODES:
        study = hs.ablation_study(model, run, 5, mode, 0)
        top_rise = study["top"].second - run.whole.second
        random_rise = study["random"].second - run.whole.second
        assert top_rise > 3 and top_rise > 5 * abs(random_rise), (mode, top_rise, random_rise)
        assert study["top"].accuracy < study["random"].accuracy


@pytest.mark.slow
def test_smollm2_random_control_is_many_draws_and_the_induction_heads_still_stand_out():
    """Twenty draws of five heads outside the top 20 induction heads: the first is the ablation's
    "random" line, the median and range are those of the draws, and the top five induction heads
    cost the second copy more than the costliest draw (zero: ~7.2 nats against at most ~1.3)."""
    from tests.real_util import real

    model, tok = real()
    ids = hs.repeated_probe(tok, 20, 0)
    run = hs.run_probe(model, ids)
    study = hs.ablation_study(model, run, 5, "zero", 0)
    spread = hs.control_study(model, run, 5, "zero", 0)
    assert len(spread.rises) == hs.DRAWS == 20 and spread.kept_out == 20
    assert spread.groups[0] == study["random"].heads
    assert spread.rises[0] == pytest.approx(study["random"].second - run.whole.second, abs=1e-5)
    rises = torch.tensor(spread.rises)
    assert spread.low == float(rises.min()) and spread.high == float(rises.max())
    assert spread.median == pytest.approx(float(rises.sort().values[9:11].mean()))
    best = hs.top_heads(hs.head_scores(run.weights, ids)["induction"], 20)
    assert not any(set(g) & set(best) for g in spread.groups)
    top_rise = study["top"].second - run.whole.second
    assert top_rise > 2 * spread.high and abs(spread.median) < 0.5, (top_rise, spread)


def test_score_panels_lays_out_every_grid_with_the_chosen_cell():
    import numpy as np

    from viz.heads_at_work import probe_losses, score_panels

    grids = [np.full((30, 9), v, dtype=np.float32) for v in (0.1, 0.2, 0.3, 0.4)]
    grids[2][18, 6] = 0.9
    fig = score_panels(grids, titles=["a", "b", "c", "d"], selected=(18, 6), cols=2)
    assert len(fig["data"]) == 4
    for trace in fig["data"]:
        assert trace["z"].shape == (9, 30)                                   # heads × layers
        assert trace["zmin"] == 0.0 and trace["zmax"] == 1.0
        assert trace["customdata"][6][18] == "18,6"
    assert fig["data"][2]["z"][6, 18] == pytest.approx(0.9)
    # panel (row 1, col 0) starts one panel height down; the red square sits on (18, 6) in each
    assert fig["data"][2]["x0"] == 0 and fig["data"][2]["y0"] == fig["data"][3]["y0"] > 0
    assert fig["data"][1]["x0"] == fig["data"][3]["x0"] > 30
    boxes = fig["layout"]["shapes"]
    assert len(boxes) == 4 and boxes[0]["x0"] == pytest.approx(17.5) and boxes[0]["y0"] == pytest.approx(5.5)
    assert not score_panels(grids, titles=list("abcd"), selected=None)["layout"]["shapes"]
    lines = probe_losses({"m": np.arange(40.0)}, 20, title="t", names=("1", "2"), x_title="x", y_title="y")
    assert lines["data"][0]["x"].tolist() == list(range(1, 41))
    assert lines["layout"]["shapes"][0]["x1"] == pytest.approx(20.5)         # the first copy shaded


def test_repeated_words_still_turn_their_labels():
    from viz.attention import word_label_px
    from viz.common import unique_labels

    assert word_label_px(unique_labels(["the", " cat", "the"]), 12) > 0      # "the\u200b" is not CJK
    assert word_label_px(unique_labels(["君", "不", "君"]), 12) == 0.0
