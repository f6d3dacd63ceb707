"""Every control whose range follows another control keeps a value inside its range, in both
languages, while the other control walks from its maximum to its minimum as key presses do.

Each lesson opens with the dependent control at its maximum through the address, as a shared
link would, and between runs the test sends what a browser sends (``as_browser``): the values
the page shows and the address it wrote. That is how B5 broke on the 1 December review: three
presses of the left arrow on N (64 -> 48 -> 32) and ``StreamlitValueAboveMaxError: The value 40
is greater than the max_value 31``, because a new slider (its bounds changed) took its value
from the address, not from the clamp.

A range that shrank and grows again gives the student's value back (``ui.frame.ranged_slider``:
the choice is remembered, the slider shows it clamped meanwhile), so every walk ends with the
other control back at its maximum and the dependent back at the value the link gave.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from tests.apptest_util import as_browser, assert_ok, open_lesson

POEM = "君不见黄河之水天上来奔流到海不复回君不见高堂明镜悲白发朝如青丝暮成雪人生得意须尽欢莫使金樽空对月"


def _texts(longest: int) -> list[str]:
    """Texts from ``longest`` characters down to one, one character at a time near both ends."""
    lengths = sorted({longest, longest - 1, longest - 2, *range(longest, 0, -8), 4, 3, 2, 1}, reverse=True)
    return [(POEM * 4)[:n] for n in lengths if n > 0]


@dataclass
class Pair:
    page: str
    dependent: str                 # the key of the control whose range follows
    governing: str                 # the key of the control it follows
    kind: str                      # how the governing control is set: slider, select_slider, text, selectbox
    walk: list                     # the governing control's values, maximum first
    returns: bool = True           # the dependent comes back to its value when the range grows again
    bound: object = None           # (governing value) -> the dependent's right maximum, where the lesson says
    params: dict = field(default_factory=dict)
    live: str | None = None        # a live control (ui/live.py): the key of the figure that carries it


@dataclass
class LiveControl:
    """A live control read from its chart, as the rest of this file reads a slider."""
    min: float
    max: float
    value: float
    type: str = "live"


# Found by grep over lessons/*.py (ranged_slider, st.slider / select_slider / number_input whose
# bounds or options come from another value). Constant-range sliders whose bounds come from a fixed
# model config (B1/B4/C1/C2/D2/D4 layer and head, E1's learned layer) have nothing to follow.
PAIRS = {
    "b5.query": Pair("b5_sparse.py", "b5.query", "b5.n", "slider", list(range(256, 15, -16))),
    "a3.dims": Pair("a3_positions.py", "a3.dims", "a3.d_model", "slider", list(range(128, 3, -6)) + [4]),
    "a3.p": Pair("a3_positions.py", "a3.p", "a3.positions", "slider", list(range(128, 3, -6)) + [4],
                 live="a3.offsets"),
    "c3.pair": Pair("c3_rope.py", "c3.pair", "c3.d", "select_slider", [128, 64, 32, 16, 8]),
    "b1.r": Pair("b1_attention.py", "b1.r", "b1.text", "text", _texts(48)),
    "b1.c": Pair("b1_attention.py", "b1.c", "b1.text", "text", _texts(48)),
    "b3.changed": Pair("b3_masks.py", "b3.changed", "b3.text", "text", _texts(24), live="b3.leak"),
    "c1.step": Pair("c1_encoder_decoder.py", "c1.step", "c1.date",
                    "text", ["Tuesday, 30 November 2026", "30 November 2026", "30 Nov 2026", "1/2/26", "1"]),
    # C2 #2: the gate's token follows the text (a 48-position slider on an 11-character text
    # showed token 10 at 47): the slider's maximum must be the text's last position.
    "c2.token": Pair("c2_llama_block.py", "c2.token", "c2.text", "text", _texts(48), bound=lambda text: len(text) - 1),
    "d4.kv_heads": Pair("d4_gqa.py", "d4.kv_heads", "d4.model", "selectbox", [], returns=False),
}

# Lessons whose control is still a raw slider with its own clamp: the clamp loses to the address
# there, and only a switch to ui.frame.ranged_slider mends it (the lesson files belong to the
# lesson engineers). Remove an entry when its lesson switches.
PENDING: dict[str, str] = {}


def _set(at, pair: Pair, value) -> None:
    if pair.kind == "text":
        widget = [w for kind in ("text_input", "text_area") for w in getattr(at, kind) if w.key == pair.governing]
        widget[0].set_value(value)
    else:
        getattr(at, pair.kind)(key=pair.governing).set_value(value)


def _dependent(at, key: str, live: str | None = None):
    if live is not None:
        from tests.apptest_util import live_of
        try:
            shown = live_of(at, live)
        except KeyError:
            return None                           # too short a text: no figure, no slider
        values = shown["values"]
        return LiveControl(min(values), max(values), values[shown["index"]])
    for kind in ("slider", "select_slider"):
        for w in getattr(at, kind):
            if w.key == key:
                return w
    return None                                   # one possible value: a caption, no slider


def _check(at, pair: Pair, governing, step: str):
    assert_ok(at)
    w = _dependent(at, pair.dependent, pair.live)
    if w is None:
        return None
    values = w.value if isinstance(w.value, (list, tuple)) else [w.value]
    if w.type == "select_slider":
        assert all(w.format_func(v) in w.options for v in values), (step, values, w.options)
    else:
        assert all(w.min <= v <= w.max for v in values), (step, w.min, values, w.max)
        if pair.bound is not None:
            if governing is not None:
                assert w.max == pair.bound(governing), (step, "maximum", w.max, "should be", pair.bound(governing))
    return w.value


def _open_at_maximum(pair: Pair, lang: str):
    """The lesson with the governing control at its maximum and the dependent at its own maximum,
    both through the address (a shared link)."""
    first = pair.walk[0]
    params = {pair.governing: str(first), **pair.params}
    at = open_lesson(pair.page, lang, params)
    w = _dependent(at, pair.dependent, pair.live)
    assert w is not None, f"{pair.dependent} is drawn at {pair.governing} = {first}"
    if w.type == "select_slider":
        top = w.options[-1]
    else:
        top = [str(w.min), str(w.max)] if isinstance(w.value, (list, tuple)) else str(w.max)
    at = open_lesson(pair.page, lang, {**params, pair.dependent: top})
    opened = _check(at, pair, first, "opened")
    if w.type != "select_slider":
        want = (w.min, w.max) if isinstance(w.value, (list, tuple)) else w.max
        assert opened == want, f"the link's value is used: {opened} != {want}"
    return at, opened


def _d4_walk() -> list[str]:
    """Every model, the one with the most query heads first."""
    from core.calc import configs
    return sorted(configs.names(), key=lambda name: -configs.get(name).n_heads)


def _open_at_default(pair: Pair, lang: str):
    """The lesson as its link in the course map opens it: every control at its default. The walk
    starts at the governing control's default (the review's B5 path: N 64 -> 48 -> 32)."""
    at = open_lesson(pair.page, lang, pair.params)
    if pair.kind == "text":
        now = [w for kind in ("text_input", "text_area") for w in getattr(at, kind) if w.key == pair.governing][0].value
        walk = [now[:n] for n in range(len(now), 0, -1)]
    elif pair.kind == "selectbox":
        now = at.selectbox(key=pair.governing).value
        walk = [now] + [v for v in pair.walk if v != now]
    else:
        now = getattr(at, pair.kind)(key=pair.governing).value
        walk = [now] + [v for v in pair.walk if v < now]
    assert walk[0] == now, (walk[:3], now)
    return at, _check(at, pair, now, "opened"), walk


# ANATOMY_CLAMP_ALL=1 runs the pending ones as plain tests (to see them fail).
_PENDING = {} if os.environ.get("ANATOMY_CLAMP_ALL") else PENDING


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("start", ["link", "default"])
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(reason=_PENDING[name]))
                                  if name in _PENDING else name for name in PAIRS])
def test_dependent_control_stays_in_range(name, start, lang):
    """From a shared link with the dependent at its maximum, the governing control walks from
    its maximum, and the student moves the dependent into the middle after the first step; from
    the default page, the governing control walks from its default. Then it goes back up."""
    pair = PAIRS[name]
    if name == "d4.kv_heads":
        pair.walk = _d4_walk()
    if start == "link":
        (at, chosen), walk = _open_at_maximum(pair, lang), pair.walk
    else:
        at, chosen, walk = _open_at_default(pair, lang)
    for i, value in enumerate(walk[1:], start=1):
        as_browser(at)
        _set(at, pair, value)
        at.run()
        _check(at, pair, value, f"step {i}: {pair.governing} = {str(value)[:12]!r}")
        if i == 1 and start == "link":
            # The student moves it inside the range: from here the range shrinks past a value
            # that was inside it.
            chosen = _move_to_middle(at, pair)
    if pair.returns:
        as_browser(at)
        _set(at, pair, walk[0])
        at.run()
        back = _check(at, pair, walk[0], "back where the walk began")
        assert back == chosen, f"the range grew back, the value did not: {back} != {chosen}"


def _move_to_middle(at, pair: Pair):
    w = _dependent(at, pair.dependent, pair.live)
    if w is None:
        return None
    as_browser(at)
    if w.type == "live":              # what the slider's release writes (ui/live.py)
        at.session_state[pair.dependent] = (w.min + w.max) // 2
    elif w.type == "select_slider":
        w.set_value(w.value)          # options follow the model: keep the value, walk on
    elif isinstance(w.value, (list, tuple)):
        w.set_value((w.min, (w.min + w.max) // 2))
    else:
        w.set_value((w.min + w.max) // 2)
    at.run()
    return _check(at, pair, None, "moved to the middle")
