// Live controls (ui/live.py): a chart's own slider and the drawing of its frames while it moves.
import { drawCells, dropCells } from "./cells.js";
import { labelChart } from "./describe.js";
import { exportConfig } from "./export.js";
import { composeFrame, composeShared } from "./frames.js";
import { drawFast, drawPoints, pointFigure } from "./painters.js";
import { loadPlotly, sent, watchResize } from "./plot.js";
import { fitPresent, presenterFigure } from "./present.js";

// The chart carries one frame per value of its slider, and the
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
      figure = st.data.present ? presenterFigure(composeFrame(st, i), st.data.most) : composeShared(st, i);
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
    const exported = st.data.export || {};
    labelChart(host, figure, exported.describe, exported.name);   // its name (its title, or the one sent) and description
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

export function liveChart(component, host, release) {
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
