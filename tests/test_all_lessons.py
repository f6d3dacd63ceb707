"""Every lesson that exists, in both languages: it opens inside the frame without an
exception or a missing string, every chart stays within 300 KB, and nonsense in the URL
falls back to defaults."""
import math

import numpy as np
import pytest

from tests.apptest_util import assert_ok, chart_bytes, figure_by_key, live_of, open_lesson, trace_array
from ui.course import existing_lessons

LESSONS = existing_lessons()
MAX_CHART_BYTES = 300 * 1024


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_lesson_opens_small_and_translated(lesson, lang):
    at = open_lesson(lesson.file, lang)
    assert at.title and at.title[0].value, "every lesson has a title"
    sizes = chart_bytes(at)
    assert all(size <= MAX_CHART_BYTES for size in sizes), sizes
    if lang == "zh":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in at.title[0].value), "the Chinese page has a Chinese title"


# A link with nonsense in it: each lesson gets the same junk for the keys most lessons have, and
# its own junk (out of range, the wrong type, not an option), in one run; the lesson's check reads
# back the defaults its controls fell to. A second case where one key needs a second value.
def _a1(at):
    from tests.test_lesson_a1 import _table
    assert _table(at, "a1.merge_table").shape[0] == 40                  # the default 40 merges


def _a2(at):
    assert trace_array(figure_by_key(at, "a2.matrix"), 0, "z").shape[0] == 11


def _a3(at):
    from tests.test_lesson_a3 import _equivariance
    assert trace_array(figure_by_key(at, "a3.pe"), 0, "z").shape[0] == 64
    assert math.isfinite(float(np.abs(_equivariance(at)[1][2]).max()))


def _b1(at):
    from tests.test_lesson_b1 import _weights
    assert _weights(at).shape == (11, 11)


def _b2(at):
    from tests.test_lesson_b2 import _check
    _check(at, 11, 4, 32)


def _b3(at):
    from tests.test_lesson_b3 import _check_single
    _check_single(at, 11, causal=True)


def _b4(at):
    from tests.test_lesson_b4 import _check
    _check(at, 10, 7, 2)


def _b5(at):
    from tests.test_lesson_b5 import DEFAULTS, _check_patterns, _check_reach
    _check_patterns(at, **DEFAULTS)
    _check_reach(at, 64, 63, 6)


def _c1(at):
    from tests.test_lesson_c1 import _check, reference_reading
    _check(at, reference_reading(), "decoder", 0, "cross_attn")


def _c2(at):
    from tests.test_lesson_c2 import _tensor
    assert _tensor(at).shape == (11, 128)
    assert at.metric[0].value == "6,738,415,616"                        # LLaMA-2-7B, the default config


def _c3(at):
    assert trace_array(figure_by_key(at, "c3.matrix"), 0, "z").shape[0] >= 4


def _d1(at):
    assert at.slider(key="d1.steps").value == 0
    assert live_of(at, "d1.bars")["index"] == 0                         # not a number: the default, T = 0


def _d2(at):
    assert trace_array(figure_by_key(at, "d2.memory"), 0, "y")[-1] == pytest.approx(2.0)  # LLaMA-2-7B, fp16, 4,096


def _d3(at):
    from tests.test_lesson_d3 import _x
    assert _x(figure_by_key(at, "d3.roofline"), 2) == pytest.approx(1.0, rel=1e-6)   # every default back in place


def _d4(at):
    from tests.test_lesson_d4 import _map
    qx, kx, _ = _map(at)
    assert len(qx) == 64 and len(kx) == 8


def _e1(at):
    from tests.test_lesson_e1 import N_DEFAULT, check
    assert check(at, N_DEFAULT)["capacity"] == 7
    assert at.selectbox(key="e1.mode").value == "topk"


def _e2(at):
    from core.models.lora import TARGETS
    from tests.test_lesson_e2 import _counts, _expected
    trainable, _, _ = _counts(at)
    assert np.array_equal(trainable, _expected(8, tuple(TARGETS)))


def _f1(at):
    from tests.test_lesson_f1 import _grids
    _, zs = _grids(at)
    assert all(z.shape == (9, 30) for z in zs)
    assert at.slider(key="f1.length").value == 20 and at.slider(key="f1.k").value == 5


def _f2(at):
    from tests.test_lesson_f2 import _grid
    assert _grid(at)[0].shape == (31, 5)                                # the default model and text
    assert at.selectbox(key="f2.target").value == "logit"


def _f2_out_of_range(at):                                               # out of range: dropped
    assert at.slider(key="f2.pos").value == 4 and at.selectbox(key="f2.target").value == "logit"
    assert at.slider(key="f2.row").value == 15


