// A clickable chart chosen from by keyboard (issue 43 §2): what a click on a point sends (its
// customdata, ui/chart.py's on_select), sent by Enter or Space on a point reached with the arrow
// keys. The chart gets a focusable layer over it (pointer events pass through to plotly): a listbox
// whose one option is the point the keyboard is on, named for a screen reader (aria-activedescendant),
// and drawn on the chart as an outlined box. The points and the moves are pure functions (tested by
// tests/js/pick.test.mjs); where a point is on the screen is read through ./adapter.js only.
import {
  axisLength, axisOffset, barPaths, dataToCalc, dataToPixel, fullLayout, fullTrace, plotArea, traceAxes,
} from "./adapter.js";
import { decodedOf } from "./arrays.js";
import { axisTitle, short } from "./describe.js";

const at = (list, i) => (list && list[i] != null ? list[i] : null);

// A value after its axis' title (describe.js: axisTitle), for the label of a point.
const named = (title, value) => (title ? `${title} ${value}` : String(value));

// Every point a click could send, once each: [{trace, kind, at, value, x, y, label}], ``at`` the
// point's index ([row, col] in a heatmap, the indices of its points in a scatter trace), ``x`` and
// ``y`` where plotly places it (data coordinates; a scatter group's first point), ``label`` what a
// screen reader says for it. A bar drawn twice at one place (D1's two overlaid traces) is one point.
// Example: pickPoints({data: [{type: "bar", x: ["a", "b"], y: [0.7, 0.3], customdata: [5, 9]}]})
//   -> [{trace: 0, kind: "bar", at: 0, value: "5", x: "a", y: 0.7, label: "a: 0.7"}, {... value: "9", label: "b: 0.3"}]
export function pickPoints(figure) {
  const layout = (figure && figure.layout) || {};
  const out = [], seen = new Set();
  const add = (p) => {
    const key = `${p.value}@${p.kind === "bar" ? p.category : p.x + "," + p.y}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(p);
  };
  ((figure && figure.data) || []).forEach((trace, t) => {
    if (trace.visible === false || trace.customdata == null) return;
    const data = decodedOf(trace.customdata);
    if (trace.type === "heatmap") {
      const z = decodedOf(trace.z) || [], xs = decodedOf(trace.x), ys = decodedOf(trace.y);
      const xTitle = axisTitle(layout, trace, "x"), yTitle = axisTitle(layout, trace, "y");
      (data || []).forEach((row, r) => (decodedOf(row) || []).forEach((value, c) => {
        if (value == null) return;
        const x = xs ? at(xs, c) : (trace.x0 || 0) + c * (trace.dx || 1);
        const y = ys ? at(ys, r) : (trace.y0 || 0) + r * (trace.dy || 1);
        const v = at(decodedOf(at(z, r)), c);
        const where = [named(xTitle, xs ? x : c), named(yTitle, ys ? y : r)].join(", ");
        const label = (trace.name ? trace.name + ": " : "") + where + (Number.isFinite(v) ? ": " + short(v) : "");
        add({ trace: t, kind: "heatmap", at: [r, c], value: String(value), x, y, label });
      }));
    } else if (trace.type === "bar") {
      const flat = trace.orientation === "h";
      const cats = decodedOf(flat ? trace.y : trace.x) || [], vals = decodedOf(flat ? trace.x : trace.y) || [];
      Array.from(data || []).forEach((value, i) => {
        if (value == null) return;
        const category = at(cats, i) ?? i, v = at(vals, i);
        add({ trace: t, kind: "bar", at: i, value: String(value), category, x: flat ? v : category,
          y: flat ? category : v, label: `${category}` + (Number.isFinite(v) ? ": " + short(v) : "") });
      });
    } else {
      const xs = decodedOf(trace.x) || [], ys = decodedOf(trace.y) || [], texts = trace.text;
      const groups = new Map();
      Array.from(data || []).forEach((value, i) => {
        if (value == null || at(xs, i) == null || at(ys, i) == null) return;
        const key = String(value);
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push(i);
      });
      for (const [value, idx] of groups) {
        const text = Array.isArray(texts) ? at(texts, idx[0]) : null;
        add({ trace: t, kind: "scatter", at: idx, value, x: xs[idx[0]], y: ys[idx[0]],
          label: text ? `${String(text).replace(/<[^>]*>/g, "")} (${value})` : value });
      }
    }
  });
  return out;
}

// The points in reading order: top to bottom, then left to right (centres within 2 px: one row).
// Example: readingOrder([{x: 5, y: 0}, {x: 0, y: 10}, {x: 0, y: 1}]) -> [2, 0, 1] (the first and last: one row)
export function readingOrder(centres) {
  return centres.map((_, i) => i).sort((a, b) => {
    const p = centres[a], q = centres[b];
    return Math.abs(p.y - q.y) > 2 ? p.y - q.y : p.x - q.x;
  });
}

const DIRECTIONS = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1] };
export const PICK_KEYS = new Set([...Object.keys(DIRECTIONS), "Home", "End"]);

// The point an arrow key goes to from point ``from``, on the screen (centres in px, y down): the
// nearest one that way, a point in line with this one before one off it (its distance across
// counts twice). None that way: on to the next point in reading order (→, ↓) or back to the
// previous one (←, ↑), so that one key walks every point. Home and End: the first and the last.
// No point yet (``from`` -1): the first.
// Example: in a 2 × 2 grid [{x: 0, y: 0}, {x: 10, y: 0}, {x: 0, y: 10}, {x: 10, y: 10}]:
//   nextPoint(grid, 0, "ArrowRight") -> 1; nextPoint(grid, 1, "ArrowRight") -> 2 (the next row)
export function nextPoint(centres, from, key) {
  if (!centres.length) return -1;
  const order = readingOrder(centres);
  if (key === "End") return order[order.length - 1];
  if (from < 0 || from >= centres.length || key === "Home") return order[0];
  const d = DIRECTIONS[key];
  if (!d) return from;
  const a = centres[from];
  let best = -1, bestScore = Infinity;
  centres.forEach((b, i) => {
    const along = (b.x - a.x) * d[0] + (b.y - a.y) * d[1];
    if (i === from || along <= 0.5) return;
    const across = Math.abs((b.x - a.x) * d[1] + (b.y - a.y) * d[0]);
    const score = along + 2 * across;
    if (score < bestScore) { best = i; bestScore = score; }
  });
  if (best >= 0) return best;
  const k = order.indexOf(from) + (d[0] + d[1] > 0 ? 1 : -1);
  return k >= 0 && k < order.length ? order[k] : from;
}

// --- In the browser: where each point is drawn, the layer over the chart, the keys.

// A box cut to the plot's area (a bar on a log axis starts far left of it), or null if none is left.
// Example: clipBox({left: -50, top: 10, width: 100, height: 10}, {l: 0, t: 0, w: 200, h: 100})
//   -> {left: 0, top: 10, width: 50, height: 10}
export function clipBox(box, area) {
  if (!box) return null;
  const left = Math.max(box.left, area.l), right = Math.min(box.left + box.width, area.l + area.w);
  const top = Math.max(box.top, area.t), bottom = Math.min(box.top + box.height, area.t + area.h);
  return right > left && bottom > top ? { left, top, width: right - left, height: bottom - top } : null;
}

// Each point's box in px from the chart's top left corner ({left, top, width, height}), or null
// where plotly does not draw it (an axis hidden, a bar not drawn, a point outside the plot).
function pointBoxes(host, points) {
  const fl = fullLayout(host);
  if (!fl) return points.map(() => null);
  const area = plotArea(host);
  return drawnBoxes(host, fl, points).map((box) => clipBox(box, area));
}

function drawnBoxes(host, fl, points) {
  const origin = host.getBoundingClientRect();
  const bars = new Map(barPaths(host).map(([t, paths]) => [t, new Map(paths)]));
  return points.map((p) => {
    const trace = fullTrace(host, p.trace);
    if (!trace) return null;
    const [xa, ya] = traceAxes(fl, trace);
    if (!xa || !ya || !(axisLength(xa) > 0) || !(axisLength(ya) > 0)) return null;
    const px = (ax, v) => axisOffset(ax) + dataToPixel(ax, v);
    if (p.kind === "bar") {
      const path = bars.get(p.trace) && bars.get(p.trace).get(p.at);
      const r = path && path.getBoundingClientRect();
      return r && r.width + r.height > 0
        ? { left: r.left - origin.left, top: r.top - origin.top, width: Math.max(r.width, 4), height: Math.max(r.height, 4) }
        : null;
    }
    if (p.kind === "heatmap") {
      const cx = dataToCalc(xa, p.x), cy = dataToCalc(ya, p.y);
      const hx = (trace.dx || 1) / 2, hy = (trace.dy || 1) / 2;
      const xs = [px(xa, cx - hx), px(xa, cx + hx)], ys = [px(ya, cy - hy), px(ya, cy + hy)];
      if (![...xs, ...ys].every(Number.isFinite)) return null;
      return { left: Math.min(...xs), top: Math.min(...ys), width: Math.abs(xs[1] - xs[0]), height: Math.abs(ys[1] - ys[0]) };
    }
    const xs = decodedOf(trace.x) || [], ys = decodedOf(trace.y) || [];
    const pts = p.at.map((i) => [px(xa, dataToCalc(xa, xs[i])), px(ya, dataToCalc(ya, ys[i]))])
      .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (!pts.length) return null;
    const PAD = 10;   // px round a point (a marker of C1's diagram is 24 px wide)
    const left = Math.min(...pts.map((q) => q[0])) - PAD, top = Math.min(...pts.map((q) => q[1])) - PAD;
    return { left, top, width: Math.max(...pts.map((q) => q[0])) - left + PAD, height: Math.max(...pts.map((q) => q[1])) - top + PAD };
  });
}

let pickSerial = 0;

// The layer over ``host`` that takes the keys (made once per chart); ``state`` what it needs now.
export function keyboardPicker(host, state) {
  let layer = host.__pick;
  if (!layer) {
    layer = document.createElement("div");
    layer.className = "anatomy-pick";
    layer.tabIndex = 0;
    layer.setAttribute("role", "listbox");
    layer.id = "anatomy-pick-" + (++pickSerial);
    const cursor = document.createElement("div");
    cursor.className = "anatomy-pick-cursor";
    cursor.setAttribute("aria-hidden", "true");
    const option = document.createElement("div");
    option.className = "anatomy-sr";
    option.setAttribute("role", "option");
    option.setAttribute("aria-selected", "true");
    layer.append(cursor, option);
    const parent = host.parentElement;
    if (getComputedStyle(parent).position === "static") parent.style.position = "relative";
    host.insertAdjacentElement("afterend", layer);
    host.__pick = layer;
    layer.__cursor = cursor;
    layer.__option = option;
    layer.addEventListener("keydown", (e) => onPickKey(host, layer, e));
    layer.addEventListener("focus", () => showPoint(host, layer));
    layer.addEventListener("blur", () => { cursor.style.display = "none"; });
    host.on("plotly_afterplot", () => { if (document.activeElement === layer) showPoint(host, layer); });
  }
  layer.__state = state;
  layer.__points = pickPoints(state.figure);
  layer.setAttribute("aria-label", [state.name, state.words].filter(Boolean).join(": "));
  // The point the keyboard was on, found again in the new figure by what it sends.
  const i = layer.__points.findIndex((p) => p.value === layer.__value);
  writeOption(layer, i >= 0 ? i : 0);
  return layer;
}

// The option a screen reader reads: the point ``i``'s label, under an id of its own (a new id for
// each point, so that the change of aria-activedescendant is announced).
function writeOption(layer, i) {
  const p = layer.__points[i];
  layer.__index = p ? i : -1;
  if (p) layer.__value = p.value;
  const option = layer.__option;
  option.id = `${layer.id}-${i}`;
  option.textContent = p ? p.label : "";
  option.setAttribute("aria-posinset", String(i + 1));
  option.setAttribute("aria-setsize", String(layer.__points.length));
  if (p) layer.setAttribute("aria-activedescendant", option.id); else layer.removeAttribute("aria-activedescendant");
}

// The outlined box on the point the keyboard is on (hidden when it is not drawn).
function showPoint(host, layer) {
  const boxes = pointBoxes(host, layer.__points);
  const i = layer.__index, box = i >= 0 ? boxes[i] : null;
  const cursor = layer.__cursor;
  if (!box) { cursor.style.display = "none"; return; }
  const shift = host.offsetTop - layer.offsetTop, shiftX = host.offsetLeft - layer.offsetLeft;
  Object.assign(cursor.style, { display: "block", left: `${box.left + shiftX - 2}px`, top: `${box.top + shift - 2}px`,
    width: `${box.width + 4}px`, height: `${box.height + 4}px` });
}

function onPickKey(host, layer, e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const points = layer.__points;
  if (!points.length) return;
  if (e.key === "Enter" || e.key === " ") {
    e.preventDefault();
    const p = points[layer.__index];
    if (p && layer.__state.send) layer.__state.send(p.value);
    return;
  }
  if (!PICK_KEYS.has(e.key)) return;
  e.preventDefault();   // the page does not scroll (nor presenter mode turn a slide: it leaves a listbox be)
  const boxes = pointBoxes(host, points);
  const shown = boxes.map((b, i) => (b ? i : -1)).filter((i) => i >= 0);
  const centres = shown.map((i) => ({ x: boxes[i].left + boxes[i].width / 2, y: boxes[i].top + boxes[i].height / 2 }));
  const to = nextPoint(centres, shown.indexOf(layer.__index), e.key);
  if (to < 0) return;
  writeOption(layer, shown[to]);
  showPoint(host, layer);
}
