// A chart's accessible name and description (ui/chart/describe.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { axisTitle, chartName, describe, fill, panelTitle, plainTitle, short, withoutPanel } from "../../ui/chart/describe.js";
import { spec } from "./helpers.mjs";

const WORDS = {
  chart: "Chart", heatmap: "A grid of {rows} × {cols} values; the largest, {v}, is at {y} → {x}.",
  grid: "A grid of {rows} × {cols} values.", bars: "Bars: {n}; the longest is {label}, {v}.",
  bars_empty: "Bars: {n}.", series: "Lines or point sets: {n}, with {points} points in all.", join: " ",
  heatmap_at: "A grid of {rows} × {cols} values; the largest, {v}, is at {y}, {x}.", axis_at: "{title} {at}",
  axis_named: "{title} {at} (“{label}”)", label_only: "“{label}”", row_at: "row {at}", column_at: "column {at}",
  panel: "{name}: {text}", panel_n: "Panel {n}",
};

test("a title as plain text: markup out, entities read, lines joined", () => {
  assert.equal(plainTitle({ title: { text: "<b>Attention</b><br>weights &lt;causal&gt;" } }), "Attention weights <causal>");
  assert.equal(plainTitle({ title: "注意力权重" }), "注意力权重");
  assert.equal(plainTitle({}), "");
  assert.equal(plainTitle(undefined), "");
});

test("numbers to three digits, template fields filled", () => {
  assert.equal(short(0.41234), "0.412");
  assert.equal(short(1234567), "1230000");
  assert.equal(short(NaN), "");
  assert.equal(fill("{a} → {b}", { a: "黄", b: "河" }), "黄 → 河");
  assert.equal(fill("{a} {missing}", { a: 1 }), "1 ");
});

test("a heatmap: its size and its strongest cell, with the labels on its axes", () => {
  const z = spec(Float32Array, "f4", [0.1, 0.2, 0.41, 0.3], [2, 2]);
  const figure = { data: [{ type: "heatmap", x: ["黄", "河"], y: ["之", "水"], z }] };
  assert.equal(describe(figure, WORDS), "A grid of 2 × 2 values; the largest, 0.41, is at 水 → 黄.");
  const plain = { data: [{ type: "heatmap", z: [[NaN, 1], [2, 3]] }] };
  assert.equal(describe(plain, WORDS), "A grid of 2 × 2 values; the largest, 3, is at row 1, column 1.");
  assert.equal(describe({ data: [{ type: "heatmap", z: [[NaN]] }] }, WORDS), "A grid of 1 × 1 values.");
});

test("bars, either way round: the longest one named", () => {
  const up = { data: [{ type: "bar", x: ["a", "b", "c"], y: [1, 5, 2] }] };
  assert.equal(describe(up, WORDS), "Bars: 3; the longest is b, 5.");
  const flat = { data: [{ type: "bar", orientation: "h", y: ["p", "q"], x: spec(Float64Array, "f8", [0.25, 0.75]) }] };
  assert.equal(describe(flat, WORDS), "Bars: 2; the longest is q, 0.75.");
  assert.equal(describe({ data: [{ type: "bar", y: [] }] }, WORDS), "Bars: 0.");
});

test("lines: how many and how many points; nothing drawn says nothing", () => {
  const figure = { data: [{ type: "scatter", y: [1, 2, 3] }, { type: "scatter", x: [0, 1], y: spec(Float32Array, "f4", [1, 2]) },
    { type: "scatter", y: [9], visible: false }] };
  assert.equal(describe(figure, WORDS), "Lines or point sets: 2, with 5 points in all.");
  assert.equal(describe({ data: [] }, WORDS), "");
  assert.equal(describe(undefined, WORDS), "");
});