def _f3(at):
    assert 0 <= at.slider(key="f3.layer").value <= 3 and 0 <= at.slider(key="f3.head").value <= 3
    assert 4 <= at.slider(key="f3.new").value <= 48


def _f4(at):
    assert at.segmented_control(key="f4.pair").value == "ioi" and at.segmented_control(key="f4.dir").value == "denoise"
    assert at.slider(key="f4.layer").value == 15 and at.slider(key="f4.pos").value == 9   # out of range: dropped


B_OPEN = {"b2": {"b2.ex_open": "true"}, "b3": {"b3.ex_open": "true"}}   # the explorer's controls drawn too
URL_JUNK = {
    "A1": [({"a1.merges": "abc", "a1.scheme": "<b>", "a1.corpus": "nope", "a1.text": "%%%"}, _a1),
           ({"a1.merges": "99999"}, _a1)],
    "A2": [({"a2.k": "-5", "a2.top": "<b>", "a2.table": "nope", "a2.seed": "abc", "a2.char": "%%"}, _a2)],
    "A3": [({"a3.positions": "9999", "a3.d_model": "7", "a3.dims": "<b>", "a3.p": "abc", "a3.add_pe": "maybe",
             "a3.seed": "-1"}, _a3)],
    "B1": [({"b1.d_k": "9999", "b1.seed": "abc", "b1.width": "<b>"}, _b1)],
    "B2": [({**B_OPEN["b2"], "b2.heads": "3", "b2.d_model": "abc", "b2.seed": "1e99", "b2.ex_layer": "0",
             "b2.ex_grid": "yes please"}, _b2)],
    "B3": [({**B_OPEN["b3"], "b3.d_k": "0", "b3.seed": "-5", "b3.causal": "maybe", "b3.changed": "x",
             "b3.ex_layer": "99", "b3.ex_head": "<b>", "b3.ex_grid": "2"}, _b3)],
    "B4": [({"b4.heads": "16", "b4.seed": "seed", "b4.target": ""}, _b4)],
    "B5": [({"b5.n": "9999", "b5.w": "-3", "b5.dil": "x", "b5.glob": "<b>", "b5.rand": "🙂", "b5.seed": "1e99",
             "b5.pat": "nope", "b5.query": "500", "b5.layers": "0", "b5.largest": "3", "b5.mw": "7",
             "b5.flex": "maybe"}, _b5)],
    "C1": [({"c1.layer": "9", "c1.part": "decoder.nothing", "c1.step": "-3", "c1.date": ""}, _c1)],
    "C2": [({"c2.layer": "99", "c2.head": "-1", "c2.part": "<b>x</b>", "c2.shift": "abc", "c2.token": "1e9",
             "c2.config": "gpt-5", "c2.twidth": "7"}, _c2)],
    "C3": [({"c3.m": "-5", "c3.d": "7", "c3.base": "<b>x</b>", "c3.n": "9999", "c3.pair": "abc", "c3.seed": "1e99",
             "c3.key_n": "nan"}, _c3),
           ({"c3.m": "🙂" * 300, "c3.d": "", "c3.base": "10000.5", "lang": "xx"}, _c3)],
    "D1": [({"d1.steps": "-5", "d1.temperature": "hot", "d1.top_k": "999", "d1.seed": "x"}, _d1)],
    "D2": [({"d2.step": "99", "d2.layer": "-3", "d2.head": "x", "d2.model": "gpt-9", "d2.dtype": "fp8",
             "d2.batch": "3", "d2.context": "1e9"}, _d2)],
    "D3": [({"d3.batch": "many", "d3.context": "abc", "d3.model": "<b>x</b>", "d3.gpu": "tpu", "d3.dtype": "fp8"}, _d3)],
    "D4": [({"d4.kv_heads": "7", "d4.model": "gpt-5", "d4.context": "-1", "d4.layer": "99"}, _d4)],
    "E1": [({"e1.k": "99", "e1.layer": "-3", "e1.capacity": "<b>", "e1.mode": "nope", "e1.overflow": "",
             "e1.noise": "abc", "e1.seed": "1e99", "e1.n_used": "0"}, _e1)],
    "E2": [({"e2.r": "7", "e2.alpha": "abc", "e2.targets": "<b>", "e2.steps": "-1"}, _e2)],
    "F1": [({"f1.length": "abc", "f1.layer": "99", "f1.head": "-4", "f1.mode": "<b>", "f1.k": "1e9",
             "f1.seed": "nan", "f1.lm": "gpt-5"}, _f1)],
    "F2": [({"f2.pos": "1e9", "f2.target": "<b>x</b>", "f2.lm": "gpt-5", "f2.prompt": "",
             "f2.ctext": "💥' OR 1=1 --"}, _f2),
           ({"f2.pos": "-3", "f2.target": "99", "f2.row": "31"}, _f2_out_of_range)],
    "F4": [({"f4.pair": "<b>x</b>", "f4.dir": "sideways", "f4.layer": "99", "f4.pos": "-3",
             "f4.clean": "🙂" * 300}, _f4)],
    "F3": [({"f3.read": "abc", "f3.layer": "99", "f3.head": "-1", "f3.new": "1e99", "f3.seed": "nan"}, _f3)],
}
ON_SMOLLM2 = {"F1", "F2", "F4"}          # their defaults read SmolLM2: the checks need it installed


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_lesson_survives_malformed_url(lesson):
    """One run: junk in the language, the device and every key a lesson commonly has, plus the
    lesson's own junk; every control falls back to its default (the lesson's check). A text box
    takes any text: its junk is in test_every_text_box_says_what_it_did_with_bad_text."""
    junk = {"lang": "<script>", "device": "tpu"}
    for key in ("d_k", "seed", "steps", "layer", "head", "model", "n", "position"):
        junk[f"{lesson.ns}.{key}"] = "💥' OR 1=1 --"
    cases = URL_JUNK.get(lesson.code, [({}, None)])
    if lesson.code in ON_SMOLLM2:
        from tests.real_util import need_package
        need_package()
    for i, (params, check) in enumerate(cases):
        at = open_lesson(lesson.file, "zh", {**junk, **params} if i == 0 else params)
        assert at.title[0].value
        if check:
            check(at)


