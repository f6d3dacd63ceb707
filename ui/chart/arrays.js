// Plotly's arrays as they travel: typed arrays arrive as {dtype, bdata (base64), shape}. Decoding
// them, their extent, and the copies a figure's values are handed to plotly in. Pure functions.

export const TYPED = { f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
  u2: Uint16Array, i4: Int32Array, u4: Uint32Array };

// The bytes of a base64 string.
export const base64Bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

// A plotly array as a JS array (a 2-d spec as a list of rows).
export function decodeArray(v) {
  if (ArrayBuffer.isView(v)) return Array.from(v);
  if (Array.isArray(v)) return v.map((r) => (ArrayBuffer.isView(r) ? Array.from(r) : r));
  if (!v || typeof v !== "object" || typeof v.bdata !== "string") return v;
  const bytes = base64Bytes(v.bdata);
  const Kind = TYPED[v.dtype] || Float64Array;
  const flat = Array.from(new Kind(bytes.buffer, 0, bytes.length / Kind.BYTES_PER_ELEMENT));
  const shape = typeof v.shape === "string" ? v.shape.split(",").map(Number) : v.shape;
  if (!shape || shape.length < 2) return flat;
  const cols = shape[1];
  const rows = [];
  for (let i = 0; i < flat.length; i += cols) rows.push(flat.slice(i, i + cols));
  return rows;
}

// A spec decoded once (kept per spec object); anything else as it is.
const DECODED = new WeakMap();
export function decodedOf(v) {
  if (!v || typeof v !== "object" || typeof v.bdata !== "string") return v;
  if (!DECODED.has(v)) DECODED.set(v, decodeArray(v));
  return DECODED.get(v);
}

export const listOf = (v) => (v == null ? null : Array.from(decodedOf(v)));

// The finite numbers' extent, nested lists and specs included, widened into ``out`` ([lo, hi]).
export function finiteExtent(values, out) {
  if (!values || typeof values === "string") return;
  values = decodedOf(values);
  if (!Array.isArray(values) && !ArrayBuffer.isView(values)) return;
  for (const v of values) {
    if (ArrayBuffer.isView(v) || Array.isArray(v)) finiteExtent(v, out);
    else if (typeof v === "number" && Number.isFinite(v)) {
      out[0] = Math.min(out[0], v);
      out[1] = Math.max(out[1], v);
    }
  }
}

// A copy of plain objects and arrays down to typed arrays and numbers, which are shared:
// plotly writes into the objects it is given (restyle, relayout), never into a data array.
export function plainCopy(v) {
  if (!v || typeof v !== "object" || ArrayBuffer.isView(v) || typeof v.bdata === "string") return v;
  if (Array.isArray(v)) return v.map(plainCopy);
  const out = {};
  for (const k of Object.keys(v)) out[k] = plainCopy(v[k]);
  return out;
}

// Everything copied, typed-array specs ({dtype, bdata, shape}) included: Plotly.animate deep-extends
// the trace it holds with the frame's (Lib.extendDeepNoArrays), so a spec shared with a decoded frame
// got the next frame's bdata written into it, and that frame showed its neighbour's data when the
// slider came back to it (E1's load bars at 0.75 showed 0.5's counts). Plotly also leaves its decoded
// array on a spec (_inputArray): a copy is the spec alone.
export function ownCopy(v) {
  if (ArrayBuffer.isView(v)) return v.slice();
  if (!v || typeof v !== "object") return v;
  if (typeof v.bdata === "string") {
    const spec = { dtype: v.dtype, bdata: v.bdata };
    if (v.shape !== undefined) spec.shape = v.shape;
    return spec;
  }
  if (Array.isArray(v)) return v.map(ownCopy);
  const out = {};
  for (const k of Object.keys(v)) out[k] = ownCopy(v[k]);
  return out;
}
