// What a still chart (ui/chart.js) and a live one (./live.js) share: plotly.js loaded, the data the
// server sent, a plot that follows its width.
import { isPlot } from "./adapter.js";
import { fitPresent } from "./present.js";

// plotly.js is loaded once per browser tab, from this app's own server (no internet).
export function loadPlotly(src) {
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

// What the server sent, with the export names and the live frames taken out of the one-item lists
// they travel in (ui/chart.py: Streamlit checks a dict there for a dataframe on every run).
// The chart's data, sent as a one-item list (ui/chart.py says why).
export function sent(component) {
  const data = component.data;
  return Array.isArray(data) ? data[0] : data;
}

export function watchResize(host, Plotly) {
  if (host.__resize) return;
  let width = host.clientWidth;
  host.__resize = new ResizeObserver(() => {
    // A chart leaving the page (or a closed section) has no width: nothing to fit.
    if (!host.isConnected || host.clientWidth === 0 || host.clientWidth === width) return;
    if (!isPlot(host)) return;
    width = host.clientWidth;
    if (host.__present) fitPresent(host, Plotly, host.__present.figure, host.__present.config);
    else Plotly.Plots.resize(host).catch(() => {});
  });
  host.__resize.observe(host);
}
