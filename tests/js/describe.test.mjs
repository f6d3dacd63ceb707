// A chart's accessible name and description (ui/chart/describe.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { describe, fill, plainTitle, short } from "../../ui/chart/describe.js";
import { spec } from "./helpers.mjs";

const WORDS = {
  chart: "Chart", heatmap: "A grid of {rows} × {cols} values; the largest, {v}, is at {y} → {x}.",
  grid: "A grid of {rows} × {cols} values.", bars: "Bars: {n}; the longest is {label}, {v}.",
  bars_empty: "Bars: {n}.", series: "Lines or point sets: {n}, with {points} points in all.", join: " ",
};

test("a title as plain text: markup out, entities read, lines joined", () => {
  assert.equal(plainTitle({ title: { text: "<b>Attention</b><br>weights &lt;causal&gt;" } }), "Attention weights <causal>");
  assert.equal(plainTitle({ title: "注意力权重" }), "注意力权重");
  assert.equal(plainTitle({}), "");
  assert.equal(plainTitle(undefined), "");
});

test("numbers to three digits, template fields filled", () => {
  assert.equal(short(0.41234), "0.412");
  assert.equal(short(1234567), "1230000");
  assert.equal(short(NaN), "");
  assert.equal(fill("{a} → {b}", { a: "黄", b: "河" }), "黄 → 河");
  assert.equal(fill("{a} {missing}", { a: 1 }), "1 ");
});

test("a heatmap: its size and its strongest cell, with the labels on its axes", () => {
  const z = spec(Float32Array, "f4", [0.1, 0.2, 0.41, 0.3], [2, 2]);
  const figure = { data: [{ type: "heatmap", x: ["黄", "河"], y: ["之", "水"], z }] };
  assert.equal(describe(figure, WORDS), "A grid of 2 × 2 values; the largest, 0.41, is at 水 → 黄.");
  const plain = { data: [{ type: "heatmap", z: [[NaN, 1], [2, 3]] }] };
  assert.equal(describe(plain, WORDS), "A grid of 2 × 2 values; the largest, 3, is at 1 → 1.");
  assert.equal(describe({ data: [{ type: "heatmap", z: [[NaN]] }] }, WORDS), "A grid of 1 × 1 values.");
});

test("bars, either way round: the longest one named", () => {
  const up = { data: [{ type: "bar", x: ["a", "b", "c"], y: [1, 5, 2] }] };
  assert.equal(describe(up, WORDS), "Bars: 3; the longest is b, 5.");
  const flat = { data: [{ type: "bar", orientation: "h", y: ["p", "q"], x: spec(Float64Array, "f8", [0.25, 0.75]) }] };
  assert.equal(describe(flat, WORDS), "Bars: 2; the longest is q, 0.75.");
  assert.equal(describe({ data: [{ type: "bar", y: [] }] }, WORDS), "Bars: 0.");
});

test("lines: how many and how many points; nothing drawn says nothing", () => {
  const figure = { data: [{ type: "scatter", y: [1, 2, 3] }, { type: "scatter", x: [0, 1], y: spec(Float32Array, "f4", [1, 2]) },
    { type: "scatter", y: [9], visible: false }] };
  assert.equal(describe(figure, WORDS), "Lines or point sets: 2, with 5 points in all.");
  assert.equal(describe({ data: [] }, WORDS), "");
  assert.equal(describe(undefined, WORDS), "");
});
