// Presenter mode (ui/classroom.py): a chart's type made larger for the back of a room, then the
// drawn chart measured and mended in the browser (fitPresent). Reads plotly's drawn state through
// ./adapter.js only.
import {
  annotationIndex, axisId, axisLength, axisTicks, dataLabels, fullLayout, mainSvg, plotArea, shapePaths,
  shownBox, textParts, tickTexts, tickValue, tickYAxisKey, titleAxisKey,
} from "./adapter.js";

// --- Presenter mode (ui/classroom.py): type that carries to the back of a room. Every text of
// the chart at least 18 px (ticks, axis titles, legend, annotations, colour bars), its title at
// least 22 px, each a quarter larger than on a screen; the margins and the height grow with the
// type. Done here, per browser, on the figure as parsed: the JSON stays the one every session
// shares (ui/chart.py: figure_json).
const PRESENT_MIN = 18;
const PRESENT_TITLE = 22;
const PRESENT_SCALE = 1.25;

function bigger(font, least) {
  const f = Object.assign({}, font || {});
  f.size = Math.max(least, Math.round((+f.size || 15) * PRESENT_SCALE));   // +"auto": NaN, read as 15
  return f;
}

// The one place presenter sizing is decided (the server sends every session the same figure):
// no taller than ``most`` (ui/figures.py: PRESENT_MAX_HEIGHT, or what a figure alone on its slide
// asks for; none: its own height), then every text and the height a quarter larger; fitPresent
// then fits it to the room above the presenter's bar.
export function presenterFigure(figure, most = null) {
  const layout = figure.layout || (figure.layout = {});
  if (most != null && (layout.height || 420) > most) layout.height = most;
  layout.font = bigger(layout.font, PRESENT_MIN);
  if (layout.title) {
    const title = typeof layout.title === "string" ? { text: layout.title } : layout.title;
    title.font = bigger(title.font, PRESENT_TITLE);
    if (title.pad && title.pad.t) title.pad.t = Math.round(title.pad.t * PRESENT_SCALE);
    layout.title = title;
  }
  for (const key of Object.keys(layout)) {
    if (!/^[xy]axis\d*$/.test(key) || !layout[key]) continue;
    const axis = layout[key];
    axis.tickfont = bigger(axis.tickfont, PRESENT_MIN);
    if (axis.title) {
      const t = typeof axis.title === "string" ? { text: axis.title } : axis.title;
      t.font = bigger(t.font, PRESENT_MIN);
      axis.title = t;
    }
  }
  if (layout.legend) layout.legend.font = bigger(layout.legend.font, PRESENT_MIN);
  for (const note of layout.annotations || []) note.font = bigger(note.font, PRESENT_MIN);
  if (layout.hoverlabel) layout.hoverlabel.font = bigger(layout.hoverlabel.font, PRESENT_MIN);
  const margin = layout.margin || {};
  for (const side of ["l", "r", "t", "b"]) if (margin[side] != null) margin[side] = Math.round(margin[side] * PRESENT_SCALE);
  layout.height = Math.round((layout.height || 420) * PRESENT_SCALE);
  for (const trace of figure.data || []) {
    if (trace.colorbar) {
      trace.colorbar.tickfont = bigger(trace.colorbar.tickfont, PRESENT_MIN);
      const t = trace.colorbar.title;
      if (t && typeof t === "object") t.font = bigger(t.font, PRESENT_MIN);
    }
    // Data labels and heatmap cells at the presenter's least size too. A heatmap's size is written
    // out: left to plotly ("auto") it shrinks its labels to the cells, whatever the layout's font.
    if (trace.textfont || (trace.type === "heatmap" && (trace.text || trace.texttemplate)))
      trace.textfont = bigger(trace.textfont, PRESENT_MIN);
    // A bar's label that does not fit its bar is shown at the least size, not shrunk below it.
    if (trace.type === "bar" && (trace.text != null || trace.texttemplate))
      layout.uniformtext = { mode: "show", minsize: PRESENT_MIN };
  }
  return figure;
}

