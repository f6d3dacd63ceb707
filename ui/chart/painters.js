// Live frames drawn over the frame on screen while the slider moves (issue 25), where plotly's own
// full redraw (Plotly.react) is too slow for a drag: scatter and bar frames animated by plotly with no
// redraw (drawFast), scatter frames written into plotly's SVG (drawPoints). Heatmaps: ./cells.js.
// Each returns the frame's figure, or false where the full redraw must draw it (ui/chart/live.js).
import {
  barPaths, dataToPixel, axisLength, fullLayout, fullTrace, legendText, linePaths, markerPaths,
  pointLabels, scatterGroup, setFullTitle, titleElements, traceAxes,
} from "./adapter.js";
import { listOf, ownCopy, plainCopy, finiteExtent } from "./arrays.js";
import { cellScale, colourEnds, rgbaOf } from "./colour.js";
import { GONE, composeShared, framePart, liveBase } from "./frames.js";

// What the fast path may change: traces plotly moves without a full redraw (Plotly.animate with
// redraw off updates only the changed traces), and layout keys a relayout restyles alone.
const FAST_TYPES = new Set(["scatter", "bar"]);
const FAST_LAYOUT = new Set(["datarevision", "title", "annotations", "shapes"]);

function fastFigure(st) {
  if (st.fastFor === st.rev) return st.fast;
  const base = liveBase(st);
  st.fastFor = st.rev;
  st.fast = st.frames.traces.every(([t, keys]) => FAST_TYPES.has(base.data[t].type || "scatter")
      && !keys.some((k) => k === "xaxis" || k === "yaxis" || k === "type"))
    && st.frames.layout.every((k) => FAST_LAYOUT.has(k));
  return st.fast;
}

// Whether frame ``fig`` fits the axes on screen: an autoranged axis the frame's data would move
// (data past its ends, or filling less than half of it), or a category axis whose labels change,
// needs the full redraw that ranges it again.
function fitsAxes(host, fig, changed) {
  const full = fullLayout(host);
  const seen = new Set();
  for (const t of changed) {
    const trace = fig.data[t];
    for (const letter of ["x", "y"]) {
      const id = trace[letter + "axis"] || letter;
      const name = letter + "axis" + id.slice(1);
      if (seen.has(name)) continue;
      seen.add(name);
      const ax = full[name];
      if (!ax) return false;
      if (ax.type === "category" || ax.type === "multicategory") {
        const before = host.data[t][letter], now = trace[letter];
        if (before !== now && JSON.stringify(Array.from(before || [])) !== JSON.stringify(Array.from(now || []))) return false;
        continue;
      }
      if (!ax.autorange) continue;
      const ext = [Infinity, -Infinity];
      fig.data.forEach((other, j) => {
        if ((other[letter + "axis"] || letter) !== id || other.visible === false) return;
        finiteExtent(other[letter], ext);
        const bar = (other.type || "scatter") === "bar";
        const along = (other.orientation === "h") === (letter === "y");
        if (bar && !along) { ext[0] = Math.min(ext[0], 0); ext[1] = Math.max(ext[1], 0); }
        if (bar && along && other.width != null) {
          const w = typeof other.width === "number" ? [other.width] : other.width;
          const wide = [Infinity, -Infinity];
          finiteExtent(w, wide);
          if (Number.isFinite(wide[1])) { ext[0] -= wide[1]; ext[1] += wide[1]; }
        }
      });
      if (!Number.isFinite(ext[0])) continue;
      const log = ax.type === "log";
      if (log && ext[0] <= 0) return false;
      const lo = log ? Math.log10(ext[0]) : ext[0], hi = log ? Math.log10(ext[1]) : ext[1];
      const [r0, r1] = [Math.min(...ax.range), Math.max(...ax.range)];
      if (lo < r0 || hi > r1 || (r1 - r0 > 0 && (hi - lo) < 0.5 * (r1 - r0))) return false;
    }
  }
  return true;
}

// A title or legend name of plain text (no markup but <br>) is set in the SVG plotly drew, and in
// the layout plotly holds (what an export draws again): a relayout of the title alone took 5-9 ms,
// more than the traces. The settling full draw after the motion lays them out again.
const MARKUP = /<(?!br\s*\/?>)[^>]*>|&/i;
export const PLAIN = /[<&]/;   // text written into a label as it is: no markup, no entity
function setTitle(host, title) {
  const text = title && typeof title === "object" ? title.text : title;
  const drawn = titleElements(host);
  if (typeof text !== "string" || !drawn || MARKUP.test(text)) return false;
  const lines = text.split(/<br\s*\/?>/i);
  const { el, lines: tspans } = drawn;
  if (lines.length > 1 ? tspans.length !== lines.length : tspans.length > 1 || drawn.other) return false;
  if (lines.length > 1) tspans.forEach((t, j) => { t.textContent = lines[j]; });
  else (tspans[0] || el).textContent = lines[0];
  host.layout.title = plainCopy(title);
  setFullTitle(host, text);
  return true;
}

