"""viz/patching.py's colour scale: white sits at the base run's value in both directions (0 when
denoising, 1 when noising), red where a patch moved the answer most, and the colour bar names 0 and
1. Noising once read dark red everywhere (1 was red on the denoising scale)."""
import numpy as np
import pytest

from viz.patching import head_patch_map, recovered_bar, recovered_scale, recovery_map, sublayer_maps

WHITE = "rgb(247,247,247)"
DARK_RED = "rgb(103,0,31)"
DARK_BLUE = "rgb(5,48,97)"
WORDS = dict(axis_titles=("block", "position"), hover_names=("block", "position", "recovered"),
             colorbar_title="recovered")


def colour_at(scale: dict, value: float) -> str:
    """The colour a heatmap gives ``value``: its place on zmin..zmax, looked up in the scale's stops."""
    at = (value - scale["zmin"]) / (scale["zmax"] - scale["zmin"])
    return next(colour for stop, colour in scale["colorscale"] if stop == pytest.approx(at))


@pytest.mark.parametrize("noising, base, moved, overshoot", [(False, 0.0, 1.0, -1.0), (True, 1.0, 0.0, 2.0)])
def test_white_at_the_base_run_red_where_the_answer_moved(noising, base, moved, overshoot):
    scale = recovered_scale(noising)
    assert colour_at(scale, base) == WHITE                                  # the patch changed nothing
    assert colour_at(scale, moved) == DARK_RED                              # the answer back, or lost
    assert colour_at(scale, overshoot) == DARK_BLUE                         # past the base run's answer
    assert (scale["zmin"] + scale["zmax"]) / 2 == base                      # centred on white
    stops = [stop for stop, _ in scale["colorscale"]]
    assert stops[0] == 0.0 and stops[-1] == 1.0 and stops == sorted(stops)


def test_colour_bar_names_the_two_runs():
    ends = ("corrupted run", "clean run")
    assert recovered_bar(None, False, ends)["ticktext"] == ["−1", "0 · corrupted run", "0.5", "1 · clean run"]
    noise = recovered_bar("recovered", True, ends)
    assert dict(zip(noise["tickvals"], noise["ticktext"], strict=True)) == {
        0.0: "0 · corrupted run", 0.5: "0.5", 1.0: "1 · clean run", 2.0: "2"}
    assert noise["title"]["text"] == "recovered"
    assert recovered_bar(None)["ticktext"] == ["−1", "0", "0.5", "1"]        # no words: numbers alone


@pytest.mark.parametrize("noising", [False, True])
def test_every_map_uses_the_direction_s_scale_and_keeps_the_values(noising):
    values = np.linspace(-0.2, 1.2, 30 * 4, dtype=np.float32).reshape(30, 4)
    tokens = ["a", "b", "c", "d"]
    ends = ("corrupted run", "clean run")
    figures = [recovery_map(values, tokens, tokens, title=None, noising=noising, ends=ends, **WORDS),
               sublayer_maps(values, values, tokens, tokens, title=None, panel_titles=("attn", "ffn"),
                             noising=noising, ends=ends, **WORDS),
               head_patch_map(values[:, :3], {}, title=None, axis_titles=("block", "head"),
                              hover_names=("block", "head", "recovered"), colorbar_title="recovered",
                              noising=noising, ends=ends)]
    want = recovered_scale(noising)
    for fig in figures:
        heatmaps = [t for t in fig["data"] if t["type"] == "heatmap"]
        for trace in heatmaps:
            assert {k: trace[k] for k in want} == want
        bar = recovered_bar("recovered", noising, ends)
        assert {k: heatmaps[0]["colorbar"][k] for k in bar} == bar              # (make() adds a key or two)
    np.testing.assert_array_equal(figures[0]["data"][0]["z"], values)     # the recovered fraction, as it is
    np.testing.assert_array_equal(figures[2]["data"][0]["z"], values[:, :3].T)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_s_scale_words_in_both_languages(lang, monkeypatch):
    """ui.f4_patching.map_scale: the direction and the colour bar's words, ready for every map."""
    import i18n
    from ui import f4_patching, words

    monkeypatch.setattr(words.st, "session_state", {"lang": lang})
    for noising in (False, True):
        got = f4_patching.map_scale(noising)
        ends = (i18n.t(lang, "f4.scale_corrupted"), i18n.t(lang, "f4.scale_clean"))
        assert got == {"noising": noising, "ends": ends}
        bar = recovery_map(np.zeros((30, 4)), list("abcd"), list("abcd"), title=None, **WORDS, **got)["data"][0]
        assert f"1 · {ends[1]}" in bar["colorbar"]["ticktext"] and bar["zmin"] == (0.0 if noising else -1.0)


def test_sublayer_labels_stand_upright_when_they_fit_and_turn_when_they_do_not():
    """Both panels share the page's width: word labels that fit half of it stay level; a long prompt's
    words are turned a quarter, and the figure grows by their length (no label on the panels)."""
    kw = dict(title=None, panel_titles=("attn", "ffn"), **WORDS)
    few = ["When", "Mary", "left"]
    many = ("When Mary and John went to the store together , John gave a drink to").split()
    short = sublayer_maps(np.zeros((30, 3)), np.zeros((30, 3)), few, few, **kw)
    long = sublayer_maps(np.zeros((30, 16)), np.zeros((30, 16)), many, many, **kw)
    for axis in ("xaxis", "xaxis2"):
        assert short["layout"][axis]["tickangle"] == 0
        assert long["layout"][axis]["tickangle"] == -90
    assert long["layout"]["height"] > short["layout"]["height"]
