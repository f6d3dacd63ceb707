"""Sampling and the step-by-step generation API, on a small random model."""
import pytest
import torch

from core.models.generate import Generation, at_temperature, generate, prepare_prompt, sampling_probs
from core.models.model import LlamaDecoder, ModelConfig
from core.text.tokenizer import CharTokenizer

TOK = CharTokenizer("abcdefghij")


def model(max_seq_len: int = 16, seed: int = 0) -> LlamaDecoder:
    torch.manual_seed(seed)
    c = ModelConfig(vocab_size=len(TOK), d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                    ffn_hidden=48, max_seq_len=max_seq_len)
    m = LlamaDecoder(c).eval()
    with torch.no_grad():
        m.output.weight.mul_(20)            # confident random logits ...
        m.output.weight[:4] = 0.0           # ... and specials at logit 0, so it (almost) never stops early
    return m


class AlwaysEOS(LlamaDecoder):
    def forward(self, ids, cache=None, trace=None):
        logits = super().forward(ids, cache=cache, trace=trace)
        logits[..., TOK.eos_id] += 1000.0
        return logits


def test_sampling_probs_docstring_example():
    logits = torch.tensor([2.0, 1.0, 0.0])
    torch.testing.assert_close(sampling_probs(logits), torch.tensor([0.665, 0.245, 0.090]), atol=1e-3, rtol=0)
    torch.testing.assert_close(sampling_probs(logits, top_k=2), torch.tensor([0.731, 0.269, 0.0]), atol=1e-3, rtol=0)
    torch.testing.assert_close(sampling_probs(logits, top_p=0.6), torch.tensor([1.0, 0.0, 0.0]))
    torch.testing.assert_close(sampling_probs(logits, temperature=0), torch.tensor([1.0, 0.0, 0.0]))


def test_temperature_flattens_and_sharpens():
    logits = torch.tensor([2.0, 1.0, 0.0])
    hot, cold = sampling_probs(logits, 5.0), sampling_probs(logits, 0.2)
    assert hot.max() < sampling_probs(logits).max() < cold.max()
    assert hot.shape == (3,)


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = sampling_probs(torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05])), top_p=0.75)
    torch.testing.assert_close(probs, torch.tensor([0.625, 0.375, 0.0, 0.0]))


def test_prepare_prompt_cases():
    assert prepare_prompt(TOK, "", 5, 16).ids == [TOK.bos_id]
    unk = prepare_prompt(TOK, "xyz", 5, 16)
    assert unk.ids == [TOK.unk_id] * 3 and unk.unknown == 3
    long = prepare_prompt(TOK, "abcde", 2, 4)
    assert long.ids == TOK.encode("de") and long.dropped == 3
    assert prepare_prompt(TOK, "ab", 100, 16).max_new_tokens == 15
    # A1's BOS + text, on request (D1's switch); a prompt cut to fit loses its BOS with its front.
    assert prepare_prompt(TOK, "ab", 5, 16, bos=True).ids == [TOK.bos_id, *TOK.encode("ab")]
    assert prepare_prompt(TOK, "", 5, 16, bos=True).ids == [TOK.bos_id]
    assert prepare_prompt(TOK, "abcde", 2, 4, bos=True).ids == TOK.encode("de")


def test_course_model_reads_bos_as_the_start_of_a_title():
    """Why D1 and D2 feed a typed line without BOS: in training BOS was always followed by 《."""
    from core.models.model import CourseModelUnavailable, load_course_model
    try:
        m, tok = load_course_model()
    except CourseModelUnavailable:
        pytest.skip("course model not built")
    gen = Generation(m, tok, "", 1)
    step = gen.step()
    assert step.chosen_token == "《" and step.model_probs[step.chosen] > 0.9


def test_cached_and_uncached_greedy_agree():
    m = model()
    a = generate(m, TOK, "abc", 10, use_cache=True)
    b = generate(m, TOK, "abc", 10, use_cache=False)
    assert a == b and len(a) == 10


def test_seed_replays_and_uses_no_global_rng():
    m = model()
    state = torch.random.get_rng_state()
    a = generate(m, TOK, "ab", 12, temperature=1.5, seed=7)
    assert torch.equal(state, torch.random.get_rng_state())
    assert a == generate(m, TOK, "ab", 12, temperature=1.5, seed=7)
    others = {generate(m, TOK, "ab", 12, temperature=1.5, seed=s) for s in range(5)}
    assert len(others) > 1


def test_top_k_one_is_greedy():
    m = model()
    assert generate(m, TOK, "cab", 8, temperature=1.0, top_k=1, seed=3) == generate(m, TOK, "cab", 8)


def test_steps_report_what_the_lessons_show():
    m = model()
    gen = Generation(m, TOK, "abc", max_new_tokens=4, temperature=1.0, top_k=3, seed=1, show=5)
    steps = []
    while not gen.done:
        steps.append(gen.step())
    assert [s.fed for s in steps] == [3, 1, 1, 1]              # prompt once, then one token
    assert [s.cache_length for s in steps] == [3, 4, 5, 6]     # the cache holds every fed token
    for s in steps:
        assert s.probs.shape == (len(TOK),) and s.model_probs.shape == (len(TOK),)
        assert int((s.probs > 0).sum()) <= 3
        assert s.probs[s.chosen] > 0
        assert len(s.top) == 5 and s.top[0].model_prob >= s.top[-1].model_prob
    assert gen.text == TOK.decode(s.chosen for s in steps)
    with pytest.raises(RuntimeError):
        gen.step()


