"""The MoE layer (core/parts/moe.py) and the MoE course model (core/models/moe_model.py)."""
import math

import pytest
import torch

from core.models.generate import generate
from core.models.moe_model import MoEConfig, MoEModel
from core.parts.ffn import SwiGLU
from core.parts.moe import (
    MoE,
    Routing,
    choose_experts,
    expert_capacity,
    fill_experts,
    switch_loss,
    z_loss,
)
from core.parts.trace import Trace
from core.text.tokenizer import CharTokenizer


def layer(d=16, hidden=24, experts=4, seed=0) -> MoE:
    torch.manual_seed(seed)
    return MoE(d, hidden, experts)


def test_one_expert_top1_is_the_plain_swiglu():
    moe = layer(experts=1)
    ref = SwiGLU(16, 24)
    ref.load_state_dict(moe.experts[0].state_dict())
    x = torch.randn(2, 5, 16)
    for mode in ("topk", "noisy", "gshard"):
        r = moe(x, Routing(mode=mode, k=1), rng=torch.Generator().manual_seed(0))
        torch.testing.assert_close(r.output, ref(x), rtol=0, atol=0)
        assert r.output.shape == (2, 5, 16)
        assert r.probs.shape == (10, 1) and r.experts.shape == (10, 1)


@pytest.mark.parametrize("mode,k", [("topk", 1), ("topk", 2), ("topk", 4), ("noisy", 2), ("noisy", 3),
                                    ("gshard", 2)])
def test_gates_sum_to_one_and_probs_are_a_distribution(mode, k):
    r = layer()(torch.randn(3, 7, 16), Routing(mode=mode, k=k), rng=torch.Generator().manual_seed(1))
    assert r.gates.shape == (21, k) and r.experts.shape == (21, k)
    torch.testing.assert_close(r.gates.sum(-1), torch.ones(21))
    torch.testing.assert_close(r.probs.sum(-1), torch.ones(21))
    assert (r.experts[:, :-1] != r.experts[:, 1:]).all() if k > 1 else True


def test_topk_gates_are_softmax_then_renormalise():
    logits = torch.randn(9, 6)
    probs, experts, gates, _ = choose_experts(logits, "topk", 2)
    ref = torch.softmax(logits, -1).gather(1, experts)                       # (T, 2)
    torch.testing.assert_close(gates, ref / ref.sum(-1, keepdim=True))
    torch.testing.assert_close(experts, logits.topk(2).indices)


def test_choose_experts_docstring_example():
    _, experts, gates, _ = choose_experts(torch.tensor([[2.0, 1.0, 0.0]]), "topk", 2)
    assert experts.tolist() == [[0, 1]]
    torch.testing.assert_close(gates, torch.tensor([[0.7311, 0.2689]]), atol=1e-4, rtol=0)


def test_switch_gate_is_the_top_probability():
    logits = torch.randn(11, 5)
    probs, experts, gates, dispatched = choose_experts(logits, "switch", 1)
    assert experts.shape == (11, 1)
    torch.testing.assert_close(gates[:, 0], torch.softmax(logits, -1).max(-1).values)
    assert dispatched.all()


def test_capacity_formula():
    assert expert_capacity(10, 2, 8, 1.0) == 3           # ceil(2.5)
    assert expert_capacity(16, 1, 4, 1.25) == 5
    assert expert_capacity(10, 2, 8, None) is None


def test_capacity_turns_away_exactly_the_late_tokens():
    experts = torch.tensor([[0], [1], [0], [0], [1], [0], [2]])              # (T=7, k=1)
    fits, wanted = fill_experts(experts, torch.ones_like(experts, dtype=torch.bool), 3, capacity=2)
    # expert 0 is asked by positions 0, 2, 3, 5: the first two fit, 3 and 5 overflow
    assert fits[:, 0].tolist() == [True, True, True, False, True, False, True]
    assert wanted.tolist() == [4, 2, 1]


def test_first_choices_fill_before_second_choices():
    experts = torch.tensor([[1, 0], [0, 1], [0, 2]])                           # (T=3, k=2)
    fits, wanted = fill_experts(experts, torch.ones_like(experts, dtype=torch.bool), 3, capacity=2)
    # expert 0: first choices of tokens 1 and 2 take both slots; token 0's second choice is turned away
    assert fits.tolist() == [[True, False], [True, True], [True, True]]
    assert wanted.tolist() == [3, 2, 1]


