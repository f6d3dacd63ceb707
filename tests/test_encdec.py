"""The encoder-decoder of C1/B4 against torch's own layers, its masks, its cache, its trace."""
import pytest
import torch
from torch import nn

from core.models.encdec import EncDecConfig, EncoderDecoder, greedy, source_mask, target_mask
from core.parts.trace import Trace, is_known_name

CFG = EncDecConfig(src_vocab=20, tgt_vocab=12, d_model=32, n_heads=4, n_layers=2, ffn_hidden=64, max_len=16)


def _model(seed=0):
    torch.manual_seed(seed)
    model = EncoderDecoder(CFG).eval()
    with torch.no_grad():   # random LayerNorm gains and biases, so copying them is tested too
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    return model


def _copy_attn(ours, theirs: nn.MultiheadAttention):
    d = ours.config.d_model
    w, b = theirs.in_proj_weight, theirs.in_proj_bias
    with torch.no_grad():
        for i, lin in enumerate((ours.w_q, ours.w_k, ours.w_v)):
            w[i * d:(i + 1) * d] = lin.weight
            b[i * d:(i + 1) * d] = lin.bias
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        theirs.out_proj.bias.copy_(ours.w_o.bias)


def _copy_common(ours, theirs, norms):
    with torch.no_grad():
        theirs.linear1.weight.copy_(ours.ffn.w1.weight)
        theirs.linear1.bias.copy_(ours.ffn.w1.bias)
        theirs.linear2.weight.copy_(ours.ffn.w2.weight)
        theirs.linear2.bias.copy_(ours.ffn.w2.bias)
        for k, mine in enumerate(norms, start=1):
            ref = getattr(theirs, f"norm{k}")
            ref.weight.copy_(mine.weight)
            ref.bias.copy_(mine.bias)


def _torch_layer(cls):
    return cls(CFG.d_model, CFG.n_heads, CFG.ffn_hidden, dropout=0.0, activation="relu",
               layer_norm_eps=CFG.norm_eps, batch_first=True, norm_first=False)


SRC = torch.tensor([[5, 6, 7, 8, 9, 10, 0, 0], [4, 11, 12, 13, 14, 15, 16, 17]])   # (2, 8), row 0 padded
TGT = torch.tensor([[1, 4, 5, 6, 7, 0], [1, 8, 9, 10, 11, 3]])                     # (2, 6), row 0 padded


@pytest.mark.parametrize("i", [0, 1])
def test_encoder_layer_equals_torch(i):
    model = _model()
    ours = model.encoder[i]
    ref = _torch_layer(nn.TransformerEncoderLayer)
    _copy_attn(ours.self_attn, ref.self_attn)
    _copy_common(ours, ref, (ours.self_attn_norm, ours.ffn_norm))
    ref.train()   # dropout is 0; train mode keeps torch off its fast path (which zeroes padded rows)
    x = torch.randn(2, 8, CFG.d_model)
    got = ours(x, source_mask(SRC, 0))
    want = ref(x, src_key_padding_mask=SRC == 0)
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("i", [0, 1])
def test_decoder_layer_equals_torch(i):
    model = _model()
    ours = model.decoder[i]
    ref = _torch_layer(nn.TransformerDecoderLayer)
    _copy_attn(ours.self_attn, ref.self_attn)
    _copy_attn(ours.cross_attn, ref.multihead_attn)
    _copy_common(ours, ref, (ours.self_attn_norm, ours.cross_attn_norm, ours.ffn_norm))
    ref.train()
    x, memory = torch.randn(2, 6, CFG.d_model), torch.randn(2, 8, CFG.d_model)
    got = ours(x, memory, target_mask(TGT, 0), source_mask(SRC, 0))
    causal = nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.bool)
    want = ref(x, memory, tgt_mask=causal, tgt_key_padding_mask=TGT == 0,
               memory_key_padding_mask=SRC == 0, tgt_is_causal=True)
    real = TGT != 0    # a padded query's row is not used by anyone; compare the real positions
    assert torch.allclose(got[real], want[real], atol=1e-5)


