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

export default function (component) {
  const { data, parentElement } = component;
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
  if (!data || host.dataset.spec === data.revision) return release;   // the same figure: nothing to draw
  host.dataset.spec = data.revision;
  const figure = JSON.parse(data.figure);
  host.style.minHeight = (figure.layout.height || 420) + "px";   // no jump while plotly loads

  const draw = (Plotly) => {
    if (host.dataset.spec !== data.revision || !host.isConnected) return;   // a newer figure came
    Plotly.react(host, figure.data, figure.layout, CONFIG);
    if (!host.__resize) {
      let width = host.clientWidth;
      host.__resize = new ResizeObserver(() => {
        // A chart leaving the page (or a closed section) has no width: nothing to fit.
        if (!host.isConnected || host.clientWidth === 0 || host.clientWidth === width) return;
        if (!host.classList.contains("js-plotly-plot")) return;
        width = host.clientWidth;
        Plotly.Plots.resize(host).catch(() => {});
      });
      host.__resize.observe(host);
    }
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
