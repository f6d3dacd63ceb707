"""In class, in a real Chromium, both languages: presenter mode (one section at a time, the
keyboard, the next lesson, the link copied), and a figure exported as PNG, SVG and CSV (the files
open: the PNG has the plot's pixel size, the CSV the figure's values). Step 2 of every lesson and
stepping from each lesson into the next are checked on tests/browser/test_slides.py's walk."""
from __future__ import annotations

import csv
import io
import json
import struct
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

import i18n
from tests.apptest_util import decode
from tests.browser.conftest import SHOTS, WAIT_MS, settle, shoot

VISIBLE_H3 = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] h3'))
    .filter(h => h.offsetParent !== null).map(h => h.textContent.trim())"""


def _query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


def _wait_query(page, **wanted: str) -> None:
    checks = " && ".join(f"p.get({json.dumps(k)}) === {json.dumps(v)}" for k, v in wanted.items())
    page.wait_for_function(f"() => {{ const p = new URLSearchParams(location.search); return {checks}; }}",
                           timeout=WAIT_MS)
    settle(page)


def _keys_stay(page, control: str, step: str, hover: str | None = None) -> None:
    """With the first of ``control`` focused (``hover``: shown once the pointer is over this), the
    presenter's keys do nothing: the step stays, no overview opens, the address is unchanged."""
    if hover:
        page.locator(hover).first.hover()
        page.locator(control).first.wait_for(state="visible", timeout=WAIT_MS)
    target = page.locator(control).first
    target.focus()
    assert target.evaluate("el => el === document.activeElement"), control
    before = page.url
    for key in ("ArrowRight", "PageDown", "ArrowLeft", "PageUp", "o", "j"):
        page.keyboard.press(key)
    page.wait_for_timeout(1000)
    settle(page)
    assert target.evaluate("el => el === document.activeElement"), control
    assert _query(page)["step"] == step and page.url == before, control
    assert page.locator(".anatomy-overview").count() == 0, control


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_presenter_mode(chromium_browser, server_url, lang):
    t = lambda key: i18n.t(lang, key)   # noqa: E731
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server_url)
    page = context.new_page()
    page.goto(f"{server_url}/attention?lang={lang}&present=1")
    settle(page)
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    bar = page.locator(".anatomy-classroom")
    assert bar.is_visible() and bar.get_attribute("data-present") == "1"
    # Large type: the page's rem is 20 px (16 px otherwise).
    assert page.evaluate("() => getComputedStyle(document.documentElement).fontSize") == "20px"
    # Step 1: the title and the opening, no section yet.
    assert page.locator('[data-testid="stMain"] h1').first.is_visible()
    assert page.evaluate(VISIBLE_H3) == []
    assert "1" in bar.inner_text()
    shoot(page, SHOTS / f"present-b1-{lang}-1440.png")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_timeout(300)
    shoot(page, SHOTS / f"present-b1-{lang}-1024.png")
    page.set_viewport_size({"width": 1440, "height": 900})

    # → : the first section alone, its step in the URL; the title has gone with the opening.
    page.locator("body").press("ArrowRight")
    _wait_query(page, step="2", present="1", lang=lang)
    assert page.evaluate(VISIBLE_H3) == [i18n.t(lang, "b1.matrix_title")]
    assert not page.locator('[data-testid="stMain"] h1').first.is_visible()
    shoot(page, SHOTS / f"present-b1-{lang}-step2-1440.png")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_timeout(300)
    shoot(page, SHOTS / f"present-b1-{lang}-step2-1024.png")
    page.set_viewport_size({"width": 1440, "height": 900})
    # A focused slider keeps its arrows: the step does not move.
    slider = page.locator('[data-testid="stMain"] [data-testid="stSlider"]:visible input[type="range"]').first
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(1000)
    settle(page)
    assert _query(page)["step"] == "2"
    # So does a segmented control's button (issue 43 §2): no key of the presenter's acts there (o would
    # open the overview, j a class room's join card); below, a chart toolbar's and a code panel's.
    _keys_stay(page, '[data-testid="stMain"] [data-testid="stButtonGroup"]:visible button', "2")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    # The bar's Next, then Page Up back.
    # (steps 3 and 4 are the matrix's own slides, Q, K, V and then scores, weights, output, marked by
    # ui.frame.slide: no section title of their own)
    bar.locator(".anatomy-next").click()
    _wait_query(page, step="3")
    assert page.evaluate(VISIBLE_H3) == []
    bar.locator(".anatomy-next").click()
    _wait_query(page, step="4")
    assert page.evaluate(VISIBLE_H3) == []
    _keys_stay(page, '[data-testid="stMain"] .modebar-btn:visible', "4")
    code = '[data-testid="stMain"] [data-testid="stCode"]:visible'
    _keys_stay(page, f"{code} button", "4", hover=code)        # a code panel's copy button (shown on hover)
    page.mouse.move(0, 0)
    # The bar's own buttons keep the keys for the presenter: → on a focused Next steps on.
    bar.locator(".anatomy-next").focus()
    page.keyboard.press("ArrowRight")
    _wait_query(page, step="5")
    assert page.evaluate(VISIBLE_H3) == [i18n.t(lang, "b1.scale_title")]
    page.keyboard.press("PageUp")
    _wait_query(page, step="4")
    page.keyboard.press("PageUp")
    _wait_query(page, step="3")
    page.keyboard.press("PageUp")
    _wait_query(page, step="2")

    # Copy link: the address of what is on screen.
    bar.locator(".anatomy-copy").click()
    page.wait_for_function("(t) => document.querySelector('.anatomy-copy').textContent === t",
                           arg=t("classroom.copied"), timeout=5000)
    assert page.evaluate("() => navigator.clipboard.readText()") == page.url

    # Shift+→ : the next lesson, still presenting, in the same language, from its step 1.
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_url("**/heads?**", timeout=WAIT_MS)
    _wait_query(page, step="1", present="1", lang=lang)
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == i18n.t(lang, "b2.title")
    # ← before the first section: the lesson before, B1, on its last slide (its questions).
    page.keyboard.press("ArrowLeft")
    page.wait_for_url("**/attention?**", timeout=WAIT_MS)
    page.wait_for_function("() => !['1', '99'].includes(new URLSearchParams(location.search).get('step'))",
                           timeout=WAIT_MS)
    settle(page)
    assert page.evaluate(VISIBLE_H3) == [t("common.try_this")]

    # O: the overview lists the slides (the lesson's name, then each section); a click jumps.
    page.keyboard.press("o")
    items = page.locator(".anatomy-overview .anatomy-overview-item")
    items.first.wait_for(timeout=WAIT_MS)
    titles = items.all_inner_texts()
    assert titles[1] == t("b1.matrix_title") and titles[-1] == t("common.try_this")
    assert t("b1.matrix_title") in titles[2]            # "(continued)": the matrix's own slide
    assert titles[3] == t("b1.mix_slide")               # and its second: scores, weights, output
    shoot(page, SHOTS / f"present-overview-b1-{lang}-1440.png")
    items.nth(4).click()
    _wait_query(page, step="5")
    assert page.locator(".anatomy-overview").count() == 0
    assert page.evaluate(VISIBLE_H3) == [i18n.t(lang, "b1.scale_title")]
    page.keyboard.press("o")
    page.locator(".anatomy-overview").wait_for(timeout=WAIT_MS)
    page.keyboard.press("Escape")
    assert page.locator(".anatomy-overview").count() == 0

    # An old link past the last section is brought back to the last one.
    page.goto(f"{server_url}/attention?lang={lang}&present=1&step=40")
    settle(page)
    page.wait_for_function("() => new URLSearchParams(location.search).get('step') !== '40'", timeout=WAIT_MS)
    settle(page)
    assert page.evaluate(VISIBLE_H3) == [t("common.try_this")]

    # Exit: the sidebar is back, the URL has no presenter parameters.
    bar.locator(".anatomy-exit").click()
    page.wait_for_function("() => !new URLSearchParams(location.search).has('present')", timeout=WAIT_MS)
    settle(page)
    assert page.locator('[data-testid="stSidebar"]').is_visible()
    assert len(page.evaluate(VISIBLE_H3)) >= 4
    assert page.locator('[data-testid="stException"]').count() == 0
    context.close()


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _download(page, chart, title: str):
    chart.hover()
    with page.expect_download(timeout=WAIT_MS) as info:
        chart.locator(f'.modebar-btn[data-title="{title}"]').click()
    return info.value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_export_png_svg_csv(chromium_browser, server_url, lang, tmp_path):
    t = lambda key: i18n.t(lang, key)   # noqa: E731
    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page.goto(f"{server_url}/attention?lang={lang}")
    settle(page)
    chart = page.locator('[class~="st-key-b1-weights"] .js-plotly-plot')
    chart.scroll_into_view_if_needed()
    width, height = page.evaluate(
        "() => { const gd = document.querySelector('[class~=\"st-key-b1-weights\"] .js-plotly-plot');"
        " return [gd._fullLayout.width, gd._fullLayout.height]; }")

    chart.hover()
    titles = chart.locator(".modebar-btn").evaluate_all("bs => bs.map(b => b.getAttribute('data-title'))")
    assert [t("classroom.png"), t("classroom.svg"), t("classroom.csv")] == [x for x in titles if x in (
        t("classroom.png"), t("classroom.svg"), t("classroom.csv"))]
    assert "Share chart..." not in titles and "Download plot as a png" not in titles   # nothing leaves the server
    # plotly.js's own buttons speak the page's language too (ui/frame.py: PLOTLY_WORDS)
    for english, key in (("Zoom", "zoom"), ("Pan", "pan"), ("Reset axes", "reset_axes")):
        assert t(f"classroom.plotly.{key}") in titles
        assert (english in titles) == (lang == "en")

    png = _download(page, chart, t("classroom.png"))
    assert png.suggested_filename == "b1.weights.png"
    # Twice the on-screen size: sharp on a slide.
    assert _png_size(open(png.path(), "rb").read()) == (2 * width, 2 * height)

    svg = _download(page, chart, t("classroom.svg"))
    assert svg.suggested_filename == "b1.weights.svg"
    text = open(svg.path(), encoding="utf-8").read()
    assert text.startswith("<svg") and f'width="{width}"' in text[:400] and f'height="{height}"' in text[:400]

    got = _download(page, chart, t("classroom.csv"))
    assert got.suggested_filename == "b1.weights.csv"
    rows = list(csv.DictReader(io.StringIO(open(got.path(), encoding="utf-8-sig").read())))
    data = json.loads(page.evaluate(
        "() => JSON.stringify(document.querySelector('[class~=\"st-key-b1-weights\"] .anatomy-chart').__figure.data)"))
    heatmaps = [i for i, tr in enumerate(data) if tr.get("type") == "heatmap"]
    assert heatmaps, "the steps grid is heatmaps"
    for i in heatmaps:
        z = np.asarray(decode(data[i]["z"]), dtype=np.float64)
        cells = [r for r in rows if r["trace"] == str(i)]
        assert len(cells) == z.size
        got_z = np.full(z.shape, np.nan)
        for r in cells:
            got_z[int(r["row"]), int(r["col"])] = float(r["z"]) if r["z"] else np.nan
        assert np.allclose(got_z, z, rtol=1e-6, atol=1e-7, equal_nan=True)
        y = data[i].get("y")
        if isinstance(y, list):   # token labels: the row's label is the figure's
            assert all(r["y"].lstrip("'") == str(y[int(r["row"])]) for r in cells)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()



