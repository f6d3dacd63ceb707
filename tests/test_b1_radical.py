"""B1's chart texts (review B1 #7): a √ drawn by plotly, in the charts' CJK font, ends in a short
stub, and the "(d_k)" after it stood apart (√‾(d_k)). In the panel title and the legend the
radicand carries its own overline and the √ comes from a font whose sign meets it (DejaVu Sans
and the math fonts); in Chinese a word says what the formula is (得分, 缩放后). The formulas in the prose are KaTeX (\\sqrt{d_k}), which draws the bar itself."""
import pytest

import i18n

RADICAL = ('<span style="font-family:DejaVu Sans, Cambria Math, STIX Two Math, Segoe UI Symbol">√</span>'
           '<span style="text-decoration:overline">dₖ</span>')


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("key", ["b1.panel_scores", "b1.scaled"])
def test_chart_radicals_are_overlined(lang, key):
    text = i18n.catalogue(lang)[key]
    assert RADICAL in text and "√(" not in text and "d_k" not in text