# Values a shared link can carry that no widget expects: non-finite and huge numbers, a
# fraction for an int, markup and emoji, an empty value, a list of many digits.
JUNK = ["1e309", "-inf", "nan", "-1e30", "2.5", "💥<b>x</b>", "", "9" * 400]
WIDGETS = ("slider", "select_slider", "number_input", "selectbox", "radio", "text_input", "text_area",
           "checkbox", "toggle", "segmented_control", "multiselect", "pills")


def _widget_keys(at, ns: str) -> list[str]:
    keys = []
    for kind in WIDGETS:
        for w in getattr(at, kind, []):
            key = getattr(w, "key", None)
            if key and key.startswith(f"{ns}."):
                keys.append(key)
    return sorted(set(keys))


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_every_control_survives_every_junk_value_in_the_url(lesson):
    """Each of the lesson's own widget keys gets each junk value once (rotated so that one
    run carries several): the lesson opens, with no exception, in both languages."""
    keys = _widget_keys(open_lesson(lesson.file, "en"), lesson.ns)
    assert keys, "the lesson has controls"
    for r in range(len(JUNK)):
        params = {key: JUNK[(i + r) % len(JUNK)] for i, key in enumerate(keys)}
        at = open_lesson(lesson.file, "zh" if r % 2 else "en", params)
        assert at.title[0].value


# The smallest and largest inputs a text box can get, text that looks like markup or code, emoji
# past the Basic Multilingual Plane and right-to-left or wide characters.
TEXTS = ["", "a", "ab", "君", "🙂" * 3, "x" * 5000, "<b>**[x](y)**</b>\n$x$ `c` |a|", "\n\n\t ", "   ",
         "🙂" * 300, "<script>alert(1)</script>", "黄河 river мир 🙂 ﷽", "💥' OR 1=1 --"]
LINKED = "将进酒" * 400                  # the first text comes in a link, over every box's limit
# Every text box a lesson draws when it opens (B2, B3 with the explorer open: B_OPEN): the most
# characters it keeps and the notice an empty box shows.
EMPTY = "common.empty_input"
TEXT_BOXES = {
    "A1": {"a1.text": (256, EMPTY)},
    "A2": {"a2.text": (48, EMPTY), "a2.char": (1, EMPTY)},
    "A3": {"a3.text": (16, EMPTY), "a3.line": (32, EMPTY)},
    "B1": {"b1.text": (48, EMPTY)},
    "B2": {"b2.text": (32, EMPTY), "b2.ex_text": (64, EMPTY)},
    "B3": {"b3.text": (24, EMPTY), "b3.ex_text": (64, EMPTY)},
    "B4": {"b4.date": (31, EMPTY), "b4.target": (80, EMPTY), "b4.source": (40, EMPTY)},
    "C1": {"c1.date": (31, EMPTY)},
    "C2": {"c2.text": (48, EMPTY)},
    "C3": {"c3.text": (64, EMPTY)},
    "D1": {"d1.prompt": (200, "d1.empty_prompt")},
    "D2": {"d2.prompt": (48, "d2.empty_prompt")},
    "D4": {"d4.prompt": (64, EMPTY)},
    "E1": {"e1.prompt": (64, EMPTY)},
    "E2": {"e2.prompt": (60, EMPTY)},
    "F1": {"f1.rtext": (1000, EMPTY)},
    "F2": {"f2.prompt": (400, EMPTY), "f2.ctext": (64, EMPTY)},
    "F3": {"f3.prompt": (48, "f3.empty_prompt")},
}


