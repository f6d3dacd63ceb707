"""Activation patching on any LlamaDecoder (lesson F4): which activation carries the answer?

Dimension legend (as in core/models/model.py; batch B = 1 for a plain run)
    L       blocks
    T       prompt positions (the clean and the corrupted prompt have the same number)
    D       model width;  H query heads, H_kv key/value heads, d_head = D / H
    V       vocabulary size
    E       patched runs finished together, one batch
    N       positions a patched run recomputes: T - start
    K       top tokens kept

The method (Meng et al. 2022, "causal tracing"; Wang et al. 2022, the IOI circuit; Heimersheim &
Nanda 2024 on how to read it). Two prompts of the same length differ in a few tokens: the clean
one ("... John gave a drink to" -> " Mary") and the corrupted one (the second John made Mary ->
" John"). The metric is the logit difference at the last position, logit(right) - logit(wrong):
positive on the clean prompt, negative on the corrupted one. Denoising runs the corrupted prompt
with one activation copied from the clean run; the recovered fraction
    r = (d_patched - d_corrupted) / (d_clean - d_corrupted)
is 0 when the copy changed nothing and 1 when the answer came back entirely. Noising is the other
direction, the clean prompt with one corrupted activation; measured on the same scale, it starts
at 1 and a cell falls towards 0 where the clean run *needed* that activation. The two can differ:
denoising finds what is enough to bring the answer back, noising what the answer cannot do without
(a job done twice over shows in denoising and hides from noising).

The sites, at block l and position p (trace names of core/parts/trace.py):
    resid_pre   the residual stream entering block l (l = 0 is the token embedding)
    attn_out    what block l's attention adds to the stream (traced as attn.out)
    ffn_out     what block l's feed-forward adds
    head        one head's output at the last position, its d_head slice of ``attn.concat``
                before w_o mixes the heads

Why it is fast (a cell is one patched run; a pair's maps are ~3,000 of them). A patch at block l
changes nothing before block l, and nothing at positions before p (causal attention). So a patched
run starts at block l with the base run's stream, positions before p come from the base run's keys
and values (a KV cache), never recomputed, and the last block computes only the last position (the
metric reads nothing else; the other positions give it their keys and values). An entry into a
feed-forward needs it at its own row only (the other rows are the base's): one call a layer, for
every position. For one position p, ``resume`` finishes the patched runs of every layer together:
block j runs once, on the batch of every run that starts at j or earlier. A cell whose copied
activation equals the base's own (the same token at layer 0, or any position before the prompts
first differ) is the base run itself, and is not run at all.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from core.lab.layer_trace import KeepTrace
from core.lab.logit_lens import lens_logits
from core.parts.kv_cache import KVCache
from core.parts.rope import apply_rope

MAX_TOKENS = 32      # longest prompt patched: a full sweep costs ~ T^2 L^2 / 4 token-blocks
TOP_K = 10           # next tokens listed for one patched run
SITES = ("resid_pre", "attn_out", "ffn_out")
KEPT = ("resid_pre", "resid_mid", "attn.out", "ffn_out", "resid_post", "attn.concat", "attn.k", "attn.v")


# --- The pair ----------------------------------------------------------------------------------

class PairError(ValueError):
    """A pair that cannot be patched. ``reason`` is one of "empty" (a prompt or an answer is
    empty), "lengths" (the prompts have different token counts), "too_long" (over MAX_TOKENS),
    "same_answer" (both answers start with the same token); both prompts' tokens come with it,
    so a page can show where they part."""

    def __init__(self, reason: str, clean_tokens: list[str], corrupted_tokens: list[str]):
        super().__init__(f"{reason}: clean {clean_tokens!r}, corrupted {corrupted_tokens!r}")
        self.reason = reason
        self.clean_tokens = clean_tokens
        self.corrupted_tokens = corrupted_tokens


@dataclass(frozen=True)
class Pair:
    clean_ids: list[int]          # (T,) the prompt whose answer is right
    corrupted_ids: list[int]      # (T,) the same length, a few tokens changed
    clean_tokens: list[str]       # (T,) as text, for the axis of a figure
    corrupted_tokens: list[str]   # (T,)
    right: int                    # first token of the clean answer: the one scored
    wrong: int                    # first token of the corrupted answer
    right_pieces: list[str]       # every token of the clean answer (one, usually)
    wrong_pieces: list[str]       # every token of the corrupted answer

    @property
    def differ(self) -> list[int]:
        """Positions where the two prompts have different tokens.

        Example: IOI pair -> [9] (the second name)
        """
        return [p for p, (a, b) in enumerate(zip(self.clean_ids, self.corrupted_ids, strict=True)) if a != b]


def tokenize_pair(tokenizer, clean: str, corrupted: str, right: str, wrong: str,
                  limit: int = MAX_TOKENS) -> Pair:
    """Both prompts and both answers as the model reads them (no BOS: SmolLM2 reads a plain text
    as it is). An answer of several tokens is scored by its first, where the two answers part
    already at the first step ("Colosseum" -> " Col", "osse", "um": " Col" is scored). The answer
    is tokenized alone, so a leading space matters: " Mary" is one token, "Mary" another.

    Example (SmolLM2): tokenize_pair(tok, "The Eiffel Tower is located in the city of",
             "The Colosseum is located in the city of", " Paris", " Rome")
             -> T = 10 each (" E", "iffel", " Tower" against " Col", "osse", "um"), right 7042
    Raises PairError (see its reasons).
    """
    clean_ids, corrupted_ids = tokenizer.encode(clean), tokenizer.encode(corrupted)
    right_ids, wrong_ids = tokenizer.encode(right), tokenizer.encode(wrong)
    shown = (tokenizer.tokens(clean_ids), tokenizer.tokens(corrupted_ids))
    if not (clean_ids and corrupted_ids and right_ids and wrong_ids):
        raise PairError("empty", *shown)
    if len(clean_ids) != len(corrupted_ids):
        raise PairError("lengths", *shown)
    if len(clean_ids) > limit:
        raise PairError("too_long", *shown)
    if right_ids[0] == wrong_ids[0]:
        raise PairError("same_answer", *shown)
    return Pair(clean_ids, corrupted_ids, *shown, right_ids[0], wrong_ids[0],
                tokenizer.tokens(right_ids), tokenizer.tokens(wrong_ids))


# --- The two plain runs ------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One plain run: every activation a patched run copies or resumes from (batch dropped)."""
    resid_pre: torch.Tensor       # (L + 1, T, D) stream entering each block; row L leaves the last
    resid_mid: torch.Tensor       # (L, T, D) stream after each block's attention add
    attn_out: torch.Tensor        # (L, T, D) what each attention adds
    ffn_out: torch.Tensor         # (L, T, D) what each feed-forward adds
    concat: torch.Tensor          # (L, T, H*d_head) the heads side by side, before w_o
    k: torch.Tensor               # (L, H_kv, T, d_head) keys after RoPE, as a KV cache holds them
    v: torch.Tensor               # (L, H_kv, T, d_head) values
    logits: torch.Tensor          # (V,) next-token logits at the last position


