// Heatmap frames painted here while the slider moves (issue 25), over the frame on screen: each
// changed heatmap's image, a moved rectangle's path and changed tick labels. drawCells returns the
// frame's figure, or false where the full redraw must draw it (ui/chart/live.js).
import {
  axisLength, axisOffset, dataToPixel, fullLayout, fullTrace, heatmapGroups, heatmapImage, heatmapImages,
  rangeToPixel, shapePathsAt, tickLabels, traceAxes,
} from "./adapter.js";
import { decodedOf } from "./arrays.js";
import { cellScale, colourEnds } from "./colour.js";
import { GONE, composeShared, framePart, liveBase } from "./frames.js";
import { PLAIN, paintedOver } from "./painters.js";

// --- Heatmap frames painted here (issue 25): one Plotly.react of D2's six heatmaps took ~30 ms of
// the ~50 ms a floor page's whole round trip takes. While the slider moves, each changed heatmap's
// image is painted as plotly's own "fast" heatmap paints it (one pixel a cell, scaled pixelated: no
// gaps, linear axes), at the place its axes give; a moved rectangle's path and changed tick labels
// are written as plotly writes them. On release the full react draws the frame: hover reads
// plotly's values, which are the frame's again then.
const CELL_KEYS = new Set(["x", "y", "z"]);
const CELL_LAYOUT = new Set(["datarevision", "shapes", "margin"]);
const AXIS_KEY = /^[xy]axis\d*$/;

export function cellFigure(st) {
  if (st.cellsFor === st.rev) return st.cells;
  const base = liveBase(st);
  st.cellsFor = st.rev;
  st.cells = st.frames.traces.length > 0 && st.frames.traces.every(([t, keys]) => {
    const trace = base.data[t];
    return trace.type === "heatmap" && !trace.xgap && !trace.ygap && !trace.zsmooth && keys.every((k) => CELL_KEYS.has(k));
  }) && st.frames.layout.every((k) => CELL_LAYOUT.has(k) || AXIS_KEY.test(k));
  return st.cells;
}

// Trace t's image: plotly's, or where plotly drew none (the trace had no rows: D2's past rows at
// step 0) one of our own in the same layer, under the traces drawn after t. Ours are taken away
// before plotly draws again (dropCells).
function cellImage(host, t, trace) {
  const groups = heatmapGroups(host);
  if (groups.has(t)) return heatmapImage(groups.get(t));
  const own = host.__cells && host.__cells.get(t);
  if (own && own.isConnected) return own;
  const same = [...groups.entries()].filter(([k]) => {
    const other = fullTrace(host, k);
    return other && (other.xaxis || "x") === (trace.xaxis || "x") && (other.yaxis || "y") === (trace.yaxis || "y");
  });
  if (!same.length) return null;
  const above = same.filter(([k]) => k > t).sort((a, b) => a[0] - b[0]);
  const layer = same[0][1].parentNode;
  const ns = "http://www.w3.org/2000/svg";
  const g = document.createElementNS(ns, "g"), image = document.createElementNS(ns, "image");
  g.setAttribute("class", "anatomy-cells");
  image.setAttribute("preserveAspectRatio", "none");
  image.setAttribute("style", "image-rendering: pixelated; opacity: " + (trace.opacity ?? 1));
  g.appendChild(image);
  layer.insertBefore(g, above.length ? above[0][1] : null);
  (host.__cells || (host.__cells = new Map())).set(t, image);
  return image;
}

export function dropCells(host) {
  host.querySelectorAll(".anatomy-cells").forEach((g) => g.remove());
  heatmapImages(host).forEach((image) => { image.style.display = ""; });
  host.__cells = null;
}

// Cell centres (numbers, evenly spaced, or none: 0, 1, ...) -> the bricks' two outer edges.
export function cellEdges(values, n) {
  const v = values == null ? Array.from({ length: n }, (_, k) => k) : Array.from(decodedOf(values));
  if (v.length !== n || !v.every((x) => typeof x === "number")) return null;
  const step = n > 1 ? (v[n - 1] - v[0]) / (n - 1) : 1;
  for (let k = 1; k < n; k++) if (Math.abs(v[k] - v[k - 1] - step) > Math.abs(step) / 100) return null;
  return [v[0] - step / 2, v[n - 1] + step / 2];
}

