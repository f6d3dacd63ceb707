"""core/lab/patching.py against a naive reference: every patched run done again from the first
token, with the activation replaced through PyTorch's own module hooks (nothing of
patching.resume, no KV cache, no batch). On a small random decoder (every cell, every site, both
directions), the course model, and SmolLM2 (a few cells, the issue's numbers, transformers).

``naive_sweep`` is the reference bench/bench_patching.py times the fast sweep against."""
from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

from core.lab import patching as P
from core.lab.logit_lens import lens_logits
from core.models.model import CourseModelUnavailable, LlamaDecoder, load_course_model
from core.text.tokenizer import CharTokenizer
from tests.real_util import real
from tests.toy_model import toy_decoder

# --- The naive reference ---------------------------------------------------------------------------


def _module(model, site: str, layer: int):
    """Where an activation of ``site`` at block ``layer`` is read or replaced, and whether it is the
    module's input (a pre-hook) or its output."""
    if site == "resid_pre":
        return (model.blocks[layer], True) if layer < len(model.blocks) else (model.final_norm, True)
    if site == "attn_out":
        return model.blocks[layer].attn, False
    if site == "ffn_out":
        return model.blocks[layer].ffn, False
    if site == "head":
        return model.blocks[layer].attn.w_o, True
    raise ValueError(site)


@contextmanager
def replaced(model, site: str, layer: int, edit):
    """Run the model with ``edit(tensor)`` applied in place to one activation: a module hook."""
    module, is_input = _module(model, site, layer)
    if is_input:
        handle = module.register_forward_pre_hook(lambda mod, args: edit(args[0]))
    else:
        handle = module.register_forward_hook(lambda mod, args, out: edit(out))
    try:
        yield
    finally:
        handle.remove()


@torch.no_grad()
def captured(model, ids, site: str, layer: int) -> torch.Tensor:
    """One activation of a plain run, (T, D) or (T, H*d_head), read by a hook."""
    seen = []
    with replaced(model, site, layer, lambda x: seen.append(x[0].clone())):
        model(torch.tensor([ids]))
    return seen[0]


def _diff(logits, right, wrong):
    return logits[..., -1, right] - logits[..., -1, wrong]


@torch.no_grad()
def naive_cell(model, base_ids, source_ids, right, wrong, site, layer, position, head=None) -> float:
    """The logit difference of one patched run, the model run from the first token."""
    value = captured(model, source_ids, site, layer)[position]
    d_head = model.config.d_head
    cols = slice(None) if head is None else slice(head * d_head, (head + 1) * d_head)

    def edit(x):
        x[0, position, cols] = value[cols]

    with replaced(model, site, layer, edit):
        return float(_diff(model(torch.tensor([base_ids])), right, wrong)[0])


@torch.no_grad()
def naive_sweep(model, base_ids, source_ids, right, wrong, site="resid_pre", batched=True) -> torch.Tensor:
    """(L, T) logit differences, every cell a full run. ``batched``: one forward a block, the T
    patched copies as a batch (row i patched at position i), like the issue's reference."""
    n_layers, T = model.config.n_layers, len(base_ids)
    out = torch.empty(n_layers, T)
    rows = torch.arange(T)
    for layer in range(n_layers):
        value = captured(model, source_ids, site, layer)                         # (T, D)
        if not batched:
            for p in range(T):
                out[layer, p] = naive_cell(model, base_ids, source_ids, right, wrong, site, layer, p)
            continue
        def edit(x, value=value):
            x[rows, rows] = value                                                 # copy i at position i

        with replaced(model, site, layer, edit):
            out[layer] = _diff(model(torch.tensor([base_ids] * T)), right, wrong)
    return out


def naive_for(model, runs: P.Runs, site, layer, position, head=None) -> float:
    pair = runs.pair
    base, source = ((pair.clean_ids, pair.corrupted_ids) if runs.noising
                    else (pair.corrupted_ids, pair.clean_ids))
    return naive_cell(model, base, source, pair.right, pair.wrong, site, layer, position, head)


# --- Models -----------------------------------------------------------------------------------------

def _toy(seed: int = 0) -> tuple[LlamaDecoder, CharTokenizer]:
    """A 3-block decoder with random weights (norm gains near 1), GQA, tied embeddings."""
    return toy_decoder("abcdefxyz ", tied=True, seed=seed)


def _toy_runs(noising=False):
    model, tok = _toy()
    pair = P.tokenize_pair(tok, "abcab xd", "abcyb xd", "a", "b")      # differ at position 3 only
    return model, P.run_pair(model, pair, noising)


