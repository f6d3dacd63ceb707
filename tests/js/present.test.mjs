// Presenter mode's pure parts (ui/chart/present.js): the larger type, titles broken onto lines,
// nice tick steps, boxes that meet.
import assert from "node:assert/strict";
import { test } from "node:test";
import { meet, niceUp, presenterFigure, wrapTitle } from "../../ui/chart/present.js";

const tenEach = (text) => text.replace(/<[^>]*>/g, "").length * 10;   // 10 px a character
const wrap = (text, room) => wrapTitle(text, { size: 22 }, room, tenEach);

test("a title that fits stays on its line", () => {
  assert.equal(wrap("attention", 200), "attention");
});

test("a long title breaks at spaces, a bracketed formula kept whole", () => {
  assert.equal(wrap("attention weights (softmax of q·k)", 200), "attention weights<br>(softmax of q·k)");
  assert.equal(wrap("one two three four", 100), "one two<br>three four");
  assert.equal(wrap("one two three four", 90), "one two<br>three<br>four");
});

test("Chinese breaks between characters; the author's <br> lines are kept", () => {
  assert.equal(wrap("注意力权重的热图", 40), "注意力权<br>重的热图");
  assert.equal(wrap("short<br>also short", 200), "short<br>also short");
  assert.equal(wrap("a b<br/>c d e f g h", 50), "a b<br>c d e<br>f g h");
});

test("a tag is never split, a word longer than the room stays whole", () => {
  assert.equal(wrap("<b>bold words</b> here", 100), "<b>bold words</b><br>here");
  assert.equal(wrap("supercalifragilistic", 50), "supercalifragilistic");
});

test("niceUp: the least step of 1, 2, 2.5 or 5 times a power of ten at least v", () => {
  assert.equal(niceUp(0.3), 0.5);
  assert.equal(niceUp(0.5), 0.5);
  assert.equal(niceUp(7), 10);
  assert.equal(niceUp(2.2), 2.5);
  assert.equal(niceUp(120), 200);
  assert.equal(niceUp(1), 1);
});

test("two boxes meet when they overlap by more than the gap", () => {
  const box = (left, top, right, bottom) => ({ left, top, right, bottom });
  assert.ok(meet(box(0, 0, 10, 10), box(5, 5, 15, 15)));
  assert.ok(!meet(box(0, 0, 10, 10), box(9, 0, 20, 10)));        // 1 px: under the gap
  assert.ok(!meet(box(0, 0, 10, 10), box(0, 20, 10, 30)));
  assert.ok(meet(box(0, 0, 10, 10), box(9, 0, 20, 10), 0.5));
});

test("presenter type: every text at least 18 px, the title 22, a quarter larger; margins and height too", () => {
  const figure = presenterFigure({
    data: [{ type: "heatmap", text: [["a"]], colorbar: { title: { text: "p" } } },
      { type: "bar", text: ["1"], textfont: { size: 20 } }],
    layout: { font: { size: 12 }, title: "T", xaxis: { title: "x", tickfont: { size: 16 } }, yaxis2: {},
      legend: {}, annotations: [{ text: "n", font: { size: 30 } }], margin: { l: 40, t: 60 }, height: 400 },
  });
  const { layout, data } = figure;
  assert.deepEqual(layout.font, { size: 18 });   // 12 a quarter larger is 15: the least, 18
  assert.deepEqual(layout.title, { text: "T", font: { size: 22 } });
  assert.equal(layout.xaxis.tickfont.size, 20);
  assert.deepEqual(layout.xaxis.title, { text: "x", font: { size: 19 } });   // no size: 15, a quarter larger
  assert.equal(layout.yaxis2.tickfont.size, 19);
  assert.equal(layout.legend.font.size, 19);
  assert.equal(layout.annotations[0].font.size, 38);
  assert.deepEqual(layout.margin, { l: 50, t: 75 });
  assert.equal(layout.height, 500);
  assert.equal(data[0].textfont.size, 19);
  assert.equal(data[0].colorbar.tickfont.size, 19);
  assert.equal(data[0].colorbar.title.font.size, 19);
  assert.equal(data[1].textfont.size, 25);
  assert.deepEqual(layout.uniformtext, { mode: "show", minsize: 18 });
  assert.equal(presenterFigure({ data: [] }).layout.height, 525);   // plotly's 420, a quarter larger
});

test("presenter height: no taller than the most the server names, then a quarter larger", () => {
  // ui/figures.py's PRESENT_MAX_HEIGHT (340) for most charts; the server sends the shared figure.
  assert.equal(presenterFigure({ data: [], layout: { height: 900 } }, 340).layout.height, 425);
  assert.equal(presenterFigure({ data: [], layout: { height: 300 } }, 340).layout.height, 375);   // kept
  assert.equal(presenterFigure({ data: [] }, 340).layout.height, 425);   // plotly's 420, capped
  assert.equal(presenterFigure({ data: [], layout: { height: 900 } }).layout.height, 1125);   // none: its own
  assert.equal(presenterFigure({ data: [], layout: { height: 900 } }, null).layout.height, 1125);
});