test("a grid whose axes are not one list of tokens: each axis named by its title, in the words given", () => {
  // F4's map: a row a layer (y0, dy: no labels), a column a position with its token.
  const z = spec(Float32Array, "f4", [0.1, 0.2, 0.3, 0.93, 0.5, 0.0], [2, 3]);
  const figure = { data: [{ type: "heatmap", z, x: ["When", " Mary", " and"], y0: 0, dy: 1 }],
    layout: { xaxis: { title: { text: "position" } }, yaxis: { title: "block (layer)" } } };
  assert.equal(describe(figure, WORDS), "A grid of 2 × 3 values; the largest, 0.93, is at block (layer) 1, position 0 (“When”).");
  // A head map: layers across, heads down, no labels: each named by its index (F1's panels sit side
  // by side on one axis, the second from x0 = 32: its layer is still counted from 0, as pick.js does).
  const heads = { data: [{ type: "heatmap", z: [[0, 0.2], [0.7, 0.1]], x0: 32, dx: 1, y0: 0, dy: 1 }],
    layout: { xaxis: { title: { text: "layer" } }, yaxis: { title: { text: "head" } } } };
  assert.equal(describe(heads, WORDS), "A grid of 2 × 2 values; the largest, 0.7, is at head 1, layer 0.");
  heads.data[0].x = [2, 4];                                      // numeric labels: as they are
  assert.equal(describe(heads, WORDS), "A grid of 2 × 2 values; the largest, 0.7, is at head 1, layer 2.");
  const zh = { ...WORDS, heatmap_at: "{rows} × {cols} 的数值网格；最大值 {v} 在{y}、{x}处。", axis_named: "{title} {at}（「{label}」）" };
  figure.layout = { xaxis: { title: { text: "位置" } }, yaxis: { title: { text: "块（层）" } } };
  assert.equal(describe(figure, zh), "2 × 3 的数值网格；最大值 0.93 在块（层） 1、位置 0（「When」）处。");
});

test("one list of tokens on both axes keeps {y} → {x}; an axis without a title is its label, or row and column", () => {
  const titled = { data: [{ type: "heatmap", x: ["黄", "河"], y: ["黄", "河"], z: [[0.1, 0.9], [0.5, 0.5]] }],
    layout: { xaxis: { title: { text: "key" } }, yaxis: { title: { text: "query" } } } };
  assert.equal(describe(titled, WORDS), "A grid of 2 × 2 values; the largest, 0.9, is at 黄 → 河.");
  // B1's Q: a row a token, a column a dimension, neither axis titled
  const q = { data: [{ type: "heatmap", y: ["天", "上"], z: [[1, 2.33], [0, 1]] }], layout: {} };
  assert.equal(describe(q, WORDS), "A grid of 2 × 2 values; the largest, 2.33, is at “天”, column 1.");
  const bare = { data: [{ type: "heatmap", z: [[1], [3]] }], layout: { xaxis: { title: { text: "x" } } } };
  assert.equal(describe(bare, WORDS), "A grid of 2 × 1 values; the largest, 3, is at row 1, x 0.");
  assert.equal(axisTitle({ xaxis2: { title: { text: "<b>attention</b> · position" } } }, { xaxis: "x2" }, "x"),
    "attention · position");
  assert.equal(axisTitle({ yaxis3: { title: "heads" } }, { xaxis: "x2", yaxis: "y3" }, "y"), "heads");
  assert.equal(axisTitle({}, {}, "y"), "");
});

test("subplots: every heatmap described, each after its name", () => {
  const z1 = [[0.1, 0.8], [0.2, 0.3]], z2 = [[0.6, 0.1], [0.0, 0.2]];
  const figure = { data: [
    { type: "heatmap", name: "attention output", z: z1, x: ["a", "b"], y0: 0, dy: 1 },
    { type: "heatmap", name: "feed-forward output", z: z2, x: ["a", "b"], y0: 0, dy: 1, xaxis: "x2" },
    { type: "heatmap", name: "hidden", z: [[9]], visible: false }],
  layout: { xaxis: { title: { text: "attention · position" } }, xaxis2: { title: { text: "feed-forward · position" } },
    yaxis: { title: { text: "layer" } } } };
  assert.equal(describe(figure, WORDS), "attention output: A grid of 2 × 2 values; the largest, 0.8, is at layer 0, "
    + "attention · position 1 (“b”). feed-forward output: A grid of 2 × 2 values; the largest, 0.6, is at layer 0, "
    + "feed-forward · position 0 (“a”).");
  // Chinese joins its sentences with nothing (join ""), not a space.
  const zh = { ...WORDS, panel: "{name}：{text}", join: "" };
  assert.ok(describe(figure, zh).includes("“b”).feed-forward output：A grid"));
});

