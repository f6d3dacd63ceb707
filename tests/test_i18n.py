"""Both catalogues have the same keys, every key the code asks for exists, no key is unused,
and the Chinese catalogue is written in Chinese."""
import re
import string
from pathlib import Path

import i18n
from ui.course import all_lessons

ROOT = Path(__file__).resolve().parent.parent
CODE = [ROOT / "app.py", *sorted((ROOT / "lessons").glob("*.py")), *sorted((ROOT / "ui").glob("*.py")),
        *sorted((ROOT / "viz").glob("*.py"))]
CALL = re.compile(r"""\btr(?:_items)?\(\s*f?["']([^"']+)["']""")
NS_ASSIGN = re.compile(r"""^NS\s*=\s*["'](\w+)["']""", re.M)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _sources() -> dict[Path, str]:
    out = {}
    for path in CODE:
        text = path.read_text(encoding="utf-8")
        m = NS_ASSIGN.search(text)
        if m:  # pages write tr(f"{NS}.title"); read them as the literal key
            text = text.replace("{NS}", m.group(1))
        out[path] = text
    return out


def _dynamic_used(key: str, sources: dict[Path, str]) -> bool:
    """Keys built at run time by the frame: lesson titles, course map, Try-this questions."""
    parts = key.split(".")
    if parts[0] == "course" or re.fullmatch(r"home\.part_[A-F]", key):
        return True
    pages = {lesson.ns: lesson for lesson in all_lessons() if lesson.exists}
    if parts[0] in pages:
        page = sources.get(ROOT / "lessons" / pages[parts[0]].file, "")
        if len(parts) == 2 and parts[1] in ("title", "intro"):
            return True
        if len(parts) == 3 and re.fullmatch(r"try\d+", parts[1]) and parts[2] in ("q", "options", "why"):
            return f'"{parts[1]}"' in page
        # A section (ui.lesson: lesson.section("name", ...), or ui.code.section_with_controls(NS,
        # "name", ...)) shows {ns}.name_title and {ns}.name_text
        section = re.fullmatch(r"(\w+)_(title|text)", parts[1]) if len(parts) == 2 else None
        if section:
            call = (rf'section_with_controls\(\s*(?:#[^\n]*\n\s*)?NS,\s*"{section.group(1)}"'
                    rf'|\.section\(\s*"{section.group(1)}"')
            return re.search(call, page) is not None
        # ui.model.layer_and_head(NS, ...) labels its sliders {ns}.layer_label and {ns}.head_label
        # ui.model.model_text(NS, ...) labels its box {ns}.text_label or {ns}.rtext_label
        if len(parts) == 2 and parts[1] in ("text_label", "rtext_label"):
            return any("model_text(NS" in text and NS_ASSIGN.search(text).group(1) == parts[0]
                       for text in sources.values() if NS_ASSIGN.search(text))
        if len(parts) == 2 and parts[1] in ("layer_label", "head_label"):
            return any("layer_and_head(NS" in text and NS_ASSIGN.search(text).group(1) == parts[0]
                       for text in sources.values() if NS_ASSIGN.search(text))
    return False


def test_same_keys_in_every_language():
    en, zh = set(i18n.catalogue("en")), set(i18n.catalogue("zh"))
    assert not en - zh, f"only in English: {sorted(en - zh)}"
    assert not zh - en, f"only in Chinese: {sorted(zh - en)}"


def test_every_key_the_code_asks_for_exists():
    keys = set(i18n.catalogue("en"))
    missing = []
    for path, text in _sources().items():
        for key in CALL.findall(text):
            if "{" not in key and key not in keys:
                missing.append(f"{path.name}: {key}")
    assert not missing, missing


def test_no_unused_key():
    sources = _sources()
    blob = "\n".join(sources.values())
    unused = []
    for key in i18n.catalogue("en"):
        parts = key.split(".")
        prefixes = [".".join(parts[:i]) for i in range(2, len(parts) + 1)]
        if any(f'"{p}"' in blob or f"'{p}'" in blob for p in prefixes):
            continue
        if not _dynamic_used(key, sources):
            unused.append(key)
    assert not unused, f"unused keys: {unused}"


def _fields(text: str) -> set[str]:
    """Format fields; texts with LaTeX braces and no fields are never formatted (t() formats
    only when fields are passed), so a parse error means "no fields"."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}
    except ValueError:
        return set()


def _translation_problem(key: str) -> str | None:
    """What is wrong with the Chinese of ``key`` next to its English, or None."""
    en, zh = i18n.catalogue("en")[key], i18n.catalogue("zh")[key]
    if type(en) is not type(zh):
        return "a list in one language, a string in the other"
    if isinstance(en, list):
        return None if len(en) == len(zh) else "option lists differ in length"
    if _fields(en) != _fields(zh):
        return f"fields differ: {sorted(_fields(en))} against {sorted(_fields(zh))}"
    if len(re.findall(r"[A-Za-z]{3,}", en)) >= 4 and not CJK.search(zh):
        return f"looks untranslated: {zh[:60]}"
    return None


def test_translation_is_chinese_and_has_the_same_fields():
    """One rule over every key: the same type, list length and format fields in both languages,
    and an English text of four words or more has Chinese in its translation. Every offender
    is listed."""
    keys = sorted(i18n.catalogue("en"))
    assert len(keys) > 1000                             # the rule saw the whole catalogue
    problems = {key: why for key in keys if (why := _translation_problem(key))}
    assert not problems, f"{len(problems)} keys: {problems}"


def test_the_translation_rule_finds_each_kind_of_problem(monkeypatch):
    """The rule above is not vacuous: each check fires on a made-up pair."""
    cats = {"en": {"a": "{n} heads", "b": ["x", "y"], "c": "Every word here is English text", "d": "x"},
            "zh": {"a": "{m} 个头", "b": ["甲"], "c": "Every word here is English text", "d": ["x"]}}
    monkeypatch.setattr(i18n, "catalogue", lambda lang: cats[lang])
    assert "fields differ" in _translation_problem("a")
    assert "length" in _translation_problem("b")
    assert "untranslated" in _translation_problem("c")
    assert "list" in _translation_problem("d")


def test_missing_key_shows_itself_instead_of_crashing():
    assert i18n.t("zh", "no.such.key") == "⟦no.such.key⟧"
    assert i18n.t("xx", "home.title") == i18n.t("en", "home.title")
