"""Real model configs and their parameter counts: the published totals, to the parameter."""
import dataclasses
import json
from pathlib import Path

import pytest
from torch import nn

from core.calc import configs
from core.calc.configs import ArchConfig
from core.calc.params import PARTS, attention_params, count_params, expert_params, linear_params, param_breakdown
from core.models.model import LlamaDecoder, ModelConfig, load_course_model

# Published totals (model cards / safetensors index files) and the Mixtral paper's active count.
PUBLISHED = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "mixtral-8x22b": 140_630_071_296,   # the config counted by hand (vocab 32768, 56 x 8 experts of 3 x 6144 x 16384); the model card says 141 B
    "gpt2-small": 124_439_808,
    "smollm2-135m": 134_515_008,       # issue 24: the tied (V, D) matrix counted once
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_published_totals(name):
    c = configs.get(name)
    assert count_params(c) == PUBLISHED[name]
    assert sum(param_breakdown(c).values()) == PUBLISHED[name]
    assert set(param_breakdown(c)) == set(PARTS)


def test_mixtral_active():
    c = configs.get("mixtral-8x7b")
    assert count_params(c, active=True) == 12_879_925_248
    total, active = param_breakdown(c), param_breakdown(c, active=True)
    assert total["feed_forward"] == 4 * active["feed_forward"]           # 8 experts held, 2 used
    assert {k: v for k, v in total.items() if k != "feed_forward"} == \
           {k: v for k, v in active.items() if k != "feed_forward"}        # everything else is shared
    assert total["router"] == 32 * 4096 * 8


def test_dense_active_equals_total():
    for name in configs.names():
        c = configs.get(name)
        if not c.is_moe:
            assert count_params(c, active=True) == count_params(c)


def test_docstring_examples():
    assert linear_params(768, 2304, bias=True) == 1_771_776
    assert attention_params(configs.get("llama-2-7b")) == 67_108_864
    assert expert_params(configs.get("llama-2-7b")) == 135_266_304
    assert param_breakdown(configs.get("gpt2-small"))["output"] == 0
    assert configs.get("llama-2-7b").head_dim == 128
    assert configs.names()[:2] == ["llama-2-7b", "llama-2-13b"]


def test_registry_names_and_facts():
    assert configs.names() == ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
                               "smollm2-135m", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "gpt2-small", "gpt3-175b", "course"]
    for name in configs.names():
        assert configs.get(name).name == name
    assert configs.get("llama-2-7b").n_kv_heads == 32                     # plain MHA
    assert configs.get("llama-2-70b").n_kv_heads == 8                     # GQA in the larger LLaMA-2
    assert configs.get("llama-3-8b").kv_dim == 1024
    assert configs.get("llama-3-8b").rope_base == 500_000
    assert configs.get("gpt2-small").rope_base is None


def test_unknown_name_is_a_clear_key_error():
    with pytest.raises(KeyError, match="unknown model config 'gpt-5'.*llama-2-7b"):
        configs.get("gpt-5")


@pytest.mark.parametrize("bad", [
    dict(n_kv_heads=3),                          # 32 heads do not split into 3 groups
    dict(d_model=4095),                          # not divisible by 32 heads
    dict(experts_per_token=2),                   # 2 of 1 expert
    dict(norm="batch"), dict(ffn="relu"),
    dict(learned_positions=True),                # and rope_base is set
    dict(vocab_size=0),
])
def test_invariants(bad):
    with pytest.raises(ValueError):
        dataclasses.replace(configs.get("llama-2-7b"), **bad)


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        configs.get("llama-2-7b").d_model = 1


def test_course_config_matches_model_config():
    c = configs.get("course")
    meta_config = load_course_model("cpu")[0].config
    assert (c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.ffn_hidden) == (
        meta_config.vocab_size, meta_config.d_model, meta_config.n_layers, meta_config.n_heads,
        meta_config.n_kv_heads, meta_config.ffn_hidden)


def test_course_count_equals_numel_of_built_model():
    model, _ = load_course_model("cpu")
    assert count_params(configs.get("course")) == sum(p.numel() for p in model.parameters())
    # and for a built course model of another shape, without loading weights
    m = ModelConfig(vocab_size=97, d_model=48, n_layers=3, n_heads=6, n_kv_heads=3, ffn_hidden=80)
    assert count_params(configs.from_model_config(m)) == sum(p.numel() for p in LlamaDecoder(m).parameters())