@torch.no_grad()
def plain_run(model, ids: Sequence[int]) -> Run:
    """Run the model once on ``ids`` and keep what patching reads (~5 MB for SmolLM2, 14 tokens).

    Example: plain_run(m, pair.clean_ids).resid_pre.shape == (31, 14, 576) for SmolLM2
    """
    n_layers = model.config.n_layers
    trace = KeepTrace(lambda name: name.split(".", 2)[-1] in KEPT)
    device = next(model.parameters()).device
    logits = model(torch.tensor([list(ids)], device=device), trace=trace)[0, -1]      # (V,)

    def stack(name: str) -> torch.Tensor:
        return torch.stack([trace[f"blocks.{i}.{name}"][0] for i in range(n_layers)])  # (L, ...)

    # The last position leaving the last block as a patched run computes it (``last_block``): a
    # patched run that repeats this run then gives its numbers to the last bit, not only to the
    # rounding of a sum taken in another order (a few 1e-7 of the forward's own).
    final = trace[f"blocks.{n_layers - 1}.resid_post"][0]                              # (T, D)
    last = last_block(model, trace[f"blocks.{n_layers - 1}.resid_pre"], KVCache(n_layers))[0]  # (1, D)
    final = torch.cat([final[:-1], last])                                              # (T, D)
    return Run(torch.cat([stack("resid_pre"), final[None]]), stack("resid_mid"),
               stack("attn.out"), stack("ffn_out"), stack("attn.concat"),
               stack("attn.k"), stack("attn.v"), logits)


