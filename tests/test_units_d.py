"""Issue 22, units: every memory size D2, D3 and D4 compute is printed in KiB/MiB/GiB/TiB (powers of 2).

Decimal GB/TB/MB appear only for a datasheet capacity, and then with its binary size beside it
("80 GB = 74.5 GiB") or inside a card's name ("A100 80GB SXM"). Bandwidths stay in GB/s and TB/s.
The test walks every text a page shows (prose, captions, notices, tables, formulas, questions and
their answers, figure titles, labels and hover texts) at a few settings, in both languages.
"""
import json
import re

import pytest

from tests.apptest_util import figures, open_lesson

# A decimal size: a number, then kB/KB/MB/GB/TB/PB, not a rate (GB/s) and not a binary unit (GiB).
DECIMAL = re.compile(r"(\d[\d,.]*)\s?([kKMGTP]B)(?!/s|i)")
# Allowed: the datasheet size set beside its binary size, or a card's own name.
BESIDE_BINARY = re.compile(r"\s?[kKMGTP]B\s*=\s*[\d,.]+\s*[KMGTP]iB")
CARD_NAME = re.compile(r"A100 \d+GB$")
QUOTED = re.compile(r"“[^”]*”")


def shown_text(at) -> list[str]:
    texts: list[str] = []
    for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "latex", "code"):
        texts += [el.value for el in getattr(at, kind)]
    for radio in at.radio:
        texts += [radio.label, *map(str, radio.options)]
    for expander in at.expander:
        texts.append(expander.label)
    for kind in ("selectbox", "select_slider", "slider", "segmented_control", "pills"):
        for el in at.get(kind):
            texts.append(getattr(el, "label", "") or "")
    for fig in figures(at):
        texts.append(json.dumps({"layout": fig["layout"],
                                 "data": [{k: v for k, v in t.items() if k in ("name", "text", "hovertemplate",
                                                                               "customdata", "x", "y")
                                           and not isinstance(v, dict)} for t in fig["data"]]},
                                ensure_ascii=False))
    return texts


def decimal_sizes(text: str) -> list[str]:
    """Decimal sizes that are neither beside their binary size nor a card's name.

    Example: decimal_sizes("cache 2.15 GB; 80 GB = 74.5 GiB; A100 80GB SXM; 2,039 GB/s") -> ["2.15 GB"]
    """
    text = QUOTED.sub("“”", text)     # a quoted claim (D2's common mistake) is not our number
    bad = []
    for m in DECIMAL.finditer(text):
        after = text[m.start(2) - (1 if text[m.start(2) - 1] == " " else 0):]
        if BESIDE_BINARY.match(after) or CARD_NAME.search(text[max(0, m.start() - 8):m.end()]):
            continue
        bad.append(m.group(0))
    return bad


def test_decimal_sizes_helper():
    assert decimal_sizes("cache 2.15 GB; 80 GB = 74.5 GiB; A100 80GB SXM; 2,039 GB/s; 2 GiB") == ["2.15 GB"]
    assert decimal_sizes("20.2 MB and 22 TB") == ["20.2 MB", "22 TB"]
    assert decimal_sizes("“The cache is 512 MB.” It is 2 GiB.") == []


SETTINGS = {
    "d2_kv_cache.py": [{}, {"d2.model": "llama-3-8b", "d2.batch": "256", "d2.context": "131072", "d2.dtype": "int4"},
                       {"d2.lm": "smollm2", "d2.model": "smollm2-135m"}],
    "d3_memory_wall.py": [{}, {"d3.model": "llama-2-70b", "d3.batch": "512", "d3.context": "131072"},
                          {"d3.gpu": "h200", "d3.model": "course", "d3.batch": "1", "d3.context": "128"},
                          {"d3.model": "smollm2-135m", "d3.dtype": "q4_1"}],
    "d4_gqa.py": [{}, {"d4.model": "course", "d4.context": "131072"}, {"d4.lm": "smollm2", "d4.model": "smollm2-135m"}],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", list(SETTINGS))
def test_memory_sizes_are_binary_and_datasheet_sizes_labelled(page, lang):
    for params in SETTINGS[page]:
        at = open_lesson(page, lang, params)    # each answer sits in its closed "reveal" box: shown text too
        bad = {s for text in shown_text(at) for s in decimal_sizes(text)}
        assert not bad, f"{page} {lang} {params}: decimal memory sizes {sorted(bad)}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_d3_measured_real_model_in_binary_units(lang):
    """After the press: the weights' size in MiB, the copy's rate in GB/s."""
    from tests.real_util import real
    real()
    at = open_lesson("d3_memory_wall.py", lang, {"d3.model": "smollm2-135m"})
    at.button(key="d3.real_btn").click().run(timeout=300)
    texts = shown_text(at)
    assert any("MiB" in t and "GB/s" in t for t in texts)
    bad = {s for text in texts for s in decimal_sizes(text)}
    assert not bad, sorted(bad)
