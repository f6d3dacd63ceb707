"""Overflow as GShard and Switch define it (issue 22, E1 #1): an assignment a full expert turns
away contributes 0, the residual carries the token on, and a token counts as overflowed only
when none of its assignments was processed (the lecture notes: "when both experts are full")."""
import torch

from core.models.moe_model import MoEBlock, MoEConfig
from core.parts.moe import MoE, Routing
from core.parts.trace import Trace

ROUTING = {"capacity_factor": 0.5}   # T = 4 tokens, k = 2, E = 4: ceil(0.5 * 4 * 2 / 4) = 1 slot each


def hand_made() -> tuple[MoE, torch.Tensor]:
    """A router that reads the first four coordinates as the four experts' logits.

    t0 -> E0, E1   first choice fits (E0's slot), second turned away (t2 took E1 first)
    t1 -> E0, E2   first turned away (t0 has E0), second fits
    t2 -> E1, E0   first fits, second turned away
    t3 -> E0, E1   both turned away: no expert ran on it
    """
    gen = torch.Generator().manual_seed(0)
    moe = MoE(4, 8, 4)
    with torch.no_grad():
        for p in moe.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
        moe.w_g.weight.copy_(torch.eye(4))
    x = torch.tensor([[4.0, 2.0, 0.0, 0.0],
                      [4.0, 0.0, 2.0, 0.0],
                      [2.0, 4.0, 0.0, 0.0],
                      [4.0, 2.0, 0.0, 0.0]])                   # (T=4, D=4)
    return moe, x


def test_a_token_counts_as_overflowed_only_when_it_lost_every_expert():
    moe, x = hand_made()
    r = moe(x, Routing(**ROUTING))
    assert r.capacity == 1
    assert r.experts.tolist() == [[0, 1], [0, 2], [1, 0], [0, 1]]
    assert r.fits.tolist() == [[True, False], [False, True], [True, False], [False, False]]
    assert r.overflow.sum() == 5                                # assignments turned away
    assert r.overflowed_tokens.tolist() == [False, False, False, True]


def test_a_turned_away_assignment_contributes_zero_and_the_rest_stays():
    moe, x = hand_made()
    r = moe(x, Routing(**ROUTING))
    out = r.output                                              # (T, D)
    with torch.no_grad():
        first = r.gates[0, 0] * moe.experts[0](x[0])            # t0 keeps its first expert
        second = r.gates[1, 1] * moe.experts[2](x[1])           # t1 keeps its second
    torch.testing.assert_close(out[0], first)
    torch.testing.assert_close(out[1], second)
    assert torch.equal(out[3], torch.zeros(4))                  # t3: no expert output at all


def test_the_block_keeps_every_residual():
    """Through a whole block: resid_post = resid_mid + expert output for every token, so a
    token that lost both experts leaves the block exactly as it came out of attention."""
    cfg = MoEConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                    ffn_hidden=24, max_seq_len=32, n_experts=4)
    torch.manual_seed(0)
    block = MoEBlock(cfg)
    x = torch.randn(1, 24, 16)
    mask = torch.ones(24, 24, dtype=torch.bool).tril()
    trace = Trace().child("blocks.0")
    results = []
    with torch.no_grad():
        y = block(x, mask, torch.arange(24), trace=trace, routing=Routing(capacity_factor=0.25), rng=None,
                  results=results)
    (r,) = results
    lost_all = ~r.fits.any(-1)                                  # (N,) no expert ran on it
    lost_one = r.overflow.any(-1) & ~lost_all
    assert lost_all.any() and lost_one.any()
    mid, post = trace["blocks.0.resid_mid"][0], y[0]                     # (N, D)
    torch.testing.assert_close(post, mid + r.output[0])
    assert torch.equal(post[lost_all], mid[lost_all])           # exactly its residual
    assert (post[lost_one] != mid[lost_one]).any(-1).all()      # its first expert still ran
    assert torch.equal(r.overflowed_tokens, lost_all)