@pytest.fixture(scope="module")
def smol():
    model, tok = real()
    runs = {}
    for name, b in P.PAIRS.items():
        runs[name] = P.run_pair(model, P.tokenize_pair(tok, b.clean, b.corrupted, b.right, b.wrong))
    return model, tok, runs


@pytest.fixture(scope="module")
def ioi_maps(smol):
    """Every map of the IOI pair in both directions: {(site, noising): Sweep}, ~5 s of a core."""
    model, _, runs = smol
    maps = {}
    for r in (runs["ioi"], runs["ioi"].flipped()):
        for site, sweep in P.sweeps(model, r, (*P.SITES, "head")).items():
            maps[site, r.noising] = sweep
    return maps


# --- The pair -----------------------------------------------------------------------------------------

def test_pair_tokens_and_differing_positions():
    _, tok = _toy()
    pair = P.tokenize_pair(tok, "abcab xd", "abcyb xd", "a", "b")
    assert pair.clean_tokens == list("abcab xd") and pair.corrupted_tokens == list("abcyb xd")
    assert pair.differ == [3]
    assert (pair.right, pair.wrong) == (tok.encode("a")[0], tok.encode("b")[0])


@pytest.mark.parametrize("args, reason", [
    (("abc", "abcd", "a", "b"), "lengths"),
    (("", "", "a", "b"), "empty"),
    (("abc", "abd", "", "b"), "empty"),
    (("abc", "abd", "ab", "ac"), "same_answer"),
    (("ab" * 20, "ba" * 20, "a", "b"), "too_long"),
])
def test_pair_errors_carry_both_tokenizations(args, reason):
    _, tok = _toy()
    with pytest.raises(P.PairError) as err:
        P.tokenize_pair(tok, *args)
    assert err.value.reason == reason
    assert err.value.clean_tokens == tok.tokens(tok.encode(args[0]))
    assert err.value.corrupted_tokens == tok.tokens(tok.encode(args[1]))


def test_real_pairs_tokenize_to_the_same_length_and_flip_sign(smol):
    model, tok, runs = smol
    lengths = {name: len(r.pair.clean_ids) for name, r in runs.items()}
    assert lengths == {"ioi": 14, "fact": 10, "agreement": 5}
    assert {name: r.pair.differ for name, r in runs.items()} == {"ioi": [9], "fact": [1, 2, 3], "agreement": [1]}
    for r in runs.values():
        assert r.clean_diff > 0 > r.corrupted_diff
        clean, corrupted = P.plain(r.clean, r.pair), P.plain(r.corrupted, r.pair)
        assert clean.logit_diff == pytest.approx(r.clean_diff, abs=1e-4)           # full logits vs two rows
        assert corrupted.logit_diff == pytest.approx(r.corrupted_diff, abs=1e-4)
        assert clean.top_ids[0] == r.pair.right                                    # top-1 in both runs
        assert corrupted.top_ids[0] == r.pair.wrong
    assert runs["ioi"].clean_diff == pytest.approx(6.12, abs=0.02)                 # the issue: +6.1, -5.5
    assert runs["ioi"].corrupted_diff == pytest.approx(-5.49, abs=0.02)


def test_multi_token_answer_is_scored_by_its_first_token(smol):
    _, tok, _ = smol
    pair = P.tokenize_pair(tok, "The Colosseum is located in the city of",
                           "The Eiffel Tower is located in the city of", " Colosseum", " Eiffel")
    assert pair.right_pieces == [" Col", "osse", "um"] and pair.right == tok.encode(" Col")[0]
    assert pair.wrong_pieces == [" E", "iffel"] and pair.wrong == tok.encode(" E")[0]
    with pytest.raises(P.PairError) as err:                                   # " 3" and " 2" both start " "
        P.tokenize_pair(tok, "from 1732 to 17", "from 1702 to 17", " 3", " 2")
    assert err.value.reason == "same_answer"


# --- The fast sweep equals the naive one -------------------------------------------------------------------