test("a panel's axis title without the panel's name: said once, before its sentence", () => {
  // F4's sub-layer maps: each panel named by its x axis' title, "attention output · position"
  const z1 = [[0.1, 0.8], [0.2, 0.3]], z2 = [[0.6, 0.1], [0.0, 0.2]];
  const figure = { data: [
    { type: "heatmap", name: "attention output", z: z1, x: ["a", "b"], y0: 0, dy: 1 },
    { type: "heatmap", name: "feed-forward output", z: z2, x: ["a", "b"], y0: 0, dy: 1, xaxis: "x2" }],
  layout: { xaxis: { title: { text: "attention output · position" } },
    xaxis2: { title: { text: "feed-forward output · position" } }, yaxis: { title: { text: "block (layer)" } } } };
  const text = describe(figure, WORDS);
  assert.equal(text, "attention output: A grid of 2 × 2 values; the largest, 0.8, is at block (layer) 0, position 1 (“b”). "
    + "feed-forward output: A grid of 2 × 2 values; the largest, 0.6, is at block (layer) 0, position 0 (“a”).");
  assert.equal(text.match(/attention output/g).length, 1);
  const zh = { ...WORDS, heatmap_at: "{rows} × {cols} 的数值网格；最大值 {v} 在{y}、{x}处。", axis_named: "{title} {at}（「{label}」）",
    panel: "{name}：{text}", join: "" };
  figure.data[0].name = "注意力输出";
  figure.data[1].name = "前馈输出";
  figure.layout = { xaxis: { title: { text: "注意力输出 · 位置" } }, xaxis2: { title: { text: "前馈输出 · 位置" } },
    yaxis: { title: { text: "块（层）" } } };
  assert.equal(describe(figure, zh), "注意力输出：2 × 2 的数值网格；最大值 0.8 在块（层） 0、位置 1（「b」）处。"
    + "前馈输出：2 × 2 的数值网格；最大值 0.6 在块（层） 0、位置 0（「a」）处。");
  assert.equal(withoutPanel("attention output · position", "attention output"), "position");
  assert.equal(withoutPanel("attention output", "attention output"), "attention output");   // nothing left: kept
  assert.equal(withoutPanel("position", "attention output"), "position");
  assert.equal(withoutPanel("position", ""), "position");
});

test("panels without a trace name: named by the title over each, else by their number", () => {
  // B1's steps: each panel's title an annotation at the top of its y domain, in paper coordinates
  const q = { type: "heatmap", z: [[1, 2]], y: ["天"] };
  const figure = { data: [q, { ...q, xaxis: "x2", yaxis: "y2" }, { ...q, xaxis: "x3", yaxis: "y3" }],
    layout: { xaxis: { domain: [0, 0.3] }, xaxis2: { domain: [0.35, 0.65] }, xaxis3: { domain: [0.7, 1] },
      yaxis: { domain: [0.5, 1] }, yaxis2: { domain: [0.5, 1] }, yaxis3: { domain: [0, 0.4] },
      annotations: [
        { text: "<b>1. Q</b> = X·W_q", x: 0.15, y: 1, xref: "paper", yref: "paper", yanchor: "bottom" },
        { text: "2. K", x: 0.5, y: 1.0, xref: "x2 domain", yref: "y2 domain" },      // the middle of x2
        { text: "a note in the plot", x: 0.85, y: 0.2, xref: "paper", yref: "paper" },  // inside panel 3: not its title
        { text: "a data label", x: 1, y: 0, xref: "x3", yref: "y3" }] } };
  assert.equal(panelTitle(figure.data[0], figure.layout), "1. Q = X·W_q");
  assert.equal(panelTitle(figure.data[1], figure.layout), "2. K");
  assert.equal(panelTitle(figure.data[2], figure.layout), "");
  assert.equal(describe(figure, WORDS), "1. Q = X·W_q: A grid of 1 × 2 values; the largest, 2, is at “天”, column 1. "
    + "2. K: A grid of 1 × 2 values; the largest, 2, is at “天”, column 1. "
    + "Panel 3: A grid of 1 × 2 values; the largest, 2, is at “天”, column 1.");
  assert.ok(!/(^|\. )\d+: /.test(describe(figure, WORDS)));             // never "1:", "2:"
  // a panel's title on a row further up is not the title of the panel below it
  const rows = { data: [{ type: "heatmap", z: [[1]], yaxis: "y2" }], layout: { yaxis2: { domain: [0, 0.45] },
    annotations: [{ text: "top row", x: 0.5, y: 1, xref: "paper", yref: "paper" }] } };
  assert.equal(panelTitle(rows.data[0], rows.layout), "");
});