// The <image> of trace t painted from its frame values; false where plotly must draw it.
function paintCells(host, t, trace, st) {
  const full = fullTrace(host, t) || {};
  const image = cellImage(host, t, trace);
  if (!image || !/pixelated/.test(image.getAttribute("style") || "")) return false;
  const [xa, ya] = traceAxes(fullLayout(host), trace);
  if (!xa || !ya || xa.type !== "linear" || ya.type !== "linear") return false;
  const z = decodedOf(trace.z);
  if (!Array.isArray(z) && !ArrayBuffer.isView(z)) return false;
  if (!z.length || !z[0] || !z[0].length) {     // no rows this frame: nothing drawn
    image.style.display = "none";
    return true;
  }
  image.style.display = "";
  const rows = z.length, cols = z[0].length;
  const xe = cellEdges(trace.x, cols), ye = cellEdges(trace.y, rows);
  if (!xe || !ye || !cols) return false;
  let left = dataToPixel(xa, xe[0]), right = dataToPixel(xa, xe[1]), top = dataToPixel(ya, ye[0]), bottom = dataToPixel(ya, ye[1]);
  if (![left, right, top, bottom].every(Number.isFinite)) return false;
  const flipX = right < left, flipY = bottom < top;
  if (flipX) [left, right] = [right, left];
  if (flipY) [top, bottom] = [bottom, top];
  if (left >= axisLength(xa) || right <= 0 || top >= axisLength(ya) || bottom <= 0) return false;
  // zmin and zmax as the trace gives them, or (zauto) as plotly finds them: this frame's extent
  const ends = colourEnds(z, trace.zmin, trace.zmax);
  if (!ends) return false;
  const [lo, hi] = ends;
  const scales = st.cellScales || (st.cellScales = {});
  const key = [st.rev, t, lo, hi].join(":");
  // plotly's full trace has no colour scale where the trace had no rows: the figure's own then
  const stops = [full.colorscale, trace.colorscale].find(Array.isArray);
  if (!stops) return false;
  const colour = scales[key] || (scales[key] = cellScale(stops, full.reversescale ?? trace.reversescale, lo, hi));
  const canvas = document.createElement("canvas");
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(cols, rows), px = img.data;
  for (let r = 0; r < rows; r++) {
    const line = z[r], y = flipY ? rows - 1 - r : r;
    for (let c = 0; c < cols; c++) {
      const rgba = colour(line[c]);
      if (!rgba) continue;
      const o = (y * cols + (flipX ? cols - 1 - c : c)) * 4;
      px[o] = rgba[0]; px[o + 1] = rgba[1]; px[o + 2] = rgba[2]; px[o + 3] = rgba[3];
    }
  }
  ctx.putImageData(img, 0, 0);
  image.setAttributeNS("http://www.w3.org/1999/xlink", "href", canvas.toDataURL("image/png"));   // as d3 sets it
  image.setAttribute("x", left);
  image.setAttribute("y", top);
  image.setAttribute("width", Math.round(right - left));
  image.setAttribute("height", Math.round(bottom - top));
  return true;
}

// A changed rectangle on data axes moved by hand: plotly's relayout of a shape on data axes replots
// every trace (a shape may widen an autorange), ~30 ms on D2. Its path as plotly writes it.
const SHAPE_MOVES = new Set(["x0", "x1", "y0", "y1"]);
function shapeMover(host, j, shape, then) {
  for (const a of new Set([...Object.keys(shape), ...Object.keys(then)])) {
    if (JSON.stringify(shape[a]) !== JSON.stringify(then[a]) && !SHAPE_MOVES.has(a)) return null;
  }
  const fl = fullLayout(host), name = (r, letter) => (r || letter).replace(/^([xy])/, "$1axis");
  const xa = fl[name(shape.xref, "x")], ya = fl[name(shape.yref, "y")];
  const paths = shapePathsAt(host, j);
  if ((shape.type || "rect") !== "rect" || !xa || !ya || xa.type !== "linear" || ya.type !== "linear"
      || /paper|domain/.test(`${shape.xref}${shape.yref}`) || shape.xsizemode === "pixel"
      || shape.ysizemode === "pixel" || paths.length !== 1) return null;
  const x0 = axisOffset(xa) + rangeToPixel(xa, shape.x0), x1 = axisOffset(xa) + rangeToPixel(xa, shape.x1);
  const y0 = axisOffset(ya) + rangeToPixel(ya, shape.y0), y1 = axisOffset(ya) + rangeToPixel(ya, shape.y1);
  if (![x0, x1, y0, y1].every(Number.isFinite)) return null;
  return () => paths[0].setAttribute("d", `M${x0},${y0}H${x1}V${y1}H${x0}Z`);
}

// New tick label texts on an axis whose tick values stay: the label elements written again.
function tickWriter(host, name, now) {
  const ax = fullLayout(host)[name];
  if (!ax) return null;
  if (!ax.showticklabels || ax.visible === false) return () => {};
  const texts = now.ticktext, vals = now.tickvals;
  if (!Array.isArray(texts) || !Array.isArray(vals) || texts.some((t) => typeof t !== "string" || PLAIN.test(t))) return null;
  const set = [];
  for (const [el, d] of tickLabels(host, ax)) {
    const k = d ? vals.indexOf(d.x) : -1;
    if (k < 0 || !el || el.querySelector("tspan")) return null;
    set.push([el, d, texts[k]]);
  }
  if (set.length !== vals.length) return null;
  return () => { for (const [el, d, text] of set) { el.textContent = text; d.text = text; } };
}

export function drawCells(host, st, i, Plotly) {
  const was = paintedOver(host, st, cellFigure);
  if (was === null) return false;
  const part = framePart(st, i), before = framePart(st, was);
  const writes = [];
  for (const k of Object.keys(part.layout)) {
    const now = part.layout[k], then = before.layout[k];
    if (k === "datarevision" || JSON.stringify(now) === JSON.stringify(then)) continue;
    if (now === GONE || then === GONE || k === "margin") return false;   // a new plot area: react
    if (k === "shapes") {
      if (!Array.isArray(now) || !Array.isArray(then) || now.length !== then.length) return false;
      for (let j = 0; j < now.length; j++) {
        if (JSON.stringify(now[j]) === JSON.stringify(then[j])) continue;
        const move = shapeMover(host, j, now[j], then[j]);
        if (!move) return false;
        writes.push(move);
      }
      continue;
    }
    // an axis: only its tick labels' texts may change
    for (const a of new Set([...Object.keys(now), ...Object.keys(then)])) {
      if (a !== "ticktext" && JSON.stringify(now[a]) !== JSON.stringify(then[a])) return false;
    }
    const write = tickWriter(host, k, now);
    if (!write) return false;
    writes.push(write);
  }
  const fig = composeShared(st, i);
  for (const [t] of part.data) if (!paintCells(host, t, fig.data[t], st)) return false;
  for (const write of writes) write();
  st.fastDrawn = true;
  return fig;
}
