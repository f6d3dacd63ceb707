// Live frames (ui/live.py): a chart's frames, one per value of its slider, as the server sends them
// ({pool, traces, layout, frames}: each frame the changing keys of some traces and of the layout,
// an array that grows with the value sent once in the pool, a frame taking its first rows), decoded
// and laid over the server's figure. Pure functions of the live state ``st`` (ui/chart/live.js):
// st.frames, st.baseText; the decoded parts are kept on it.
import { TYPED, base64Bytes, plainCopy } from "./arrays.js";

// A pooled array (ui/live.py: an array that grows with the value), decoded once, and the part
// of it a frame shows: its first rows (and columns), rows blank[0]..blank[1]-1 blank (NaN).
export function prefixRows(st, ref) {
  const pool = st.pool || (st.pool = []);
  let full = pool[ref.prefix];
  if (!full) {
    const spec = st.frames.pool[ref.prefix];
    if (Array.isArray(spec)) {
      full = pool[ref.prefix] = { list: spec };
    } else {
      const bytes = base64Bytes(spec.bdata);
      const Kind = TYPED[spec.dtype] || Float64Array;
      const shape = typeof spec.shape === "string" ? spec.shape.split(",").map(Number) : (spec.shape || []);
      full = pool[ref.prefix] = { flat: new Kind(bytes.buffer, 0, bytes.length / Kind.BYTES_PER_ELEMENT),
        cols: shape.length > 1 ? shape[1] : 0, Kind };
    }
  }
  if (full.list) return full.list.slice(0, ref.rows);
  const [a, b] = ref.blank || [0, 0];
  if (!full.cols) {
    const out = full.flat.slice(0, ref.rows);
    if (b > a) out.fill(NaN, a, b);
    return out;
  }
  const cols = ref.cols || full.cols;
  const rows = [];
  for (let r = 0; r < ref.rows; r++) {
    rows.push(r >= a && r < b ? new full.Kind(cols).fill(NaN) : full.flat.slice(r * full.cols, r * full.cols + cols));
  }
  return rows;
}

const REF_KEYS = new Set(["prefix", "rows", "cols", "blank"]);

// A frame's value, copied (presenter mode changes fonts in place), its pooled arrays filled in.
export function resolve(st, v) {
  if (!v || typeof v !== "object") return v;
  if (v.prefix !== undefined && v.rows !== undefined && Object.keys(v).every((k) => REF_KEYS.has(k))) {
    return prefixRows(st, v);
  }
  if (Array.isArray(v)) return v.map((x) => resolve(st, x));
  if (typeof v.bdata === "string") return structuredClone(v);
  const out = {};
  for (const k of Object.keys(v)) out[k] = resolve(st, v[k]);
  return out;
}

// The figure of frame i: the server's figure (any frame's) with frame i's changing keys.
// Presenter mode enlarges fonts in place (presenterFigure): it gets a deep copy, as before.
export function composeFrame(st, i) {
  const figure = JSON.parse(st.baseText);
  const frame = st.frames.frames[i];
  st.frames.traces.forEach(([t, keys], j) => {
    const trace = figure.data[t];
    const src = frame.data[j];
    for (const k of keys) {
      if (k in src) trace[k] = resolve(st, src[k]);
      else delete trace[k];
    }
  });
  for (const k of st.frames.layout) {
    if (k in frame.layout) figure.layout[k] = structuredClone(frame.layout[k]);
    else delete figure.layout[k];
  }
  return figure;
}

// --- The cheap redraw (issue 25: >= 30 figure changes a second while dragged). The base figure is
// parsed once per server figure and each frame's changing values decoded once (framePart); a frame
// is the base with those values laid over it, unchanged traces shared, not parsed again.
export const GONE = Symbol("gone");   // a key the frame does not have

export function liveBase(st) {
  if (st.baseFor !== st.baseText) {
    st.base = JSON.parse(st.baseText);
    st.baseFor = st.baseText;
  }
  return st.base;
}

// Frame i's changing values, decoded once per frames: {data: [[trace, {key: value | GONE}]],
// layout: {key: value | GONE}}.
export function framePart(st, i) {
  const parts = st.parts || (st.parts = []);
  if (parts[i]) return parts[i];
  const frame = st.frames.frames[i];
  const data = st.frames.traces.map(([t, keys], j) => {
    const src = frame.data[j], out = {};
    for (const k of keys) out[k] = k in src ? resolve(st, src[k]) : GONE;
    return [t, out];
  });
  const layout = {};
  for (const k of st.frames.layout) layout[k] = k in frame.layout ? frame.layout[k] : GONE;
  return (parts[i] = { data, layout });
}

// Frame i as the base figure with its values laid over it: changed traces and the layout are new
// objects, unchanged traces the base's own.
export function composeShared(st, i) {
  const base = liveBase(st), part = framePart(st, i);
  const data = base.data.slice();
  for (const [t, keys] of part.data) {
    const trace = Object.assign({}, base.data[t]);
    for (const k of Object.keys(keys)) {
      if (keys[k] === GONE) delete trace[k];
      else trace[k] = plainCopy(keys[k]);
    }
    data[t] = trace;
  }
  const layout = Object.assign({}, base.layout);
  for (const k of Object.keys(part.layout)) {
    if (part.layout[k] === GONE) delete layout[k];
    else layout[k] = plainCopy(part.layout[k]);
  }
  return { data, layout };
}
