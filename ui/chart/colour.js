// Colours as plotly paints them: a CSS colour's RGBA, a colour scale's ends and its colour of a value.
import { finiteExtent } from "./arrays.js";

// A colour as a canvas reads it back ("#rrggbb" or "rgba(r, g, b, a)") as [r, g, b, a].
export function parseCanvasColour(c) {
  if (c[0] === "#") return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16), 1];
  const m = c.match(/[\d.]+/g) || [0, 0, 0, 1];
  return [Number(m[0]), Number(m[1]), Number(m[2]), m.length > 3 ? Number(m[3]) : 1];
}

let colourCanvas = null;
export function rgbaOf(colour) {       // any CSS colour as [r, g, b, a], as the browser reads it
  const ctx = (colourCanvas || (colourCanvas = document.createElement("canvas"))).getContext("2d");
  ctx.fillStyle = "#000";
  ctx.fillStyle = colour;
  return parseCanvasColour(ctx.fillStyle);
}

// The colour scale's ends: lo and hi as the trace gives them, or (auto) as plotly finds them, the
// values' extent (one value: half a unit either side); null where there is no number.
export function colourEnds(values, lo, hi) {
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
// (``rgba`` reads a stop's colour: the browser's reading, rgbaOf, unless a test gives its own.)
export function cellScale(stops, reverse, lo, hi, rgba = rgbaOf) {
  if (reverse) stops = stops.slice().reverse().map(([v, c]) => [1 - v, c]);
  const at = stops.map(([v]) => lo + v * (hi - lo)), colours = stops.map(([, c]) => rgba(c));
  return (v) => {
    if (typeof v !== "number" || !Number.isFinite(v)) return null;
    let j = 0;
    while (j < at.length - 2 && v >= at[j + 1]) j++;
    const span = at[j + 1] - at[j];
    const f = span ? Math.min(1, Math.max(0, (v - at[j]) / span)) : 0;
    // d3's number interpolation, a(1 - f) + bf: a + (b - a)f rounds the other way on a half (C3's
    // trail at m = 100: 93.49999 for d3's 93.5, rgb 93 against plotly's 94).
    const a = colours[j], b = colours[j + 1], mix = (k) => a[k] * (1 - f) + b[k] * f;
    return [Math.round(mix(0)), Math.round(mix(1)), Math.round(mix(2)), Math.round(mix(3) * 255)];
  };
}
