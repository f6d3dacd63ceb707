// One plotly chart that stays on the page across reruns (see ui/chart.py).
// Streamlit calls this function on mount and again whenever the figure changes; the
// chart's <div> is kept, so a new figure is a Plotly.react on the same plot, not a new one.
// Its parts, ES modules in ui/chart/ (one string for Streamlit: ui/chart.py's bundle): live.js (a
// live chart's slider and frames, with the painters cells.js and painters.js, and frames.js),
// present.js (presenter mode), export.js (the modebar's buttons), plot.js (what still and live
// charts share), adapter.js (the only reader of plotly's private state), arrays.js, colour.js,
// describe.js (the chart's accessible name and description), pick.js (a clickable chart chosen from
// by keyboard).
import { labelChart } from "./chart/describe.js";
import { exportConfig } from "./chart/export.js";
import { liveChart } from "./chart/live.js";
import { keyboardPicker } from "./chart/pick.js";
import { loadPlotly, sent, watchResize } from "./chart/plot.js";
import { fitPresent, presenterFigure } from "./chart/present.js";

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
  if (data.present) presenterFigure(figure, data.most);
  host.style.minHeight = (figure.layout.height || 420) + "px";   // no jump while plotly loads

  const draw = (Plotly) => {
    if (host.dataset.spec !== revision || !host.isConnected) return;   // a newer figure came
    host.__figure = figure;   // what the CSV button writes out (export, below)
    const exported = data.export || {};
    labelChart(host, figure, exported.describe, exported.name);   // its name (its title, or the one sent) and description
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
    // The same choice by keyboard: the arrow keys move over the points, Enter or Space sends one.
    if (data.select) keyboardPicker(host, { figure, name: host.getAttribute("aria-label"), words: data.pick,
      send: (value) => host.__setTrigger("select", value) });
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

