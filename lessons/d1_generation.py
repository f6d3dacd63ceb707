"""D1 · Autoregressive generation: predict, pick, append, repeat."""
import streamlit as st

from core.models.generate import Generation, at_temperature, sampling_probs
from ui.frame import bring_into_view, code_panel, device, figure, fragment, header, plain, text_box, tr, try_this
from ui.model import course_model
from ui.prompt import openings
from viz.generation import probability_bars, temperature_strip

NS = "d1"
DEFAULT_PROMPT = "君不见，黄河之水"
MAX_NEW = 48
SHOW = 20        # candidates drawn as bars, likeliest first
IDS_SHOWN = 16   # prompt tokens listed with their ids
STRIP = (0.5, 1.0, 2.0)   # the temperature strip: the same step at these temperatures
STRIP_SHOW = 10           # candidates in each of its panels

header(NS)
loaded = course_model(device())


@st.cache_data(max_entries=128, show_spinner=False)
def trajectory(prompt: str, temperature: float, top_k: int, top_p: float, seed: int, bos: bool, dev: str) -> dict:
    """The whole generation up to MAX_NEW tokens, as plain data. Sampling is seeded, so the
    first k steps of this run are exactly a run of k steps: Step only reveals one more.
    Each step also keeps its draw distribution at the STRIP temperatures (same top-k, top-p)."""
    model, tok = course_model(dev)
    cut_k, cut_p = top_k or None, top_p if top_p < 1 else None
    gen = Generation(model, tok, prompt, MAX_NEW, temperature, cut_k, cut_p, seed, use_cache=True, show=SHOW, bos=bos)
    steps = []
    while not gen.done:
        s = gen.step()
        strip_ids = [c.id for c in s.top[:STRIP_SHOW]]
        steps.append({
            "strip": {t: at_temperature(s.model_probs, t, cut_k, cut_p)[strip_ids].tolist() for t in STRIP},
            "tokens": [c.token for c in s.top], "ids": [c.id for c in s.top],
            "model": [c.model_prob for c in s.top], "sample": [c.sample_prob for c in s.top],
            "chosen": s.chosen, "chosen_token": s.chosen_token,
            "chosen_model": float(s.model_probs[s.chosen]), "chosen_sample": float(s.probs[s.chosen]),
            "rank": s.rank, "kept": s.kept, "best_token": tok.tokens([s.best])[0],
            "fed": s.fed, "cache": s.cache_length, "eos": s.chosen == tok.eos_id,
        })
    p = gen.prompt
    return {"steps": steps, "prompt_tokens": tok.tokens(p.ids), "prompt_ids": list(p.ids), "bos": tok.bos_id,
            "eos": tok.eos_id, "eos_token": tok.tokens([tok.eos_id])[0], "dropped": p.dropped, "unknown": p.unknown}


# Openings to try: one the model learned by heart, and lines it never read (Song poems, a modern
# word), where its next-character distribution is genuinely spread out and sampling shows.
EXAMPLES = ["君不见，黄河之水", "大江东去，", "春风又绿江南岸，", "人工智能"]


def prompt_controls():
    openings(NS, EXAMPLES, tr(f"{NS}.examples_label"), help=tr(f"{NS}.examples_help"))
    text = text_box(f"{NS}.prompt", DEFAULT_PROMPT, 200, tr(f"{NS}.prompt_label"), empty_key=f"{NS}.empty_prompt")
    bos = st.toggle(tr(f"{NS}.bos_label"), value=False, key=f"{NS}.bos", bind="query-params",
                    help=tr(f"{NS}.bos_help"))
    return ("" if text.empty else text.text), bos


def step_controls(n_max: int):
    key = f"{NS}.steps"

    def move(to):
        st.session_state[key] = max(0, min(n_max, to(st.session_state.get(key, 0))))
        st.session_state[f"{NS}.presses"] = st.session_state.get(f"{NS}.presses", 0) + 1

    c1, c2, c3, c4 = st.columns([4, 1, 1, 1])
    c2.button(tr(f"{NS}.step"), on_click=move, args=(lambda n: n + 1,), key=f"{NS}.step_btn", type="primary")
    c3.button(tr(f"{NS}.run"), on_click=move, args=(lambda n: n_max,), key=f"{NS}.run_btn")
    c4.button(tr(f"{NS}.reset"), on_click=move, args=(lambda n: 0,), key=f"{NS}.reset_btn")
    with c1:
        # No explicit default: the buttons set this key through session state (default = 0).
        return st.slider(tr(f"{NS}.steps_label"), 0, MAX_NEW, key=key, bind="query-params")


def sampling_controls():
    c1, c2, c3, c4 = st.columns(4)
    temperature = c1.slider(tr(f"{NS}.temperature"), 0.0, 5.0, 0.0, 0.05, key=f"{NS}.temperature",
                            bind="query-params", help=tr(f"{NS}.temperature_help"))
    top_k = c2.slider("top-k", 0, 50, 0, key=f"{NS}.top_k", bind="query-params", help=tr(f"{NS}.top_k_help"))
    top_p = c3.slider("top-p", 0.05, 1.0, 1.0, 0.05, key=f"{NS}.top_p", bind="query-params",
                      help=tr(f"{NS}.top_p_help"))
    seed = c4.number_input(tr("common.seed"), 0, 9999, 0, key=f"{NS}.seed", bind="query-params",
                           help=tr(f"{NS}.seed_help"))
    return temperature, top_k, top_p, int(seed)