// --- Presenter fit: after the larger type is drawn, the chart is measured and mended in the
// browser (the room above the presenter's bar, tick labels that meet at 18 px, a legend or title
// on other text, text past the chart's edge). A few relayouts of this one chart, presenter mode only.
const ROOM_GAP = 8;      // px kept between a chart's foot and the presenter's bar
const ROOM_MIN = 220;    // px: a chart is never squeezed below this to fit the screen
const FIT_PASSES = 6;    // relayouts at most: each mends what the last drawing showed
const TICK_GAP = 3;      // px between two neighbouring tick labels

function presentRoom(host) {
  const bar = document.querySelector(".anatomy-classroom");
  const barTop = bar ? bar.getBoundingClientRect().top : window.innerHeight;
  return Math.floor(barTop - host.getBoundingClientRect().top - ROOM_GAP);
}

let measureCtx = null;
export function textWidth(text, font) {
  measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
  measureCtx.font = `${font.size || 18}px ${font.family || "sans-serif"}`;
  return measureCtx.measureText(text.replace(/<[^>]*>/g, "")).width;
}

// A title broken onto lines that fit ``room`` px: at spaces, or between Chinese characters, never
// inside brackets (a formula stays whole) nor inside a tag. Lines the author set (<br>) are kept.
// Example: wrapTitle("attention weights (softmax of q·k)", 200) -> "attention weights<br>(softmax of q·k)"
const CJK = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]/;
// (``width`` measures a line: the browser's canvas, textWidth, unless a test gives its own.)
export function wrapTitle(text, font, room, width = textWidth) {
  return String(text).split(/<br\s*\/?>/i).map((line) => {
    if (width(line, font) <= room) return line;
    const atoms = line.match(/<[^>]*>|\s+|[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]|[^\s<\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]+/g) || [];
    const lines = [];
    let cur = "", depth = 0, lastBreak = -1;   // lastBreak: an index into cur where a line may end
    for (const a of atoms) {
      const space = /^\s+$/.test(a);
      if (depth === 0 && cur && (space || CJK.test(a) || CJK.test(cur.slice(-1)))) lastBreak = cur.length;
      cur += a;
      if (!a.startsWith("<")) for (const ch of a) {
        if (ch === "(" || ch === "（" || ch === "[") depth += 1;
        if ((ch === ")" || ch === "）" || ch === "]") && depth > 0) depth -= 1;
      }
      if (lastBreak > 0 && width(cur, font) > room) {
        lines.push(cur.slice(0, lastBreak).trimEnd());
        cur = cur.slice(lastBreak).trimStart();
        lastBreak = -1;
      }
    }
    if (cur) lines.push(cur);
    return lines.join("<br>");
  }).join("<br>");
}

export const meet = (a, b, gap = 1.5) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > gap
  && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > gap;

// The least "nice" step (1, 2, 2.5 or 5 times a power of ten) at least ``v``.
// Example: niceUp(0.3) -> 0.5; niceUp(0.5) -> 0.5; niceUp(7) -> 10
export function niceUp(v) {
  const e = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * e >= v * (1 - 1e-9)) return m * e;
  return 10 * e;
}

