"""Autoregressive generation, one token at a time, with or without the KV cache.

Dimension legend
    N   tokens fed to the model in one step: the whole prompt first, then 1 with a cache,
        or the whole sequence so far at every step without one
    S   tokens held in the KV cache
    V   vocabulary size

Each step turns the last position's logits into a distribution (temperature, top-k,
top-p), draws the next token from it with a generator owned by this generation (so a
seed replays exactly and no global random state is touched), and appends the token.
A token can be forced at a step ("what if it had written *this*?"): the same loop, the draw
made and then replaced, so the run before that step is the original run and the random
stream after it stays in step with the original's.
The same ``Generation`` drives the D1 probability bars, D1's branches and the D2 cache lesson.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch

from core.parts.attention import row_entropy
from core.parts.kv_cache import KVCache
from core.parts.trace import Trace
from core.text.tokenizer import CharTokenizer


@dataclass(frozen=True)
class Prompt:
    ids: list[int]        # what the model is fed: starts with BOS when the prompt was empty (or bos=True)
    dropped: int          # tokens cut from the front so the prompt fits the context
    unknown: int          # characters the vocabulary lacks (each became UNK)
    max_new_tokens: int   # the request, lowered when the context cannot hold it all


def prepare_prompt(tokenizer: CharTokenizer, prompt: str, max_new_tokens: int, max_seq_len: int,
                   bos: bool = False) -> Prompt:
    """Token ids that fit: prompt + new tokens must stay within max_seq_len, so the
    prompt keeps its last tokens (a notice for the page: ``dropped``).

    A typed prompt is fed without BOS by default: the course model was trained on windows cut
    at random places from the stream "BOS 《title》 author poem EOS BOS ...", so a window mostly
    starts inside a poem with no BOS, and BOS was always followed by a title. ``bos=True`` puts it
    in front anyway (what A1's "BOS + text + EOS" describes); an empty prompt is BOS alone.

    Example (max_seq_len 4): prompt "abcde", 2 new tokens -> ids of "de", dropped=3
    Example: prompt "" -> ids [BOS] (a poem starts here); prompt "ab", bos=True -> [BOS, a, b]
    """
    max_new = max(0, min(max_new_tokens, max_seq_len - 1))
    ids = tokenizer.encode(prompt, bos=bos) if prompt else [tokenizer.bos_id]
    unknown = sum(1 for ch in prompt if not tokenizer.is_known(ch))
    room = max_seq_len - max_new
    dropped = max(0, len(ids) - room)
    return Prompt(ids=ids[dropped:], dropped=dropped, unknown=unknown, max_new_tokens=max_new)


def prepare_ids(ids: Sequence[int], max_new_tokens: int, max_seq_len: int) -> Prompt:
    """``prepare_prompt`` for ids the caller already made: the last ones that fit.

    Example (max_seq_len 4): ids [5, 6, 7, 8, 9], 2 new tokens -> ids [8, 9], dropped=3
    """
    max_new = max(0, min(max_new_tokens, max_seq_len - 1))
    ids = list(ids)
    dropped = max(0, len(ids) - (max_seq_len - max_new))
    return Prompt(ids=ids[dropped:], dropped=dropped, unknown=0, max_new_tokens=max_new)


def sampling_probs(
    logits: torch.Tensor,
    temperature: float | Sequence[float] | torch.Tensor = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """The distribution the next token is drawn from: (V,) logits at one
    temperature -> (V,) probabilities; at T temperatures (a list or a (T,)
    tensor) -> (T, V), one row each. Leading axes of logits (..., V)
    broadcast against the temperatures' axes, so a single step and a live
    slider's every frame come from this one function.

    temperature 0 means greedy: all mass on the arg-max. Otherwise
    softmax(logits / T); top-k keeps the k likeliest tokens and renormalises
    them; top-p (nucleus, Holtzman et al. 2019) then keeps the fewest
    likeliest tokens whose renormalised mass reaches p, the order common
    libraries apply them in; what is kept is renormalised again.
    Example: logits 1.0, 0.9, ..., 0.3 with top_k=3, top_p=0.5 keep 2
    tokens (after top-k the top 3 hold 0.37, 0.33, 0.30; against the
    untruncated softmax all 3 would stay).

    Example: logits [2, 1, 0], T=1 -> [0.665, 0.245, 0.090];
             top_k=2 -> [0.731, 0.269, 0]; top_p=0.6 -> [1, 0, 0];
             T=0 -> [1, 0, 0]; T=[0, 1] -> [[1, 0, 0], [0.665, 0.245, 0.090]]
    """
    logits = logits.float()                                            # (..., V)
    t = torch.as_tensor(temperature, dtype=torch.float32, device=logits.device)[..., None]  # (..., 1)
    warm = t > 0                                                       # (..., 1)
    probs = torch.softmax(logits / torch.where(warm, t, 1.0), dim=-1)  # (..., V)
    n = logits.shape[-1]
    if top_k is not None and 0 < top_k < n:
        kth = torch.topk(probs, top_k, dim=-1).values[..., -1:]       # (..., 1)
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)              # top-p reads the kept mass
    if top_p is not None and 0 < top_p < 1:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)  # (..., V)
        before = sorted_p.cumsum(-1) - sorted_p                      # mass of the likelier tokens
        keep_sorted = before < top_p                                 # the first is always kept
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    probs = probs / probs.sum(dim=-1, keepdim=True)
    greedy = torch.zeros_like(logits)                                  # (..., V)
    greedy.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)          # T = 0: all mass on the arg-max
    return torch.where(warm, probs, greedy)                            # (..., V)


def at_temperature(model_probs: torch.Tensor, temperature: float | Sequence[float] | torch.Tensor,
                   top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """The distribution one step would draw from at another temperature (or at several: (T, V),
    as ``sampling_probs``), from its softmax (V,): log p = z - logsumexp(z), and the shift cancels
    in softmax(log p / T) = softmax(z / T).

    Example: model_probs softmax([2, 1, 0]) = [0.665, 0.245, 0.090], T = 2 -> softmax([1, 0.5, 0])
             = [0.506, 0.307, 0.186]; T = [1, 2] -> [[0.665, 0.245, 0.090], [0.506, 0.307, 0.186]]
    """
    return sampling_probs(torch.log(model_probs), temperature, top_k, top_p)


def temperature_sweep(model_probs: torch.Tensor, temperatures: Sequence[float], ids: Sequence[int],
                      top_k: int | None = None, top_p: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One step's draw at every temperature: (V,) -> the probabilities of ``ids`` (T, n) and the
    entropy in nats of each whole draw distribution (T,), from one ``at_temperature`` call.
    Example: a step whose model is sure gives entropy ~0 at T = 0.1 and its largest at T = 5."""
    probs = at_temperature(torch.as_tensor(model_probs), temperatures, top_k, top_p)   # (T, V)
    return probs[:, list(ids)], row_entropy(probs)                      # (T, n), (T,)


@dataclass(frozen=True)
class Candidate:
    id: int
    token: str
    model_prob: float    # softmax of the raw logits: what the model believes
    sample_prob: float   # after temperature/top-k/top-p: what the draw used


@dataclass(frozen=True)
class Step:
    index: int                 # 0 for the first new token
    fed: int                   # tokens the model processed in this step (prompt length, then 1 with a cache)
    model_probs: torch.Tensor  # (V,) softmax(logits)
    probs: torch.Tensor        # (V,) the distribution the token was drawn from
    top: list[Candidate]       # the likeliest tokens for display, best first
    chosen: int                # the token id appended
    chosen_token: str
    cache_length: int          # positions in the KV cache after this step (0 without a cache)
    finished: bool             # EOS drawn or max_new_tokens reached
    forced: bool = False       # the token was put in by the caller (``Generation(forced=...)``), not drawn

    @property
    def rank(self) -> int:
        """Where the chosen token stood in the model's own ranking (1 = likeliest)."""
        return int((self.model_probs > self.model_probs[self.chosen]).sum()) + 1

    @property
    def kept(self) -> int:
        """How many tokens survived temperature/top-k/top-p (could have been drawn)."""
        return int((self.probs > 0).sum())

    @property
    def best(self) -> int:
        """The token greedy decoding would have taken."""
        return int(self.model_probs.argmax())


class Generation:
    """A generation in progress. It owns its KV cache and random generator, so two
    students' generations with one shared model never interfere.

        gen = Generation(model, tok, "君不见，黄河之水", max_new_tokens=10)
        while not gen.done:
            step = gen.step()

    ``forced``: {step index: token id}, tokens written at those steps whatever the draw says
    (index 0 is the first new token). The draw is still made there, so the generator's stream
    is the original run's: with the same seed, a branch differs from its original run only
    by what the forced token changes in the context.
    """

    def __init__(self, model: torch.nn.Module, tokenizer: CharTokenizer, prompt: str,
                 max_new_tokens: int, temperature: float = 0.0, top_k: int | None = None,
                 top_p: float | None = None, seed: int = 0, use_cache: bool = True, show: int = 10,
                 bos: bool = False, *, ids: Sequence[int] | None = None, stop: Iterable[int] = (),
                 forced: Mapping[int, int] | None = None):
        self.model, self.tokenizer = model, tokenizer
        self.forced = {int(i): int(t) for i, t in (forced or {}).items()}
        if any(not 0 <= t < model.config.vocab_size for t in self.forced.values()):
            raise ValueError(f"a forced token is not in the vocabulary of {model.config.vocab_size}")
        if ids is None:
            self.prompt = prepare_prompt(tokenizer, prompt, max_new_tokens, model.config.max_seq_len, bos)
        else:   # token ids made by the caller (SmolLM2's chat template): fed as they are
            self.prompt = prepare_ids(ids, max_new_tokens, model.config.max_seq_len)
        self.stop = {tokenizer.eos_id, *stop}     # ids that end the generation (EOS, <|im_end|>)
        self.temperature, self.top_k, self.top_p, self.show = temperature, top_k, top_p, show
        self.device = next(model.parameters()).device
        self.rng = torch.Generator(device=self.device).manual_seed(seed)
        self.cache: KVCache | None = model.new_cache() if use_cache else None
        self.ids: list[int] = list(self.prompt.ids)
        self.new_ids: list[int] = []
        self.done = self.prompt.max_new_tokens == 0

    @property
    def text(self) -> str:
        """The continuation so far, without the prompt."""
        return self.tokenizer.decode(self.new_ids)

    @torch.inference_mode()
    def step(self, trace: Trace | None = None) -> Step:
        if self.done:
            raise RuntimeError("this generation is finished")
        if self.cache is None:
            feed = self.ids                               # recompute the whole prefix
        else:
            feed = self.ids[self.cache.length:]           # only what the cache lacks
        fed = len(feed)
        x = torch.tensor([feed], device=self.device)      # (1, N)
        logits = self.model(x, cache=self.cache, trace=trace)[0, -1]  # (V,)

        model_probs = torch.softmax(logits.float(), dim=-1)             # (V,)
        probs = sampling_probs(logits, self.temperature, self.top_k, self.top_p)  # (V,)
        if self.temperature <= 0:
            drawn = int(probs.argmax())
        else:
            drawn = int(torch.multinomial(probs, 1, generator=self.rng))
        index = len(self.new_ids)
        chosen = self.forced.get(index, drawn)           # a branch: the caller's token at this step

        shown = torch.topk(model_probs, min(self.show, model_probs.numel())).indices.tolist()
        toks = self.tokenizer.tokens(shown)
        top = [Candidate(i, t, float(model_probs[i]), float(probs[i])) for i, t in zip(shown, toks, strict=True)]

        self.ids.append(chosen)
        self.new_ids.append(chosen)
        self.done = chosen in self.stop or len(self.new_ids) >= self.prompt.max_new_tokens
        return Step(
            index=len(self.new_ids) - 1, fed=fed, model_probs=model_probs, probs=probs, top=top,
            chosen=chosen, chosen_token=self.tokenizer.tokens([chosen])[0],
            cache_length=0 if self.cache is None else self.cache.length, finished=self.done,
            forced=index in self.forced,
        )


def parting_step(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where two generations differ (a run and its branch part there), or None
    when one is the start of the other.

    Example: parting_step([5, 6, 7], [5, 9, 7]) -> 1; parting_step([5, 6], [5, 6, 2]) -> None
    """
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def generate(model: torch.nn.Module, tokenizer: CharTokenizer, prompt: str, max_new_tokens: int,
             temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
             seed: int = 0, use_cache: bool = True) -> str:
    """The continuation of ``prompt`` (without it); stops early at EOS."""
    gen = Generation(model, tokenizer, prompt, max_new_tokens, temperature, top_k, top_p, seed, use_cache)
    while not gen.done:
        gen.step()
    return gen.text
