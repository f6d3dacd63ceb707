"""Cached results of lesson F2 (the logit lens), shared by every session.

One forward pass and the lens at every layer per distinct (model, text, device), for every
student: ``st.cache_data`` keyed on those plain strings, the shared read-only model passed as
``_loaded`` (not hashed). What is kept is what the figures show: the top guesses of each cell
as text, probabilities and ranks, and the attribution terms (a few tens of KB a text).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from core.lab.logit_lens import TOKEN_LIMIT, logit_lens, settles_at
from core.lab.real_tokens import dropped_note, readable
from ui.classroom import presenting
from ui.frame import plain, text_box, tr
from ui.model import REAL, course_model, real_model
from ui.prompt import openings
from viz.common import label
from viz.lens import CUT, lens_grid

NS = "f2"
DEFAULT_PROMPT = "The capital of France is"
EXAMPLES = ["The capital of France is", "When Mary and John went to the store, John gave a drink to",
            "The Eiffel Tower is in the city of", "One, two, three, four,"]
REAL_CHARS = 400          # SmolLM2 reads tokens: the text is cut at TOKEN_LIMIT of them
COURSE_TEXT = "床前明月光，疑是地上霜"


def token_texts(tok, ids) -> list[str]:
    """Each id as text: SmolLM2's byte tokens with a byte that is only part of a character
    shown as \\xNN (an emoji is 2-4 tokens), the course model's characters as they are."""
    if hasattr(tok, "token_bytes"):
        return [readable(tok.token_bytes(int(i))) for i in ids]
    return tok.tokens(int(i) for i in ids)


@st.cache_data(max_entries=64, show_spinner=False)
def lens_data(text: str, model_name: str, dev: str, _loaded) -> dict:
    """The lens grid and the attribution of ``text`` on one model (``model_name`` is the key:
    "course" or "smollm2"; the model itself is ``_loaded``), as numpy and strings."""
    model, tok = _loaded
    r = logit_lens(model, tok, text, TOKEN_LIMIT, device=dev)
    g = r.grid
    rows, n, k = g.top_ids.shape
    flat = token_texts(tok, g.top_ids.reshape(-1).tolist())
    guesses = [[flat[(i * n + j) * k: (i * n + j + 1) * k] for j in range(n)] for i in range(rows)]
    tokens = token_texts(tok, r.ids)
    return {
        "tokens": tokens, "echo": sum(guesses[0][j][0] == t for j, t in enumerate(tokens)), "n_ids": r.n_ids, "n_layers": model.config.n_layers,
        "n_heads": model.config.n_heads, "vocab": model.config.vocab_size,
        "tied": model.config.tied_embeddings, "guesses": guesses,                  # (L+1) x N x K strings
        "top_probs": g.top_probs.cpu().numpy(), "answer": token_texts(tok, g.answer.tolist()),
        "answer_probs": g.answer_probs.cpu().numpy(), "answer_ranks": g.answer_ranks.cpu().numpy(),
        "candidates": [token_texts(tok, row) for row in r.candidates.tolist()],   # N x C strings
        "cand_logits": r.cand_logits.cpu().numpy(),                             # (N, C)
        "terms": r.terms.cpu().numpy(), "heads": r.heads.cpu().numpy(),         # (C, W, N), (C, L, H, N)
    }


def attribution(data: dict, pos: int, target: str) -> tuple[np.ndarray, np.ndarray, float]:
    """What the attribution figures show at position ``pos``: the terms (W,), the heads (L, H)
    and the model's own value they add up to. ``target`` "logit" explains the answer's logit;
    "c" (a number, as text) the difference between the answer's logit and candidate c's (the
    attribution is linear in the direction, so it is the difference of their terms)."""
    terms, heads, logits = data["terms"][:, :, pos], data["heads"][:, :, :, pos], data["cand_logits"][pos]
    if target == "logit":
        return terms[0], heads[0], float(logits[0])
    c = int(target)
    return terms[0] - terms[c], heads[0] - heads[c], float(logits[0] - logits[c])