function setNames(host, changed, fig) {
  for (const t of changed) {
    const name = fig.data[t].name;
    if (name === undefined || fig.data[t].showlegend === false) continue;
    if (typeof name !== "string" || PLAIN.test(name)) return false;
    const el = legendText(host, t);
    if (!el) return false;
    // A name of another width moves the entries after it (and may wrap the legend): plotly lays it
    // out again (C3's "q at position m = 102" ran past the edge of a legend laid out for "m = 12").
    const width = el.getComputedTextLength();
    el.textContent = name;
    if (Math.abs(el.getComputedTextLength() - width) > 0.01) return false;
  }
  return true;
}

// The bar traces that share a subplot with a changed bar trace (all of them are animated together),
// or null when a changed bar's colours are not plain colours or show in the legend (plotly draws those).
function barsAlong(fig, changed) {
  const place = (trace) => (trace.xaxis || "x") + (trace.yaxis || "y");
  const isBar = (trace) => trace.type === "bar";
  const moved = changed.filter((t) => isBar(fig.data[t]));
  for (const t of moved) {
    const colour = (fig.data[t].marker || {}).color;
    const list = colour == null || typeof colour === "string" ? null : listOf(colour);
    if (list && (fig.data[t].showlegend !== false || !list.every((c) => typeof c === "string"))) return null;
  }
  const places = new Set(moved.map((t) => place(fig.data[t])));
  return fig.data.map((trace, t) => t).filter((t) => isBar(fig.data[t]) && places.has(place(fig.data[t])));
}

// Each bar's fill as plotly's style gives it, from the frame's marker colour (one, or one a bar).
function barFills(host, fig, changed) {
  for (const [t, paths] of barPaths(host)) {
    if (!changed.includes(t)) continue;
    const colour = (fig.data[t].marker || {}).color;
    if (colour == null) continue;
    const list = typeof colour === "string" ? null : listOf(colour);
    for (const [k, p] of paths) {
      const c = list ? list[k] : colour;
      if (typeof c !== "string") continue;
      const [r, gr, b, a] = rgbaOf(c);
      p.style.fill = `rgb(${r}, ${gr}, ${b})`;
      p.style.fillOpacity = String(a);
    }
  }
}

// Frame i drawn over the frame on screen, when it can be: Plotly.animate with no transition and no
// redraw replots the changed traces only (~4 ms against Plotly.react's 11-18 ms on this machine);
// a relayout sets the title (and a legend redraw the names). False: use Plotly.react.
export function drawFast(host, st, i, Plotly) {
  const shown = st.onScreen;
  // window.__anatomyFullRedraw = true turns it off (bench_lessons --drag measures both ways).
  if (window.__anatomyFullRedraw === true) return false;
  if (st.data.present || !shown || shown.rev !== st.rev || shown.present || !fullLayout(host) || !fastFigure(st)) return false;
  const part = framePart(st, i);
  const fig = composeShared(st, i);
  const changed = part.data.map(([t]) => t);
  let names = false;
  for (const [t, keys] of part.data) {
    for (const k of Object.keys(keys)) if (keys[k] === GONE) return false;
    if ("visible" in keys && keys.visible !== host.data[t].visible) return false;
    if ("name" in keys && keys.name !== host.data[t].name) names = true;
  }
  for (const k of Object.keys(part.layout)) if (part.layout[k] === GONE) return false;
  if (!fitsAxes(host, fig, changed)) return false;
  // plotly extends the traces and the layout it holds in place: give it objects of its own.
  for (const t of changed) host.data[t] = ownCopy(host.data[t]);
  host.layout = Object.assign({}, host.layout);
  const data = part.data.map(([t, keys]) => {
    const out = {};
    // Copies (ownCopy): plotly extends the trace it holds with these, and a later animation with
    // the next frame's; the frame's own decoded values are drawn again when the slider comes back.
    for (const k of Object.keys(keys)) out[k] = ownCopy(fig.data[t][k]);
    return out;
  });
  // Bars: plotly's animation of some of a subplot's bar traces draws those alone (it takes the others'
  // groups out: E2's frozen bars vanished while the rank moved) and styles no bar (D1's colours stayed
  // those of the first frame). So every bar trace of the subplot is animated, and the fills written after.
  const bars = barsAlong(fig, changed);
  if (bars === null) return false;
  const traces = changed.slice();
  for (const t of bars) if (!traces.includes(t)) { traces.push(t); data.push({}); }
  // A newer frame interrupts this one ("immediate"): its promise is then rejected, and that is no error.
  // A full draw waits for it (st.animating): plotly applies an animation on a later animation frame,
  // and one landing after the react on release would leave the frame before it on screen.
  const done = Plotly.animate(host, { data, traces },
    { transition: { duration: 0 }, frame: { duration: 0, redraw: false }, mode: "immediate" })
    .then(() => { if (host.dataset.frame === String(i)) barFills(host, fig, changed); }).catch(() => {});
  st.animating = done;
  done.then(() => { if (st.animating === done) st.animating = null; });
  const relayout = {};
  for (const k of Object.keys(part.layout)) {
    if (k === "datarevision" || (k === "title" && setTitle(host, fig.layout.title))) continue;
    relayout[k] = plainCopy(part.layout[k]);
  }
  if (names && !setNames(host, changed, fig)) relayout["legend.orientation"] = fullLayout(host).legend.orientation;
  if (Object.keys(relayout).length) Plotly.relayout(host, relayout).catch(() => {});
  // The data plotly holds is frame i's; its datarevision too, or a later react of the frame first
  // drawn would see no change.
  host.layout.datarevision = fig.layout.datarevision;
  st.fastDrawn = true;
  return fig;
}

