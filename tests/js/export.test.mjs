// The CSV button's table and the modebar's config (ui/chart/export.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { CONFIG, cell, exportConfig, exportName, figureCsv } from "../../ui/chart/export.js";
import { spec } from "./helpers.mjs";

test("a cell: numbers as written, float32 to 8 digits, no number for NaN or nothing", () => {
  assert.equal(cell(0.25), "0.25");
  assert.equal(cell(Math.fround(0.1), true), "0.1");
  assert.equal(cell(Math.fround(0.1)), String(Math.fround(0.1)));
  assert.equal(cell(NaN), "");
  assert.equal(cell(Infinity), "");
  assert.equal(cell(null), "");
  assert.equal(cell(undefined), "");
});

test("a text cell: quoted when needed, a formula made text", () => {
  assert.equal(cell("plain"), "plain");
  assert.equal(cell('say "hi", then'), '"say ""hi"", then"');
  assert.equal(cell("two\nlines"), '"two\nlines"');
  assert.equal(cell("=1+2"), "'=1+2");
  assert.equal(cell("-x"), "'-x");
  assert.equal(cell("@a,b"), "\"'@a,b\"");
  assert.equal(cell("注意力"), "注意力");
});

test("a line: one row a point; a heatmap: one row a cell with its labels", () => {
  const figure = { data: [
    { type: "scatter", name: "loss", x: [0, 1], y: spec(Float32Array, "f4", [0.5, 0.25]) },
    { type: "heatmap", name: "w", x: ["a", "b"], y: ["p"], z: spec(Float64Array, "f8", [1, 2], [1, 2]) },
    { type: "bar", y: [3] },
  ] };
  const text = figureCsv(figure);
  assert.ok(text.startsWith("\ufeff"));
  assert.ok(text.endsWith("\r\n"));
  assert.deepEqual(text.slice(1).trimEnd().split("\r\n"), [
    "trace,name,type,row,col,x,y,z",
    "0,loss,scatter,0,,0,0.5,",
    "0,loss,scatter,1,,1,0.25,",
    "1,w,heatmap,0,0,a,p,1",
    "1,w,heatmap,0,1,b,p,2",
    "2,,bar,0,,0,3,",
  ]);
  assert.equal(figureCsv({ data: [] }), "\ufefftrace,name,type,row,col,x,y,z\r\n");
});

test("a file name keeps letters, digits, dots, dashes and underscores", () => {
  assert.equal(exportName({ __exportName: "b1 chart/注意" }), "b1_chart___");
  assert.equal(exportName({}), "figure");
});

test("the config: plotly's own without labels, one object per language", () => {
  assert.equal(exportConfig(null), CONFIG);
  globalThis.window = { Plotly: { Icons: { camera: {} } } };
  try {
    const en = { png: "PNG", svg: "SVG", csv: "CSV", locale: "en" };
    const zh = { png: "图", svg: "矢量", csv: "表", locale: "zh", words: { Zoom: "缩放" } };
    const a = exportConfig(en);
    assert.equal(exportConfig({ ...en }), a);
    assert.deepEqual(a.modeBarButtonsToRemove, ["toImage", "sendChartToCloud"]);
    assert.deepEqual(a.modeBarButtonsToAdd.map((b) => [b.name, b.title]),
      [["anatomy-png", "PNG"], ["anatomy-svg", "SVG"], ["anatomy-csv", "CSV"]]);
    assert.equal(a.locale, undefined);
    const b = exportConfig(zh);
    assert.notEqual(b, a);
    assert.equal(b.locale, "anatomy-zh");
    assert.deepEqual(b.locales, { "anatomy-zh": { dictionary: { Zoom: "缩放" } } });
    assert.equal(b.displaylogo, false);
  } finally {
    delete globalThis.window;
  }
});