// Tick labels that meet at the presenter's size, thinned: k is the least step between kept labels
// for which no two drawn labels meet. A numeric axis with plotly's own ticks takes the next nice
// step at least k times the drawn one (so it keeps labels on round values, 0, 0.5, 1 rather than
// 0 and 1); an axis with categories or the author's tick values keeps every k-th. ``thinned``
// records the axis length each decision was made at (fitPresent makes it again if the length moves).
function thinTicks(host, key, ax, update, userAx, thinned) {
  const texts = tickTexts(host, ax).map((t) => shownBox(t)).filter(Boolean);
  if (texts.length < 3) return;
  const x = axisId(ax)[0] === "x";
  const length = axisLength(ax);
  const along = (r) => (x ? [r.left, r.right] : [r.top, r.bottom]);
  const sorted = texts.map(along).sort((a, b) => a[0] - b[0]);
  let k = 1;
  const clash = (step) => sorted.some((r, i) => i + step < sorted.length && r[1] + TICK_GAP > sorted[i + step][0]);
  while (k < sorted.length && clash(k)) k += 1;
  const rotatedMeet = texts.some((r, i) => i > 0 && meet(r, texts[i - 1]));
  if (k === 1 && !rotatedMeet) return;
  if (k === 1) k = 2;
  thinned[key] = length;
  const own = !userAx.tickvals && (userAx.tickmode == null || userAx.tickmode === "auto" || userAx.tickmode === "linear");
  if (own && (ax.type === "linear" || ax.type === "log") && typeof ax.dtick === "number" && ax.dtick > 0) {
    update[`${key}.tickmode`] = "linear";
    // The step the labels need here, in the axis' units (decades on a log axis): at most k drawn steps.
    const extent = Math.max(...sorted.map((r) => r[1] - r[0])) + TICK_GAP;
    const span = Array.isArray(ax.range) ? Math.abs(ax.range[1] - ax.range[0]) : 0;
    const need = span && length > 0 ? Math.min(ax.dtick * k, extent * span / length) : ax.dtick * k;
    const decades = Math.max(1, Math.ceil(need - 0.05));
    let first = 0;   // a log axis: the decade the labels start from, the one that shows the most of them
    if (ax.type === "log" && span) {
      const lo = Math.min(...ax.range), hi = Math.max(...ax.range);
      const count = (t) => Math.floor((hi - t) / decades) - Math.ceil((lo - t) / decades) + 1;
      for (let t = 1; t < decades; t++) if (count(t) > count(first)) first = t;
    }
    update[`${key}.tick0`] = ax.type === "log" ? first : (userAx.tick0 != null ? userAx.tick0 : 0);
    update[`${key}.dtick`] = ax.type === "log" ? decades : niceUp(Math.max(need, ax.dtick));
    return;
  }
  const vals = axisTicks(ax).filter((v) => v.text !== "" && v.text != null);
  if (vals.length < 3) return;
  const keep = vals.filter((_, i) => i % k === 0);
  if (keep.length < 2 && vals.length > 1) keep.push(vals[vals.length - 1]);   // an axis keeps two labels
  update[`${key}.tickmode`] = "array";
  update[`${key}.tickvals`] = keep.map((v) => tickValue(ax, v));
  update[`${key}.ticktext`] = keep.map((v) => v.text);
}