class _RefBlock(nn.Module):
    """A reference block from torch.nn parts, to check the counting formulas for other kinds."""

    def __init__(self, c: ArchConfig):
        super().__init__()
        norm = (lambda: nn.RMSNorm(c.d_model)) if c.norm == "rms" else (lambda: nn.LayerNorm(c.d_model))
        self.norms = nn.ModuleList([norm(), norm()])
        self.attn = nn.ModuleList([nn.Linear(c.d_model, c.d_model, bias=c.bias),
                                   nn.Linear(c.d_model, c.kv_dim, bias=c.bias),
                                   nn.Linear(c.d_model, c.kv_dim, bias=c.bias),
                                   nn.Linear(c.d_model, c.d_model, bias=c.bias)])
        mats = 3 if c.ffn == "swiglu" else 2
        self.experts = nn.ModuleList(
            nn.ModuleList([nn.Linear(c.d_model, c.ffn_hidden, bias=c.bias) for _ in range(mats - 1)]
                          + [nn.Linear(c.ffn_hidden, c.d_model, bias=c.bias)])
            for _ in range(c.n_experts))
        self.router = nn.Linear(c.d_model, c.n_experts, bias=False) if c.is_moe else None


class _RefModel(nn.Module):
    def __init__(self, c: ArchConfig):
        super().__init__()
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Embedding(c.max_seq_len, c.d_model) if c.learned_positions else None
        self.blocks = nn.ModuleList(_RefBlock(c) for _ in range(c.n_layers))
        self.final = nn.RMSNorm(c.d_model) if c.norm == "rms" else nn.LayerNorm(c.d_model)
        self.out = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tied_embeddings:
            self.out.weight = self.embed.weight      # shared: parameters() yields it once


@pytest.mark.parametrize("kind", [
    dict(),
    dict(norm="layer", ffn="gelu", bias=True, tied_embeddings=True, learned_positions=True, rope_base=None),
    dict(n_experts=4, experts_per_token=2),
    dict(n_kv_heads=1, bias=True),
])
def test_formula_equals_numel_of_reference_modules(kind):
    base = dict(vocab_size=37, d_model=24, n_layers=2, n_heads=4, n_kv_heads=2, ffn_hidden=40, max_seq_len=16)
    c = ArchConfig("tiny", "tiny", **{**base, **kind})
    assert count_params(c) == sum(p.numel() for p in _RefModel(c).parameters())


def test_breakdown_is_all_non_negative_ints():
    for name in configs.names():
        for active in (False, True):
            parts = param_breakdown(configs.get(name), active)
            assert all(isinstance(v, int) and v >= 0 for v in parts.values())


def test_course_placeholder_without_assets(monkeypatch, tmp_path):
    c = configs._course_from_file(tmp_path / "course_model_config.json")    # an empty folder: no config file
    assert c.name == "course" and c.vocab_size > 0 and c.n_heads % c.n_kv_heads == 0
    default = ModelConfig(vocab_size=c.vocab_size)
    assert (c.d_model, c.n_layers, c.n_heads) == (default.d_model, default.n_layers, default.n_heads)


def test_course_config_is_the_shipped_model_config():
    """calc reads the config file itself (it may not import models): it must say what the model says."""
    from core.models.model import ASSETS, CONFIG_FILE, ModelConfig
    meta = json.loads((ASSETS / CONFIG_FILE).read_text(encoding="utf-8"))
    assert configs.COURSE_CONFIG_FILE == ASSETS / CONFIG_FILE
    assert configs.get("course") == configs.from_model_config(ModelConfig.from_dict(meta["config"]))
    placeholder = configs.from_model_config(ModelConfig(vocab_size=configs._COURSE_PLACEHOLDER["vocab_size"]))
    assert configs._course_from_file(Path("/nonexistent/config.json")) == placeholder


@pytest.mark.parametrize("name", ["course", "llama-2-7b", "mixtral-8x7b", "gpt2-small"])
def test_model_stages_add_up_to_the_model(name):
    """Issue 16 (C2's whole-model strip): embedding, blocks, final norm, output hold every parameter."""
    from core.calc.params import model_stages
    c = configs.get(name)
    stages = model_stages(c)
    assert sum(s["params"] for s in stages) == count_params(c)
    assert [s["layer"] for s in stages if s["name"] == "block"] == list(range(c.n_layers))
    assert stages[-2]["shape"] == f"(N, {c.vocab_size})"


def test_mixtral_8x22b_active():
    # Mistral AI's announcement: 39 B active parameters out of 141 B
    c = configs.get("mixtral-8x22b")
    assert count_params(c, active=True) == 39_161_468_928
    assert round(count_params(c) / 1e9) == 141 and round(count_params(c, active=True) / 1e9) == 39


def test_smollm2_entry_without_a_cache(tmp_path, monkeypatch):
    """Before the real model's cache exists the entry still answers, with the same numbers."""
    monkeypatch.setenv(configs.REAL_CACHE_ENV, str(tmp_path))
    c = configs.get("smollm2-135m")
    assert (c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.ffn_hidden) == (49152, 576, 30, 9, 3, 1536)
    assert (c.head_dim, c.kv_dim, c.rope_base, c.max_seq_len, c.tied_embeddings) == (64, 192, 100000.0, 8192, True)
    parts = param_breakdown(c)
    assert parts["output"] == 0 and parts["embeddings"] == 49152 * 576          # tied: counted once
    assert count_params(c) == 134_515_008
