// A chart's accessible name and a short description (issue 43): what a screen reader says for it,
// written in the browser from the figure it draws, in the page's language (``words``, from the
// catalogue: i18n/*/classroom.toml [describe]). No server work. Pure functions but ``labelChart``.
import { decodedOf } from "./arrays.js";

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

// The title of a trace's x or y axis (``letter``) as plain text, "" when it has none.
export function axisTitle(layout, trace, letter) {
  const id = (trace[letter + "axis"] || letter).replace(/^[xy]/, letter + "axis");
  return plainTitle({ title: layout && layout[id] && layout[id].title });
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

function heatmapText(trace, words, layout) {
  const z = decodedOf(trace.z) || [];
  let best = null;
  z.forEach((row, r) => (decodedOf(row) || []).forEach((v, c) => {
    if (typeof v === "number" && Number.isFinite(v) && (best === null || v > best.v)) best = { v, r, c };
  }));
  const cols = z.reduce((m, row) => Math.max(m, (decodedOf(row) || []).length), 0);
  const fields = { rows: z.length, cols };
  if (best === null) return fill(words.grid, fields);
  const titles = { y: axisTitle(layout, trace, "y"), x: axisTitle(layout, trace, "x") };
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

// The description of ``figure``: each heatmap's strongest cell (named by its trace when there are
// several: a figure of subplots), or its first bar trace's largest bar, then how many series and
// points the rest draws.
export function describe(figure, words) {
  const data = (figure && figure.data) || [];
  const layout = (figure && figure.layout) || {};
  const parts = [];
  const heats = data.filter((t) => t.type === "heatmap" && t.z && t.visible !== false);
  heats.forEach((heat, k) => {
    const text = heatmapText(heat, words, layout);
    parts.push(heats.length > 1 && words.panel ? fill(words.panel, { name: heat.name || String(k + 1), text }) : text);
  });
  const bar = data.find((t) => t.type === "bar");
  if (!heats.length && bar) parts.push(barText(bar, words));
  const lines = data.filter((t) => (t.type === "scatter" || t.type === "scattergl") && t.visible !== false);
  if (lines.length) {
    const points = lines.reduce((n, t) => n + ((decodedOf(t.y) || decodedOf(t.x) || []).length || 0), 0);
    parts.push(fill(words.series, { n: lines.length, points }));
  }
  return parts.filter(Boolean).join(words.join ?? " ");   // Chinese joins sentences with nothing
}

// The chart's name and description on its element: a figure with a label, described by a line of
// text that only assistive technology reads (``.anatomy-sr``, kept beside the plot). A live chart
// (live.js) writes them again for each frame it draws.
let serial = 0;
export function labelChart(host, figure, words) {
  if (!words) return;
  const name = plainTitle(figure && figure.layout) || words.chart || "";
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
