"""Every chart has an accessible name (its title) and a short description written from its data, in
the page's language (issue 43 §3; ui/chart/describe.js, tested on its own in tests/js/): every chart of
every lesson, each lesson opened once, the languages taking turns (their describe words are the same
templates). None is called by the generic word ("Chart"/"图表"): a chart drawn without a title (under
a heading of the page: C1's, B4's, D2's live cache) is sent a name through i18n (ui.figures.figure's
``name``). A panel of subplots is described by its name or the title over it, never by a bare number
("2:"), and a panel drawn in pieces (D2's cache after a step) once."""
from __future__ import annotations

import re

import pytest

import i18n
from tests.browser.conftest import WAIT_MS, settle
from ui.course import existing_lessons

CHARTS = """() => [...document.querySelectorAll('[data-testid="stMain"] .anatomy-chart')].map((el) => {
  const note = document.getElementById(el.getAttribute('aria-describedby') || '');
  return {role: el.getAttribute('role'), name: el.getAttribute('aria-label'), text: note ? note.textContent : null};
})"""
CJK = re.compile("[\u4e00-\u9fff]")
BARE_PANEL = re.compile(r"(?:^|(?<!\d)[.。] ?)\d+[:：]")   # a panel's sentence named by its number alone: "2: A grid"

# (lesson, its address, language, its address's parameters): every lesson once, en and zh by turns
# (B1 zh, D1 zh, E1 zh, F1 zh, F4 en), one page load each. D2 opened at its third step: the grey rows of
# earlier steps are drawn in pieces of their own, under the same panel title.
PARAMS = {"d2": "&d2.step=2"}
PAGES = [(lesson.ns, lesson.url_path, ("en", "zh")[i % 2], PARAMS.get(lesson.ns, ""))
         for i, lesson in enumerate(existing_lessons())]
NEEDS_REAL = {"f4"}        # SmolLM2's package, or the lesson shows a note and no chart


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


@pytest.mark.parametrize("name,slug,lang,params", PAGES, ids=[f"{p[0]}-{p[2]}" for p in PAGES])
def test_every_chart_is_named_and_described(chromium_browser, server_url, name, slug, lang, params):
    if name in NEEDS_REAL:
        from tests.real_util import need_package
        need_package()
    charts = _charts(chromium_browser, f"{server_url}/{slug}?lang={lang}{params}")
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
        layer = i18n.t(lang, "f4.layer_axis")
        assert maps and all("→" not in c["text"] and layer in c["text"] for c in maps), maps
        sub = [c for c in maps if c["text"].count(grid) == 2]                # the two sub-layer maps, each
        assert len(sub) == 1, maps
        # each sub-layer named once, before its sentence, not again in its axis ("注意力输出 · 位置")
        for panel in (i18n.t(lang, "f4.attn_name"), i18n.t(lang, "f4.ffn_name")):
            said = i18n.t(lang, "classroom.describe.panel", name=panel, text="")
            assert sub[0]["text"].count(panel) == 1 and said in sub[0]["text"], sub
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
    if name == "d2":
        # the cache at step 2: Q, K, V and the weights, each panel said once, its earlier (grey) rows
        # and this step's together
        cache = [c for c in charts if c["name"] == i18n.t(lang, "d2.steps_title")]
        assert len(cache) == 1, charts
        for key in ("d2.panel_q", "d2.panel_k", "d2.panel_v", "d2.panel_w"):
            panel = i18n.t(lang, key, g=0).replace("<br>", " ")
            assert cache[0]["text"].count(panel) == 1, (panel, cache)
