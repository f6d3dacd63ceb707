// A clickable chart chosen from by keyboard (ui/chart/pick.js): the points a click could send and
// the arrow keys' moves between them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { clipBox, nextPoint, pickPoints, readingOrder } from "../../ui/chart/pick.js";
import { spec } from "./helpers.mjs";

test("a heatmap: one point per cell with customdata, labelled by its axes and value", () => {
  // F1's layer-head map: z is (heads, layers), customdata "layer,head", laid out by x0/dx.
  const z = spec(Float32Array, "f4", [0.1, 0.2, 0.3, 0.9, 0.5, 0.25], [2, 3]);
  const figure = {
    data: [{ type: "heatmap", z, x0: 0, dx: 1, y0: 0, dy: 1, name: "induction",
      customdata: [["0,0", "1,0", "2,0"], ["0,1", "1,1", "2,1"]] }],
    layout: { xaxis: { title: { text: "layer" } }, yaxis: { title: "head" } },
  };
  const points = pickPoints(figure);
  assert.equal(points.length, 6);
  assert.deepEqual(points.map((p) => p.value), ["0,0", "1,0", "2,0", "0,1", "1,1", "2,1"]);
  assert.deepEqual([points[3].at, points[3].x, points[3].y], [[1, 0], 0, 1]);
  assert.equal(points[3].label, "induction: layer 0, head 1: 0.9");
});

test("a heatmap on token categories: the column's token names the point; a cell without customdata is left out", () => {
  const figure = {
    data: [{ type: "heatmap", z: [[0.5, -0.25]], x: ["黄", "河"], customdata: [["0,0", null]] }],
    layout: { xaxis: { title: { text: "位置" } } },
  };
  const points = pickPoints(figure);
  assert.equal(points.length, 1);
  assert.equal(points[0].x, "黄");
  assert.equal(points[0].label, "位置 黄, 0: 0.5");
});

test("bars: one point a bar; the same bar drawn twice (D1's overlaid traces) is one point", () => {
  const figure = { data: [
    { type: "bar", orientation: "h", y: ["the", " a"], x: [0.6, 0.3], customdata: [262, 253] },
    { type: "bar", orientation: "h", y: ["the", " a"], x: [0, 1], customdata: [262, 253] },
    { type: "bar", y: [null], x: ["legend"] },
  ] };
  const points = pickPoints(figure);
  assert.deepEqual(points.map((p) => [p.value, p.label]), [["262", "the: 0.6"], ["253", " a: 0.3"]]);
});

test("a scatter diagram: the points sharing one customdata (a box's outline) are one point", () => {
  const figure = { data: [
    { type: "scatter", x: [0, 1], y: [0, 1] },
    { type: "scatter", x: [0, 1, null, 3, 4], y: [0, 0, null, 1, 1],
      customdata: ["encoder.ffn", "encoder.ffn", null, "decoder.ffn", "decoder.ffn"] },
    { type: "scatter", x: [5], y: [5], customdata: ["hidden"], visible: false },
  ] };
  const points = pickPoints(figure);
  assert.deepEqual(points.map((p) => [p.value, p.at]), [["encoder.ffn", [0, 1]], ["decoder.ffn", [3, 4]]]);
  assert.equal(points[1].label, "decoder.ffn");
});

test("a chart without customdata has nothing to pick", () => {
  assert.deepEqual(pickPoints({ data: [{ type: "heatmap", z: [[1]] }] }), []);
  assert.deepEqual(pickPoints(undefined), []);
});

// A 3 × 2 grid on the screen (x right, y down), listed out of order on purpose.
const GRID = [{ x: 10, y: 0 }, { x: 0, y: 0 }, { x: 20, y: 0 }, { x: 0, y: 10 }, { x: 10, y: 10 }, { x: 20, y: 10 }];

test("reading order: rows from the top, each left to right", () => {
  assert.deepEqual(readingOrder(GRID), [1, 0, 2, 3, 4, 5]);
  assert.deepEqual(readingOrder([{ x: 5, y: 0 }, { x: 0, y: 10 }, { x: 0, y: 1 }]), [2, 0, 1]);   // 1 px apart: one row
});

test("the arrow keys move to the neighbour that way", () => {
  assert.equal(nextPoint(GRID, 1, "ArrowRight"), 0);
  assert.equal(nextPoint(GRID, 0, "ArrowRight"), 2);
  assert.equal(nextPoint(GRID, 0, "ArrowDown"), 4);
  assert.equal(nextPoint(GRID, 4, "ArrowUp"), 0);
  assert.equal(nextPoint(GRID, 4, "ArrowLeft"), 3);
});

test("none that way: on in reading order, so one key walks every point; the ends stay", () => {
  assert.equal(nextPoint(GRID, 2, "ArrowRight"), 3);      // the end of a row: the next row's first
  assert.equal(nextPoint(GRID, 3, "ArrowLeft"), 2);
  assert.equal(nextPoint(GRID, 5, "ArrowRight"), 5);      // the last point
  assert.equal(nextPoint(GRID, 1, "ArrowUp"), 1);         // the first point
  let at = 1;
  const seen = [at];
  for (let k = 0; k < 5; k++) seen.push(at = nextPoint(GRID, at, "ArrowRight"));
  assert.deepEqual(seen, [1, 0, 2, 3, 4, 5]);
});

test("a point in line comes before a nearer one off the line", () => {
  const points = [{ x: 0, y: 0 }, { x: 30, y: 0 }, { x: 12, y: 14 }];
  assert.equal(nextPoint(points, 0, "ArrowRight"), 1);    // 30 along beats 12 along + 2 × 14 across
});

test("Home and End, and no point yet", () => {
  assert.equal(nextPoint(GRID, 4, "Home"), 1);
  assert.equal(nextPoint(GRID, 4, "End"), 5);
  assert.equal(nextPoint(GRID, -1, "ArrowDown"), 1);
  assert.equal(nextPoint(GRID, -1, "End"), 5);
  assert.equal(nextPoint([], 0, "ArrowRight"), -1);
  assert.equal(nextPoint(GRID, 4, "a"), 4);
});

test("a box cut to the plot's area; one wholly outside it is not drawn", () => {
  const area = { l: 0, t: 0, w: 200, h: 100 };
  assert.deepEqual(clipBox({ left: -50, top: 10, width: 100, height: 10 }, area), { left: 0, top: 10, width: 50, height: 10 });
  assert.deepEqual(clipBox({ left: 10, top: 10, width: 5, height: 5 }, area), { left: 10, top: 10, width: 5, height: 5 });
  assert.equal(clipBox({ left: 300, top: 10, width: 5, height: 5 }, area), null);
  assert.equal(clipBox(null, area), null);
});
