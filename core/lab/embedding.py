"""Looking up embeddings, and reading a trained table: nearest neighbours and a 2-D map.

Dimension legend
    V   vocabulary size (rows of the table)
    C   candidate rows searched (e.g. the C most frequent characters)
    D   model width (columns of the table)
    N   tokens in the prompt
    k   neighbours shown
    W   words of a word list (each one token or several)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch


def lookup(table: torch.Tensor, ids: list[int]) -> torch.Tensor:
    """Row ids[n] of the (V, D) table for every token: the same thing as
    one_hot(ids) @ table.

    Example: lookup(torch.eye(3), [2, 0]) -> [[0, 0, 1], [1, 0, 0]]
    """
    index = torch.tensor(ids, dtype=torch.long, device=table.device)  # (N,)
    return table[index]                                                # (N, D)


def cosine_to_all(table: torch.Tensor, row: int) -> torch.Tensor:
    """cos(e_row, e_j) = e_row . e_j / (|e_row| |e_j|) for every row j of the table.

    Example: cosine_to_all(torch.tensor([[1., 0.], [1., 1.], [-1., 0.]]), 0) -> [1.0, 0.707, -1.0]
    """
    unit = table / table.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (V, D)
    return unit @ unit[row]                                            # (V,)


def nearest(
    table: torch.Tensor, row: int, k: int, candidates: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The k candidate rows most similar to ``row`` by cosine, itself left
    out.

    Returns (ids, similarities), both (k,), most similar first (ties: lower
    id first).
    Example: nearest(torch.tensor([[1., 0.], [1., 1.], [-1., 0.]]),
                     0, 1, torch.arange(3)) -> ([1], [0.707])
    """
    sims = cosine_to_all(table, row)[candidates]             # (C,)
    itself = candidates == row                               # (C,)
    sims = torch.where(itself, torch.tensor(float("-inf")), sims)
    k = min(k, len(candidates) - int(itself.any()))
    order = torch.sort(sims, descending=True, stable=True).indices[:k]  # (k,)
    return candidates[order], sims[order]                    # (k,), (k,)


def frequent_ids(vocab_size: int, top: int, n_special: int = 4) -> torch.Tensor:
    """The ``top`` most frequent characters of a vocabulary built by ``CharTokenizer.from_text``,
    which numbers characters by falling frequency right after the specials.

    A character seen a handful of times in training keeps a row close to its random start,
    so searching among frequent characters shows what training learned, not leftover noise.
    Example: frequent_ids(10, 3) -> [4, 5, 6]
    """
    return torch.arange(n_special, min(vocab_size, n_special + max(1, top)))   # (C,)


