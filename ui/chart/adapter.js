// The one place that reads plotly.js's private state (ui/chart.js and its parts, STYLE.md rule 14):
// its full layout and data (_fullLayout, _fullData), an axis' drawn ticks, length and offset
// (_vals, _length, _offset, _id, _categories), its unit conversions (c2p, r2p, l2r), d3's bound
// data on plotly's SVG elements (__data__) and the class names of the SVG plotly draws. A plotly
// upgrade that moves any of them is mended here. Public plotly API (Plotly.react, gd.data,
// gd.layout, the full layout's attribute names) is read where it is used.

// --- Private state
export const fullLayout = (gd) => gd._fullLayout;
export const fullTrace = (gd, t) => gd._fullData && gd._fullData[t];
export const plotArea = (gd) => gd._fullLayout._size;   // {l, t, w, h}: the plot's place in px
export const isPlot = (gd) => gd.classList.contains("js-plotly-plot");   // plotly has drawn here

export const axisId = (ax) => ax._id;                    // "x", "y2", ...
export const axisLength = (ax) => ax._length;            // px along the axis
export const axisOffset = (ax) => ax._offset;            // px from the chart's edge to the axis' start
export const axisTicks = (ax) => ax._vals || [];         // the ticks drawn: [{x, text}]
// A drawn tick's value as the layout writes it (a category's name, a log axis' number, a date).
export const tickValue = (ax, v) => (ax.type === "category" && ax._categories ? ax._categories[Math.round(v.x)]
  : ax.type === "log" ? Math.pow(10, v.x) : ax.type === "date" ? ax.l2r(v.x) : v.x);
export const dataToPixel = (ax, v) => ax.c2p(v);         // from the axis' offset
export const dataToCalc = (ax, v) => ax.d2c(v);          // a category's name -> its index; a number stays
export const rangeToPixel = (ax, v) => ax.r2p(v);

// A trace's full-layout axes (their names "xaxis", "yaxis2" from its "x", "y2").
export const traceAxes = (fl, trace) => [fl[(trace.xaxis || "x").replace(/^x/, "xaxis")],
  fl[(trace.yaxis || "y").replace(/^y/, "yaxis")]];

// The index of the trace d3 bound to a trace's group (its data: a list of points, the first one
// carrying the trace), or undefined.
function boundTrace(g) {
  const d = g.__data__, first = d && d[0];
  const trace = first && (first.trace || (first[0] && first[0].trace));
  return trace ? trace.index : undefined;
}

// --- The SVG plotly draws
export const shownBox = (el) => {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 ? r : null;
};

export const mainSvg = (gd) => gd.querySelector(".main-svg");
export const tickTexts = (gd, ax) => Array.from(gd.querySelectorAll(`g.${ax._id}tick > text`));
export const shapePaths = (gd) => Array.from(gd.querySelectorAll(".shapelayer path"));
export const shapePathsAt = (gd, j) => gd.querySelectorAll(`.shapelayer path[data-index="${j}"]`);
export const dataLabels = (gd) => Array.from(gd.querySelectorAll(".textpoint text"));

// The chart's texts by group, as tests/browser/test_layout.py compares them.
export function textParts(host) {
  const parts = [];
  const add = (group, el, text = el.textContent) => {
    const r = shownBox(el);
    if (r && (text || "").trim()) parts.push({ group, r, el });
  };
  host.querySelectorAll(".gtitle").forEach((t) => {
    const lines = t.querySelectorAll("tspan.line");
    if (lines.length) lines.forEach((l) => add("title", l)); else add("title", t);
  });
  host.querySelectorAll(".infolayer .legend").forEach((lg) => {
    const bg = lg.querySelector("rect.bg");
    if (bg) add("legend", bg, lg.textContent);
  });
  host.querySelectorAll('.infolayer [class^="g-x"][class$="title"] text').forEach((t) => add("xtitle", t));
  host.querySelectorAll('.infolayer [class^="g-y"][class$="title"] text').forEach((t) => add("ytitle", t));
  host.querySelectorAll(".xaxislayer-above, .yaxislayer-above").forEach((layer, k) =>
    layer.querySelectorAll('g[class$="tick"] text').forEach((t) => add(`${layer.classList.contains("xaxislayer-above") ? "x" : "y"}ticks ${k}`, t)));
  host.querySelectorAll(".infolayer .colorbar").forEach((cb, k) => cb.querySelectorAll("text").forEach((t) => add(`colorbar ${k}`, t)));
  host.querySelectorAll(".annotation-text").forEach((t, k) => add(`annotation ${k}`, t));
  // Text drawn with the data (a diagram's labels, bar values): only kept inside the chart.
  host.querySelectorAll(".textpoint text, text.bartext").forEach((t) => add("data", t));
  return parts;
}