// One round of mending: what the drawn chart shows wrong, as a relayout (null: nothing to mend).
function presentFixes(host, layout, thinned = {}) {
  const fl = fullLayout(host);
  if (!fl) return null;
  const update = {};
  // Log axes: only the decades (plotly writes the digits between them at 0.75 of the type).
  for (const key of Object.keys(fl)) {
    const ax = fl[key];
    if (!/^[xy]axis\d*$/.test(key) || !ax || ax.type !== "log" || ax.tickmode === "array") continue;
    const userAx = layout[key] || {};
    if (userAx.dtick != null || !Array.isArray(ax.range) || Math.abs(ax.range[1] - ax.range[0]) < 1) continue;
    if (axisTicks(ax).some((v) => v.text && Math.abs(v.x - Math.round(v.x)) > 1e-6)) update[`${key}.dtick`] = 1;
  }
  if (Object.keys(update).length) return update;
  for (const key of Object.keys(fl)) {
    const ax = fl[key];
    if (/^[xy]axis\d*$/.test(key) && ax && ax.visible !== false && ax.showticklabels !== false) {
      thinTicks(host, key, ax, update, layout[key] || {}, thinned);
    }
  }
  if (Object.keys(update).length) return update;
  // A log axis left with fewer than three labelled decades: the 1s, 2s and 5s (or the 1s and 3s)
  // of each decade as its tick values, where their labels fit (plotly writes them in the axis' format).
  for (const key of Object.keys(fl)) {
    const ax = fl[key];
    if (!/^[xy]axis\d*$/.test(key) || !ax || ax.type !== "log" || ax.visible === false || ax.showticklabels === false
        || ax.tickmode === "array" || !Array.isArray(ax.range) || !(axisLength(ax) > 0)) continue;
    if (axisTicks(ax).filter((v) => v.text).length >= 3) continue;
    const texts = tickTexts(host, ax).map(shownBox).filter(Boolean);
    if (!texts.length) continue;
    const size = Math.max(...texts.map((r) => (key[0] === "x" ? r.width : r.height))) + TICK_GAP;
    const lo = Math.min(...ax.range), hi = Math.max(...ax.range);
    const perDecade = axisLength(ax) / (hi - lo);
    for (const ms of [[1, 2, 5], [1, 3]]) {
      const logs = ms.map(Math.log10).concat([1]);
      if (Math.min(...logs.slice(1).map((l, i) => l - logs[i])) * perDecade < size) continue;
      const vals = [];
      for (let d = Math.floor(lo); d <= Math.ceil(hi); d++) {
        for (const m of ms) if (d + Math.log10(m) >= lo && d + Math.log10(m) <= hi) vals.push(m * Math.pow(10, d));
      }
      if (vals.length >= 3) { update[`${key}.tickmode`] = "array"; update[`${key}.tickvals`] = vals; break; }
    }
  }
  if (Object.keys(update).length) return update;

  const svg = mainSvg(host);
  if (!svg) return null;
  const box = svg.getBoundingClientRect();
  const margin = Object.assign({ l: 80, r: 80, t: 100, b: 80 }, layout.margin || {});
  const grow = {};
  const more = (side, px) => { grow[side] = Math.max(grow[side] || 0, Math.ceil(px) + 4); };
  const parts = textParts(host);
  // Text past the chart's edge: the margin on that side grows.
  let titlePad = null;
  for (const p of parts) {
    if (p.group === "title" && p.r.top < box.top - 1) {
      // A title of several lines grows upwards from where plotly anchors it: pad it down.
      const pad = (layout.title && layout.title.pad && layout.title.pad.t) || 0;
      titlePad = Math.max(titlePad || 0, pad + Math.ceil(box.top - p.r.top) + 2);
      continue;
    }
    if ((p.group === "ytitle" && (p.r.top < box.top - 1 || p.r.bottom > box.bottom + 1))
        || (p.group === "xtitle" && (p.r.left < box.left - 1 || p.r.right > box.right + 1))) {
      // An axis title longer than its axis: on two lines, broken at its middle space.
      const key = titleAxisKey(p.el);
      const t = key && layout[key] && layout[key].title;
      const text = t && (typeof t === "string" ? t : t.text);
      if (text && !/<br>/i.test(text) && /\s/.test(text.trim())) {
        const words = text.trim().split(/\s+/);
        let best = 1, bestGap = Infinity;
        for (let i = 1; i < words.length; i++) {
          const gap = Math.abs(words.slice(0, i).join(" ").length - words.slice(i).join(" ").length);
          if (gap < bestGap) { best = i; bestGap = gap; }
        }
        update[`${key}.title.text`] = words.slice(0, best).join(" ") + "<br>" + words.slice(best).join(" ");
        const size = (t.font && t.font.size) || PRESENT_MIN;
        more(p.group === "ytitle" ? "l" : "b", size * 1.3 - 4);
        continue;
      }
    }
    if (p.r.top < box.top - 1) more("t", box.top - p.r.top);
    if (p.r.bottom > box.bottom + 1) more("b", p.r.bottom - box.bottom);
    if (p.r.left < box.left - 1) more("l", box.left - p.r.left);
    if (p.r.right > box.right + 1) more("r", p.r.right - box.right);
  }
  let legendMoved = false, titleTop = false;
  const height = fl.height;
  const notes = (layout.annotations || []).map((n) => Object.assign({}, n));
  let notesMoved = false;
  const noteOf = (part) => {
    const i = annotationIndex(part.el);
    return Number.isInteger(i) && notes[i] ? notes[i] : null;
  };
  const moved = new Set();
  for (let a = 0; a < parts.length; a++) {
    for (let b = a + 1; b < parts.length; b++) {
      const p = parts[a], q = parts[b];
      if (p.group === q.group || p.group === "data" || q.group === "data" || !meet(p.r, q.r)) continue;
      const groups = [p.group, q.group];
      const one = [p, q].find((s) => s.group === "title");
      const other = one === p ? q : p;
      const lgPart = [p, q].find((s) => s.group === "legend");
      const notePart = [p, q].find((s) => s.group.startsWith("annotation"));
      if (one) {
        // The title meets what is under it: the title goes to the chart's top, the rest moves down.
        titleTop = true;
        const d = one.r.bottom - other.r.top + 4;
        const lg = layout.legend || {};
        if (other.group === "legend" && lg.yref === "container" && !legendMoved) {
          legendMoved = true;
          update["legend.y"] = (lg.y == null ? 1 : lg.y) - d / height;
        }
        more("t", d);
      } else if (lgPart && !legendMoved) {
        // A legend on other text: above the plot, in a row, the plot under it.
        legendMoved = true;
        const lg = layout.legend || {};
        const d0 = Math.min(p.r.bottom, q.r.bottom) - Math.max(p.r.top, q.r.top) + 4;
        if (lg.yref === "container" && lg.y != null && lg.y <= 0.2) {
          // Pinned to the chart's foot: the plot and its axis titles move up, off it.
          more("b", d0);
        } else if (lg.yref === "container" && lg.y != null && lg.y >= 0.5) {
          // Pinned under the title: the plot moves down, off it.
          more("t", d0);
        } else if (lg.yref !== "container" && lg.y != null && lg.y < 0) {
          // Under the plot, on its axis' labels: lower, and the foot of the chart grows for it.
          update["legend.y"] = lg.y - d0 / ((plotArea(host) && plotArea(host).h) || height);
          more("b", d0);
        } else if (lg.yanchor === "bottom" && lg.y >= 1 && lg.yref === "paper") {
          // Already above the plot, on labels drawn there (an x axis on top): higher still.
          const d = Math.min(p.r.bottom, q.r.bottom) - Math.max(p.r.top, q.r.top) + 4;
          update["legend.y"] = lg.y + d / ((plotArea(host) && plotArea(host).h) || height);
          more("t", d);
        } else {
          update["legend.orientation"] = "h";
          update["legend.x"] = 0;
          update["legend.xanchor"] = "left";
          update["legend.y"] = 1;
          update["legend.yanchor"] = "bottom";
          update["legend.yref"] = "paper";
          more("t", lgPart.r.height + 6);
        }
      } else if (groups.some((g) => /^[xy]title$/.test(g)) && groups.some((g) => /^[xy]ticks/.test(g))
                 && p.group[0] === q.group[0]) {
        // An axis title on its own tick labels: it stands further off them.
        const t = /title$/.test(p.group) ? p : q, k = t === p ? q : p;
        const key = titleAxisKey(t.el);
        if (key && fl[key] && !(("_stand_" + key + "t") in update)) {
          update["_stand_" + key + "t"] = true;
          const x = key[0] === "x";
          const d = Math.ceil(x ? k.r.bottom - t.r.top : t.r.right - k.r.left) + 3;
          update[`${key}.title.standoff`] = ((fl[key].title && fl[key].title.standoff) || 0) + d;
          more(x ? (fl[key].side === "top" ? "t" : "b") : (fl[key].side === "right" ? "r" : "l"), d);
        }
      } else if (groups.every((g) => /^[xy]ticks/.test(g)) && p.group[0] !== q.group[0]) {
        // The corner of two axes: the y axis' labels step away from the x axis' ones.
        const y = p.group[0] === "y" ? p : q, x = y === p ? q : p;
        const key = tickYAxisKey(y.el);
        if (key && fl[key] && !(("_stand_" + key) in update)) {
          update["_stand_" + key] = true;
          update[`${key}.ticklabelstandoff`] = (fl[key].ticklabelstandoff || 0)
            + Math.ceil(Math.min(y.r.right, x.r.right) - Math.max(y.r.left, x.r.left)) + 3;
        }
      } else if (notePart && !groups.every((g) => g.startsWith("annotation"))) {
        // An annotation on an axis' labels or title: moved off them, across the axis' labels.
        const note = noteOf(notePart);
        const fixed = notePart === p ? q : p;
        if (!note || moved.has(note)) continue;
        moved.add(note);
        notesMoved = true;
        const n = notePart.r, f = fixed.r;
        if (fixed.group.startsWith("y")) {
          const left = (n.left + n.right) / 2 < (f.left + f.right) / 2;
          note.xshift = (note.xshift || 0) + (left ? -(n.right - f.left + 3) : f.right - n.left + 3);
        } else {
          const above = (n.top + n.bottom) / 2 < (f.top + f.bottom) / 2;
          const d = above ? n.bottom - f.top + 3 : f.bottom - n.top + 3;
          note.yshift = (note.yshift || 0) + (above ? d : -d);
          if (above && n.top - d < box.top) more("t", box.top - (n.top - d));
          if (!above && n.bottom + d > box.bottom) more("b", n.bottom + d - box.bottom);
        }
      }
    }
  }
  if (notesMoved) update.annotations = notes;
  // A legend pinned to the chart's foot below more room than it takes (the figure kept rows for
  // the narrowest chart): the plot takes the rest back, 8 px above the legend.
  const lg = layout.legend || {};
  const lgBox = parts.find((x) => x.group === "legend");
  if (lgBox && !legendMoved && !grow.b && lg.yref === "container" && (lg.y || 0) <= 0.05 && lg.yanchor === "bottom") {
    const plotBottom = box.top + plotArea(host).t + plotArea(host).h;
    const above = parts.filter((x) => x.group !== "legend" && x.group !== "title" && x.r.bottom <= lgBox.r.top + 1
      && x.r.top >= plotBottom - 2);
    const low = Math.max(plotBottom, ...above.map((x) => x.r.bottom));
    const gap = lgBox.r.top - low;
    if (gap > 16) update["margin.b"] = Math.max(0, Math.round(margin.b - (gap - 8)));
  }
  for (const k of Object.keys(update)) if (k.startsWith("_stand_")) delete update[k];
  const title = layout.title || {};
  if (titleTop && layout.title && !(title.yref === "container" && title.y === 1 && title.yanchor === "top")) {
    update["title.yref"] = "container";
    update["title.y"] = 1;
    update["title.yanchor"] = "top";
  }
  if (titlePad !== null) update["title.pad"] = Object.assign({}, title.pad || {}, { t: titlePad });
  // Margins grow only while the plot keeps two fifths of the chart: past that, leave it as it is.
  const keep = (side, full) => margin.l + margin.r + margin.t + margin.b >= 0
    && (full - (side === "t" || side === "b" ? margin.t + margin.b : margin.l + margin.r) - grow[side]) >= 0.4 * full;
  for (const side of Object.keys(grow)) {
    if (keep(side, side === "t" || side === "b" ? fl.height : fl.width)) update[`margin.${side}`] = margin[side] + grow[side];
  }
  return Object.keys(update).length ? update : null;
}