@dataclass(frozen=True)
class PCA2:
    coords: torch.Tensor      # (C, 2)  each row projected on the two main directions
    explained: torch.Tensor   # (2,)    fraction of the total variance along each direction
    components: torch.Tensor  # (2, D)  the directions (unit vectors)
    mean: torch.Tensor        # (D,)    the centre that was subtracted

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Other rows (the prompt's) placed on the same 2-D map."""
        return (x - self.mean) @ self.components.T                      # (n, 2)


def pca_2d(x: torch.Tensor) -> PCA2:
    """Principal component analysis to 2-D, written out with the SVD.

    Centre the rows, X_c = U S V^T; the first two rows of V^T are the
    directions of largest variance and X_c V[:, :2] = U[:, :2] S[:2] are the
    coordinates. Singular vectors are defined only up to sign; we flip each
    so that its largest entry is positive: the same picture on every machine.
    Example: pca_2d(torch.tensor([[0., 0.], [2., 0.], [4., 0.]]))
             .coords[:, 0] -> [-2, 0, 2]
    """
    mean = x.mean(dim=0)                                      # (D,)
    xc = x - mean                                             # (C, D)
    # s: (min(C, D),), vh: (min(C, D), D)
    _, s, vh = torch.linalg.svd(xc, full_matrices=False)
    components = vh[:2]                                       # (2, D)
    biggest = components.abs().argmax(dim=1)                  # (2,)
    rows = torch.arange(len(components))
    signs = torch.sign(components[rows, biggest])             # (2,)
    components = components * signs[:, None]                  # (2, D)
    variance = s**2
    explained = variance[:2] / variance.sum().clamp_min(1e-12)  # (2,)
    coords = xc @ components.T                                # (C, 2)
    return PCA2(coords, explained, components, mean)


def kept_on_map(coords: torch.Tensor, chosen: torch.Tensor, neighbours: torch.Tensor) -> int:
    """How many of the k nearest rows (by cosine, in all D dimensions) are also among the k
    points nearest to the chosen one on the 2-D map: k when the map keeps the neighbourhood,
    about k * k / C when it is no better than chance.

    coords (C, 2): every point on the map; chosen (2,): the chosen row's point; neighbours
    (k, 2): its k neighbours' points (themselves among ``coords``).
    Example: kept_on_map(torch.tensor([[0., 0.], [1., 0.], [5., 0.]]),
                         torch.tensor([0., 0.]), torch.tensor([[5., 0.]])) -> 0
             (the nearest point on the map is [1, 0], not the neighbour)
    """
    k = len(neighbours)
    if k == 0:
        return 0
    far = (coords - chosen).norm(dim=-1)                     # (C,)
    far = far[far > 1e-9]                                    # the chosen row itself is not a neighbour
    radius = far.sort().values[min(k, len(far)) - 1]         # (): the k-th nearest point on the map
    return int(((neighbours - chosen).norm(dim=-1) <= radius + 1e-9).sum())


# --- a trained model's whole table (SmolLM2: V = 49,152, D = 576) ---------------------------

def row_lengths(table: torch.Tensor) -> torch.Tensor:
    """The length of every row, made once per process and shared by every
    student: with it a cosine against the whole vocabulary is one
    matrix-vector product and one division, and no second, unit-length copy
    of the table is kept (SmolLM2's would be 113 MB; the lengths are 192 KB).

    Example: row_lengths(torch.tensor([[3., 4.], [0., 2.]])) -> [5., 2.]
    """
    return table.norm(dim=-1).clamp_min(1e-12)                  # (V,)


def nearest_to(
    table: torch.Tensor, lengths: torch.Tensor, query: torch.Tensor, k: int,
    exclude: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The k rows of the table with the largest cosine to ``query`` (a row,
    or a mean of rows); ``lengths`` are the rows' lengths (row_lengths); the
    ids in ``exclude`` (the query's own tokens) are left out.

    cos(e_j, q) = (e_j . q) / (|e_j| |q|), for every row j at once.
    Returns (ids, similarities), both (k,), most similar first (ties:
    lower id first).
    Example: t = torch.tensor([[1., 0.], [1., 1.], [-1., 0.]])
             nearest_to(t, row_lengths(t), torch.tensor([1., 0.]), 1, [0])
             -> ([1], [0.707])
    """
    q = query / query.norm().clamp_min(1e-12)            # (D,)
    sims = (table @ q) / lengths                         # (V,) all cosines
    if exclude:
        out = torch.tensor(exclude, device=table.device)  # (n,)
        sims = sims.index_fill(0, out, float("-inf"))
    k = min(k, len(table) - len(set(exclude)))
    order = torch.sort(sims, descending=True, stable=True).indices[:k]
    return order, sims[order]                            # (k,), (k,)


def word_vectors(
    table: torch.Tensor, pieces: list[list[int]]
) -> torch.Tensor:
    """One vector per word: its row when it is one token, the mean of its
    tokens' rows when the tokenizer cut it into several (a common choice
    for a word vector; the model itself never averages, it reads the
    tokens one by one).

    Example: word_vectors(torch.tensor([[0., 2.], [2., 0.], [4., 4.]]),
                          [[2], [0, 1]]) -> [[4., 4.], [1., 1.]]
    """
    rows = [table[torch.tensor(ids, device=table.device)]  # (n, D) each
            for ids in pieces]
    return torch.stack([r.mean(dim=0) for r in rows])     # (W, D)


_SEPARATORS = re.compile(r"[\s,，、;；]+")


def word_list(text: str, limit: int) -> tuple[list[str], bool]:
    """The words of a list typed with spaces, commas or 、 between them: each once, in order,
    at most ``limit``. Returns (words, whether some were cut).

    Example: word_list("king, queen king  man", 2) -> (["king", "queen"], True)
    """
    words = list(dict.fromkeys(w for w in _SEPARATORS.split(text) if w))
    return words[:limit], len(words) > limit
