"""Head scores on hand-made weight tensors with known answers, and on the trained model."""
import pytest
import torch

from core.lab import head_analysis as ha

TOKENS = ["<bos>", "床", "前", "明", "，", "疑", "是", "地", "。"]   # two lines of three, then a break


def _one_hot(targets: list[int]) -> torch.Tensor:
    """(N, N) weights where query t puts all its weight on key targets[t]."""
    n = len(targets)
    w = torch.zeros(n, n)
    w[torch.arange(n), torch.tensor(targets)] = 1.0
    return w


def test_is_break_and_previous_line_targets():
    assert [ha.is_break(t) for t in ["，", "。", "\n", "河", "<bos>", "!", "a"]] == [True, True, True, False,
                                                                                  False, True, False]
    # 床前明 is line 1 (positions 1-3), 疑是地 is line 2 (positions 5-7)
    assert ha.previous_line_targets(TOKENS) == [-1, -1, -1, -1, -1, 1, 2, 3, -1]
    assert ha.previous_line_targets(["a", "b", "\n", "c", "d", "e"]) == [-1, -1, -1, 0, 1, -1]


def test_exact_previous_token_head():
    n = len(TOKENS)
    w = _one_hot([0] + list(range(n - 1)))                  # query t -> key t-1 (t = 0 -> itself)
    s = ha.head_scores(w, TOKENS)
    assert s["previous"].item() == pytest.approx(1.0)
    assert s["self"].item() == pytest.approx(1 / n)         # only position 0 looks at itself
    assert s["first"].item() == pytest.approx(1 / (n - 1))  # only position 1 looks at position 0
    # punctuation: queries that can see a break are 4..8; only query 5 (疑) looks at one (，)
    assert s["punctuation"].item() == pytest.approx(1 / 5)
    assert s["previous_line"].item() == pytest.approx(0.0)


def test_previous_line_and_first_token_heads():
    targets = ha.previous_line_targets(TOKENS)
    line_head = _one_hot([t if t >= 0 else 0 for t in targets])
    assert ha.head_scores(line_head, TOKENS)["previous_line"].item() == pytest.approx(1.0)
    sink = _one_hot([0] * len(TOKENS))
    s = ha.head_scores(sink, TOKENS)
    assert s["first"].item() == pytest.approx(1.0) and s["punctuation"].item() == pytest.approx(0.0)


def test_no_punctuation_gives_nan():
    w = ha.uniform_causal(3)
    assert torch.isnan(ha.head_scores(w, ["a", "b", "c"])["punctuation"])


def test_uniform_head_is_exactly_at_chance_and_batched_shapes():
    n = len(TOKENS)
    uniform = ha.uniform_causal(n)
    assert torch.allclose(uniform.sum(-1), torch.ones(n))
    assert uniform[2].tolist() == pytest.approx([1 / 3] * 3 + [0] * (n - 3))
    stack = torch.stack([torch.stack([uniform, _one_hot([0] + list(range(n - 1)))])] * 3)   # (L=3, H=2, N, N)
    prof = ha.profile(stack, TOKENS)
    assert prof.scores["previous"].shape == (3, 2)
    for name in ha.PATTERNS:
        assert prof.lift[name][0, 0].item() == pytest.approx(1.0)          # chance is 1×
    # chance of "previous": mean over t = 1..N-1 of 1 / (t + 1)
    assert prof.chance["previous"] == pytest.approx(sum(1 / (t + 1) for t in range(1, n)) / (n - 1))
    named = ha.standout_heads(prof)
    assert ("previous", 0, 1) in [(h.pattern, h.layer, h.head) for h in named]
    assert ha.dominant_pattern(prof)[2] == ["", "previous"]


def test_trained_model_has_nameable_heads():
    from core.models.model import CourseModelUnavailable, load_course_model

    try:
        model, tokenizer = load_course_model("cpu")
    except CourseModelUnavailable:
        pytest.skip("course model not built")
    tokens, weights = ha.model_attention(model, tokenizer, "君不见，黄河之水天上来，奔流到海不复回。")
    n = len(tokens)
    assert tokens[0] == "<bos>" and n == 21
    assert weights.shape == (model.config.n_layers, model.config.n_heads, n, n)
    assert torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-5)
    named = {h.pattern: h for h in ha.standout_heads(ha.profile(weights, tokens))}
    assert named["previous"].lift > 2 and named["punctuation"].lift > 2