@pytest.mark.parametrize("noising", [False, True])
@pytest.mark.parametrize("site", P.SITES)
def test_toy_sweep_equals_naive_every_cell(site, noising):
    model, runs = _toy_runs(noising)
    sweep = P.sweep(model, runs, site)
    together = P.sweeps(model, runs)[site]                                     # every site in one batch
    torch.testing.assert_close(together.diffs, sweep.diffs, atol=1e-5, rtol=0)
    assert torch.equal(together.run, sweep.run)
    T = len(runs.pair.clean_ids)
    assert sweep.recovered.shape == sweep.diffs.shape == sweep.run.shape == (3, T)
    want = torch.tensor([[naive_for(model, runs, site, b, p) for p in range(T)] for b in range(3)])
    torch.testing.assert_close(sweep.diffs, want, atol=1e-4, rtol=0)
    # Positions before the first difference are never run: both runs are the same there.
    assert not sweep.run[:, :3].any()


@pytest.mark.parametrize("noising", [False, True])
def test_toy_head_sweep_equals_naive(noising):
    model, runs = _toy_runs(noising)
    heads = P.sweep(model, runs, "head")
    assert heads.diffs.shape == (3, 4)
    want = torch.tensor([[naive_for(model, runs, "head", b, -1, h) for h in range(4)] for b in range(3)])
    torch.testing.assert_close(heads.diffs, want, atol=1e-4, rtol=0)


def test_toy_batched_naive_equals_one_at_a_time():
    model, runs = _toy_runs()
    pair = runs.pair
    batched = naive_sweep(model, pair.corrupted_ids, pair.clean_ids, pair.right, pair.wrong)
    single = naive_sweep(model, pair.corrupted_ids, pair.clean_ids, pair.right, pair.wrong, batched=False)
    torch.testing.assert_close(batched, single, atol=1e-5, rtol=0)