def test_layer_overflow_count_equals_tokens_beyond_capacity():
    moe = layer(experts=4)
    x = torch.randn(1, 40, 16)
    for cf in (0.25, 0.5, 1.0, 2.0):
        r = moe(x, Routing(k=2, capacity_factor=cf))
        cap = math.ceil(cf * 40 * 2 / 4)
        assert r.capacity == cap
        assert int(r.overflow.sum()) == int((r.wanted - cap).clamp(min=0).sum())
        assert (r.load <= cap).all()
        per_expert = torch.stack([((r.experts == e) & r.fits).sum() for e in range(4)])
        assert per_expert.tolist() == r.load.tolist()


def test_overflowing_token_gets_no_expert_output():
    moe = layer(experts=2)
    x = torch.randn(1, 12, 16)
    kept = moe(x, Routing(k=1, capacity_factor=0.5))
    over = kept.overflowed_tokens
    assert over.any()
    # top-1: a token whose one expert is full gets 0; the block's residual carries it on unchanged
    assert torch.equal(over, kept.overflow[:, 0]) and not kept.partly_overflowed.any()
    assert (kept.output.view(12, 16)[over] == 0).all()
    uncapped = moe(x, Routing(k=1))
    torch.testing.assert_close(kept.output.view(12, 16)[~over], uncapped.output.view(12, 16)[~over])


def test_uniform_routing_gives_switch_loss_alpha():
    e, t = 4, 8
    probs = torch.full((t, e), 1 / e)
    experts = torch.arange(t).remainder(e).view(t, 1)                         # each expert twice
    assert switch_loss(probs, experts, e).item() == pytest.approx(1.0)
    r = layer(experts=e)(torch.zeros(1, t, 16), Routing(k=1, aux_weight=0.01))
    # zero input: all logits 0, probabilities uniform; top-1 picks expert 0 for everyone -> f = (1,0,0,0)
    assert r.aux_loss.item() == pytest.approx(0.01 * e * (1 / e))
    collapsed = switch_loss(torch.eye(e)[[0] * t], torch.zeros(t, 1, dtype=torch.long), e)
    assert collapsed.item() == pytest.approx(e)


def test_z_loss_example():
    assert z_loss(torch.zeros(1, 2)).item() == pytest.approx(math.log(2) ** 2)


def test_gshard_second_expert_frequency_is_two_g2():
    # fixed logits, 10,000 draws: the second expert runs with probability min(1, 2 g2)
    t = 10_000
    for second in (-2.0, -0.5, 0.0):
        logits = torch.tensor([[0.0, second, -9.0]]).expand(t, 3)
        _, experts, gates, dispatched = choose_experts(logits, "gshard", 2, torch.Generator().manual_seed(7))
        g2 = gates[0, 1].item()
        expected = min(1.0, 2 * g2)
        freq = dispatched[:, 1].float().mean().item()
        assert abs(freq - expected) < 4 * math.sqrt(expected * (1 - expected) / t) + 1e-9, (second, freq, expected)
        assert dispatched[:, 0].all()
        torch.testing.assert_close(gates.sum(-1), torch.ones(t))


def test_noise_changes_choices_and_seed_replays():
    moe = layer()
    with torch.no_grad():
        moe.w_noise.weight.normal_()
    x = torch.randn(1, 30, 16)
    a = moe(x, Routing(mode="noisy"), rng=torch.Generator().manual_seed(3))
    b = moe(x, Routing(mode="noisy"), rng=torch.Generator().manual_seed(3))
    clean = moe(x, Routing(mode="topk"))
    assert torch.equal(a.experts, b.experts)
    assert not torch.equal(a.experts, clean.experts)
    off = moe(x, Routing(mode="noisy", noise_scale=0.0), rng=torch.Generator().manual_seed(3))
    assert torch.equal(off.experts, clean.experts)


def test_fewer_experts_used_never_chooses_the_others():
    r = layer(experts=8)(torch.randn(1, 50, 16), Routing(k=2, n_experts=3))
    assert r.experts.max() < 3
    assert (r.probs[:, 3:] == 0).all()
    torch.testing.assert_close(r.probs.sum(-1), torch.ones(50))
    k4 = layer(experts=8)(torch.randn(1, 5, 16), Routing(k=4, n_experts=3))
    assert k4.experts.shape == (5, 3)


def test_trace_names_are_listed():
    tr = Trace()
    layer()(torch.randn(1, 4, 16), trace=tr)
    assert {"moe.router_probs", "moe.experts", "moe.gates", "moe.fits", "moe.router_logits"} <= set(tr.names())


TOK = CharTokenizer("abcdefghij")