test("panels on one pair of axes: titles in data coordinates, over each panel's cells", () => {
  // B5's gallery: 2 × 2 panels of 4 × 4 cells placed by x0 and y0, rows top down (a reversed range),
  // each title 0.8 above its panel's first row
  const z = [[0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]];
  const at = [[0, 0], [6, 0], [0, 6], [6, 6]];
  const figure = { data: at.map(([x0, y0]) => ({ type: "heatmap", z, x0, dx: 1, y0, dy: 1 })),
    layout: { yaxis: { range: [10, -3] }, annotations: ["full", "window", "strided", "global"].map((text, i) =>
      ({ text, x: at[i][0] + 1.5, y: at[i][1] - 0.8, xref: "x", yref: "y", xanchor: "center", yanchor: "bottom" })) } };
  assert.deepEqual(figure.data.map((t) => panelTitle(t, figure.layout)), ["full", "window", "strided", "global"]);
  assert.ok(describe(figure, WORDS).startsWith("full: A grid of 4 × 4 values; the largest, 1, is at row 0, column 3. window: "));
  figure.layout.yaxis = {};                         // rows bottom up: the titles now stand under the panels
  assert.deepEqual(figure.data.map((t) => panelTitle(t, figure.layout)), ["", "", "", ""]);
  // C1's in and out: numeric columns on one x axis, each title at the top of the figure (y in paper)
  const io = { data: [{ type: "heatmap", z: [[1, 2, 3]], x: [0, 1, 2] }, { type: "heatmap", z: [[4, 5, 6]], x: [6, 7, 8] }],
    layout: { annotations: [{ text: "x + sub-layer(x)", x: 1, y: 1, xref: "x", yref: "paper" },
      { text: "LayerNorm", x: 7, y: 1, xref: "x", yref: "paper" }] } };
  assert.deepEqual(io.data.map((t) => panelTitle(t, io.layout)), ["x + sub-layer(x)", "LayerNorm"]);
});

test("not a panel's title: an axis' name set beside the plot; paint on an earlier heatmap's cells is no panel", () => {
  // B5's banded weights: "query" at the plot's top left, anchored at its right (outside the plot),
  // and a second heatmap on the same cells that paints the exact zeros grey
  const weights = { type: "heatmap", z: [[0.2, 0.8], [0, 1]], x0: 0, dx: 1, y0: 0, dy: 1 };
  const zeros = { ...weights, z: [[NaN, NaN], [1, NaN]] };
  const layout = { annotations: [{ text: "query", x: 0, y: 1, xref: "paper", yref: "paper", xanchor: "right" }] };
  assert.equal(panelTitle(weights, layout), "");
  assert.equal(describe({ data: [weights, zeros], layout }, WORDS), "A grid of 2 × 2 values; the largest, 1, is at row 1, column 1.");
  // a heatmap without rows (D2's past before the first step) draws nothing and says nothing
  assert.equal(describe({ data: [{ type: "heatmap", z: [] }, weights], layout }, WORDS),
    "A grid of 2 × 2 values; the largest, 1, is at row 1, column 1.");
});

test("a heatmap the hover skips is paint over the data (masked cells), not a panel", () => {
  // F1's pattern: the weights, and the grey of the masked future over them
  const tokens = ["a", "b"];
  const figure = { data: [{ type: "heatmap", x: tokens, y: tokens, z: [[1, NaN], [0.4, 0.6]] },
    { type: "heatmap", x: tokens, y: tokens, z: [[NaN, 1], [NaN, NaN]], hoverinfo: "skip" }] };
  assert.equal(describe(figure, WORDS), "A grid of 2 × 2 values; the largest, 1, is at a → a.");
});

