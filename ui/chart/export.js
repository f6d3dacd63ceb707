// Export: the plot as PNG or SVG, its data as CSV, from three buttons of the chart's modebar, and
// the plot's config (CONFIG) these buttons are part of.
import { fullLayout } from "./adapter.js";
import { decodeArray } from "./arrays.js";

export const CONFIG = { displaylogo: false, responsive: false };

// All in the browser, from the figure the chart already has: no server work per figure. The
// config object is made once per language and reused, so Plotly.react sees the same config and
// redraws as before (a changed config would make it draw the plot from scratch).
const EXPORT = new Map();
const ICONS = {
  svg: { width: 24, height: 24, path: "M4 4h7v7H4z M17.5 4a3.5 3.5 0 1 1 0 7a3.5 3.5 0 1 1 0-7z M12 13l8 8H4z" },
  csv: { width: 24, height: 24, path: "M3 3h18v18H3z M5 5v4h6V5z M13 5v4h6V5z M5 11v4h6v-4z M13 11v4h6v-4z"
    + " M5 17v2h6v-2z M13 17v2h6v-2z" },
};

export function exportName(gd) {
  return String(gd.__exportName || "figure").replace(/[^A-Za-z0-9._-]/g, "_");
}

function saveImage(gd, format) {
  const size = fullLayout(gd) || {};
  // Twice the on-screen size: a figure pasted into slides stays sharp (618 x 420 looked soft).
  window.Plotly.downloadImage(gd, { format, width: size.width, height: size.height, scale: format === "png" ? 2 : 1,
    filename: exportName(gd) });
}

// One cell: numbers as written (float32 to 8 digits), text quoted when needed; a text cell that a
// spreadsheet would run as a formula (a token "=1+2") starts with an apostrophe.
export function cell(v, f4) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return "";
    return f4 ? String(Number(v.toPrecision(8))) : String(v);
  }
  let s = String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
  return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

// Every trace, one row a point (trace, name, type, row, col, x, y, z): a heatmap one row a cell,
// with its row and column labels; a line or bar one row a point.
export function figureCsv(figure) {
  const out = ["trace,name,type,row,col,x,y,z"];
  (figure.data || []).forEach((trace, t) => {
    const type = trace.type || "scatter";
    const x = decodeArray(trace.x), y = decodeArray(trace.y), z = decodeArray(trace.z);
    const f4 = (k) => !!trace[k] && (trace[k].dtype === "f4" || trace[k] instanceof Float32Array
      || (Array.isArray(trace[k]) && trace[k][0] instanceof Float32Array));
    const head = [t, cell(trace.name), type].join(",");
    if (Array.isArray(z) && z.length) {
      const grid = Array.isArray(z[0]) ? z : [z];
      grid.forEach((line, i) => line.forEach((value, j) => {
        out.push([head, i, j, cell(Array.isArray(x) ? x[j] : j), cell(Array.isArray(y) ? y[i] : i),
          cell(value, f4("z"))].join(","));
      }));
      return;
    }
    const n = Math.max(Array.isArray(x) ? x.length : 0, Array.isArray(y) ? y.length : 0);
    for (let i = 0; i < n; i++) {
      out.push([head, i, "", cell(Array.isArray(x) ? x[i] : i, f4("x")), cell(Array.isArray(y) ? y[i] : i, f4("y")),
        ""].join(","));
    }
  });
  return "\ufeff" + out.join("\r\n") + "\r\n";   // a BOM: spreadsheets then read the Chinese labels right
}

function saveCsv(gd) {
  const blob = new Blob([figureCsv(gd.__figure || { data: [] })], { type: "text/csv;charset=utf-8" });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = exportName(gd) + ".csv";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function exportConfig(labels) {
  if (!labels) return CONFIG;
  const id = [labels.png, labels.svg, labels.csv, labels.locale].join("|");
  let config = EXPORT.get(id);
  if (!config) {
    // plotly's own PNG button is replaced by ours (titled in the page's language); its "Share chart..."
    // would upload the chart to Plotly's cloud: a classroom app keeps students' data on its server.
    config = { ...CONFIG, modeBarButtonsToRemove: ["toImage", "sendChartToCloud"], modeBarButtonsToAdd: [
      { name: "anatomy-png", title: labels.png, icon: window.Plotly.Icons.camera, click: (gd) => saveImage(gd, "png") },
      { name: "anatomy-svg", title: labels.svg, icon: ICONS.svg, click: (gd) => saveImage(gd, "svg") },
      { name: "anatomy-csv", title: labels.csv, icon: ICONS.csv, click: saveCsv },
    ] };
    // plotly.js's own words (Zoom, Pan, "Double-click to zoom back out", ...) in the page's
    // language: a locale given with the plot (ui/frame.py: PLOTLY_WORDS), not registered globally.
    if (labels.locale && labels.locale !== "en" && labels.words) {
      const name = "anatomy-" + labels.locale;
      config.locale = name;
      config.locales = { [name]: { dictionary: labels.words } };
    }
    EXPORT.set(id, config);
  }
  return config;
}
