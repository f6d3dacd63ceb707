// Colours as plotly paints them (ui/chart/colour.js), and a heatmap's cell edges (ui/chart/cells.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellEdges } from "../../ui/chart/cells.js";
import { cellScale, colourEnds, parseCanvasColour } from "../../ui/chart/colour.js";
import { spec } from "./helpers.mjs";

test("a canvas' colour read back as [r, g, b, a]", () => {
  assert.deepEqual(parseCanvasColour("#ff8000"), [255, 128, 0, 1]);
  assert.deepEqual(parseCanvasColour("rgba(10, 20, 30, 0.5)"), [10, 20, 30, 0.5]);
  assert.deepEqual(parseCanvasColour("rgb(1, 2, 3)"), [1, 2, 3, 1]);
});

// Stops named by their colour's value, read without a browser.
const named = (c) => parseCanvasColour(c);
const GREY = [[0, "#000000"], [0.5, "#808080"], [1, "#ffffff"]];

test("a colour scale: linear between stops over lo..hi, clamped, alpha out of 255", () => {
  const colour = cellScale(GREY, false, 0, 10, named);
  assert.deepEqual(colour(0), [0, 0, 0, 255]);
  assert.deepEqual(colour(5), [128, 128, 128, 255]);
  assert.deepEqual(colour(10), [255, 255, 255, 255]);
  assert.deepEqual(colour(2.5), [64, 64, 64, 255]);
  assert.deepEqual(colour(-3), [0, 0, 0, 255]);
  assert.deepEqual(colour(99), [255, 255, 255, 255]);
  assert.equal(colour(NaN), null);
  assert.equal(colour("1"), null);
});

test("a reversed scale runs from its last stop", () => {
  const colour = cellScale([[0, "#000000"], [1, "#ff0000"]], true, 0, 1, named);
  assert.deepEqual(colour(0), [255, 0, 0, 255]);
  assert.deepEqual(colour(1), [0, 0, 0, 255]);
});

test("a half rounds as d3 mixes it, a(1 - f) + bf", () => {
  // 187 -> 0 at f = 0.5: 93.5 exactly, rounded up to 94 (a + (b - a)f gave 93.49999...)
  const colour = cellScale([[0, "rgb(187, 0, 0)"], [1, "rgb(0, 0, 0)"]], false, 0, 1, named);
  assert.equal(colour(0.5)[0], 94);
});

test("the scale's ends: as given, else the values' extent, one value half a unit either side", () => {
  assert.deepEqual(colourEnds([1, 2], 0, 5), [0, 5]);
  assert.deepEqual(colourEnds([[3, NaN], [-1]], null, null), [-1, 3]);
  assert.deepEqual(colourEnds(spec(Float64Array, "f8", [4, 8]), 0, null), [0, 8]);
  assert.deepEqual(colourEnds([2], null, null), [1.5, 2.5]);
  assert.equal(colourEnds([NaN], null, null), null);
});

test("cell edges: evenly spaced centres give the outer edges, others none", () => {
  assert.deepEqual(cellEdges(null, 3), [-0.5, 2.5]);
  assert.deepEqual(cellEdges([0, 2, 4], 3), [-1, 5]);
  assert.deepEqual(cellEdges([4, 2, 0], 3), [5, -1]);
  assert.deepEqual(cellEdges(spec(Float64Array, "f8", [1]), 1), [0.5, 1.5]);
  assert.equal(cellEdges([0, 1, 3], 3), null);
  assert.equal(cellEdges(["a", "b"], 2), null);
  assert.equal(cellEdges([0, 1], 3), null);
});