@dataclass(frozen=True)
class Runs:
    """A pair, its two plain runs, and the direction of patching: ``base`` is the run patched,
    ``source`` the run the copied activations come from (denoising: corrupted <- clean).
    Per request, not for a shared cache (~10 MB for SmolLM2 and 14 tokens): the maps are."""
    pair: Pair
    clean: Run
    corrupted: Run
    clean_diff: float             # logit(right) - logit(wrong) of the clean run: recovered 1
    corrupted_diff: float         # ... of the corrupted run: recovered 0
    noising: bool = False

    @property
    def base(self) -> Run:
        return self.clean if self.noising else self.corrupted

    @property
    def source(self) -> Run:
        return self.corrupted if self.noising else self.clean

    def flipped(self) -> "Runs":
        """The same runs patched the other way (the noising switch); nothing is recomputed."""
        return Runs(self.pair, self.clean, self.corrupted, self.clean_diff, self.corrupted_diff,
                    not self.noising)


@torch.no_grad()
def run_pair(model, pair: Pair, noising: bool = False) -> Runs:
    """Both plain runs. Their logit differences are read off the final streams the way every
    patched run's is (``logit_diff``), so a patched run that reproduces a run gives 0 or 1 exactly."""
    clean, corrupted = plain_run(model, pair.clean_ids), plain_run(model, pair.corrupted_ids)
    diffs = [float(logit_diff(model, run.resid_pre[-1, -1], pair.right, pair.wrong)) for run in (clean, corrupted)]
    return Runs(pair, clean, corrupted, *diffs, noising)


def logit_diff(model, final: torch.Tensor, right: int, wrong: int) -> torch.Tensor:
    """The metric: final streams (..., D), as they leave the last block
    -> logit(right) - logit(wrong) (...). A logit is the normed stream dotted
    with the token's row of the unembedding U, so the difference is one dot
    product with U[right] - U[wrong]: two rows read, not V.

    Example: logit_diff(m, run.resid_pre[-1, -1], r, w)
             == run.logits[r] - run.logits[w] (to 1e-5)
    """
    u = model.output.weight                                  # (V, D)
    return model.final_norm(final) @ (u[right] - u[wrong])   # (...)


@dataclass(frozen=True)
class Plain:
    """What one plain run says at the last position: the page's "before" and "after"."""
    logit_diff: float             # logit(right) - logit(wrong)
    p_right: float                # probability of the right answer's first token
    p_wrong: float
    top_ids: list[int]            # (K,) likeliest next tokens, best first
    top_probs: list[float]        # (K,)


def plain(run: Run, pair: Pair, k: int = TOP_K) -> Plain:
    """Example (SmolLM2, IOI): plain(runs.clean, pair).logit_diff ≈ +6.12, corrupted ≈ -5.49"""
    probs = run.logits.float().softmax(-1)                                   # (V,)
    top = probs.topk(k)
    return Plain(float(run.logits[pair.right] - run.logits[pair.wrong]), float(probs[pair.right]),
                 float(probs[pair.wrong]), top.indices.tolist(), top.values.tolist())


# --- One patched run, and many at once -----------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """A patched run from where it first differs from the base run: block ``layer``, position
    ``start``. Its rows there hold the copied activation; every later position is the base's."""
    layer: int                    # block it enters; L = after the last block (the final stream)
    mid: bool                     # True: it enters block ``layer``'s feed-forward (after attention)
    rows: torch.Tensor            # (n, D) its stream at positions start .. start + n - 1 (n = 1: one copy)