test("a chart's name: its title, else the name it was sent with, only else the generic word", () => {
  assert.equal(chartName({ layout: { title: { text: "<b>Weights</b>" } } }, WORDS, "ignored"), "Weights");
  assert.equal(chartName({ layout: {} }, WORDS, "Four scores of each of the 30 × 9 heads"),
    "Four scores of each of the 30 × 9 heads");
  assert.equal(chartName({ layout: {} }, { chart: "图表" }, "全部 30 × 9 个头的四种得分"), "全部 30 × 9 个头的四种得分");
  assert.equal(chartName({ layout: {} }, WORDS, null), "Chart");
  assert.equal(chartName({ layout: {} }, WORDS, "  "), "Chart");
  assert.equal(chartName(undefined, undefined, undefined), "");
});

test("a panel drawn in pieces is said once, its rows added up; panels side by side keep their own titles", () => {
  // D2's step 1 (4 positions, 2 dimensions): Q's earlier rows (grey) and this step's, one panel on
  // x/y; the weights likewise on x4/y
  const dims = [0, 1], keys = [0, 1, 2, 3];
  const note = (text, x) => ({ text, x, y: 1, xref: "paper", yref: "paper", yanchor: "bottom" });
  const figure = { data: [
    { type: "heatmap", z: [[0.1, 0.2], [0.3, 0.9], [0, 0]], x: dims, y: [0, 1, 2] },
    { type: "heatmap", z: [[0.5, 0.4]], x: dims, y: [3] },
    { type: "heatmap", z: [[0.7, 0.1], [0, 0], [0, 0], [0, 0]], x: dims, y: keys, xaxis: "x2" },
    { type: "heatmap", z: [[1, NaN, NaN, NaN], [0.5, 0.5, NaN, NaN], [0.2, 0.2, 0.6, NaN]], x: keys, y: [0, 1, 2], xaxis: "x4" },
    { type: "heatmap", z: [[0.2, 0.3, 0.4, 0.1]], x: keys, y: [3], xaxis: "x4" }],
  layout: { xaxis: { domain: [0, 0.2] }, xaxis2: { domain: [0.3, 0.5] }, xaxis4: { domain: [0.6, 1] },
    annotations: [note("Q<br>queries", 0.1), note("K cache", 0.4), note("attention weights", 0.8)] } };
  const text = describe(figure, WORDS);
  assert.equal(text, "Q queries: A grid of 4 × 2 values; the largest, 0.9, is at row 1, column 1. "
    + "K cache: A grid of 4 × 2 values; the largest, 0.7, is at row 0, column 0. "
    + "attention weights: A grid of 4 × 4 values; the largest, 1, is at row 0, column 0.");
  assert.equal(text.match(/Q queries/g).length, 1);
  // this step's row holds the largest: named by its own label (position 3), not its index in its piece
  figure.data[1].z = [[0.5, 2]];
  assert.ok(describe(figure, WORDS).startsWith("Q queries: A grid of 4 × 2 values; the largest, 2, is at row 3, column 1."));
  // without a name or a title, heatmaps on one pair of axes stay panels apart, by their number
  const bare = { data: [{ type: "heatmap", z: [[1]] }, { type: "heatmap", z: [[2]], x0: 3 }] };
  assert.equal(describe(bare, WORDS), "Panel 1: A grid of 1 × 1 values; the largest, 1, is at row 0, column 0. "
    + "Panel 2: A grid of 1 × 1 values; the largest, 2, is at row 0, column 0.");
});

test("a figure of boxes alone: how many, and their words in order", () => {
  // C2's whole model: rectangles, a name and a shape with its count in annotations, an arrow without text
  const figure = { data: [], layout: { shapes: [{ type: "rect" }, { type: "rect" }, { type: "line" }],
    annotations: [{ text: "<b>embedding</b>" }, { text: "(N, 576)<br>28.3M" }, { text: "" }, { text: "<b>block 0</b>" },
      { text: "(N, 576)<br>3.5M" }] } };
  const words = { ...WORDS, diagram: "A diagram of {n} boxes: {labels}.", diagram_sep: "; " };
  assert.equal(describe(figure, words), "A diagram of 2 boxes: embedding; (N, 576) 28.3M; block 0; (N, 576) 3.5M.");
  assert.equal(describe({ data: [], layout: { shapes: [{ type: "rect" }] } }, words), "");     // no words: nothing
  assert.equal(describe(figure, WORDS), "");                                                  // no template: nothing
});