def visible(token: str) -> str:
    """A token as plain text with its blanks visible (a widget's option, a caption's quote).

    Example: visible(" Paris") -> " Paris"; visible(" ") -> "␣"; visible("\n") -> "↵"
    """
    shown = token.replace("\n", "↵").replace("\t", "⇥")
    return shown.replace(" ", "␣") if not shown.strip() else shown


def fig_word(token: str) -> str:
    """A token inside a figure's text: blanks visible, markup literal for plotly, and a space
    inside it unbreakable (a long title is split at a space: 「 Paris」 was split after 「).

    Example: fig_word("<b>") -> "&lt;b&gt;"; fig_word(" Paris") -> "\u00a0Paris"
    """
    return label(visible(token)).replace(" ", "\u00a0")


def bar_labels(tokens: list[str]) -> list[str]:
    """Tokens as the categories of a bar chart: as in figures (fig_word), each one distinct
    (two tokens drawn alike get invisible zero-width marks, as viz.common.unique_labels does).

    Example: bar_labels([" ", "␣"]) -> ["␣", "␣\u200b"]
    """
    seen: dict[str, int] = {}
    out = []
    for t in tokens:
        word = fig_word(t)
        out.append(word + "\u200b" * seen.get(word, 0))
        seen[word] = seen.get(word, 0) + 1
    return out


def cell_hover(data: dict, row_names: list[str]) -> list[list[str]]:
    """Each cell's hover text: the row, the token read there, its top guesses with their
    probabilities (tokens made literal for plotly, spaces shown as ␣)."""
    def word(t: str) -> str:
        return label(t.replace(" ", "␣").replace("\n", "↵"))

    tokens = [word(t) for t in data["tokens"]]
    return [[f"{row_names[i]} · {tokens[j]}<br>" + "<br>".join(
        f"{k + 1}. {word(g)}  {p:.3f}" for k, (g, p) in enumerate(zip(guesses[:3], data["top_probs"][i, j, :3],
                                                                    strict=True)))
        for j, guesses in enumerate(row)] for i, row in enumerate(data["guesses"])]


