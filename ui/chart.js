// One plotly chart that stays on the page across reruns (see ui/chart.py).
// Streamlit calls this function on mount and again whenever the figure changes; the
// chart's <div> is kept, so a new figure is a Plotly.react on the same plot, not a new one.

const CONFIG = { displaylogo: false, responsive: false };

// plotly.js is loaded once per browser tab, from this app's own server (no internet).
function loadPlotly(src) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__anatomyPlotly) {
    window.__anatomyPlotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        window.__anatomyPlotly = null;
        reject(new Error("plotly.js did not load from " + src));
      };
      document.head.appendChild(script);
    });
  }
  return window.__anatomyPlotly;
}

// Which charts are on screen, kept up to date by the browser: asking with
// getBoundingClientRect during a redraw would force a layout of the whole page.
const visible = new WeakMap();
// A chart below the fold waits: it is drawn when it scrolls into view, or when the browser has
// nothing else to do (after the figure in front of the class has been painted). Drawing it in
// the next task instead held back the paint of the chart on screen: the browser runs queued
// tasks before it draws a frame (D3: three charts below the fold, ~70 ms before the first paint).
const waiting = new WeakMap();
function drawWaiting(host) {
  const draw = waiting.get(host);
  if (!draw) return;
  waiting.delete(host);
  draw();
}
const watcher = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    visible.set(entry.target, entry.isIntersecting);
    if (entry.isIntersecting) drawWaiting(entry.target);
  }
});
const whenIdle = window.requestIdleCallback
  ? (fn) => window.requestIdleCallback(fn, { timeout: 1000 })
  : (fn) => setTimeout(fn, 50);

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

function presenterFigure(figure) {
  const layout = figure.layout || (figure.layout = {});
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
function textWidth(text, font) {
  measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
  measureCtx.font = `${font.size || 18}px ${font.family || "sans-serif"}`;
  return measureCtx.measureText(text.replace(/<[^>]*>/g, "")).width;
}

// A title broken onto lines that fit ``room`` px: at spaces, or between Chinese characters, never
// inside brackets (a formula stays whole) nor inside a tag. Lines the author set (<br>) are kept.
// Example: wrapTitle("attention weights (softmax of q·k)", 200) -> "attention weights<br>(softmax of q·k)"
const CJK = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]/;
function wrapTitle(text, font, room) {
  return String(text).split(/<br\s*\/?>/i).map((line) => {
    if (textWidth(line, font) <= room) return line;
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
      if (lastBreak > 0 && textWidth(cur, font) > room) {
        lines.push(cur.slice(0, lastBreak).trimEnd());
        cur = cur.slice(lastBreak).trimStart();
        lastBreak = -1;
      }
    }
    if (cur) lines.push(cur);
    return lines.join("<br>");
  }).join("<br>");
}

const shownBox = (el) => {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 ? r : null;
};
const meet = (a, b, gap = 1.5) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > gap
  && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > gap;

