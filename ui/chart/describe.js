// A chart's accessible name and a short description (issue 43): what a screen reader says for it,
// written in the browser from the figure it draws, in the page's language (``words``, from the
// catalogue: i18n/*/classroom.toml [describe]). No server work. Pure functions but ``labelChart``.
import { decodedOf, listOf } from "./arrays.js";

// A plotly title (a string, or {text}) as plain text: tags out, entities read.
export function plainTitle(layout) {
  const title = layout && layout.title;
  const text = typeof title === "string" ? title : title && title.text;
  if (!text) return "";
  return String(text).replace(/<br\s*\/?>/gi, " ").replace(/<[^>]*>/g, "").replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">").replace(/&amp;/g, "&").replace(/\s+/g, " ").trim();
}

// A number as a sentence writes it: three significant digits, no trailing zeros.
export function short(v) {
  if (!Number.isFinite(v)) return "";
  return String(Number(v.toPrecision(3)));
}

// "{rows} × {cols}" -> the template with its fields filled (a missing field stays empty).
export const fill = (template, fields) => String(template || "").replace(/\{(\w+)\}/g, (_, k) => fields[k] ?? "");

const label = (labels, i) => {
  const list = decodedOf(labels);
  return list && list[i] != null ? String(list[i]) : String(i);
};

// The layout's entry for a trace's x or y axis (``letter``): "x2" -> layout.xaxis2.
const axisOf = (layout, trace, letter) => layout && layout[(trace[letter + "axis"] || letter).replace(/^[xy]/, letter + "axis")];

// The title of a trace's x or y axis (``letter``) as plain text, "" when it has none.
export function axisTitle(layout, trace, letter) {
  const axis = axisOf(layout, trace, letter);
  return plainTitle({ title: axis && axis.title });
}

// An axis title without the name of the panel it belongs to, already said before the panel's
// sentence: F4's "attention output · position" under the panel "attention output" -> "position".
// Example: withoutPanel("attention output · position", "attention output") -> "position"
export function withoutPanel(title, panel) {
  if (!panel || !title.startsWith(panel)) return title;
  return title.slice(panel.length).replace(/^[\s·:：,，、\-–—]+/, "") || title;
}

// The span a heatmap covers along ``letter`` ("x" or "y") in its axis' data coordinates: its
// numeric labels widened by half a cell, or x0 + dx·i over its cells; null for text labels.
// Example: dataSpan({ z: [[1, 2, 3]], x0: 10, dx: 1 }, "x") -> [9.5, 12.5]
function dataSpan(trace, letter) {
  const z = decodedOf(trace.z) || [];
  const n = letter === "y" ? z.length : z.reduce((m, row) => Math.max(m, (decodedOf(row) || []).length), 0);
  const labels = decodedOf(trace[letter]);
  if (labels && labels.length) {
    const at = Array.from(labels, Number);
    if (!at.every(Number.isFinite)) return null;
    const half = at.length > 1 ? Math.abs(at[1] - at[0]) / 2 : 0.5;
    return [Math.min(...at) - half, Math.max(...at) + half];
  }
  const start = Number(trace[letter + "0"] ?? 0), step = Number(trace["d" + letter] ?? 1);
  const ends = [start - step / 2, start + (n - 0.5) * step];
  return [Math.min(...ends), Math.max(...ends)];
}

// Whether an annotation stands over a panel along x (its text over the panel's width: one anchored
// at a side must reach into it), and how far above the panel's top it stands along y, as a share
// of the panel's height (0 at the edge); null where it does not. ``note``'s refs: "paper", "x2
// domain" or the trace's own axes (data coordinates); another axis' data coordinates never match.
function overPanel(note, trace, layout, letter) {
  const ref = note[letter + "ref"], v = note[letter];
  if (typeof v !== "number" || typeof ref !== "string") return null;
  const axisId = trace[letter + "axis"] || letter;
  const axis = axisOf(layout, trace, letter) || {};
  let lo, hi, at = v, reversed = false;
  if (ref === "paper" || ref === axisId + " domain") {
    [lo, hi] = axis.domain || [0, 1];
    if (ref !== "paper") at = lo + v * (hi - lo);
  } else if (ref === axisId) {
    const span = dataSpan(trace, letter);
    if (!span) return null;
    [lo, hi] = span;
    const range = axis.range;
    reversed = axis.autorange === "reversed" || (Array.isArray(range) && range[0] > range[1]);
  } else return null;
  const tol = 0.01 * (hi - lo);
  if (letter === "x") {
    const anchor = note.xanchor;
    if (anchor === "right") return at > lo + tol && at <= hi + tol ? 0 : null;
    if (anchor === "left") return at >= lo - tol && at < hi - tol ? 0 : null;
    return at >= lo - tol && at <= hi + tol ? 0 : null;
  }
  // above the top: past hi, or past lo on a reversed axis (rows top down), a tenth of the figure
  // (paper) or a quarter of the panel (data) at most: not the title of a panel further up
  const past = (reversed ? lo - at : at - hi) / (hi - lo);
  return past >= -0.01 && past <= (ref === axisId ? 0.25 : 0.1 / (hi - lo)) ? Math.max(past, 0) : null;
}