@torch.no_grad()
def patch_entry(model, runs: Runs, site: str, layer: int, position: int,
                heads: torch.Tensor | None = None) -> Entry | None:
    """The copy: where one cell's patched run enters the model, with what.
    None when the copied activation equals the base's own (the patched run
    *is* the base run). ``heads`` (H,) bool, site "head" only.

    Example: patch_entry(m, runs, "resid_pre", 3, 9).rows[0]
             == runs.clean.resid_pre[3, 9]
    """
    base, src, p = runs.base, runs.source, position
    if site == "resid_pre":    # the stream into the block: the source's
        copied, own = src.resid_pre[layer, p], base.resid_pre[layer, p]
        entry = Entry(layer, False, copied[None])
    elif site == "attn_out":   # its attention adds the source's
        copied, own = src.attn_out[layer, p], base.attn_out[layer, p]
        stream = base.resid_pre[layer, p] + copied             # (D,)
        entry = Entry(layer, True, stream[None])               # to its FFN
    elif site == "ffn_out":    # its feed-forward adds the source's
        copied, own = src.ffn_out[layer, p], base.ffn_out[layer, p]
        stream = base.resid_mid[layer, p] + copied             # (D,)
        entry = Entry(layer + 1, False, stream[None])          # to the next
    elif site == "head":       # the chosen heads' outputs, before w_o
        cols = heads.repeat_interleave(base.concat.shape[-1] // len(heads))
        own = base.concat[layer, p]                            # (H*d_head,)
        copied = torch.where(cols, src.concat[layer, p], own)  # (H*d_head,)
        added = model.blocks[layer].attn.w_o(copied)           # (D,)
        entry = Entry(layer, True, (base.resid_pre[layer, p] + added)[None])
    else:
        raise ValueError(f"unknown site {site!r}")
    return None if torch.equal(copied, own) else entry


def past_feed_forward(model, entries: Sequence[Entry]) -> list[Entry]:
    """Entries into a feed-forward (``mid``) carried past it -> entries into the next block, in the
    same order; the others as they are. The feed-forward works position by position and the positions
    after an entry's rows are the base's, so it runs on the entries' own rows only: once a layer,
    on the rows of every entry into it, whatever their positions.

    Example: past_feed_forward(m, [Entry(3, True, row)]) -> [Entry(4, False, row + FFN(norm(row)))]
    """
    out = list(entries)
    for layer in sorted({entry.layer for entry in entries if entry.mid}):
        picked = [e for e, entry in enumerate(entries) if entry.mid and entry.layer == layer]
        rows = torch.cat([entries[e].rows for e in picked])                      # (R, D)
        done = model.blocks[layer].feed_forward(rows[None])[0]                   # (R, D)
        for e, part in zip(picked, done.split([len(entries[e].rows) for e in picked]), strict=True):
            out[e] = Entry(layer + 1, False, part)
    return out


def streams(base: Run, start: int, layer: int, entries: Sequence[Entry]) -> torch.Tensor:
    """Entries into block ``layer`` -> their whole streams there (E, N, D), positions start .. T - 1:
    each entry's rows, then the base's stream."""
    n = entries[0].rows.shape[0] if entries else 0
    after = base.resid_pre[layer, start + n:].expand(len(entries), -1, -1)      # (E, N - n, D)
    if not entries:
        return after
    return torch.cat([torch.stack([entry.rows for entry in entries]), after], 1)  # (E, N, D)


def prefix_cache(base: Run, layer: int, start: int, batch: int) -> KVCache:
    """Block ``layer``'s keys and values of positions before ``start`` in the base run, one copy
    per patched run: what those positions would compute again, unchanged by a later patch."""
    cache = KVCache(base.k.shape[0])
    if start > 0:
        kv = cache.layers[layer]
        kv.k = base.k[layer, :, :start].expand(batch, -1, -1, -1)            # (E, H_kv, start, d_head)
        kv.v = base.v[layer, :, :start].expand(batch, -1, -1, -1)            # (E, H_kv, start, d_head)
    return cache


def keys_values(block, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The keys (turned by RoPE) and values a block reads from its stream x (E, N, D) at
    ``positions`` (N,): the block's own norm and projections, as its attention makes them.

    Example: keys_values(m.blocks[j], run.resid_pre[j][None], arange(T))[0][0] ≈ run.k[j]
    """
    k, v = block.attn.keys_values(block.attn_norm(x))                       # (E, H_kv, N, d_head) each
    return apply_rope(k, positions, block.rope_base), v


def last_block(model, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """The last block on streams x (E, N, D) that continue after what ``cache`` holds -> the last
    position's stream leaving it (E, 1, D). The metric reads the last position only: the others give
    the keys and values it attends to (6 % of a block's multiplications), not a whole block each."""
    j, n = len(model.blocks) - 1, x.shape[1]
    past = cache.layers[j].length
    if n > 1:
        cache.layers[j].append(*keys_values(model.blocks[j], x[:, :-1],
                                            torch.arange(past, past + n - 1, device=x.device)))
    return model.run_blocks(x[:, -1:], j, j + 1, cache=cache)               # (E, 1, D)


@torch.no_grad()
def resume(model, base: Run, start: int,
           entries: Sequence[Entry]) -> torch.Tensor:
    """The hook point: patched runs that differ from ``base`` from position
    ``start`` on, run on through the model's own blocks -> the final stream
    of each at the last position (E, D), in the order given. Every entry
    has as many rows (one, for a cell).

    Block j runs once, on every run entered at j or before: a batch that
    grows from the first layer patched to the last. Positions before
    ``start`` are the base's keys and values (``prefix_cache``).

    Example: resume(m, run, 0, [Entry(0, False, run.resid_pre[0])])
             == run.resid_pre[-1, -1][None]
    """
    entries = past_feed_forward(model, entries)   # all enter a whole block
    n_layers, order = len(model.blocks), []
    x = streams(base, start, 0, [])               # (0, N, D): no run yet
    for j in range(n_layers):
        joining = [e for e, entry in enumerate(entries) if entry.layer == j]
        joined = streams(base, start, j, [entries[e] for e in joining])
        x, order = torch.cat([x, joined]), order + joining   # (E_j, N, D)
        if len(x):
            cache = prefix_cache(base, j, start, len(x))
            if j < n_layers - 1:                              # (E_j, N, D)
                x = model.run_blocks(x, j, j + 1, cache=cache)
            else:                                             # (E_j, 1, D)
                x = last_block(model, x, cache)
    # Runs patched after the last block (its feed-forward's output).
    after = [e for e, entry in enumerate(entries) if entry.layer == n_layers]
    last = streams(base, start, n_layers, [entries[e] for e in after])
    final = torch.cat([x[:, -1], last[:, -1]])                # (E, D)
    ran = torch.tensor(order + after, device=final.device)   # entry of each row
    return final[ran.argsort()]


# --- The sweeps ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sweep:
    """Every cell of one map: the recovered fraction and the logit difference it comes from."""
    site: str
    noising: bool
    recovered: torch.Tensor       # (L, T) or (L, H): 0 = the corrupted run's logit difference, 1 = the clean
    diffs: torch.Tensor           # same shape: logit(right) - logit(wrong) of each patched run
    run: torch.Tensor             # same shape, bool: the cell was computed (False: a copy equal to the base)


def recovered(diffs: torch.Tensor, runs: Runs) -> torch.Tensor:
    """Logit differences -> fractions, 0 at the corrupted run and 1 at the
    clean one, in both directions (noising starts at 1). Not finite when the
    two runs give the same difference: nothing can be recovered then.

    Example: clean_diff = 6, corrupted_diff = -5:
             recovered(tensor([0.5]), runs) -> [0.5]
    """
    return (diffs - runs.corrupted_diff) / (runs.clean_diff - runs.corrupted_diff)


Cell = tuple                      # one patched run: (site, layer, position), or ("head", layer, head)


@torch.no_grad()
def patched_diffs(model, runs: Runs, todo: Sequence[tuple[int, Cell, Entry | None]],
                  progress: Callable[[float], None] | None = None) -> dict[Cell, float]:
    """``todo``: (position, cell, its entry) -> the logit difference of every cell that needs a
    run (an entry of None is the base run itself, left out). Entries into a feed-forward go past it
    first, every position at once; then one ``resume`` a position, the longest first."""
    found = [(p, cell, entry) for p, cell, entry in todo if entry is not None]
    entries = past_feed_forward(model, [entry for _, _, entry in found])
    T = runs.base.resid_pre.shape[1]
    positions = sorted({p for p, _, _ in found})
    work = {p: (T - p) * sum(q == p for q, _, _ in found) for p in positions}   # rows a block, roughly
    out: dict[Cell, float] = {}
    done = 0
    for p in positions:
        picked = [i for i, (q, _, _) in enumerate(found) if q == p]
        final = resume(model, runs.base, p, [entries[i] for i in picked])              # (E, D)
        diffs = logit_diff(model, final, runs.pair.right, runs.pair.wrong)            # (E,)
        out.update(zip([found[i][1] for i in picked], diffs.tolist(), strict=True))
        done += work[p]
        if progress is not None:
            progress(done / sum(work.values()))
    return out


def as_sweep(site: str, runs: Runs, shape: tuple[int, int], ran: dict[tuple[int, int], float]) -> Sweep:
    """A map from the cells that ran; every other cell is the base run's logit difference."""
    diffs = torch.full(shape, runs.clean_diff if runs.noising else runs.corrupted_diff)   # (L, T) or (L, H)
    done = torch.zeros(shape, dtype=torch.bool)
    for cell, diff in ran.items():
        diffs[cell], done[cell] = diff, True
    return Sweep(site, runs.noising, recovered(diffs, runs), diffs, done)


def sweeps(model, runs: Runs, sites: Sequence[str] = SITES,
           progress: Callable[[float], None] | None = None) -> dict[str, Sweep]:
    """Patch each site at every block × every position, one cell at a time -> {site: (L, T) map};
    "head" among the sites adds the (L, H) map of single heads at the last position. The sites go
    together, one batch a position (~20 % less time than one site after another).

    Example (SmolLM2, IOI, denoising): sweeps(m, runs)["resid_pre"].recovered[:20, 9] ≈ 1 (the
    second name, early to middle blocks), [25:, 13] > 0.9 (the last position, late blocks)
    """
    n_layers, T = runs.base.resid_mid.shape[:2]
    n_heads = model.config.n_heads
    one = torch.eye(n_heads, dtype=torch.bool)                               # (H, H) one head each
    todo = [(p, (site, b, p), patch_entry(model, runs, site, b, p))
            for p in range(T) for site in sites if site != "head" for b in range(n_layers)]
    if "head" in sites:
        todo += [(T - 1, ("head", b, h), patch_entry(model, runs, "head", b, T - 1, one[h]))
                 for b in range(n_layers) for h in range(n_heads)]
    ran = patched_diffs(model, runs, todo, progress)
    return {site: as_sweep(site, runs, (n_layers, n_heads if site == "head" else T),
                           {(a, b): d for (s, a, b), d in ran.items() if s == site})
            for site in sites}


def sweep(model, runs: Runs, site: str = "resid_pre",
          progress: Callable[[float], None] | None = None) -> Sweep:
    """One site's map: ``sweeps`` of that site alone.

    Example (SmolLM2): sweep(m, runs, "head").recovered.shape == (30, 9): which heads, at the
    last position where the answer is read, write it
    """
    return sweeps(model, runs, (site,), progress)[site]


@dataclass(frozen=True)
class Patched:
    """One cell's patched run: what a click on the map shows."""
    logit_diff: float
    recovered: float
    top_ids: list[int]            # (K,) likeliest next tokens of the patched run, best first
    top_probs: list[float]        # (K,)


@torch.no_grad()
def patched_run(model, runs: Runs, site: str, layer: int, position: int, head: int | None = None,
                k: int = TOP_K) -> Patched:
    """One patch, run to the end with all V logits: the same ``resume`` as the sweeps, batch one.

    Example (SmolLM2, IOI): patched_run(m, runs, "resid_pre", 3, 9).top_ids[0] == 5099 (" Mary")
    """
    p = position % runs.base.resid_mid.shape[1]
    heads = None
    if site == "head":
        heads = torch.arange(model.config.n_heads) == head                   # (H,)
    entry = patch_entry(model, runs, site, layer, p, heads)
    if entry is None:
        final = runs.base.resid_pre[-1, -1][None]                            # (1, D) the base run itself
    else:
        final = resume(model, runs.base, p, [entry])                         # (1, D)
    diff = logit_diff(model, final[0], runs.pair.right, runs.pair.wrong)
    probs = lens_logits(model, final[0]).float().softmax(-1)                 # (V,)
    top = probs.topk(k)
    return Patched(float(diff), float(recovered(diff, runs)), top.indices.tolist(), top.values.tolist())


# --- Built-in pairs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class BuiltIn:
    clean: str
    corrupted: str
    right: str                    # the clean prompt's answer
    wrong: str                    # the corrupted prompt's answer


PAIRS: dict[str, BuiltIn] = {
    # Indirect object identification (Wang et al. 2022): the name that is *not* repeated.
    "ioi": BuiltIn("When Mary and John went to the store, John gave a drink to",
                   "When Mary and John went to the store, Mary gave a drink to", " Mary", " John"),
    # A fact (Meng et al. 2022): the subject's tokens carry it; 10 tokens each
    # (" E", "iffel", " Tower" against " Col", "osse", "um").
    "fact": BuiltIn("The Eiffel Tower is located in the city of",
                    "The Colosseum is located in the city of", " Paris", " Rome"),
    # Subject-verb agreement (Linzen et al. 2016): the number of "keys" must reach the verb past
    # "on the table", a singular noun in between.
    "agreement": BuiltIn("The keys on the table", "The key on the table", " are", " is"),
}