// The least "nice" step (1, 2, 2.5 or 5 times a power of ten) at least ``v``.
// Example: niceUp(0.3) -> 0.5; niceUp(0.5) -> 0.5; niceUp(7) -> 10
function niceUp(v) {
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
  const texts = Array.from(host.querySelectorAll(`g.${ax._id}tick > text`))
    .map((t) => shownBox(t)).filter(Boolean);
  if (texts.length < 3) return;
  const x = ax._id[0] === "x";
  const along = (r) => (x ? [r.left, r.right] : [r.top, r.bottom]);
  const sorted = texts.map(along).sort((a, b) => a[0] - b[0]);
  let k = 1;
  const clash = (step) => sorted.some((r, i) => i + step < sorted.length && r[1] + TICK_GAP > sorted[i + step][0]);
  while (k < sorted.length && clash(k)) k += 1;
  const rotatedMeet = texts.some((r, i) => i > 0 && meet(r, texts[i - 1]));
  if (k === 1 && !rotatedMeet) return;
  if (k === 1) k = 2;
  thinned[key] = ax._length;
  const own = !userAx.tickvals && (userAx.tickmode == null || userAx.tickmode === "auto" || userAx.tickmode === "linear");
  if (own && (ax.type === "linear" || ax.type === "log") && typeof ax.dtick === "number" && ax.dtick > 0) {
    update[`${key}.tickmode`] = "linear";
    // The step the labels need here, in the axis' units (decades on a log axis): at most k drawn steps.
    const extent = Math.max(...sorted.map((r) => r[1] - r[0])) + TICK_GAP;
    const span = Array.isArray(ax.range) ? Math.abs(ax.range[1] - ax.range[0]) : 0;
    const need = span && ax._length > 0 ? Math.min(ax.dtick * k, extent * span / ax._length) : ax.dtick * k;
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
  const vals = (ax._vals || []).filter((v) => v.text !== "" && v.text != null);
  if (vals.length < 3) return;
  const keep = vals.filter((_, i) => i % k === 0);
  if (keep.length < 2 && vals.length > 1) keep.push(vals[vals.length - 1]);   // an axis keeps two labels
  const value = (v) => (ax.type === "category" && ax._categories ? ax._categories[Math.round(v.x)]
    : ax.type === "log" ? Math.pow(10, v.x) : ax.type === "date" ? ax.l2r(v.x) : v.x);
  update[`${key}.tickmode`] = "array";
  update[`${key}.tickvals`] = keep.map(value);
  update[`${key}.ticktext`] = keep.map((v) => v.text);
}

// The chart's texts by group, as tests/browser/test_layout.py compares them.
function textParts(host) {
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

// One round of mending: what the drawn chart shows wrong, as a relayout (null: nothing to mend).
function presentFixes(host, layout, thinned = {}) {
  const fl = host._fullLayout;
  if (!fl) return null;
  const update = {};
  // Log axes: only the decades (plotly writes the digits between them at 0.75 of the type).
  for (const key of Object.keys(fl)) {
    const ax = fl[key];
    if (!/^[xy]axis\d*$/.test(key) || !ax || ax.type !== "log" || ax.tickmode === "array") continue;
    const userAx = layout[key] || {};
    if (userAx.dtick != null || !Array.isArray(ax.range) || Math.abs(ax.range[1] - ax.range[0]) < 1) continue;
    if ((ax._vals || []).some((v) => v.text && Math.abs(v.x - Math.round(v.x)) > 1e-6)) update[`${key}.dtick`] = 1;
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
        || ax.tickmode === "array" || !Array.isArray(ax.range) || !(ax._length > 0)) continue;
    if ((ax._vals || []).filter((v) => v.text).length >= 3) continue;
    const texts = Array.from(host.querySelectorAll(`g.${ax._id}tick > text`)).map(shownBox).filter(Boolean);
    if (!texts.length) continue;
    const size = Math.max(...texts.map((r) => (key[0] === "x" ? r.width : r.height))) + TICK_GAP;
    const lo = Math.min(...ax.range), hi = Math.max(...ax.range);
    const perDecade = ax._length / (hi - lo);
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

  const svg = host.querySelector(".main-svg");
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
      const g = p.el.closest('[class^="g-"][class$="title"]');
      const id = g && /^g-([xy]\d*)title$/.exec(g.getAttribute("class"));
      const key = id && (id[1][0] + "axis" + id[1].slice(1));
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
    const g = part.el.closest(".annotation");
    const i = g ? Number(g.getAttribute("data-index")) : NaN;
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
          update["legend.y"] = lg.y - d0 / ((fl._size && fl._size.h) || height);
          more("b", d0);
        } else if (lg.yanchor === "bottom" && lg.y >= 1 && lg.yref === "paper") {
          // Already above the plot, on labels drawn there (an x axis on top): higher still.
          const d = Math.min(p.r.bottom, q.r.bottom) - Math.max(p.r.top, q.r.top) + 4;
          update["legend.y"] = lg.y + d / ((fl._size && fl._size.h) || height);
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
        const g = t.el.closest('[class^="g-"][class$="title"]');
        const id = g && /^g-([xy]\d*)title$/.exec(g.getAttribute("class"));
        const key = id && (id[1][0] + "axis" + id[1].slice(1));
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
        const g = y.el.closest('g[class$="tick"]');
        const id = g && /^(y\d*)tick$/.exec(g.getAttribute("class"));
        const key = id && "yaxis" + id[1].slice(1);
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
    const plotBottom = box.top + fl._size.t + fl._size.h;
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
  const boxes = Array.from(host.querySelectorAll(".shapelayer path")).map((p) => p.getBoundingClientRect())
    .filter((r) => r.width > 4 && r.height > 4);
  if (!boxes.length) return false;
  return Array.from(host.querySelectorAll(".textpoint text")).some((t) => {
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
async function fitPresent(host, Plotly, figure, config) {
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
    const grown = Object.keys(thinned).filter((key) => host._fullLayout && host._fullLayout[key]
      && host._fullLayout[key]._length > thinned[key] * 1.25 + 10);
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
        const ax = host._fullLayout[key];
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

// What the server sent, with the export names and the live frames taken out of the one-item lists
// they travel in (ui/chart.py: Streamlit checks a dict there for a dataframe on every run).
function sent(component) {
  const data = component.data;
  if (!data) return data;
  const one = (v) => (Array.isArray(v) ? v[0] : v);
  return { ...data, export: one(data.export), live: one(data.live) };
}

export default function (component) {
  const data = sent(component), { parentElement } = component;
  let host = parentElement.querySelector(":scope > .anatomy-chart");
  if (!host) {
    host = document.createElement("div");
    host.className = "anatomy-chart";
    parentElement.appendChild(host);
    watcher.observe(host);
  }
  // Streamlit calls the returned function when the element goes away (another page, a section
  // closed), and also when a call was overtaken by a newer one: free the plot only once the
  // chart has really left the page.
  const release = () => setTimeout(() => {
    if (host.isConnected) return;
    watcher.unobserve(host);
    if (host.__resize) host.__resize.disconnect();
    if (window.Plotly) window.Plotly.purge(host);
  }, 0);
  if (data && data.live) return liveChart(component, host, release);
  const revision = data && data.revision + (data.present ? ":present" : "");
  if (!data || host.dataset.spec === revision) return release;   // the same figure: nothing to draw
  host.dataset.spec = revision;
  const figure = JSON.parse(data.figure);
  if (data.present) presenterFigure(figure);
  host.style.minHeight = (figure.layout.height || 420) + "px";   // no jump while plotly loads

  const draw = (Plotly) => {
    if (host.dataset.spec !== revision || !host.isConnected) return;   // a newer figure came
    host.__figure = figure;   // what the CSV button writes out (export, below)
    host.__exportName = data.export && data.export.file;
    if (!data.present) host.__present = null;
    if (data.present) fitPresent(host, Plotly, figure, exportConfig(data.export));
    else Plotly.react(host, figure.data, figure.layout, exportConfig(data.export));
    // A clickable chart (chart(..., on_select=...)): a click sends the point's customdata.
    host.__setTrigger = component.setTriggerValue;
    if (data.select && !host.__select) {
      host.__select = true;
      host.on("plotly_click", (ev) => {
        const point = ev && ev.points && ev.points[0];
        if (point && point.customdata != null) host.__setTrigger("select", String(point.customdata));
      });
    }
    watchResize(host, Plotly);
  };
  loadPlotly(data.plotly).then((Plotly) => {
    // A chart on screen is drawn at once; one below the fold when seen or when idle (above).
    if (visible.get(host) !== false) {   // on screen, or not known yet
      waiting.delete(host);
      draw(Plotly);
    } else {
      waiting.set(host, () => draw(Plotly));
      whenIdle(() => drawWaiting(host));
    }
  }).catch((err) => {
    console.warn(err);
    host.textContent = data.failed;   // plain text, in the page's language
  });
  return release;
}

function watchResize(host, Plotly) {
  if (host.__resize) return;
  let width = host.clientWidth;
  host.__resize = new ResizeObserver(() => {
    // A chart leaving the page (or a closed section) has no width: nothing to fit.
    if (!host.isConnected || host.clientWidth === 0 || host.clientWidth === width) return;
    if (!host.classList.contains("js-plotly-plot")) return;
    width = host.clientWidth;
    if (host.__present) fitPresent(host, Plotly, host.__present.figure, host.__present.config);
    else Plotly.Plots.resize(host).catch(() => {});
  });
  host.__resize.observe(host);
}

// --- Live controls (ui/live.py): the chart carries one frame per value of its slider, and the
// slider, drawn here, switches between them in the browser while it moves: one Plotly.react per
// animation frame, no server round trip. Let go (or 600 ms after the last key press), the value
// goes to the server once (the trigger "commit"): Python writes it into session state and the URL,
// and the page parts that depend on it follow in that one rerun. The figure the server then sends
// is the frame already on screen: it is not drawn again.
const KEY_WAIT = 600;    // ms after the last arrow key before the value is sent (one rerun a burst)
const AWAIT_MAX = 5000;  // ms a sent value waits for the server's answer before the server wins again
let liveIds = 0;

function liveControl(parentElement, host, st) {
  const box = document.createElement("div");
  box.className = "anatomy-live";
  const id = "anatomy-live-" + (++liveIds);
  const label = document.createElement("label");
  label.htmlFor = id;
  const name = document.createElement("span");
  name.className = "anatomy-live-label";
  const shown = document.createElement("output");
  shown.className = "anatomy-live-value";
  shown.htmlFor = id;
  label.append(name, shown);
  const input = document.createElement("input");
  input.type = "range";
  input.id = id;
  input.min = "0";
  input.step = "1";
  box.append(label, input);
  parentElement.insertBefore(box, host);
  Object.assign(st, { box, name, shown, input });

  // The first value of a motion is drawn at once (a key press waited up to a frame for its
  // animation frame before); values that come while that frame is pending are drawn together
  // when it comes (a drag sends several a frame), the newest only.
  const redraw = () => {
    st.shown.textContent = st.texts[st.index];
    input.setAttribute("aria-valuetext", st.texts[st.index]);
    if (st.raf) return;
    drawLive(host, st);
    st.raf = requestAnimationFrame(() => { st.raf = 0; drawLive(host, st); });
  };
  const commitSoon = (wait) => {
    clearTimeout(st.timer);
    st.timer = setTimeout(() => commitLive(st), wait);
  };
  input.addEventListener("input", () => {
    st.index = Number(input.value);
    st.busy = true;
    redraw();
  });
  input.addEventListener("pointerdown", () => { st.pointer = true; st.busy = true; clearTimeout(st.timer); });
  const up = () => {
    if (!st.pointer) return;
    st.pointer = false;
    commitSoon(0);
  };
  window.addEventListener("pointerup", up);
  window.addEventListener("pointercancel", up);
  st.unlisten = () => {
    window.removeEventListener("pointerup", up);
    window.removeEventListener("pointercancel", up);
  };
  // A key press changes the value and fires "change" at once: wait for the burst to end.
  input.addEventListener("change", () => { if (!st.pointer) commitSoon(KEY_WAIT); });
}

function commitLive(st) {
  st.timer = 0;
  st.busy = false;
  if (st.fastDrawn && st.host) drawLive(st.host, st, true);   // the frame on screen, fully drawn
  // Nothing to send when the server has (or was last sent) this value. Compared with the value
  // in flight too: a value sent, then moved back to the server's before its answer came, is sent
  // again (else that answer would move the slider to the value the student left).
  if (st.index === (st.awaiting !== null ? st.awaiting : st.server)) return;
  st.awaiting = st.index;
  st.awaitingSince = performance.now();
  st.component.setTriggerValue("commit", st.values[st.index]);
}

// A pooled array (ui/live.py: an array that grows with the value), decoded once, and the part
// of it a frame shows: its first rows (and columns), rows blank[0]..blank[1]-1 blank (NaN).
function prefixRows(st, ref) {
  const pool = st.pool || (st.pool = []);
  let full = pool[ref.prefix];
  if (!full) {
    const spec = st.frames.pool[ref.prefix];
    if (Array.isArray(spec)) {
      full = pool[ref.prefix] = { list: spec };
    } else {
      const bytes = Uint8Array.from(atob(spec.bdata), (c) => c.charCodeAt(0));
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
function resolve(st, v) {
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
function composeFrame(st, i) {
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
const GONE = Symbol("gone");   // a key the frame does not have

// A copy of plain objects and arrays down to typed arrays and numbers, which are shared:
// plotly writes into the objects it is given (restyle, relayout), never into a data array.
function plainCopy(v) {
  if (!v || typeof v !== "object" || ArrayBuffer.isView(v) || typeof v.bdata === "string") return v;
  if (Array.isArray(v)) return v.map(plainCopy);
  const out = {};
  for (const k of Object.keys(v)) out[k] = plainCopy(v[k]);
  return out;
}

// Everything copied, typed-array specs ({dtype, bdata, shape}) included: Plotly.animate deep-extends
// the trace it holds with the frame's (Lib.extendDeepNoArrays), so a spec shared with a decoded frame
// got the next frame's bdata written into it, and that frame showed its neighbour's data when the
// slider came back to it (E1's load bars at 0.75 showed 0.5's counts). Plotly also leaves its decoded
// array on a spec (_inputArray): a copy is the spec alone.
function ownCopy(v) {
  if (ArrayBuffer.isView(v)) return v.slice();
  if (!v || typeof v !== "object") return v;
  if (typeof v.bdata === "string") {
    const spec = { dtype: v.dtype, bdata: v.bdata };
    if (v.shape !== undefined) spec.shape = v.shape;
    return spec;
  }
  if (Array.isArray(v)) return v.map(ownCopy);
  const out = {};
  for (const k of Object.keys(v)) out[k] = ownCopy(v[k]);
  return out;
}

function liveBase(st) {
  if (st.baseFor !== st.baseText) {
    st.base = JSON.parse(st.baseText);
    st.baseFor = st.baseText;
  }
  return st.base;
}

// Frame i's changing values, decoded once per frames: {data: [[trace, {key: value | GONE}]],
// layout: {key: value | GONE}}.
function framePart(st, i) {
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

function composeShared(st, i) {
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

const DECODED = new WeakMap();
function finiteExtent(values, out) {
  if (!values || typeof values === "string") return;
  if (typeof values.bdata === "string") {
    if (!DECODED.has(values)) DECODED.set(values, decodeArray(values));
    values = DECODED.get(values);
  }
  if (!Array.isArray(values) && !ArrayBuffer.isView(values)) return;
  for (const v of values) {
    if (ArrayBuffer.isView(v) || Array.isArray(v)) finiteExtent(v, out);
    else if (typeof v === "number" && Number.isFinite(v)) {
      out[0] = Math.min(out[0], v);
      out[1] = Math.max(out[1], v);
    }
  }
}

// Whether frame ``fig`` fits the axes on screen: an autoranged axis the frame's data would move
// (data past its ends, or filling less than half of it), or a category axis whose labels change,
// needs the full redraw that ranges it again.
function fitsAxes(host, fig, changed) {
  const full = host._fullLayout;
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
const PLAIN = /[<&]/;   // text written into a label as it is: no markup, no entity
function setTitle(host, title) {
  const text = title && typeof title === "object" ? title.text : title;
  const el = host.querySelector(".g-gtitle text.gtitle");
  if (typeof text !== "string" || !el || MARKUP.test(text)) return false;
  const lines = text.split(/<br\s*\/?>/i);
  const tspans = el.querySelectorAll("tspan.line");
  if (lines.length > 1 ? tspans.length !== lines.length : tspans.length > 1 || el.querySelector("tspan:not(.line)")) return false;
  if (lines.length > 1) tspans.forEach((t, j) => { t.textContent = lines[j]; });
  else (tspans[0] || el).textContent = lines[0];
  host.layout.title = plainCopy(title);
  if (host._fullLayout.title) host._fullLayout.title.text = text;
  return true;
}

function setNames(host, changed, fig) {
  const items = Array.from(host.querySelectorAll(".legend .traces"));
  for (const t of changed) {
    const name = fig.data[t].name;
    if (name === undefined || fig.data[t].showlegend === false) continue;
    if (typeof name !== "string" || PLAIN.test(name)) return false;
    const item = items.find((g) => {
      const d = g.__data__, first = d && d[0];
      const trace = first && (first.trace || (first[0] && first[0].trace));
      return trace && trace.index === t;
    });
    const el = item && item.querySelector("text.legendtext");
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
  for (const g of host.querySelectorAll(".barlayer > g.trace")) {
    const d = g.__data__, first = d && d[0], t = first && first.trace && first.trace.index;
    if (!changed.includes(t)) continue;
    const colour = (fig.data[t].marker || {}).color;
    if (colour == null) continue;
    const list = typeof colour === "string" ? null : listOf(colour);
    for (const p of g.querySelectorAll("g.point > path")) {
      const k = p.__data__ && p.__data__.i;
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
function drawFast(host, st, i, Plotly) {
  const shown = st.onScreen;
  // window.__anatomyFullRedraw = true turns it off (bench_lessons --drag measures both ways).
  if (window.__anatomyFullRedraw === true) return false;
  if (st.data.present || !shown || shown.rev !== st.rev || shown.present || !host._fullLayout || !fastFigure(st)) return false;
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
  if (names && !setNames(host, changed, fig)) relayout["legend.orientation"] = host._fullLayout.legend.orientation;
  if (Object.keys(relayout).length) Plotly.relayout(host, relayout).catch(() => {});
  // The data plotly holds is frame i's; its datarevision too, or a later react of the frame first
  // drawn would see no change.
  host.layout.datarevision = fig.layout.datarevision;
  st.fastDrawn = true;
  return fig;
}

// --- Heatmap frames painted here (issue 25): one Plotly.react of D2's six heatmaps took ~30 ms of
// the ~50 ms a floor page's whole round trip takes. While the slider moves, each changed heatmap's
// image is painted as plotly's own "fast" heatmap paints it (one pixel a cell, scaled pixelated: no
// gaps, linear axes), at the place its axes give; a moved rectangle's path and changed tick labels
// are written as plotly writes them. On release the full react draws the frame: hover reads
// plotly's values, which are the frame's again then.
const CELL_KEYS = new Set(["x", "y", "z"]);
const CELL_LAYOUT = new Set(["datarevision", "shapes", "margin"]);
const AXIS_KEY = /^[xy]axis\d*$/;

function cellFigure(st) {
  if (st.cellsFor === st.rev) return st.cells;
  const base = liveBase(st);
  st.cellsFor = st.rev;
  st.cells = st.frames.traces.length > 0 && st.frames.traces.every(([t, keys]) => {
    const trace = base.data[t];
    return trace.type === "heatmap" && !trace.xgap && !trace.ygap && !trace.zsmooth && keys.every((k) => CELL_KEYS.has(k));
  }) && st.frames.layout.every((k) => CELL_LAYOUT.has(k) || AXIS_KEY.test(k));
  return st.cells;
}

function decodedOf(v) {
  if (!v || typeof v !== "object" || typeof v.bdata !== "string") return v;
  if (!DECODED.has(v)) DECODED.set(v, decodeArray(v));
  return DECODED.get(v);
}

let colourCanvas = null;
function rgbaOf(colour) {       // any CSS colour as [r, g, b, a], as the browser reads it
  const ctx = (colourCanvas || (colourCanvas = document.createElement("canvas"))).getContext("2d");
  ctx.fillStyle = "#000";
  ctx.fillStyle = colour;
  const c = ctx.fillStyle;
  if (c[0] === "#") return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16), 1];
  const m = c.match(/[\d.]+/g) || [0, 0, 0, 1];
  return [Number(m[0]), Number(m[1]), Number(m[2]), m.length > 3 ? Number(m[3]) : 1];
}

// The colour scale's ends: lo and hi as the trace gives them, or (auto) as plotly finds them, the
// values' extent (one value: half a unit either side); null where there is no number.
function colourEnds(values, lo, hi) {
  if (lo == null || hi == null) {
    const ext = [Infinity, -Infinity];
    finiteExtent(values, ext);
    if (!(ext[0] <= ext[1])) return null;
    if (lo == null) lo = ext[0];
    if (hi == null) hi = ext[1];
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
  }
  return [lo, hi];
}

// Plotly's colour of a value: piecewise linear in RGBA between the colour scale's stops over
// lo..hi, clamped; r, g, b rounded, alpha out of 255. null where there is no number.
function cellScale(stops, reverse, lo, hi) {
  if (reverse) stops = stops.slice().reverse().map(([v, c]) => [1 - v, c]);
  const at = stops.map(([v]) => lo + v * (hi - lo)), rgba = stops.map(([, c]) => rgbaOf(c));
  return (v) => {
    if (typeof v !== "number" || !Number.isFinite(v)) return null;
    let j = 0;
    while (j < at.length - 2 && v >= at[j + 1]) j++;
    const span = at[j + 1] - at[j];
    const f = span ? Math.min(1, Math.max(0, (v - at[j]) / span)) : 0;
    // d3's number interpolation, a(1 - f) + bf: a + (b - a)f rounds the other way on a half (C3's
    // trail at m = 100: 93.49999 for d3's 93.5, rgb 93 against plotly's 94).
    const a = rgba[j], b = rgba[j + 1], mix = (k) => a[k] * (1 - f) + b[k] * f;
    return [Math.round(mix(0)), Math.round(mix(1)), Math.round(mix(2)), Math.round(mix(3) * 255)];
  };
}

function cellGroups(host) {
  const out = new Map();
  for (const g of host.querySelectorAll("g.hm")) {
    const d = g.__data__, trace = d && d[0] && d[0].trace;
    if (trace) out.set(trace.index, g);
  }
  return out;
}

// Trace t's image: plotly's, or where plotly drew none (the trace had no rows: D2's past rows at
// step 0) one of our own in the same layer, under the traces drawn after t. Ours are taken away
// before plotly draws again (dropCells).
function cellImage(host, t, trace) {
  const groups = cellGroups(host);
  if (groups.has(t)) return groups.get(t).querySelector("image");
  const own = host.__cells && host.__cells.get(t);
  if (own && own.isConnected) return own;
  const same = [...groups.entries()].filter(([k]) => {
    const other = host._fullData[k];
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

function dropCells(host) {
  host.querySelectorAll(".anatomy-cells").forEach((g) => g.remove());
  host.querySelectorAll("g.hm image").forEach((image) => { image.style.display = ""; });
  host.__cells = null;
}

// Cell centres (numbers, evenly spaced, or none: 0, 1, ...) -> the bricks' two outer edges.
function cellEdges(values, n) {
  const v = values == null ? Array.from({ length: n }, (_, k) => k) : Array.from(decodedOf(values));
  if (v.length !== n || !v.every((x) => typeof x === "number")) return null;
  const step = n > 1 ? (v[n - 1] - v[0]) / (n - 1) : 1;
  for (let k = 1; k < n; k++) if (Math.abs(v[k] - v[k - 1] - step) > Math.abs(step) / 100) return null;
  return [v[0] - step / 2, v[n - 1] + step / 2];
}

// The <image> of trace t painted from its frame values; false where plotly must draw it.
function paintCells(host, t, trace, st) {
  const full = (host._fullData && host._fullData[t]) || {}, layout = host._fullLayout;
  const image = cellImage(host, t, trace);
  if (!image || !/pixelated/.test(image.getAttribute("style") || "")) return false;
  const xa = layout[(trace.xaxis || "x").replace(/^x/, "xaxis")], ya = layout[(trace.yaxis || "y").replace(/^y/, "yaxis")];
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
  let left = xa.c2p(xe[0]), right = xa.c2p(xe[1]), top = ya.c2p(ye[0]), bottom = ya.c2p(ye[1]);
  if (![left, right, top, bottom].every(Number.isFinite)) return false;
  const flipX = right < left, flipY = bottom < top;
  if (flipX) [left, right] = [right, left];
  if (flipY) [top, bottom] = [bottom, top];
  if (left >= xa._length || right <= 0 || top >= ya._length || bottom <= 0) return false;
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
  const fl = host._fullLayout, name = (r, letter) => (r || letter).replace(/^([xy])/, "$1axis");
  const xa = fl[name(shape.xref, "x")], ya = fl[name(shape.yref, "y")];
  const paths = host.querySelectorAll(`.shapelayer path[data-index="${j}"]`);
  if ((shape.type || "rect") !== "rect" || !xa || !ya || xa.type !== "linear" || ya.type !== "linear"
      || /paper|domain/.test(`${shape.xref}${shape.yref}`) || shape.xsizemode === "pixel"
      || shape.ysizemode === "pixel" || paths.length !== 1) return null;
  const x0 = xa._offset + xa.r2p(shape.x0), x1 = xa._offset + xa.r2p(shape.x1);
  const y0 = ya._offset + ya.r2p(shape.y0), y1 = ya._offset + ya.r2p(shape.y1);
  if (![x0, x1, y0, y1].every(Number.isFinite)) return null;
  return () => paths[0].setAttribute("d", `M${x0},${y0}H${x1}V${y1}H${x0}Z`);
}

// New tick label texts on an axis whose tick values stay: the label elements written again.
function tickWriter(host, name, now) {
  const ax = host._fullLayout[name];
  if (!ax) return null;
  if (!ax.showticklabels || ax.visible === false) return () => {};
  const texts = now.ticktext, vals = now.tickvals;
  if (!Array.isArray(texts) || !Array.isArray(vals) || texts.some((t) => typeof t !== "string" || PLAIN.test(t))) return null;
  const groups = Array.from(host.querySelectorAll(`g.${ax._id}tick`));
  const set = [];
  for (const g of groups) {
    const d = g.__data__, el = g.querySelector("text");
    const k = d ? vals.indexOf(d.x) : -1;
    if (k < 0 || !el || el.querySelector("tspan")) return null;
    set.push([el, d, texts[k]]);
  }
  if (set.length !== vals.length) return null;
  return () => { for (const [el, d, text] of set) { el.textContent = text; d.text = text; } };
}

// The frame on screen a painter draws over (its index), or null where plotly must draw: the full
// redraw asked for (window.__anatomyFullRedraw), presenter mode, a screen of other frames, or
// frames the painter cannot draw (``fits``).
function paintedOver(host, st, fits) {
  if (window.__anatomyFullRedraw === true) return null;
  const shown = st.onScreen;
  if (st.data.present || !shown || shown.rev !== st.rev || shown.present || !host._fullLayout || !fits(st)) return null;
  const was = Number(host.dataset.frame);
  return Number.isInteger(was) && st.frames.frames[was] ? was : null;
}

function drawCells(host, st, i, Plotly) {
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

function pointFigure(st) {
  if (st.pointsFor === st.rev) return st.points;
  const base = liveBase(st);
  st.pointsFor = st.rev;
  st.points = st.frames.traces.length > 0 && st.frames.traces.every(([t, keys]) =>
    (base.data[t].type || "scatter") === "scatter" && keys.every((k) => POINT_KEYS.has(k)))
    && st.frames.layout.every((k) => POINT_LAYOUT.has(k));
  return st.points;
}

function traceGroup(host, t) {
  for (const g of host.querySelectorAll(".scatterlayer > g.trace")) {
    const d = g.__data__, first = d && d[0];
    if (first && first.trace && first.trace.index === t) return g;
  }
  return null;
}

const px2 = (v) => Math.round(v * 100) / 100;   // plotly writes places to 2 decimals
const listOf = (v) => (v == null ? null : Array.from(decodedOf(v)));
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
  const full = host._fullData && host._fullData[t], fl = host._fullLayout, g = traceGroup(host, t);
  if (!full || !g || full.visible !== true || (full.fill && full.fill !== "none")) return null;
  if ((full.error_x && full.error_x.visible) || (full.error_y && full.error_y.visible)) return null;
  const xa = fl[(full.xaxis || "x").replace(/^x/, "xaxis")], ya = fl[(full.yaxis || "y").replace(/^y/, "yaxis")];
  // (c2p takes data units on a log axis too: plotly keeps a log axis' calc values unlogged.)
  const kinds = ["linear", "log"];
  if (!xa || !ya || !kinds.includes(xa.type) || !kinds.includes(ya.type) || xa.autorange || ya.autorange) return null;
  if (withoutColour(trace.marker) !== withoutColour(then.marker)) return null;   // sizes, symbols: plotly's
  const xs = listOf(trace.x), ys = listOf(trace.y);
  if (!xs || !ys || xs.length !== ys.length) return null;
  const places = [];   // [index, x px, y px] of every point plotly draws (both coordinates numbers)
  xs.forEach((x, k) => {
    const X = typeof x === "number" ? xa.c2p(x) : NaN, Y = typeof ys[k] === "number" ? ya.c2p(ys[k]) : NaN;
    if (Number.isFinite(X) && Number.isFinite(Y)) places.push([k, px2(X), px2(Y)]);
  });
  const mode = full.mode || "";
  const writes = [];
  if (mode.includes("lines")) {
    const lines = g.querySelectorAll(".lines path.js-line");
    const inside = places.every(([, X, Y]) => X >= 0 && X <= xa._length && Y >= 0 && Y <= ya._length);
    if (full.line.shape !== "linear" || lines.length !== 1 || places.length !== xs.length || places.length < 2 || !inside) return null;
    const d = "M" + places.map(([, X, Y]) => X + "," + Y).join("L");
    writes.push(() => lines[0].setAttribute("d", d));
  }
  if (mode.includes("markers")) {
    const nodes = Array.from(g.querySelectorAll(".points path.point"));
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
    const els = Array.from(g.querySelectorAll(".text g.textpoint text"));
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

function drawPoints(host, st, i) {
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

function drawLive(host, st, settle = false) {
  const i = st.index;
  const key = st.rev + ":" + i + (st.data.present ? ":present" : "");
  if (host.dataset.spec === key && !(settle && st.fastDrawn)) return;   // this frame is on screen already
  const paint = (Plotly) => {
    if (!host.isConnected || st.index !== i && host.dataset.spec) return;   // a newer frame is coming
    // While the slider moves, the fast path; let go (settle), the full draw: the ranges plotly
    // computes for this frame, as a fresh page at this value draws it.
    // (After written scatter frames, plotly's data is an older frame's: a frame the writer cannot
    // draw is drawn in full, not animated from there. Nor is one of scatter frames the writer
    // declines: plotly's animation of some of C3's six traces left others' markers out.)
    let figure = !settle && (drawPoints(host, st, i) || (!st.pointsDrawn && !pointFigure(st) && drawFast(host, st, i, Plotly))
      || drawCells(host, st, i, Plotly));
    if (!figure) {
      figure = st.data.present ? presenterFigure(composeFrame(st, i)) : composeShared(st, i);
      // After fast draws the datarevision on screen may be this frame's already: make react recompute.
      if (st.fastDrawn) figure.layout.datarevision = String(figure.layout.datarevision) + "~" + (++st.seq);
      st.fastDrawn = false;
      st.pointsDrawn = false;
      dropCells(host);
      host.style.minHeight = (figure.layout.height || 420) + "px";
      if (st.data.present) fitPresent(host, Plotly, figure, exportConfig(st.data.export));
      else {
        host.__present = null;   // out of presenter mode: a resize no longer fits it to a slide
        const config = exportConfig(st.data.export), drawn = figure;
        const react = () => Plotly.react(host, drawn.data, drawn.layout, config);
        if (st.animating) st.animating.then(() => { if (host.__figure === drawn) react(); });
        else react();
      }
      watchResize(host, Plotly);
    }
    st.onScreen = { rev: st.rev, present: !!st.data.present };
    host.dataset.spec = key;
    host.dataset.frame = String(i);
    host.__figure = figure;   // the CSV of the frame on screen
    host.__exportName = st.data.export && st.data.export.file;
    st.draws += 1;
  };
  if (window.Plotly) { paint(window.Plotly); return; }
  loadPlotly(st.data.plotly).then(paint).catch((err) => {
    if (st.failed) return;
    st.failed = true;
    console.warn(err);
    host.textContent = st.data.failed;   // the slider stays: the page still follows on release
  });
}

function liveChart(component, host, release) {
  const data = sent(component), { parentElement } = component;
  const live = data.live;
  let st = host.__live;
  if (!st) {
    st = host.__live = { rev: null, frames: null, index: live.index, server: null, busy: false, pointer: false,
      timer: 0, raf: 0, awaiting: null, draws: 0, failed: false, host, seq: 0, parts: null, fastDrawn: false, animating: null };
    liveControl(parentElement, host, st);
  }
  st.component = component;
  st.data = data;
  st.baseText = data.figure;
  st.values = live.values;
  st.texts = live.texts;
  if (st.rev !== live.rev) {
    st.frames = JSON.parse(live.frames);   // once per distinct frames (the other controls' values)
    st.rev = live.rev;
    st.pool = null;
    st.parts = null;   // each frame decoded again, once, from the new frames
  }
  if (st.awaiting !== null && (live.index === st.awaiting || performance.now() - st.awaitingSince > AWAIT_MAX)) {
    st.awaiting = null;
  }
  // The server's value wins unless the student is moving the slider or waits for a value sent.
  if (!st.busy && st.awaiting === null) st.index = live.index;
  st.server = live.index;
  st.name.textContent = live.label;
  if (live.help) st.name.title = live.help; else st.name.removeAttribute("title");   // plain text, never markup
  st.box.classList.toggle("anatomy-live-present", !!data.present);
  st.box.dataset.key = (data.export && data.export.file) || "";   // the chart's key: tests find its slider
  st.input.max = String(live.values.length - 1);
  st.input.value = String(st.index);
  st.shown.textContent = st.texts[st.index];
  st.input.setAttribute("aria-valuetext", st.texts[st.index]);
  drawLive(host, st);
  return () => {
    release();
    setTimeout(() => { if (!host.isConnected && st.unlisten) st.unlisten(); }, 0);
  };
}

// --- Export: the plot as PNG or SVG, its data as CSV, from three buttons of the chart's modebar.
// All in the browser, from the figure the chart already has: no server work per figure. The
// config object is made once per language and reused, so Plotly.react sees the same config and
// redraws as before (a changed config would make it draw the plot from scratch).
const EXPORT = new Map();
const ICONS = {
  svg: { width: 24, height: 24, path: "M4 4h7v7H4z M17.5 4a3.5 3.5 0 1 1 0 7a3.5 3.5 0 1 1 0-7z M12 13l8 8H4z" },
  csv: { width: 24, height: 24, path: "M3 3h18v18H3z M5 5v4h6V5z M13 5v4h6V5z M5 11v4h6v-4z M13 11v4h6v-4z"
    + " M5 17v2h6v-2z M13 17v2h6v-2z" },
};

function exportName(gd) {
  return String(gd.__exportName || "figure").replace(/[^A-Za-z0-9._-]/g, "_");
}

function saveImage(gd, format) {
  const size = gd._fullLayout || {};
  // Twice the on-screen size: a figure pasted into slides stays sharp (618 x 420 looked soft).
  window.Plotly.downloadImage(gd, { format, width: size.width, height: size.height, scale: format === "png" ? 2 : 1,
    filename: exportName(gd) });
}

// A plotly array as a JS array: typed arrays arrive as {dtype, bdata (base64), shape}.
const TYPED = { f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
  u2: Uint16Array, i4: Int32Array, u4: Uint32Array };
function decodeArray(v) {
  if (ArrayBuffer.isView(v)) return Array.from(v);
  if (Array.isArray(v)) return v.map((r) => (ArrayBuffer.isView(r) ? Array.from(r) : r));
  if (!v || typeof v !== "object" || typeof v.bdata !== "string") return v;
  const bytes = Uint8Array.from(atob(v.bdata), (c) => c.charCodeAt(0));
  const Kind = TYPED[v.dtype] || Float64Array;
  const flat = Array.from(new Kind(bytes.buffer, 0, bytes.length / Kind.BYTES_PER_ELEMENT));
  const shape = typeof v.shape === "string" ? v.shape.split(",").map(Number) : v.shape;
  if (!shape || shape.length < 2) return flat;
  const cols = shape[1];
  const rows = [];
  for (let i = 0; i < flat.length; i += cols) rows.push(flat.slice(i, i + cols));
  return rows;
}

// One cell: numbers as written (float32 to 8 digits), text quoted when needed; a text cell that a
// spreadsheet would run as a formula (a token "=1+2") starts with an apostrophe.
function cell(v, f4) {
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
function figureCsv(figure) {
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

function exportConfig(labels) {
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
