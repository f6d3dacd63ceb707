"""The frame's text helpers: user and generated text never breaks the markdown around it,
URL values no widget can hold are recognised, English plurals agree with their number."""
import i18n
from tests.apptest_util import open_lesson
from ui.d1_real import WRITTEN
from ui.frame import _non_finite, plain


def test_plain_escapes_markup_and_draws_line_breaks():
    assert plain("<b>$x$</b>") == "\\<b\\>\\$x\\$\\</b\\>"
    assert plain("床前明月光，\n疑是地上霜。\r\n") == "床前明月光，↵疑是地上霜。↵"
    assert "\n" not in plain("a\u2028b\u2029c\n") and plain("a\tb") == "a b"


def test_non_finite_url_numbers():
    assert _non_finite("1e309") and _non_finite("-inf") and _non_finite("nan") and _non_finite("9" * 400)
    assert not any(_non_finite(v) for v in ("12", "-1e30", "2.5", "君", "", "inf-like text"))


def test_plurals():
    assert i18n.t("en", "b2.grid_title", h=1, d_head=32).startswith("The same text through 1 head of")
    assert "4 heads of" in i18n.t("en", "b2.grid_title", h=4, d_head=8)
    assert "1 new token after a prompt of 1 token." in i18n.t("en", "d1.count", n=1, prompt=1)
    assert "2 new tokens after a prompt of 3 tokens." in i18n.t("en", "d1.count", n=2, prompt=3)
    assert "1 key/value head," in i18n.t("en", "c2.gqa_caption", head=0, kv=0, h=4, h_kv=1, n_rep=4)
    assert i18n.t("en", "d1.count", n=1, prompt=1) != i18n.t("zh", "d1.count", n=1, prompt=1)


def test_generated_line_breaks_keep_the_markdown_whole():
    """D1 run to its end writes several lines of a poem: the heading shows them with ↵, keeps
    its mark (ui.d1_real.marked) closed, and a finished poem ends with `<eos>`, not a symbol fonts lack."""
    at = open_lesson("d1_generation.py", "en", {"d1.prompt": "床前明月光，\n疑是", "d1.steps": "48"})
    heading = next(m.value for m in at.markdown if m.value.startswith("### "))
    assert "\n" not in heading and "↵" in heading and heading.count(WRITTEN) == 1
    assert heading.count("<span") == heading.count("</span>") == 2          # the mark and its hidden words, closed
    assert "⏹" not in heading
    ids = next(c.value for c in at.caption if "token → id" in c.value)
    assert "床 → " in ids and "`<bos>`" in ids


def test_code_panel_sources_read_at_once_from_many_sessions():
    """A class opening C1 together: each session's first run reads the source of a class for its
    code panel (inspect parses the module with ast, which CPython 3.11 does not make safe for
    two threads at once). ui.frame._source reads one at a time, and each source once."""
    import inspect
    import threading

    from core.models import encdec
    from ui.frame import _source

    classes = [c for c in vars(encdec).values() if inspect.isclass(c) and c.__module__ == encdec.__name__]
    assert classes
    _source.cache_clear()
    start, errors, texts = threading.Barrier(12), [], []

    def session():
        start.wait()
        try:
            texts.append([_source(c) for c in classes])
        except Exception as e:   # noqa: BLE001 - any failure is the finding
            errors.append(repr(e))

    threads = [threading.Thread(target=session) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(t == texts[0] for t in texts) and all("class " in s for s in texts[0])