// The layout key ("xaxis2") of the axis whose title ``el`` is part of, or null.
export function titleAxisKey(el) {
  const g = el.closest('[class^="g-"][class$="title"]');
  const id = g && /^g-([xy]\d*)title$/.exec(g.getAttribute("class"));
  return id ? id[1][0] + "axis" + id[1].slice(1) : null;
}

// The layout key ("yaxis2") of the y axis whose tick label ``el`` is, or null.
export function tickYAxisKey(el) {
  const g = el.closest('g[class$="tick"]');
  const id = g && /^(y\d*)tick$/.exec(g.getAttribute("class"));
  return id ? "yaxis" + id[1].slice(1) : null;
}

// The index of the annotation ``el`` is part of (NaN: none).
export function annotationIndex(el) {
  const g = el.closest(".annotation");
  return g ? Number(g.getAttribute("data-index")) : NaN;
}

// The title's <text> and its lines.
export function titleElements(gd) {
  const el = gd.querySelector(".g-gtitle text.gtitle");
  return el && { el, lines: el.querySelectorAll("tspan.line"), other: el.querySelector("tspan:not(.line)") };
}
// The title plotly holds (what an export draws again), written as the SVG shows it.
export function setFullTitle(gd, text) {
  if (gd._fullLayout.title) gd._fullLayout.title.text = text;
}

// The legend text of trace t, or null.
export function legendText(gd, t) {
  const item = Array.from(gd.querySelectorAll(".legend .traces")).find((g) => boundTrace(g) === t);
  return (item && item.querySelector("text.legendtext")) || null;
}

// Each bar trace's bars: [[trace index, [[point index, path]]]].
export function barPaths(gd) {
  return Array.from(gd.querySelectorAll(".barlayer > g.trace"), (g) => [boundTrace(g),
    Array.from(g.querySelectorAll("g.point > path"), (p) => [p.__data__ && p.__data__.i, p])]);
}

// Each heatmap trace's group, by trace index.
export function heatmapGroups(gd) {
  const out = new Map();
  for (const g of gd.querySelectorAll("g.hm")) {
    const t = boundTrace(g);
    if (t !== undefined) out.set(t, g);
  }
  return out;
}
export const heatmapImage = (g) => g.querySelector("image");
export const heatmapImages = (gd) => gd.querySelectorAll("g.hm image");

// The tick groups of an axis with the tick each shows: [[group's <text>, its tick {x, text}]].
export const tickLabels = (gd, ax) => Array.from(gd.querySelectorAll(`g.${ax._id}tick`),
  (g) => [g.querySelector("text"), g.__data__]);

// Trace t's group in the scatter layer, or null; its line paths, marker paths and text labels.
export function scatterGroup(gd, t) {
  for (const g of gd.querySelectorAll(".scatterlayer > g.trace")) if (boundTrace(g) === t) return g;
  return null;
}
export const linePaths = (g) => g.querySelectorAll(".lines path.js-line");
export const markerPaths = (g) => Array.from(g.querySelectorAll(".points path.point"));
export const pointLabels = (g) => Array.from(g.querySelectorAll(".text g.textpoint text"));
