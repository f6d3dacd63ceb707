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

function heatmapText(trace, words) {
  const z = decodedOf(trace.z) || [];
  let best = null;
  z.forEach((row, r) => (decodedOf(row) || []).forEach((v, c) => {
    if (typeof v === "number" && Number.isFinite(v) && (best === null || v > best.v)) best = { v, r, c };
  }));
  const cols = z.reduce((m, row) => Math.max(m, (decodedOf(row) || []).length), 0);
  const fields = { rows: z.length, cols };
  if (best === null) return fill(words.grid, fields);
  return fill(words.heatmap, { ...fields, y: label(trace.y, best.r), x: label(trace.x, best.c), v: short(best.v) });
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

// The description of ``figure``: its first heatmap's strongest cell, or its first bar trace's
// largest bar, then how many series and points the rest draws.
export function describe(figure, words) {
  const data = (figure && figure.data) || [];
  const parts = [];
  const heat = data.find((t) => t.type === "heatmap" && t.z);
  if (heat) parts.push(heatmapText(heat, words));
  const bar = data.find((t) => t.type === "bar");
  if (!heat && bar) parts.push(barText(bar, words));
  const lines = data.filter((t) => (t.type === "scatter" || t.type === "scattergl") && t.visible !== false);
  if (lines.length) {
    const points = lines.reduce((n, t) => n + ((decodedOf(t.y) || decodedOf(t.x) || []).length || 0), 0);
    parts.push(fill(words.series, { n: lines.length, points }));
  }
  return parts.filter(Boolean).join(words.join || " ");
}

// The chart's name and description on its element: a figure with a label, described by a line of
// text that only assistive technology reads (``.anatomy-sr``, kept beside the plot).
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
  note.textContent = describe(figure, words);
  host.setAttribute("aria-describedby", note.id);
}