// Whether a label drawn with the data spills out of the smallest box (shape) its centre is in.
function textSpills(host) {
  const boxes = shapePaths(host).map((p) => p.getBoundingClientRect())
    .filter((r) => r.width > 4 && r.height > 4);
  if (!boxes.length) return false;
  return dataLabels(host).some((t) => {
    const r = shownBox(t);
    if (!r || !(t.textContent || "").trim()) return false;
    const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
    const inside = boxes.filter((s) => s.left <= cx && cx <= s.right && s.top <= cy && cy <= s.bottom)
      .sort((a, b) => a.width * a.height - b.width * b.height)[0];
    return !!inside && (r.left < inside.left - 1.5 || r.right > inside.right + 1.5
      || r.top < inside.top - 1.5 || r.bottom > inside.bottom + 1.5);
  });
}

// Draw a presenter-mode figure in ``host``, as tall as the room above the bar allows, then mend it.
// Runs again when the chart's width changes (a slide shown, the window resized); host.dataset.fitting
// is set while it runs (the browser tests wait for it to go).
export async function fitPresent(host, Plotly, figure, config) {
  const token = (host.__fitToken || 0) + 1;
  host.__fitToken = token;
  host.__present = { figure, config };
  const width = host.clientWidth;
  if (!width) { await Plotly.react(host, figure.data, JSON.parse(JSON.stringify(figure.layout)), config); return; }
  host.dataset.fitting = "1";
  try {
    const layout = JSON.parse(JSON.stringify(figure.layout));
    layout.width = width;
    // A chart that starts too low to fit anyway keeps its height (it is not the slide's figure).
    const room = presentRoom(host);
    if (room >= ROOM_MIN) layout.height = Math.min(layout.height || 420, room);
    layout.margin = Object.assign({ l: 80, r: 80, t: 100, b: 80 }, layout.margin || {});
    if (layout.title && layout.title.text) {
      const t = layout.title;
      const x = t.x == null ? 0.5 : t.x;
      const anchor = t.xanchor || "auto";
      const room = anchor === "left" || (anchor === "auto" && x < 0.34) ? width * (1 - x) - 16
        : anchor === "right" || (anchor === "auto" && x > 0.66) ? width * x - 16 : width * 2 * Math.min(x, 1 - x) - 16;
      const wrapped = wrapTitle(t.text, Object.assign({ family: (layout.font || {}).family }, t.font || {}), room);
      if (wrapped !== t.text) {
        const added = wrapped.split("<br>").length - String(t.text).split(/<br\s*\/?>/i).length;
        t.text = wrapped;
        layout.margin.t += Math.round(added * ((t.font && t.font.size) || 22) * 1.3);
      }
    }
    host.style.minHeight = layout.height + "px";
    await Plotly.react(host, figure.data, layout, config);
    const thinned = {};
    for (let pass = 0; pass < FIT_PASSES; pass++) {
      if (host.__fitToken !== token || !host.isConnected) return;
      const update = presentFixes(host, host.layout || layout, thinned);
      host.__fitLog = (pass ? host.__fitLog : []).concat([update]);   // what was mended, for a look in the console
      if (!update) break;
      await Plotly.relayout(host, update);
    }
    // Ticks thinned on an axis that has since grown (a margin or an equal-aspect plot settled
    // after): the author's ticks back, and thinned again only if they still meet.
    const grown = Object.keys(thinned).filter((key) => fullLayout(host) && fullLayout(host)[key]
      && axisLength(fullLayout(host)[key]) > thinned[key] * 1.25 + 10);
    if (grown.length && host.__fitToken === token && host.isConnected) {
      const back = {};
      for (const key of grown) {
        const own = (figure.layout || {})[key] || {};
        for (const p of ["tickmode", "tickvals", "ticktext", "tick0", "dtick"]) back[`${key}.${p}`] = own[p] == null ? null : own[p];
      }
      await Plotly.relayout(host, back);
      if (host.__fitToken !== token || !host.isConnected) return;
      const update = {};
      for (const key of grown) {
        const ax = fullLayout(host)[key];
        thinTicks(host, key, ax, update, (figure.layout || {})[key] || {}, {});
      }
      host.__fitLog = (host.__fitLog || []).concat([back, update]);
      if (Object.keys(update).length) await Plotly.relayout(host, update);
    }
    // A diagram's labels larger than their boxes: back to the figure's own size (only chart text
    // on axes, legends and annotations has the presenter's minimum).
    if (host.__fitToken === token && textSpills(host)) {
      const idx = [], sizes = [];
      (host.data || []).forEach((t, i) => {
        if (t.textfont && t.textfont.size) { idx.push(i); sizes.push(Math.round(t.textfont.size / PRESENT_SCALE)); }
      });
      if (idx.length) await Plotly.restyle(host, { "textfont.size": sizes }, idx);
    }
  } catch (err) {
    console.warn(err);
  } finally {
    if (host.__fitToken === token) delete host.dataset.fitting;
  }
}

