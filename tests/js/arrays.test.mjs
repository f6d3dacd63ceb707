// Plotly's typed-array specs decoded and copied (ui/chart/arrays.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeArray, decodedOf, finiteExtent, listOf, ownCopy, plainCopy } from "../../ui/chart/arrays.js";
import { spec } from "./helpers.mjs";


test("a 1-d spec decodes to a list of its numbers", () => {
  assert.deepEqual(decodeArray(spec(Float64Array, "f8", [1.5, -2, 3])), [1.5, -2, 3]);
  assert.deepEqual(decodeArray(spec(Int32Array, "i4", [7, 8])), [7, 8]);
  assert.deepEqual(decodeArray(spec(Uint8Array, "u1", [255, 0])), [255, 0]);
});

test("a 2-d spec decodes to rows, its shape a list or plotly's string", () => {
  const rows = [[1, 2, 3], [4, 5, 6]];
  assert.deepEqual(decodeArray(spec(Float32Array, "f4", rows.flat(), [2, 3])), rows);
  assert.deepEqual(decodeArray(spec(Int16Array, "i2", rows.flat(), "2,3")), rows);
});

test("typed arrays and lists of them become plain lists; other values pass as they are", () => {
  assert.deepEqual(decodeArray(new Float32Array([0.5, 2])), [0.5, 2]);
  assert.deepEqual(decodeArray([new Int8Array([1, -1]), [2]]), [[1, -1], [2]]);
  assert.equal(decodeArray("abc"), "abc");
  assert.equal(decodeArray(null), null);
});

test("a spec is decoded once and kept", () => {
  const s = spec(Float64Array, "f8", [1, 2]);
  assert.equal(decodedOf(s), decodedOf(s));
  assert.deepEqual(listOf(s), [1, 2]);
  assert.equal(listOf(null), null);
});

test("the finite extent looks into rows and specs, skipping NaN, text and infinity", () => {
  const ext = [Infinity, -Infinity];
  finiteExtent([[3, NaN], new Float32Array([-1, Infinity]), "x", spec(Float64Array, "f8", [10])], ext);
  assert.deepEqual(ext, [-1, 3]);
  const grown = [Infinity, -Infinity];
  finiteExtent(spec(Float64Array, "f8", [5, 2, 9]), grown);
  assert.deepEqual(grown, [2, 9]);
  const none = [Infinity, -Infinity];
  finiteExtent("abc", none);
  assert.deepEqual(none, [Infinity, -Infinity]);
});

test("plainCopy copies objects and lists but shares data arrays and specs", () => {
  const data = new Float32Array([1, 2]), s = spec(Float64Array, "f8", [1]);
  const v = { a: { b: [1, { c: 2 }] }, data, s };
  const copy = plainCopy(v);
  assert.deepEqual(copy, v);
  assert.notEqual(copy.a, v.a);
  assert.notEqual(copy.a.b[1], v.a.b[1]);
  assert.equal(copy.data, data);
  assert.equal(copy.s, s);
});

test("ownCopy copies typed arrays and specs too, without plotly's decoded array on a spec", () => {
  const s = Object.assign(spec(Float64Array, "f8", [1, 2], [2]), { _inputArray: [1, 2] });
  const data = new Int32Array([4]);
  const copy = ownCopy({ s, data, list: [s] });
  assert.deepEqual(copy.s, { dtype: "f8", bdata: s.bdata, shape: [2] });
  assert.notEqual(copy.s, s);
  assert.notEqual(copy.data, data);
  assert.deepEqual(Array.from(copy.data), [4]);
  assert.notEqual(copy.list[0], s);
});