// The title over a panel of subplots: the annotation standing over the trace's x span and at or
// just above its top (plotly's make_subplots writes its titles so, in paper coordinates; B1's steps
// and a batch's sequences too; B5's gallery in data coordinates), the nearest one; "" when none.
export function panelTitle(trace, layout) {
  let best = null;
  for (const note of (layout && layout.annotations) || []) {
    if (!note.text || overPanel(note, trace, layout, "x") === null) continue;
    const past = overPanel(note, trace, layout, "y");
    if (past !== null && (best === null || past < best.past)) best = { past, text: note.text };
  }
  return best ? plainTitle({ title: best.text }) : "";
}

// Where a heatmap lies (its axes, its cells' placing and count): one drawn where an earlier one lies
// is paint over it (B5's exact zeros in grey), not a panel of its own.
function placeOf(trace) {
  const z = decodedOf(trace.z) || [];
  return JSON.stringify([trace.xaxis || "x", trace.yaxis || "y", listOf(trace.x), listOf(trace.y), trace.x0, trace.dx,
    trace.y0, trace.dy, z.length, (decodedOf(z[0]) || []).length]);
}

// Whether two axes' labels are one list (an attention map's queries and keys), and whether an
// axis' labels are text (tokens, names), not numbers or none.
function sameLabels(a, b) {
  const x = decodedOf(a), y = decodedOf(b);
  return !!x && !!y && x.length === y.length && x.length > 0 && Array.from(x).every((v, i) => v === y[i]);
}
const isText = (v) => typeof v === "string" && v.trim() !== "" && !Number.isFinite(Number(v));
function textLabels(a) {
  const list = decodedOf(a);
  return !!list && list.length > 0 && Array.from(list).some(isText);
}

// Where cell ``i`` sits along an axis of the trace (``letter``: "x" or "y"), named by the axis'
// title: "layer 7" (its index without labels, as pick.js names a point: panels side by side on one
// axis start past 0; a numeric label as it is), or "position 18 (“ Mary”)" (a text label, after its
// index). An axis without a title: its text label alone (“天”), or "row 3" / "column 5".
function axisPlace(trace, letter, i, title, words) {
  const labels = decodedOf(trace[letter]);
  const own = labels && labels[i] != null ? labels[i] : null;
  if (isText(own)) return title ? fill(words.axis_named, { title, at: i, label: own }) : fill(words.label_only, { label: own });
  const value = own != null ? Number(own) : i;
  const at = Number.isInteger(value) ? String(value) : short(value);
  return title ? fill(words.axis_at, { title, at }) : fill(letter === "y" ? words.row_at : words.column_at, { at });
}

// One panel's sentence: its size and its strongest cell. ``pieces``: the heatmaps that draw it, one,
// or its rows drawn apart (D2's earlier rows in grey, this step's in colour): their rows added up.
function heatmapText(pieces, words, layout, panel) {
  let best = null, rows = 0, cols = 0;
  for (const piece of pieces) {
    const z = decodedOf(piece.z) || [];
    z.forEach((row, r) => (decodedOf(row) || []).forEach((v, c) => {
      if (typeof v === "number" && Number.isFinite(v) && (best === null || v > best.v)) best = { v, r, c, piece };
    }));
    rows += z.length;
    cols = z.reduce((m, row) => Math.max(m, (decodedOf(row) || []).length), cols);
  }
  const fields = { rows, cols };
  if (best === null) return fill(words.grid, fields);
  const trace = best.piece;
  const titles = { y: withoutPanel(axisTitle(layout, trace, "y"), panel),
    x: withoutPanel(axisTitle(layout, trace, "x"), panel) };
  // "{y} → {x}": one list of tokens on both axes (query → key), or text on both and a title missing
  // (a cross-attention's, a router's token → expert); else each axis named on its own.
  const arrow = sameLabels(trace.x, trace.y) || (textLabels(trace.x) && textLabels(trace.y) && !(titles.x && titles.y));
  if (arrow || !words.heatmap_at)
    return fill(words.heatmap, { ...fields, y: label(trace.y, best.r), x: label(trace.x, best.c), v: short(best.v) });
  return fill(words.heatmap_at, { ...fields, v: short(best.v), y: axisPlace(trace, "y", best.r, titles.y, words),
    x: axisPlace(trace, "x", best.c, titles.x, words) });
}

function barText(trace, words) {
  const flat = trace.orientation === "h";
  const values = decodedOf(flat ? trace.x : trace.y) || [];
  const labels = flat ? trace.y : trace.x;
  let best = null;
  Array.from(values).forEach((v, i) => {
    if (typeof v === "number" && Number.isFinite(v) && (best === null || v > best.v)) best = { v, i };
  });
  if (best === null) return fill(words.bars_empty, { n: values.length });
  return fill(words.bars, { n: values.length, label: label(labels, best.i), v: short(best.v) });
}