// The frame on screen a painter draws over (its index), or null where plotly must draw: the full
// redraw asked for (window.__anatomyFullRedraw), presenter mode, a screen of other frames, or
// frames the painter cannot draw (``fits``).
export function paintedOver(host, st, fits) {
  if (window.__anatomyFullRedraw === true) return null;
  const shown = st.onScreen;
  if (st.data.present || !shown || shown.rev !== st.rev || shown.present || !fullLayout(host) || !fits(st)) return null;
  const was = Number(host.dataset.frame);
  return Number.isInteger(was) && st.frames.frames[was] ? was : null;
}

// --- Scatter frames written here (issue 25). Plotly.animate of C3's plane (six scatter traces)
// spent ~18 ms of plotly's time a frame (the defaults, the calc and every marker's style of every
// trace, the unchanged ones too), and a drag showed 23-27 figure changes a second. While the slider
// moves, a frame whose changed traces are scatter lines, markers or text on fixed axes (linear or
// log) is written into the SVG plotly drew: each marker's place (and, from a colour array, its fill
// as the marker colour scale gives it), the line's path through every point, each label's place and
// text, the legend names and the title. On release the full react draws the frame (plotly's own path,
// which leaves out points on a straight run; hover reads the frame's values then).
const POINT_KEYS = new Set(["x", "y", "marker", "customdata", "hovertext", "hovertemplate", "text", "name"]);
const POINT_LAYOUT = new Set(["datarevision", "title"]);

export function pointFigure(st) {
  if (st.pointsFor === st.rev) return st.points;
  const base = liveBase(st);
  st.pointsFor = st.rev;
  st.points = st.frames.traces.length > 0 && st.frames.traces.every(([t, keys]) =>
    (base.data[t].type || "scatter") === "scatter" && keys.every((k) => POINT_KEYS.has(k)))
    && st.frames.layout.every((k) => POINT_LAYOUT.has(k));
  return st.points;
}

const px2 = (v) => Math.round(v * 100) / 100;   // plotly writes places to 2 decimals
const withoutColour = (marker) => JSON.stringify(Object.assign({}, marker || {}, { color: 0 }));

// Marker k's fill from the frame's colour values (numbers on the trace's colour scale; cmin..cmax
// as given, else their extent, as plotly finds it), or null where each marker keeps its own.
function markerFills(full, marker) {
  const colours = Array.isArray(marker.color) || ArrayBuffer.isView(marker.color) || (marker.color && marker.color.bdata)
    ? listOf(marker.color) : null;
  if (!colours) return typeof marker.color === "object" ? undefined : null;
  if (colours.every((c) => typeof c === "string")) return colours.map((c) => { const [r, g, b, a] = rgbaOf(c); return [r, g, b, a * 255]; });
  const scale = full.marker && full.marker.colorscale;
  if (!Array.isArray(scale) || marker.cmid != null || !colours.every((c) => typeof c === "number")) return undefined;
  const ends = colourEnds(colours, marker.cmin, marker.cmax);
  if (!ends) return undefined;
  const colour = cellScale(scale, full.marker.reversescale, ends[0], ends[1]);
  return colours.map((c) => colour(c));
}

