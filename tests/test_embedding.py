"""Embedding lookup, cosine neighbours and PCA against PyTorch/numpy references."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.lab.embedding import cosine_to_all, frequent_ids, lookup, nearest, pca_2d


def _table(v=50, d=12, seed=0):
    return torch.randn(v, d, generator=torch.Generator().manual_seed(seed))


def test_lookup_is_a_one_hot_product_and_nn_embedding():
    table = _table()
    ids = [3, 7, 3, 0]
    x = lookup(table, ids)
    assert x.shape == (4, 12)
    assert torch.allclose(x, F.one_hot(torch.tensor(ids), 50).float() @ table)
    emb = torch.nn.Embedding.from_pretrained(table)
    assert torch.equal(x, emb(torch.tensor(ids)))
    assert torch.equal(x[0], x[2])                        # same id, same row


def test_cosine_matches_torch():
    table = _table()
    ref = F.cosine_similarity(table, table[5][None], dim=-1)
    assert torch.allclose(cosine_to_all(table, 5), ref, atol=1e-6)
    assert cosine_to_all(torch.tensor([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0]]), 0).tolist() == pytest.approx(
        [1.0, 2**-0.5, -1.0], abs=1e-6)


def test_nearest_is_the_brute_force_top_k_without_itself():
    table = _table(200)
    candidates = torch.arange(4, 150)
    found, sims = nearest(table, 10, 8, candidates)
    assert 10 not in found.tolist() and len(found) == 8
    assert (sims[:-1] >= sims[1:]).all()
    ref = F.cosine_similarity(table[candidates], table[10][None], dim=-1)
    ref[candidates == 10] = -2
    assert set(found.tolist()) == set(candidates[ref.topk(8).indices].tolist())
    # A query outside the candidates is compared with all of them.
    found, _ = nearest(table, 199, 5, candidates)
    assert len(found) == 5


def test_frequent_ids():
    assert frequent_ids(10, 3).tolist() == [4, 5, 6]
    assert frequent_ids(10, 100).tolist() == [4, 5, 6, 7, 8, 9]


def test_pca_against_numpy_covariance():
    x = _table(300, 16, seed=2) * torch.linspace(3, 0.1, 16)     # distinct variances per axis
    pca = pca_2d(x)
    xc = (x - x.mean(0)).double().numpy()
    evals, evecs = np.linalg.eigh(np.cov(xc, rowvar=False))
    order = np.argsort(evals)[::-1][:2]
    ref = xc @ evecs[:, order]
    got = pca.coords.double().numpy()
    for j in range(2):                                             # same axes up to sign
        assert np.allclose(np.abs(got[:, j]), np.abs(ref[:, j]), atol=1e-3)
    assert pca.explained.tolist() == pytest.approx((evals[order] / evals.sum()).tolist(), rel=1e-4)
    assert torch.allclose(pca.project(x), pca.coords, atol=1e-5)
    # Sign rule: the largest entry of each direction is positive, so the map never flips.
    assert (pca.components.gather(1, pca.components.abs().argmax(1, keepdim=True)) > 0).all()


def test_pca_example():
    pca = pca_2d(torch.tensor([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0]]))
    assert pca.coords[:, 0].tolist() == pytest.approx([-2.0, 0.0, 2.0])
    assert pca.explained[0].item() == pytest.approx(1.0)


def test_trained_table_if_shipped():
    from core.models.model import CourseModelUnavailable, load_course_model

    try:
        model, tok = load_course_model()
    except CourseModelUnavailable:
        pytest.skip("course model not built")
    table = model.embed.weight.detach()
    found, sims = nearest(table, tok.stoi["月"], 10, frequent_ids(len(table), 300))
    assert len(found) == 10 and (sims <= 1 + 1e-6).all()
    # A trained table is not random: frequent characters' best neighbours are closer than
    # the best neighbours in a random table of the same shape.
    rand = torch.randn(table.shape, generator=torch.Generator().manual_seed(0))
    ids = frequent_ids(len(table), 300)
    best = torch.stack([nearest(table, int(i), 1, ids)[1][0] for i in ids[:50]]).mean()
    best_rand = torch.stack([nearest(rand, int(i), 1, ids)[1][0] for i in ids[:50]]).mean()
    assert best > best_rand


def test_kept_on_map_counts_neighbours_near_on_the_map():
    from core.lab.embedding import kept_on_map
    coords = torch.tensor([[0., 0.], [1., 0.], [5., 0.], [0., 2.]])
    chosen = torch.tensor([0., 0.])
    assert kept_on_map(coords, chosen, torch.tensor([[5., 0.]])) == 0
    assert kept_on_map(coords, chosen, torch.tensor([[1., 0.]])) == 1
    assert kept_on_map(coords, chosen, torch.tensor([[1., 0.], [5., 0.]])) == 1   # 2 nearest: [1,0], [0,2]
    assert kept_on_map(coords, chosen, torch.empty(0, 2)) == 0
