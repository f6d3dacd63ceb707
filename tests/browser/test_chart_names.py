"""Every chart has an accessible name (its title) and a short description written from its data, in
the page's language (issue 43 §3; ui/chart/describe.js, tested on its own in tests/js/): on B1 in both
languages, and every chart of F4, D1 (its live bars too), F1 and E1, the languages taking turns. None
is called by the generic word ("Chart"): F1's head maps, drawn without a title, are sent a name. A
panel of subplots is described by its name or the title over it, never by a bare number ("2:")."""
from __future__ import annotations

import re

import pytest

import i18n
from tests.browser.conftest import WAIT_MS, settle

CHARTS = """() => [...document.querySelectorAll('[data-testid="stMain"] .anatomy-chart')].map((el) => {
  const note = document.getElementById(el.getAttribute('aria-describedby') || '');
  return {role: el.getAttribute('role'), name: el.getAttribute('aria-label'), text: note ? note.textContent : null};
})"""
CJK = re.compile("[\u4e00-\u9fff]")
BARE_PANEL = re.compile(r"(?:^|[.。] ?)\d+[:：]")   # a panel's sentence named by its number alone: "2: A grid"

# (lesson, its address, language, whether it needs SmolLM2's package); B1 in both languages, the
# others in one each (their describe words are the same templates).
PAGES = [("b1", "attention", "en", False), ("b1", "attention", "zh", False), ("f4", "patching", "zh", True),
         ("d1", "generation", "en", False), ("f1", "heads-at-work", "zh", False), ("e1", "moe", "en", False)]


def _charts(browser, url: str) -> list[dict]:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(url)
        settle(page)
        page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")   # charts below the fold draw too
        page.wait_for_function("() => document.querySelectorAll('.anatomy-chart').length > 0", timeout=WAIT_MS)
        settle(page)
        return page.evaluate(CHARTS)
    finally:
        page.close()


@pytest.mark.parametrize("name,slug,lang,real", PAGES, ids=[f"{p[0]}-{p[2]}" for p in PAGES])
def test_every_chart_is_named_and_described(chromium_browser, server_url, name, slug, lang, real):
    if real:
        from tests.real_util import need_package
        need_package()
    charts = _charts(chromium_browser, f"{server_url}/{slug}?lang={lang}")
    assert charts
    unnamed = [c for c in charts if c["role"] != "figure" or not c["name"] or not c["text"]]
    assert not unnamed, f"{name} ({lang}): charts without a name or a description: {unnamed}"
    assert all(re.search(r"\d", c["text"]) for c in charts), charts          # each says a number of its data
    generic = i18n.t(lang, "classroom.describe.chart")
    assert not [c for c in charts if c["name"] == generic], f"{name} ({lang}): charts called {generic!r}: {charts}"
    assert not [c for c in charts if BARE_PANEL.search(c["text"])], charts
    if lang == "zh":
        assert all(CJK.search(c["name"]) and CJK.search(c["text"]) for c in charts), charts
        assert not any(re.search(r"[。；] ", c["text"]) for c in charts), charts   # no space after a full stop
    grid = "A grid of" if lang == "en" else "数值网格"
    if name == "b1":
        heatmaps = [c for c in charts if grid in c["text"]]
        assert heatmaps and any(" → " in c["text"] for c in heatmaps), charts   # the weights: query → key
        # Q, K, V (a token a row, a dimension a column): the column named as such, never "天 → 5"
        assert not any(re.search(r"→ \d", c["text"]) for c in heatmaps), heatmaps
        assert any(("column" if lang == "en" else "列") in c["text"] for c in heatmaps), heatmaps
        # the batched call's panels, untitled traces: each by the title over it ("text 0")
        panels = [i18n.t(lang, "b1.batch_panel", b=b) for b in range(3)]
        assert any(all(p in c["text"] for p in panels) for c in heatmaps), heatmaps
    if name == "f4":
        # its maps are layers × positions: each cell named by its axes' titles, not "row → column"
        maps = [c for c in charts if grid in c["text"]]
        assert maps and all("→" not in c["text"] and "块（层）" in c["text"] for c in maps), maps
        sub = [c for c in maps if c["text"].count(grid) == 2]                # the two sub-layer maps, each
        assert len(sub) == 1, maps
        # each sub-layer named once, before its sentence, not again in its axis ("注意力输出 · 位置")
        for panel in (i18n.t(lang, "f4.attn_name"), i18n.t(lang, "f4.ffn_name")):
            assert sub[0]["text"].count(panel) == 1 and f"{panel}：" in sub[0]["text"], sub
    if name == "f1":
        # its head maps, drawn without a title, named all the same: SmolLM2's 30 × 9 heads (the course
        # model's 4 × 4 where SmolLM2 is not installed) and the course model's for contrast
        maps = [c for c in charts if c["text"].count(grid) == 4]
        assert maps[0]["name"] in [i18n.t(lang, "f1.grids_name", layers=n, heads=h) for n, h in ((30, 9), (4, 4))], maps
        assert all(c["name"] == i18n.t(lang, "f1.course_grids_name", layers=4, heads=4) for c in maps[1:]), maps
        assert i18n.t(lang, "f1.grid_previous") in maps[0]["text"], maps                 # each panel by its name
        # one head's weights, large: one grid (the grey of the masked future is no panel of its own)
        patterns = [c for c in charts if grid in c["text"] and c not in maps]
        assert len(patterns) == 2 and all(c["text"].count(grid) == 1 for c in patterns), patterns