// A figure drawn in boxes alone (C2's whole model: rectangles, their words in annotations, no
// trace): how many boxes, and their words in order; "" when it has no box.
// Example: diagramText({ shapes: [{ type: "rect" }], annotations: [{ text: "<b>embedding</b>" }] },
//   { diagram: "{n} boxes: {labels}.", diagram_sep: "; " }) -> "1 boxes: embedding."
function diagramText(layout, words) {
  const boxes = (layout.shapes || []).filter((s) => s.type === "rect").length;
  const labels = (layout.annotations || []).map((a) => plainTitle({ title: a.text })).filter(Boolean);
  if (!boxes || !labels.length) return "";
  return fill(words.diagram, { n: boxes, labels: labels.join(words.diagram_sep ?? "; ") });
}

// The description of ``figure``: each heatmap's strongest cell (named when there are several, a
// figure of subplots: by its trace's name, else by the title over its panel, else by its number;
// the pieces of one panel together), or its first bar trace's largest bar, then how many series and points the rest draws. A heatmap
// the hover skips (the grey of masked cells: viz.attention.masked_layer), or one drawn on the cells
// of an earlier one, is paint over the data, not a panel of its own; one without rows draws nothing
// (D2's cache before its first step).
export function describe(figure, words) {
  const data = (figure && figure.data) || [];
  const layout = (figure && figure.layout) || {};
  const parts = [];
  const seen = new Set();
  const heats = data.filter((t) => {
    if (t.type !== "heatmap" || !(decodedOf(t.z) || []).length || t.visible === false || t.hoverinfo === "skip") return false;
    const place = placeOf(t);
    return !seen.has(place) && seen.add(place);
  });
  // Heatmaps on one pair of axes under one name or title are one panel drawn in pieces (D2's
  // queries: the earlier rows grey, this step's in colour): said once. Side by side on one pair of
  // axes under titles of their own (C1's in and out, B5's gallery) they stay panels apart.
  const panels = new Map();
  heats.forEach((heat, k) => {
    const title = heat.name || panelTitle(heat, layout);
    const key = title ? JSON.stringify([heat.xaxis || "x", heat.yaxis || "y", title]) : k;
    if (!panels.has(key)) panels.set(key, { title, pieces: [] });
    panels.get(key).pieces.push(heat);
  });
  [...panels.values()].forEach(({ title, pieces }, k) => {
    if (panels.size < 2 || !words.panel) return parts.push(heatmapText(pieces, words, layout, ""));
    const name = title || fill(words.panel_n || "{n}", { n: k + 1 });
    parts.push(fill(words.panel, { name, text: heatmapText(pieces, words, layout, name) }));
  });
  const bar = data.find((t) => t.type === "bar");
  if (!heats.length && bar) parts.push(barText(bar, words));
  const lines = data.filter((t) => (t.type === "scatter" || t.type === "scattergl") && t.visible !== false);
  if (lines.length) {
    const points = lines.reduce((n, t) => n + ((decodedOf(t.y) || decodedOf(t.x) || []).length || 0), 0);
    parts.push(fill(words.series, { n: lines.length, points }));
  }
  if (!parts.length && words.diagram) parts.push(diagramText(layout, words));
  return parts.filter(Boolean).join(words.join ?? " ");   // Chinese joins sentences with nothing
}

// A chart's accessible name: its title; for a chart drawn without one, the ``name`` it was sent
// with (ui/figures.py: figure(name=...), F1's head maps under their section's heading); only
// else the generic word ("Chart").
// Example: chartName({ layout: {} }, { chart: "Chart" }, "Four scores") -> "Four scores"
export function chartName(figure, words, name) {
  return plainTitle(figure && figure.layout) || (name ? String(name).trim() : "") || (words && words.chart) || "";
}

// The chart's name and description on its element: a figure with a label, described by a line of
// text that only assistive technology reads (``.anatomy-sr``, kept beside the plot). A live chart
// (live.js) writes them again for each frame it draws.
let serial = 0;
export function labelChart(host, figure, words, sentName) {
  if (!words) return;
  const name = chartName(figure, words, sentName);
  host.setAttribute("role", "figure");
  host.setAttribute("aria-label", name);
  let note = host.__describedBy;
  if (!note || !note.isConnected) {
    note = document.createElement("p");
    note.className = "anatomy-sr";
    note.id = "anatomy-desc-" + (++serial);
    host.insertAdjacentElement("afterend", note);
    host.__describedBy = note;
  }
  const text = describe(figure, words);
  if (note.textContent !== text) note.textContent = text;   // a live chart's frames: most change nothing
  host.setAttribute("aria-describedby", note.id);
}