def test_course_model_sweep_equals_naive():
    try:
        model, tok = load_course_model()
    except CourseModelUnavailable as err:
        pytest.skip(str(err))
    pair = P.tokenize_pair(tok, "床前明月光，疑是地上", "床前明月光，疑是天上", "霜", "来")
    runs = P.run_pair(model, pair)
    sweep = P.sweep(model, runs)
    want = naive_sweep(model, pair.corrupted_ids, pair.clean_ids, pair.right, pair.wrong)
    torch.testing.assert_close(sweep.diffs, want, atol=1e-4, rtol=0)
    heads = P.sweep(model, runs, "head")
    assert heads.diffs.shape == (model.config.n_layers, model.config.n_heads)
    assert heads.diffs[1, 2] == pytest.approx(naive_for(model, runs, "head", 1, -1, 2), abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("site, layer, position, head", [
    ("resid_pre", 0, 9, None), ("resid_pre", 14, 9, None), ("resid_pre", 22, 13, None),
    ("resid_pre", 29, 13, None), ("attn_out", 23, 13, None), ("attn_out", 5, 10, None),
    ("ffn_out", 29, 13, None), ("ffn_out", 2, 9, None), ("head", 23, 13, 3), ("head", 29, 13, 1),
])
def test_smollm2_cells_equal_naive(smol, ioi_maps, site, layer, position, head):
    model, _, runs = smol
    for r in (runs["ioi"], runs["ioi"].flipped()):
        cell = (layer, head) if site == "head" else (layer, position)
        fast = ioi_maps[site, r.noising].diffs[cell]
        assert float(fast) == pytest.approx(naive_for(model, r, site, layer, position, head), abs=1e-4)


def test_patched_run_equals_its_sweep_cell_and_the_naive_logits(smol, ioi_maps):
    model, tok, runs = smol
    r = runs["ioi"]
    one = P.patched_run(model, r, "resid_pre", 22, 13)
    assert one.logit_diff == pytest.approx(float(ioi_maps["resid_pre", False].diffs[22, 13]), abs=1e-4)
    assert len(one.top_ids) == len(one.top_probs) == P.TOP_K
    with torch.no_grad():
        value = r.clean.resid_pre[22, 13]

        def edit(x):
            x[0, 13] = value

        with replaced(model, "resid_pre", 22, edit):
            logits = model(torch.tensor([r.pair.corrupted_ids]))[0, -1]
    assert one.top_ids == logits.topk(P.TOP_K).indices.tolist()
    torch.testing.assert_close(torch.tensor(one.top_probs), logits.softmax(-1).topk(P.TOP_K).values,
                               atol=1e-5, rtol=0)
    # a click on the second name at an early block: the clean answer is back on top
    assert P.patched_run(model, r, "resid_pre", 3, 9).top_ids[0] == tok.encode(" Mary")[0]


# --- What must come out exactly ----------------------------------------------------------------------------

@pytest.mark.parametrize("layer", [0, 1, 2, 3])
def test_whole_stream_copied_is_the_source_run(layer):
    """The stream at every position at once, at any block (3 = after the last): the source run, to
    the last bit (the same operations on the same numbers; the plain run's last block is computed
    as a patched run's, ``plain_run``)."""
    model, runs = _toy_runs()
    for r, want in ((runs, 1.0), (runs.flipped(), 0.0)):
        entry = P.Entry(layer, False, r.source.resid_pre[layer])                 # (T, D)
        final = P.resume(model, r.base, 0, [entry])                              # (1, D)
        assert torch.equal(final[0], r.source.resid_pre[-1, -1])
        diff = P.logit_diff(model, final[0], r.pair.right, r.pair.wrong)
        assert float(P.recovered(diff, r)) == want


def test_layer_zero_whole_stream_gives_the_clean_logits_exactly(smol):
    model, _, runs = smol
    r = runs["ioi"]
    final = P.resume(model, r.base, 0, [P.Entry(0, False, r.clean.resid_pre[0])])
    assert torch.equal(final[0], r.clean.resid_pre[-1, -1])
    assert float(P.recovered(P.logit_diff(model, final[0], r.pair.right, r.pair.wrong), r)) == 1.0
    # The logits: those of the clean run's forward pass, whose last block sums the same numbers in
    # another order (the whole prompt at once), to float32's rounding.
    torch.testing.assert_close(lens_logits(model, final[0]), r.clean.logits, atol=1e-4, rtol=0)


def test_keys_values_are_the_blocks_own(smol):
    model, _, runs = smol
    run, T = runs["fact"].clean, 10
    k, v = P.keys_values(model.blocks[29], run.resid_pre[29][None], torch.arange(T))   # (1, H_kv, T, d_head)
    assert k.shape == v.shape == (1, 3, T, 64)
    torch.testing.assert_close(k[0], run.k[29], atol=1e-5, rtol=0)
    torch.testing.assert_close(v[0], run.v[29], atol=1e-5, rtol=0)


def test_patching_nothing_is_the_base_run():
    model, runs = _toy_runs()
    for r in (runs, runs.flipped()):
        final = P.resume(model, r.base, 0, [P.Entry(0, False, r.base.resid_pre[0]),
                                            P.Entry(1, True, r.base.resid_mid[1])])
        torch.testing.assert_close(final[:2], r.base.resid_pre[-1, -1].expand(2, -1), atol=1e-5, rtol=0)
    same = P.Runs(runs.pair, runs.corrupted, runs.corrupted, runs.corrupted_diff, runs.corrupted_diff)
    sweep = P.sweep(model, same)
    assert not sweep.run.any() and torch.all(sweep.diffs == runs.corrupted_diff)
    assert not torch.isfinite(sweep.recovered).any()                            # nothing to recover: 0 / 0


def test_patching_nothing_on_smollm2_is_the_corrupted_run(smol):
    """The fact pair: a source equal to the base leaves every map the corrupted run, no cell run;
    and patched runs forced through ``resume`` with the base's own activations at every kind of
    site (the skip bypassed) give its logit difference."""
    model, _, runs = smol
    r = runs["fact"]
    same = P.Runs(r.pair, r.corrupted, r.corrupted, r.clean_diff, r.corrupted_diff)
    for site, sweep in P.sweeps(model, same, (*P.SITES, "head")).items():
        assert not sweep.run.any() and torch.all(sweep.diffs == r.corrupted_diff), site
        assert torch.all(sweep.recovered == 0), site
    own = r.corrupted
    for p in (1, 3, 9):
        entries = [P.Entry(0, False, own.resid_pre[0, p][None]),                     # the stream itself
                   P.Entry(12, False, own.resid_pre[12, p][None]),
                   P.Entry(5, True, (own.resid_pre[5, p] + own.attn_out[5, p])[None]),   # its attention's add
                   P.Entry(29, True, (own.resid_pre[29, p] + own.attn_out[29, p])[None]),
                   P.Entry(8, False, (own.resid_mid[7, p] + own.ffn_out[7, p])[None]),   # its feed-forward's
                   P.Entry(30, False, (own.resid_mid[29, p] + own.ffn_out[29, p])[None])]
        diffs = P.logit_diff(model, P.resume(model, own, p, entries), r.pair.right, r.pair.wrong)
        torch.testing.assert_close(diffs, torch.full((6,), r.corrupted_diff), atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", list(P.PAIRS))
def test_last_position_after_the_last_block_recovers_exactly_one(smol, name):
    """The issue's "last layer, last position: 1.0" is the final stream, after the last block: the
    answer is read there alone, so the clean run's stream gives the clean answer, exactly. The
    map's top row is the stream *entering* the last block (resid_pre, L rows: 0 .. L - 1): there the
    last block still attends to the base run's other positions, so it is not exactly 1 (0.90-0.99
    denoising, and noising takes the fact pair only to 0.26)."""
    model, _, runs = smol
    L = model.config.n_layers
    for r, want in ((runs[name], 1.0), (runs[name].flipped(), 0.0)):
        assert P.patched_run(model, r, "resid_pre", L, -1).recovered == want
        top = P.patched_run(model, r, "resid_pre", L - 1, -1).recovered          # the map's top row
        assert top != want and (top > 0.85 if want == 1.0 else top < 0.3)


@pytest.mark.parametrize("name", ["ioi", "fact"])
def test_all_heads_patched_equal_the_attention_output_patched(smol, ioi_maps, name):
    model, _, runs = smol
    r = runs[name]
    last, n_layers = len(r.pair.clean_ids) - 1, model.config.n_layers
    every = torch.ones(model.config.n_heads, dtype=torch.bool)

    def diffs(entries):
        return P.logit_diff(model, P.resume(model, r.base, last, entries), r.pair.right, r.pair.wrong)

    heads = diffs([P.patch_entry(model, r, "head", b, last, every) for b in range(n_layers)])
    attn = diffs([P.patch_entry(model, r, "attn_out", b, last) for b in range(n_layers)])
    torch.testing.assert_close(heads, attn, atol=1e-4, rtol=0)
    if name == "ioi":                                                           # and the sweep's own map
        torch.testing.assert_close(heads, ioi_maps["attn_out", False].diffs[:, -1], atol=1e-4, rtol=0)


def test_logit_diff_reads_two_rows_of_the_unembedding():
    model, runs = _toy_runs()
    final = runs.clean.resid_pre[-1]                                           # (T, D)
    logits = model.output(model.final_norm(final))                              # (T, V)
    torch.testing.assert_close(P.logit_diff(model, final, 1, 2), logits[:, 1] - logits[:, 2])


def test_run_shapes(smol):
    model, _, runs = smol
    run, T = runs["ioi"].clean, 14
    assert run.resid_pre.shape == (31, T, 576)
    assert run.resid_mid.shape == run.attn_out.shape == run.ffn_out.shape == (30, T, 576)
    assert run.concat.shape == (30, T, 9 * 64)
    assert run.k.shape == run.v.shape == (30, 3, T, 64)
    assert run.logits.shape == (49152,)


# --- The picture (SmolLM2, float32) --------------------------------------------------------------------------

@pytest.mark.slow
def test_ioi_picture(ioi_maps):
    r = ioi_maps["resid_pre", False].recovered                                  # (30, 14)
    assert r.shape == (30, 14)
    assert (r[:16, 9] > 0.95).all()                                             # the second name, early-middle
    assert (r[:20, 13] < 0.05).all() and (r[25:, 13] > 0.85).all()              # the last position, late
    assert (r[:, :9] == 0).all()                                                # before the names part: nothing
    assert ioi_maps["head", False].recovered.shape == (30, 9)
    noise = ioi_maps["resid_pre", True].recovered
    assert (noise[:16, 9] < 0.05).all() and (noise[25:, 13] < 0.05).all()


@pytest.mark.slow
def test_fact_picture(smol):
    model, _, runs = smol
    r = P.sweep(model, runs["fact"]).recovered                                  # (30, 10)
    assert (r[:24, 2] > 0.65).all() and r[:8, 2].max() > 0.85                   # "iffel" until block 23
    assert (r[24:, 1:4].abs() < 0.05).all()                                     # then the subject no more,
    assert (r[24:, -1] > 0.8).all() and (r[:22, -1].abs() < 0.1).all()         # the last position instead
    whole = P.Entry(4, False, torch.cat([runs["fact"].clean.resid_pre[4, 1:4],   # the three subject tokens
                                         runs["fact"].corrupted.resid_pre[4, 4:]]))
    final = P.resume(model, runs["fact"].corrupted, 1, [whole])
    pair = runs["fact"].pair
    assert float(P.recovered(P.logit_diff(model, final, pair.right, pair.wrong), runs["fact"])[0]) > 0.95


@pytest.mark.slow
def test_agreement_picture(smol):
    model, _, runs = smol
    r = P.sweep(model, runs["agreement"]).recovered                             # (30, 5)
    assert (r[:26, 1] > 0.95).all()                                             # " keys" until block 25
    assert (r[28:, 4] > 0.95).all()                                             # then the last position


# --- Against transformers (requirements-reference.txt), the same GGUF, its own hooks ---------------------------

def _hf_site(layers, site: str, layer: int):
    """Where transformers' Llama holds a site: (module, is its input, how to reach the tensor)."""
    if site == "resid_pre":
        return layers[layer], True
    if site == "attn_out":
        return layers[layer].self_attn, False                   # its output: (attn_output, weights)
    if site == "ffn_out":
        return layers[layer].mlp, False
    return layers[layer].self_attn.o_proj, True                 # "head": the heads side by side


# A few cells of each site on each pair: (site, layer, position, head); -1 is the last position.
HF_CELLS = {
    "ioi": [("resid_pre", 3, 9, None), ("resid_pre", 22, -1, None), ("attn_out", 23, -1, None),
            ("attn_out", 17, 9, None), ("ffn_out", 0, 9, None), ("ffn_out", 21, 9, None), ("head", 23, -1, 3),
            ("head", 24, -1, 4)],
    "fact": [("resid_pre", 4, 3, None), ("resid_pre", 29, -1, None), ("attn_out", 23, -1, None),
             ("attn_out", 3, 3, None), ("ffn_out", 0, 2, None), ("head", 23, -1, 4), ("head", 29, -1, 0)],
    "agreement": [("resid_pre", 10, 1, None), ("attn_out", 26, -1, None), ("ffn_out", 0, 1, None),
                  ("ffn_out", 28, -1, None), ("head", 26, -1, 0), ("head", 27, -1, 8)],
}


@pytest.mark.slow
def test_recovered_equals_transformers_with_hooks(smol):
    """Denoising on the three built-in pairs, every kind of site: the fast sweep's cells
    (``patched_diffs``, as the maps run them) against transformers' own model of the same GGUF,
    its activation read in the clean run and written into the corrupted one by module hooks."""
    transformers = pytest.importorskip("transformers")
    from core.models import gguf_llama
    model, _, runs = smol
    path = gguf_llama.gguf_path()
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager").eval()
    layers = hf.model.layers
    d_head = model.config.d_head

    @torch.no_grad()
    def hf_diff(ids, pair, hooks=()):
        """The logit difference of one transformers run, with each hook (site, layer, fn(tensor))
        called on that activation (in place)."""
        handles = []
        for site, layer, fn in hooks:
            module, is_input = _hf_site(layers, site, layer)
            if is_input:
                def pre(mod, args, kwargs, fn=fn):
                    fn(args[0] if args else kwargs["hidden_states"])
                handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
            else:
                def post(mod, args, out, fn=fn):
                    fn(out[0] if isinstance(out, tuple) else out)
                handles.append(module.register_forward_hook(post))
        try:
            return float(_diff(hf(torch.tensor([ids])).logits, pair.right, pair.wrong)[0])
        finally:
            for handle in handles:
                handle.remove()

    for name, cells in HF_CELLS.items():
        r = runs[name]
        pair, last = r.pair, len(r.pair.clean_ids) - 1
        todo = []
        for site, layer, p, head in cells:
            heads = None if head is None else torch.arange(model.config.n_heads) == head
            todo.append((p % (last + 1), (site, layer, p, head), P.patch_entry(model, r, site, layer, p % (last + 1), heads)))
        ours = P.patched_diffs(model, r, todo)
        cols = {cell: slice(None) if cell[3] is None else slice(cell[3] * d_head, (cell[3] + 1) * d_head)
                for cell in cells}
        seen = {}                                     # every cell's clean activation, one clean run

        def read(cell, seen=seen, cols=cols):
            return lambda x: seen.setdefault(cell, x[0, cell[2], cols[cell]].clone())

        def write(cell, seen=seen, cols=cols):
            return lambda x: x[0, cell[2], cols[cell]].copy_(seen[cell])

        clean = hf_diff(pair.clean_ids, pair, [(cell[0], cell[1], read(cell)) for cell in cells])
        corrupted = hf_diff(pair.corrupted_ids, pair)
        for cell in cells:
            patched = hf_diff(pair.corrupted_ids, pair, [(cell[0], cell[1], write(cell))])
            want = (patched - corrupted) / (clean - corrupted)
            got = float(P.recovered(torch.tensor(ours[cell]), r))
            assert got == pytest.approx(want, abs=1e-3), (name, cell)