def _says_what_it_did(at, boxes: dict, text: str, lang: str) -> None:
    """Every box given ``text``: an empty one shows its notice, a cut one the limit it kept."""
    import i18n
    from core.text.clean import clean_text
    infos, warnings = [i.value for i in at.info], [w.value for w in at.warning]
    for key, (limit, empty_key) in boxes.items():
        cleaned = clean_text(text, limit)
        if cleaned.empty:
            assert i18n.t(lang, empty_key) in infos, (key, infos)
        elif cleaned.truncated:
            assert i18n.t(lang, "common.truncated", limit=limit, n=cleaned.original_len) in warnings, (key, warnings)


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_every_text_box_says_what_it_did_with_bad_text(lesson):
    """One session per lesson: a link with an over-long text in every box, then each of TEXTS
    typed into every box, the language switched every other time. The page never fails, every
    control drawn keeps a value inside its range, an empty box shows its notice and a cut one says
    how much it kept. What a lesson draws from such a text is in its own module's bad-text test."""
    from ui.frame import LANG_KEY
    if lesson.code in ON_SMOLLM2:
        from tests.real_util import need_package
        need_package()
    boxes = TEXT_BOXES.get(lesson.code, {})
    at = open_lesson(lesson.file, "en", {**B_OPEN.get(lesson.ns, {}), **{key: LINKED for key in boxes}})
    drawn = {w.key for kind in ("text_input", "text_area") for w in getattr(at, kind)
             if w.key and w.key.startswith(f"{lesson.ns}.")}
    assert drawn == set(boxes), "TEXT_BOXES lists every text box the lesson draws"
    if not boxes:
        pytest.skip("no text box")
    _says_what_it_did(at, boxes, LINKED, "en")
    for key, (limit, _) in boxes.items():          # a linked text is cut in the box and the address too
        assert len(at.session_state[key]) <= limit, (key, len(at.session_state[key]), limit)
        linked = at.query_params.get(key, "")                       # str, or list[str] if repeated
        assert all(len(v) <= limit for v in (linked if isinstance(linked, list) else [linked])), key
    for i, text in enumerate(TEXTS):
        lang = "zh" if i % 2 else "en"
        at.segmented_control(key=LANG_KEY).set_value(lang)
        for key in boxes:
            next(w for kind in ("text_input", "text_area") for w in getattr(at, kind) if w.key == key).set_value(text)
        at.run()
        assert_ok(at)
        assert at.title[0].value
        _says_what_it_did(at, boxes, text, lang)
        for kind in ("slider", "number_input"):     # every control drawn keeps a value inside its range
            for w in getattr(at, kind):
                lo, hi = getattr(w, "min", None), getattr(w, "max", None)
                if lo is not None and hi is not None and isinstance(w.value, (int, float)):
                    assert lo <= w.value <= hi, (w.key, lo, w.value, hi)


def _answers(lesson) -> list[tuple[str, int]]:
    import ast
    from pathlib import Path
    tree = ast.parse((Path(__file__).resolve().parent.parent / "lessons" / lesson.file).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "try_this":
            return [(e.elts[0].value, e.elts[1].value) for e in node.args[1].elts]
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "quiz":     # lesson.quiz([...])
            return [(e.elts[0].value, e.elts[1].value) for e in node.args[0].elts]
    return []


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.code for lesson in LESSONS])
def test_questions_have_their_answer_in_varying_places(lesson):
    """The right answer is not always the same option, and it exists in both languages."""
    import i18n
    answers = _answers(lesson)
    assert len(answers) >= 2
    assert len({a for _, a in answers}) > 1, f"{lesson.code}: every right answer is option {answers[0][1]}"
    for name, a in answers:
        for lang in ("en", "zh"):
            assert 0 <= a < len(i18n.items(lang, f"{lesson.ns}.{name}.options"))
