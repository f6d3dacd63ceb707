// The live frames format (ui/live.py) decoded and laid over the server's figure (ui/chart/frames.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GONE, composeFrame, composeShared, framePart, prefixRows, resolve } from "../../ui/chart/frames.js";
import { spec } from "./helpers.mjs";

const live = (frames, base) => ({ frames, baseText: JSON.stringify(base), pool: null, parts: null });

test("a pooled list: a frame shows its first rows", () => {
  const st = live({ pool: [["a", "b", "c"]] });
  assert.deepEqual(prefixRows(st, { prefix: 0, rows: 2 }), ["a", "b"]);
  assert.deepEqual(prefixRows(st, { prefix: 0, rows: 0 }), []);
});

test("a pooled 1-d array: its first rows, rows blank[0]..blank[1]-1 NaN", () => {
  const st = live({ pool: [spec(Float64Array, "f8", [1, 2, 3, 4, 5])] });
  assert.deepEqual(Array.from(prefixRows(st, { prefix: 0, rows: 3 })), [1, 2, 3]);
  assert.deepEqual(Array.from(prefixRows(st, { prefix: 0, rows: 5, blank: [1, 3] })), [1, NaN, NaN, 4, 5]);
});

test("a pooled 2-d array: first rows and columns, blank rows NaN, decoded once", () => {
  const st = live({ pool: [spec(Float32Array, "f4", [1, 2, 3, 4, 5, 6, 7, 8, 9], "3,3")] });
  const rows = prefixRows(st, { prefix: 0, rows: 3, cols: 2, blank: [1, 2] }).map((r) => Array.from(r));
  assert.deepEqual(rows, [[1, 2], [NaN, NaN], [7, 8]]);
  const all = prefixRows(st, { prefix: 0, rows: 2 }).map((r) => Array.from(r));
  assert.deepEqual(all, [[1, 2, 3], [4, 5, 6]]);
  assert.ok(prefixRows(st, { prefix: 0, rows: 1 })[0] instanceof Float32Array);
  assert.equal(st.pool.length, 1);
});

test("resolve fills pooled references in nested values and copies the rest", () => {
  const st = live({ pool: [[10, 20, 30]] });
  const marker = { color: { prefix: 0, rows: 2 }, size: 4 };
  const out = resolve(st, { marker, list: [{ prefix: 0, rows: 1 }], note: "x" });
  assert.deepEqual(out, { marker: { color: [10, 20], size: 4 }, list: [[10]], note: "x" });
  assert.notEqual(out.marker, marker);
  // a dict with other keys besides prefix and rows is not a reference
  assert.deepEqual(resolve(st, { prefix: 0, rows: 1, other: 1 }), { prefix: 0, rows: 1, other: 1 });
});

const BASE = {
  data: [{ type: "scatter", x: [0, 1], y: [0, 0], name: "a" }, { type: "bar", x: [1], y: [2] }],
  layout: { title: { text: "first" }, height: 300 },
};
const FRAMES = {
  pool: [[5, 6, 7]],
  traces: [[0, ["y", "name"]]],
  layout: ["title", "annotations"],
  frames: [
    { data: [{ y: { prefix: 0, rows: 2 }, name: "b" }], layout: { title: { text: "one" } } },
    { data: [{ y: [9, 9] }], layout: { title: { text: "two" }, annotations: [{ text: "n" }] } },
  ],
};

test("a frame's figure: the base with the frame's keys, keys it lacks taken away", () => {
  const st = live(FRAMES, BASE);
  const one = composeFrame(st, 0), two = composeFrame(st, 1);
  assert.deepEqual(one.data[0], { type: "scatter", x: [0, 1], y: [5, 6], name: "b" });
  assert.deepEqual(one.layout, { title: { text: "one" }, height: 300 });
  assert.deepEqual(two.data[0], { type: "scatter", x: [0, 1], y: [9, 9] });
  assert.deepEqual(two.layout.annotations, [{ text: "n" }]);
  assert.deepEqual(two.data[1], BASE.data[1]);
});

test("framePart marks the keys a frame lacks, and is decoded once", () => {
  const st = live(FRAMES, BASE);
  const part = framePart(st, 1);
  assert.equal(part.data[0][0], 0);
  assert.equal(part.data[0][1].name, GONE);
  assert.equal(part.layout.title.text, "two");
  assert.equal(framePart(st, 1), part);
});

test("composeShared draws the same figure as composeFrame, unchanged traces shared", () => {
  const st = live(FRAMES, BASE);
  for (const i of [0, 1, 0]) {
    const shared = composeShared(st, i);
    assert.deepEqual(JSON.parse(JSON.stringify(shared)), composeFrame(st, i));
    assert.equal(shared.data[1], composeShared(st, 1 - i).data[1]);   // the bar trace: the base's own
  }
  // a changed trace is a new object each time: plotly may write into it
  assert.notEqual(composeShared(st, 0).data[0], composeShared(st, 0).data[0]);
});