def test_masks_no_attention_to_padding_and_trace_names():
    model = _model()
    trace = Trace()
    logits = model(SRC, TGT, trace)
    assert logits.shape == (2, 6, CFG.tgt_vocab)
    assert all(is_known_name(n) for n in trace.names())
    for stack in ("encoder", "decoder"):
        for i in range(CFG.n_layers):
            for sub in ("self_attn",) + (("cross_attn",) if stack == "decoder" else ()):
                w = trace[f"{stack}.layers.{i}.{sub}.weights"]
                assert torch.allclose(w.sum(-1), torch.ones(()), atol=1e-6)
                if sub == "cross_attn" or stack == "encoder":
                    assert (w[0, :, :, 6:] == 0).all()            # source padding never read
                else:
                    assert (w[0, :, :, 5] == 0).all()             # target padding never read
                    assert (w.triu(1) == 0).all()                 # nor a future character
    assert trace["encoder.layers.1.self_attn.weights"].shape == (2, 4, 8, 8)
    assert trace["decoder.layers.1.cross_attn.weights"].shape == (2, 4, 6, 8)
    assert trace["decoder.layers.0.ffn.hidden"].shape == (2, 6, 64)
    # Padding of the source changes nothing for a real position: row 0 alone, unpadded, gives the same
    alone = model(SRC[:1, :6], TGT[:1, :5])
    assert torch.allclose(alone, logits[:1, :5], atol=1e-5)


def test_cached_decoding_equals_uncached():
    model = _model(3)
    cached = greedy(model, SRC, bos_id=1, steps=10, use_cache=True)
    plain = greedy(model, SRC, bos_id=1, steps=10, use_cache=False)
    assert torch.equal(cached.ids, plain.ids)
    assert torch.allclose(cached.probs, plain.probs, atol=1e-5)
    assert cached.probs.shape == (2, 10, CFG.tgt_vocab)


def test_teacher_forcing_equals_stepwise_on_the_chosen_ids():
    model = _model(4)
    out = greedy(model, SRC, bos_id=1, steps=8)
    tgt_in = torch.cat([torch.ones(2, 1, dtype=torch.long), out.ids[:, :-1]], 1)   # shifted right
    probs = torch.softmax(model(SRC, tgt_in), -1)
    assert torch.allclose(probs, out.probs, atol=1e-5)


def test_embedding_is_scaled_and_positioned():
    model = _model()
    trace = Trace()
    model.encode(SRC, trace)
    x = trace["encoder.embed"]
    want = model.src_embed(SRC) * CFG.d_model ** 0.5 + model.pe[:8]
    assert torch.allclose(x, want)
    assert torch.allclose(model.pe[1, :2], torch.tensor([0.8415, 0.5403]), atol=1e-4)


def test_cross_attend_equals_the_multi_head_module():
    """B4 shows cross_kv + cross_attend; they compute exactly what MultiHeadAttention.forward does."""
    model = _model(5)
    attn = model.decoder[0].cross_attn
    x, memory = torch.randn(2, 6, CFG.d_model), torch.randn(2, 8, CFG.d_model)
    mask = source_mask(SRC, 0)
    from core.models.encdec import cross_attend, cross_kv
    ours, theirs = Trace(), Trace()
    got = cross_attend(attn, x, cross_kv(attn, memory), mask, ours)
    want = attn(x, context=memory, mask=mask, trace=theirs)
    assert torch.allclose(got, want, atol=1e-6)
    assert sorted(ours.names()) == sorted(theirs.names())
    for name in theirs.names():
        assert torch.allclose(ours[name], theirs[name], atol=1e-6), name


def test_scaled_embeddings_are_as_large_as_the_positions():
    """Initialised at std 1/sqrt(D), a token vector times sqrt(D) has entries of size ~1, like
    the sinusoids: neither drowns the other."""
    torch.manual_seed(0)
    model = EncoderDecoder(EncDecConfig(src_vocab=400, tgt_vocab=400, d_model=64))
    scaled = model.src_embed.weight * 64 ** 0.5
    assert abs(float(scaled.std()) - 1.0) < 0.05
    assert abs(float(model.pe[:32].pow(2).mean().sqrt()) - 2 ** -0.5) < 0.05     # sin, cos: rms 1/sqrt(2)