def top_heads(heads, k: int) -> tuple[list[tuple[int, int, float]], list[tuple[int, int, float]]]:
    """The ``k`` heads of ``heads`` (L, H) with the largest and with the most negative values,
    as (layer, head, value), largest first / most negative first.

    Example: top_heads(np.array([[1., -2.], [3., 0.]]), 1) -> ([(1, 0, 3.0)], [(0, 1, -2.0)])
    """
    flat = np.asarray(heads).ravel()
    order = np.argsort(flat, kind="stable")
    n_heads = np.asarray(heads).shape[1]
    pick = lambda idx: [(int(i) // n_heads, int(i) % n_heads, float(flat[i])) for i in idx]   # noqa: E731
    return pick(order[::-1][:k]), pick(order[:k])


# --- the page's controls and figures (lessons/f2_logit_lens.py lays out the sections) -----------
def text_controls(real: bool, dev: str) -> str:
    """SmolLM2's prompt (with openings to try, outside presenter mode) or the course model's line of verse."""
    if real:
        if not presenting():   # presenter mode: the grid under the text box keeps the screen's height
            openings(NS, EXAMPLES, tr(f"{NS}.examples_label"))
        box = text_box(f"{NS}.prompt", DEFAULT_PROMPT, REAL_CHARS, tr(f"{NS}.prompt_label", limit=TOKEN_LIMIT))
        if (loaded := real_model(dev)) and (note := dropped_note(loaded[1], box.text)):   # bytes SmolLM2 lacks
            st.warning(tr("real.dropped", **note))
        return DEFAULT_PROMPT if box.empty else box.text
    box = text_box(f"{NS}.ctext", COURSE_TEXT, TOKEN_LIMIT, tr(f"{NS}.ctext_label"))
    return COURSE_TEXT if box.empty else box.text


def rows(n_layers: int) -> list[str]:
    """The lens's rows by name: the embedding, then the block each reads after."""
    return [tr(f"{NS}.row_embed")] + [str(i) for i in range(n_layers)]


def shown_rows(n_rows: int, most: int = 11) -> list[int]:
    """The lens's rows drawn on a slide (presenter mode): all of them when ``most`` fit, else the
    embedding and every k-th block counted down from the last, so that each row is tall enough
    for its 18 px labels. Example: shown_rows(31) -> [0, 3, 6, ..., 30] (11 rows)."""
    if n_rows <= most:
        return list(range(n_rows))
    step = -(-(n_rows - 1) // (most - 1))
    return [0] + list(range(n_rows - 1, 0, -step))[::-1]


def grid_figure(text: str, model_name: str, dev: str, keep: tuple[int, ...] | None, language: str):
    """The lens grid of ``text`` on one model (ui.frame.drawn builds it once per argument for
    every session; ``language`` puts the labels' language in its key); ``keep``: the rows drawn
    (all when None). The result is lens_data's, cached for the same text: read, not run again."""
    data = lens_data(text, model_name, dev, real_model(dev) if model_name == REAL else course_model(dev))
    names = rows(data["n_layers"])
    keep = list(range(len(names))) if keep is None else list(keep)
    hover = cell_hover(data, names)
    return lens_grid(data["top_probs"][keep, :, 0], [[g[0] for g in data["guesses"][r]] for r in keep],
                     data["tokens"], [names[r] for r in keep], [hover[r] for r in keep],
                     title=tr(f"{NS}.grid_fig", n=len(data["tokens"])), x_title=tr(f"{NS}.grid_x"),
                     y_title=tr(f"{NS}.grid_y"), bar_title=tr(f"{NS}.prob"))


def grid_caption(data: dict) -> str:
    """Under the grid: the last position's answer and what the embedding's row shows."""
    last = len(data["tokens"]) - 1
    row0 = tr(f"{NS}.row0_tied" if data["tied"] else f"{NS}.row0_own", echo=data["echo"], n=last + 1)
    return tr(f"{NS}.grid_caption", token=plain(visible(data["answer"][last])),
              p=float(data["answer_probs"][-1, last]), row0=row0, cut=CUT)


def answer_caption(data: dict, pos: int) -> str:
    """Under the answer's curve: the row where it settles (row r: after block r - 1), its ranks."""
    ranks = data["answer_ranks"][:, pos]
    settle = settles_at(ranks)
    where = tr(f"{NS}.settle_embed") if settle == 0 else tr(f"{NS}.settle_block", b=settle - 1)
    return tr(f"{NS}.answer_caption", token=plain(visible(data["answer"][pos])), where=where,
              rank=int(ranks[0]), mid=int(ranks[len(ranks) // 2]), p=float(data["answer_probs"][-1, pos]))


def target_labels(data: dict, pos: int) -> dict[str, str]:
    """The attribution's targets at ``pos``: the answer's logit, or its lead over candidate c."""
    answer, others = visible(data["answer"][pos]), data["candidates"][pos]
    labels = {"logit": tr(f"{NS}.target_logit", token=answer)}
    labels.update({str(c): tr(f"{NS}.target_diff", token=answer, other=visible(others[c]), rank=c + 1)
                   for c in range(1, len(others))})
    return labels


def heads_caption(heads) -> str:
    """Under the head map: the three heads that push the most, and the three that pull."""
    best, worst = top_heads(heads, 3)
    return tr(f"{NS}.heads_caption", h=heads.shape[1], l=heads.shape[0], count=heads.size,
              best=", ".join(f"L{i}·H{j} {v:+.2f}" for i, j, v in best),
              worst=", ".join(f"L{i}·H{j} {v:+.2f}" for i, j, v in worst))