@pytest.mark.parametrize("lang", ["en", "zh"])
def test_export_from_presenter_mode(chromium_browser, server_url, lang):
    """Exported from a slide: the PNG at twice the chart on the slide, and the picture in the
    slide's type (every text of the SVG at least 18 px, as on screen)."""
    import re

    t = lambda key: i18n.t(lang, key)   # noqa: E731
    page = chromium_browser.new_page(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page.goto(f"{server_url}/attention?lang={lang}&present=1")
    settle(page)
    sel = '[class~="st-key-b1-weights"] .js-plotly-plot'
    visible = f"() => {{ const gd = document.querySelector('{sel}'); return !!gd && gd.getBoundingClientRect().height > 0; }}"
    for _ in range(12):   # step to the slide with the attention weights
        if page.evaluate(visible):
            break
        page.keyboard.press("ArrowRight")
        settle(page)
    assert page.evaluate(visible), "a slide shows the weights"
    page.wait_for_function(f"() => {{ const gd = document.querySelector('{sel}');"
                           " return gd && gd._fullLayout && !gd.dataset.fitting; }", timeout=WAIT_MS)
    chart = page.locator(sel)
    width, height = page.evaluate(f"() => {{ const gd = document.querySelector('{sel}');"
                                  " return [gd._fullLayout.width, gd._fullLayout.height]; }")
    png = _download(page, chart, t("classroom.png"))
    assert _png_size(open(png.path(), "rb").read()) == (2 * width, 2 * height)
    svg = open(_download(page, chart, t("classroom.svg")).path(), encoding="utf-8").read()
    sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", svg)]
    assert sizes and min(sizes) >= 18, sorted(set(sizes))
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()


# Two families of tests that opened presenter mode once each are now checks on the page walk of
# tests/browser/test_slides.py::test_every_slide (issue 40: no page load of their own):
# test_every_lesson_one_section_at_a_time (step 2 of every lesson in English shows its first slide
# after the opening and no other; SHOWN is there now) and test_stepping_across_lessons (→ from a
# lesson's last slide opens the next lesson on its first, ← from there the one before on its last).