@fragment
def lesson_body():
    """The whole lesson reruns alone (st.fragment) when a control moves: the questions below
    are neither sent nor drawn again."""
    if loaded is not None:
        prompt, bos = prompt_controls()
        step_row, sampling_row = st.container(), st.container()
        with sampling_row:
            temperature, top_k, top_p, seed = sampling_controls()
        run = trajectory(prompt, temperature, top_k, top_p, seed, bos, device())
        with step_row:  # drawn above the sampling controls, computed after them
            n_steps = min(step_controls(len(run["steps"])), len(run["steps"]))

        if run["unknown"]:
            st.warning(tr(f"{NS}.unknown_note", n=run["unknown"]))
        if run["dropped"]:
            st.warning(tr(f"{NS}.dropped_note", n=run["dropped"]))

        shown = run["steps"][:n_steps]
        new_text = "".join(s["chosen_token"] for s in shown if not s["eos"])
        prompt_text = "".join(t for t in run["prompt_tokens"] if t != "<bos>")
        written = f":red[**{plain(new_text)}**]" if new_text else ""
        ended = f" `{run['eos_token']}`" if shown and shown[-1]["eos"] else ""
        st.markdown(f"### {plain(prompt_text) or '∅'}{written}{ended}")
        st.caption(tr(f"{NS}.count", n=n_steps, prompt=len(run["prompt_tokens"])))
        pairs = [f"{plain(t)} → {i}" for t, i in zip(run["prompt_tokens"], run["prompt_ids"], strict=True)]
        st.caption(tr(f"{NS}.ids_line", pairs=" · ".join(pairs[:IDS_SHOWN]) + (" · …" if len(pairs) > IDS_SHOWN else ""),
                      bos=run["bos"], eos=run["eos"], max=MAX_NEW))

        # The bars take the page's whole width: at half of it, plotly named only every other candidate.
        n_prompt = len(run["prompt_ids"])
        if n_steps == 0:
            s, chosen, pos = run["steps"][0], None, n_prompt
            title = tr(f"{NS}.bars_next", pos=pos)
        else:
            s, pos = run["steps"][n_steps - 1], n_prompt + n_steps - 1      # positions count from 0
            title = tr(f"{NS}.bars_title", pos=pos)
            chosen = s["ids"].index(s["chosen"]) if s["chosen"] in s["ids"] else SHOW
        tokens, model_p, sample_p = list(s["tokens"]), list(s["model"]), list(s["sample"])
        if chosen == SHOW:  # drawn from outside the top list: add it at the end
            tokens.append(s["chosen_token"])
            model_p.append(s["chosen_model"])
            sample_p.append(s["chosen_sample"])
        names = (tr(f"{NS}.model_prob"), tr(f"{NS}.sample_prob"))
        log = st.toggle(tr(f"{NS}.log_label"), value=True, key=f"{NS}.log", bind="query-params",
                        help=tr(f"{NS}.log_help"))
        legend = (tr(f"{NS}.legend_chosen"), tr(f"{NS}.legend_kept"), tr(f"{NS}.legend_cut"), names[1])
        figure(probability_bars(tokens, model_p, sample_p, chosen, title=title, names=names,
                                hover_names=(tr(f"{NS}.token"), *names), legend=legend, log=log),
               key=f"{NS}.bars")
        presses = st.session_state.get(f"{NS}.presses", 0)
        if presses != st.session_state.get(f"{NS}.presses_shown", 0):   # a button moved the figure
            st.session_state[f"{NS}.presses_shown"] = presses
            bring_into_view(f"{NS}.bars", presses)
        if n_steps:
            if temperature <= 0:
                why = tr(f"{NS}.why_greedy", token=plain(s["chosen_token"]), p=s["chosen_model"])
            else:
                why = tr(f"{NS}.why_sampled", token=plain(s["chosen_token"]), p=s["chosen_sample"],
                         rank=s["rank"], kept=s["kept"], best=plain(s["best_token"]))
            st.markdown(why + " " + tr(f"{NS}.cache_note", fed=s["fed"], cache=s["cache"]))
        # The same step at three temperatures, side by side (also the page's width: 3 x 10 names).
        strip = {tr(f"{NS}.strip_panel", t=t): s["strip"][t] for t in STRIP}
        figure(temperature_strip(s["tokens"][:STRIP_SHOW], strip, title=tr(f"{NS}.strip_title", pos=pos),
                                 y_title=names[1], hover_names=(tr(f"{NS}.token"), names[1]), log=log),
               key=f"{NS}.strip")
        st.caption(tr(f"{NS}.strip_caption"))
        code_panel(sampling_probs, at_temperature, Generation.step)


lesson_body()

try_this(NS, [("try1", 0), ("try2", 1), ("try3", 2)])