def test_uncached_steps_recompute_the_prefix():
    gen = Generation(model(), TOK, "abc", max_new_tokens=3, use_cache=False)
    fed = [gen.step().fed for _ in range(3)]
    assert fed == [3, 4, 5] and gen.cache is None


def test_long_prompt_keeps_the_last_tokens():
    m = model(max_seq_len=8)
    gen = Generation(m, TOK, "abcdefghij" * 2, max_new_tokens=3)
    assert gen.prompt.dropped == 15 and len(gen.prompt.ids) == 5
    while not gen.done:
        step = gen.step()
    assert step.cache_length == 7          # 5 prompt + 3 new, the last one never fed back


def test_empty_and_unknown_prompts_do_not_crash():
    m = model()
    assert len(generate(m, TOK, "", 5)) <= 5
    assert len(generate(m, TOK, "你好", 5)) <= 5


def test_generation_stops_at_eos():
    torch.manual_seed(0)
    m = AlwaysEOS(model().config).eval()
    gen = Generation(m, TOK, "ab", max_new_tokens=5)
    step = gen.step()
    assert step.chosen == TOK.eos_id and step.finished and gen.done and gen.text == ""


def test_step_rank_kept_and_best():
    from core.models.generate import Step
    model_probs = torch.tensor([0.1, 0.6, 0.3])
    probs = torch.tensor([0.0, 0.0, 1.0])             # top-p cut the rest, the draw took token 2
    s = Step(index=0, fed=1, model_probs=model_probs, probs=probs, top=[], chosen=2, chosen_token="c",
             cache_length=1, finished=False)
    assert (s.rank, s.kept, s.best) == (2, 1, 1)


def test_top_p_reads_the_mass_left_after_top_k():
    """Issue 16: renormalise after top-k, then cut top-p (as common libraries do)."""
    from core.models.generate import sampling_probs
    logits = torch.tensor([1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    probs = sampling_probs(logits, 1.0, top_k=3, top_p=0.5)
    assert int((probs > 0).sum()) == 2
    kept = torch.softmax(logits[:2], 0)
    assert torch.allclose(probs[:2], kept) and float(probs.sum()) == pytest.approx(1.0)
    assert int((sampling_probs(logits, 1.0, top_k=3) > 0).sum()) == 3


@pytest.mark.parametrize("t,k,p", [(0.5, None, None), (2.0, None, None), (1.0, 2, None), (2.0, None, 0.6), (0.0, None, None)])
def test_at_temperature_equals_sampling_from_the_logits(t, k, p):
    """D1's temperature strip: the same step at another T, from its softmax, as from its logits."""
    logits = torch.tensor([2.0, 1.0, 0.0, -1.5])
    torch.testing.assert_close(at_temperature(torch.softmax(logits, -1), t, k, p), sampling_probs(logits, t, k, p))
    probs = at_temperature(torch.softmax(torch.tensor([2.0, 1.0, 0.0]), -1), 2.0)
    torch.testing.assert_close(probs, torch.tensor([0.506, 0.307, 0.186]), atol=1e-3, rtol=0)


@pytest.mark.parametrize("temperature, top_k, top_p", [(0.0, None, None), (1.5, None, None), (1.0, 5, 0.9)])
@pytest.mark.parametrize("use_cache", [True, False])
def test_a_forced_token_branches_the_same_generation(temperature, top_k, top_p, use_cache):
    """D1's branch: the same loop with a token forced at one step. Before that step it is the
    original run token for token, at it the forced token, and the same seed repeats it."""
    m = model()
    settings = dict(temperature=temperature, top_k=top_k, top_p=top_p, seed=5, use_cache=use_cache)

    def run(forced=None):
        gen = Generation(m, TOK, "ab", 10, **settings, forced=forced)
        steps = []
        while not gen.done:
            steps.append(gen.step())
        return gen.new_ids, steps

    original, _ = run()
    at = 3
    other = next(t for t in range(4, len(TOK)) if t != original[at])      # not a special, not the drawn one
    branch, steps = run({at: other})
    assert branch[:at] == original[:at] and branch[at] == other
    assert [s.forced for s in steps] == [i == at for i in range(len(steps))]
    assert steps[at].chosen == other and not steps[at - 1].forced
    assert run({at: other})[0] == branch                                  # seeded: it repeats
    from core.models.generate import parting_step
    assert parting_step(original, branch) == at
    assert run({at: original[at]})[0] == original                         # forcing what it drew changes nothing


def test_a_forced_stop_token_ends_the_branch_and_a_bad_id_is_refused():
    m = model()
    gen = Generation(m, TOK, "ab", 10, forced={2: TOK.eos_id})
    while not gen.done:
        gen.step()
    assert len(gen.new_ids) == 3 and gen.new_ids[-1] == TOK.eos_id
    with pytest.raises(ValueError):
        Generation(m, TOK, "ab", 10, forced={0: len(TOK)})
    with pytest.raises(ValueError):
        Generation(m, TOK, "ab", 10, forced={0: -1})


def test_parting_step_docstring_example():
    from core.models.generate import parting_step
    assert parting_step([5, 6, 7], [5, 9, 7]) == 1
    assert parting_step([5, 6], [5, 6, 2]) is None
    assert parting_step([], [1]) is None and parting_step([1], [2]) == 0