// What writes trace t of the frame into plotly's SVG, or null where plotly must draw it.
function pointWriter(host, t, trace, then) {
  const full = fullTrace(host, t), g = scatterGroup(host, t);
  if (!full || !g || full.visible !== true || (full.fill && full.fill !== "none")) return null;
  if ((full.error_x && full.error_x.visible) || (full.error_y && full.error_y.visible)) return null;
  const [xa, ya] = traceAxes(fullLayout(host), full);
  // (dataToPixel takes data units on a log axis too: plotly keeps a log axis' calc values unlogged.)
  const kinds = ["linear", "log"];
  if (!xa || !ya || !kinds.includes(xa.type) || !kinds.includes(ya.type) || xa.autorange || ya.autorange) return null;
  if (withoutColour(trace.marker) !== withoutColour(then.marker)) return null;   // sizes, symbols: plotly's
  const xs = listOf(trace.x), ys = listOf(trace.y);
  if (!xs || !ys || xs.length !== ys.length) return null;
  const places = [];   // [index, x px, y px] of every point plotly draws (both coordinates numbers)
  xs.forEach((x, k) => {
    const X = typeof x === "number" ? dataToPixel(xa, x) : NaN, Y = typeof ys[k] === "number" ? dataToPixel(ya, ys[k]) : NaN;
    if (Number.isFinite(X) && Number.isFinite(Y)) places.push([k, px2(X), px2(Y)]);
  });
  const mode = full.mode || "";
  const writes = [];
  if (mode.includes("lines")) {
    const lines = linePaths(g);
    const inside = places.every(([, X, Y]) => X >= 0 && X <= axisLength(xa) && Y >= 0 && Y <= axisLength(ya));
    if (full.line.shape !== "linear" || lines.length !== 1 || places.length !== xs.length || places.length < 2 || !inside) return null;
    const d = "M" + places.map(([, X, Y]) => X + "," + Y).join("L");
    writes.push(() => lines[0].setAttribute("d", d));
  }
  if (mode.includes("markers")) {
    const nodes = markerPaths(g);
    const perPoint = ["size", "symbol", "opacity", "angle"].some((k) => Array.isArray(full.marker[k]))
      || (full.marker.line && (Array.isArray(full.marker.line.color) || Array.isArray(full.marker.line.width)));
    if (!nodes.length || (perPoint && nodes.length !== places.length)) return null;
    const fills = markerFills(full, trace.marker || {});
    if (fills === undefined) return null;
    writes.push(() => {
      const parent = nodes[0].parentNode;
      while (nodes.length < places.length) nodes.push(parent.appendChild(nodes[nodes.length - 1].cloneNode(true)));
      while (nodes.length > places.length) nodes.pop().remove();
      places.forEach(([k, X, Y], j) => {
        nodes[j].setAttribute("transform", `translate(${X},${Y})`);
        const rgba = fills && fills[k];
        if (fills) {
          nodes[j].style.fill = rgba ? `rgb(${rgba[0]}, ${rgba[1]}, ${rgba[2]})` : "";
          nodes[j].style.fillOpacity = rgba ? String(Math.round(rgba[3] / 255 * 1000) / 1000) : "";
        }
      });
    });
  }
  if (mode.includes("text")) {
    const texts = Array.isArray(trace.text) ? trace.text : null;
    const shown = places.filter(([k]) => { const s = texts ? texts[k] : trace.text; return s || s === 0; });
    const els = pointLabels(g);
    if (els.length !== shown.length || els.some((el) => el.querySelector("tspan"))) return null;
    const strings = shown.map(([k]) => String(texts ? texts[k] : trace.text));
    if (strings.some((s) => PLAIN.test(s))) return null;
    writes.push(() => shown.forEach(([, X, Y], j) => {
      els[j].setAttribute("x", X);
      els[j].setAttribute("y", Y);
      els[j].textContent = strings[j];
      els[j].setAttribute("data-unformatted", strings[j]);
    }));
  }
  return writes;
}

export function drawPoints(host, st, i) {
  const was = paintedOver(host, st, pointFigure);
  if (was === null) return false;
  const fig = composeShared(st, i), then = composeShared(st, was);
  const part = framePart(st, i);
  const writes = [];
  for (const [t] of part.data) {
    const w = pointWriter(host, t, fig.data[t], then.data[t]);
    if (!w) return false;
    writes.push(...w);
  }
  const renamed = part.data.map(([t]) => t).filter((t) => fig.data[t].name !== then.data[t].name);
  if (renamed.length && !setNames(host, renamed, fig)) return false;
  if (JSON.stringify(fig.layout.title) !== JSON.stringify(then.layout.title) && !setTitle(host, fig.layout.title)) return false;
  for (const write of writes) write();
  st.fastDrawn = true;
  st.pointsDrawn = true;
  return fig;
}