def tiny_model(seed=0) -> MoEModel:
    torch.manual_seed(seed)
    c = MoEConfig(vocab_size=len(TOK), d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                  ffn_hidden=24, max_seq_len=32, n_experts=4)
    m = MoEModel(c).eval()
    with torch.no_grad():
        m.output.weight.mul_(20)
        m.output.weight[:4] = 0.0
        for b in m.blocks:
            b.moe.w_g.weight.mul_(10)        # a decisive router, so choices differ between tokens
    return m


def test_moe_model_cached_equals_uncached():
    m = tiny_model()
    for prompt in ("abc", "j", "hgfedcba"):
        assert generate(m, TOK, prompt, 12, use_cache=True) == generate(m, TOK, prompt, 12, use_cache=False)
    ids = torch.tensor([TOK.encode("abcdefg")])
    full = m(ids)
    cache = m.new_cache()
    steps = [m(ids[:, :3], cache=cache)] + [m(ids[:, i:i + 1], cache=cache) for i in range(3, 7)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


def test_moe_model_results_and_trace():
    m = tiny_model()
    results, tr = [], Trace()
    logits = m(torch.tensor([TOK.encode("abcdef")]), trace=tr, results=results)
    assert logits.shape == (1, 6, len(TOK))
    assert len(results) == 2 and results[0].probs.shape == (6, 4) and results[0].experts.shape == (6, 2)
    assert "blocks.1.moe.router_probs" in tr and tr["blocks.0.moe_out"].shape == (1, 6, 32)


def test_moe_config_active_matches_dense_ffn():
    c = MoEConfig(vocab_size=10)
    assert c.experts_per_token * 3 * c.d_model * c.ffn_hidden == 3 * 128 * 344
    with pytest.raises(ValueError):
        MoEConfig(vocab_size=10, n_experts=2, experts_per_token=3)


def test_all_to_all_example_and_totals():
    from core.lab.moe_lab import all_to_all
    ex = torch.tensor([[0], [1], [1], [0]])
    assert all_to_all(ex, torch.ones_like(ex, dtype=torch.bool), 2).tolist() == [[1, 1], [1, 1]]
    r = layer(experts=4)(torch.randn(1, 13, 16), Routing(k=2, capacity_factor=0.75))
    traffic = all_to_all(r.experts, r.fits, 4)
    assert traffic.shape == (4, 4)
    assert traffic.sum() == r.fits.sum()                       # every processed assignment, once
    assert traffic.sum(0).tolist() == r.load.tolist()          # column e: what expert e processed


def test_registry_counts_the_moe_course_model_exactly():
    from core.calc.params import count_params
    from core.lab.moe_lab import arch_of, memory_and_compute
    c = MoEConfig(vocab_size=2582)
    m = MoEModel(c)
    noise = c.n_layers * c.d_model * c.n_experts                # w_noise: not in the registry's formula
    assert count_params(arch_of(c)) == sum(p.numel() for p in m.parameters()) - noise
    dense_ffn = 3 * c.d_model * 344
    assert count_params(arch_of(c), active=True) - count_params(arch_of(c)) == \
        c.n_layers * (c.experts_per_token - c.n_experts) * (dense_ffn // 2)
    from core.calc import configs
    mix = memory_and_compute(configs.get("mixtral-8x7b"))
    assert mix["total"] == 46_702_792_704 and mix["active"] == 12_879_925_248
    assert mix["flops_per_token"] == 2 * 12_879_925_248 and mix["bytes"] == 2 * 46_702_792_704


@pytest.mark.parametrize("prefix", ["moe_model", "moe_model_noaux"])
def test_shipped_moe_models_load_and_decode_the_same_with_the_cache(prefix):
    import json

    from core.models.model import ASSETS, load_course_model
    from core.models.moe_model import load_moe_model
    if not (ASSETS / f"{prefix}.safetensors").exists():
        pytest.skip(f"{prefix} not shipped")
    assert (ASSETS / f"{prefix}.safetensors").stat().st_size <= 10_000_000
    model, tok = load_moe_model(prefix=prefix)                     # checks the sha256 too
    _, dense_tok = load_course_model()
    assert tok.to_json() == dense_tok.to_json()                    # one vocabulary for both models
    for prompt in ("君不见，黄河之水", "床前明月光，", ""):
        assert generate(model, tok, prompt, 16, use_cache=True) == generate(model, tok, prompt, 16, use_cache=False)
    meta = json.loads((ASSETS / f"{prefix}_config.json").read_text(encoding="utf-8"))
    assert meta["parameters"] == sum(p.numel() for p in model.parameters())
    stats = json.loads((ASSETS / f"{prefix}_experts.json").read_text(encoding="utf-8"))
    for layer in stats["layers"]:
        assert len(layer) == 8 and sum(e["load"] for e in layer) == pytest.approx(1, abs=1e-3)


def test_load_moe_model_reports_a_damaged_file(tmp_path):
    import shutil

    from core.models.model import ASSETS
    from core.models.moe_model import MoEModelUnavailable, load_moe_model
    if not (ASSETS / "moe_model.safetensors").exists():
        pytest.skip("moe_model not shipped")
    for name in ("moe_model_config.json", "course_model_vocab.json"):
        shutil.copy(ASSETS / name, tmp_path / name)
    (tmp_path / "moe_model.safetensors").write_bytes(b"not weights")
    with pytest.raises(MoEModelUnavailable, match="train_moe_model"):
        load_moe_model(assets=tmp_path)


def test_shipped_scores_are_the_shipped_weights_on_the_same_texts():
    """The losses E1 prints are those of the weights as shipped, on texts scored the same way
    for the dense course model and both MoE models: song100 is new to all three."""
    import json

    from core.lab.lora_finetune import SONG_FILE, encode_poems
    from core.lab.moe_lab import loss_windows, mean_loss
    from core.models.model import ASSETS, load_course_model
    from core.models.moe_model import NO_AUX_PREFIX, load_moe_model
    if not (ASSETS / f"{NO_AUX_PREFIX}.safetensors").exists():
        pytest.skip("MoE models not shipped")
    dense, tok = load_course_model()
    song = encode_poems((ASSETS / SONG_FILE).read_text(encoding="utf-8"), tok)
    assert loss_windows(song, 128).shape == ((len(song) - 1) // 128, 129)
    metas = {}
    for prefix in ("moe_model", NO_AUX_PREFIX):
        meta = json.loads((ASSETS / f"{prefix}_config.json").read_text(encoding="utf-8"))
        metas[prefix] = meta
        model, _ = load_moe_model(prefix=prefix)
        assert mean_loss(model, song) == pytest.approx(meta["song100_loss"], abs=2e-4)
        assert meta["dense_song100_loss"] == pytest.approx(mean_loss(dense, song), abs=2e-4)
        assert meta["song100_scored"] == len(loss_windows(song, 128)) * 128
        # unseen text: worse than guessing evenly (ln V) for both; the dense model memorised
        # the held-out Tang poems it trained on, the MoE model did not see them
        assert meta["song100_loss"] > math.log(len(tok)) and meta["dense_song100_loss"] > math.log(len(tok))
        assert meta["dense_validation_loss"] < 1 < meta["validation_loss"]
    # the two MoE runs differ only in the aux loss: same steps, batch, seed
    a, b = (metas[p]["training"] for p in ("moe_model", NO_AUX_PREFIX))
    assert {k: a[k] for k in ("steps", "batch_size", "seq_len", "lr", "seed", "threads")} == \
        {k: b[k] for k in ("steps", "batch_size", "seq_len", "lr", "seed", "threads")}
    assert a["steps"] == 800 and a["aux_weight"] == 0.01 and b["aux_weight"] == 0.0


def test_without_the_aux_loss_routing_collapses():
    """Shipped expert loads over the corpus: with the aux loss every expert of every layer
    takes a real share; without it, in every layer some experts starve while a few take most."""
    import json

    from core.models.model import ASSETS
    from core.models.moe_model import NO_AUX_PREFIX
    if not (ASSETS / f"{NO_AUX_PREFIX}_experts.json").exists():
        pytest.skip("MoE models not shipped")
    loads = {p: [[e["load"] for e in layer] for layer in
                 json.loads((ASSETS / f"{p}_experts.json").read_text(encoding="utf-8"))["layers"]]
             for p in ("moe_model", NO_AUX_PREFIX)}
    for layer in loads["moe_model"]:
        assert min(layer) > 0.05 and max(layer) < 0.25
    for layer in loads[NO_AUX_PREFIX]:
        assert sum(s < 0.02 for s in layer) >= 3 and max(layer) > 0.3
    curve = {p: json.loads((ASSETS / f"{p}_loss.json").read_text(encoding="utf-8"))
             for p in ("moe_model", NO_AUX_PREFIX)}
    assert curve["moe_model"][-1]["step"] == curve[NO_AUX_PREFIX][-1]["step"] == 800
    assert curve["moe_model"][-1]["balance"] < 1.1 < 2.5 < curve[NO_AUX_PREFIX][-1]["balance"]
