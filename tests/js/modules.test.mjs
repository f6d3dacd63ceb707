// The chart component's modules (ui/chart.js, ui/chart/*.js): each links, plotly's private state
// is read in ui/chart/adapter.js only (STYLE.md rule 14), and the one module ui/chart.py joins them
// into for Streamlit runs.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PARTS = join(ROOT, "ui", "chart");
const MODULES = readdirSync(PARTS).filter((f) => f.endsWith(".js")).sort();

// What the entry touches as it loads (a browser's), for a load outside one.
function withBrowser(fn) {
  globalThis.window = {};
  globalThis.IntersectionObserver = class { observe() {} unobserve() {} };
  return fn().finally(() => { delete globalThis.window; delete globalThis.IntersectionObserver; });
}

test("every module links: each name it imports is exported where it comes from", async () => {
  for (const name of MODULES) await import(pathToFileURL(join(PARTS, name)));
  const entry = await withBrowser(() => import(pathToFileURL(join(ROOT, "ui", "chart.js"))));
  assert.equal(typeof entry.default, "function");
});

test("each module is under 600 lines", () => {
  for (const name of [...MODULES.map((m) => join(PARTS, m)), join(ROOT, "ui", "chart.js")]) {
    const lines = readFileSync(name, "utf8").split("\n").length;
    assert.ok(lines < 600, `${name}: ${lines} lines`);
  }
});

test("plotly's private fields and class names are read in adapter.js only", () => {
  const PRIVATE = /\._(fullLayout|fullData|vals|length|offset|id|categories|size)\b|__data__|\bc2p\b|\br2p\b|\bl2r\b/;
  // Selectors: only the app's own classes (anatomy-*) and SVG element names, never plotly's classes.
  const SELECTOR = /(querySelector(All)?|closest)\(\s*(["'`])(.*?)\3/g;
  for (const name of [...MODULES.filter((m) => m !== "adapter.js").map((m) => join(PARTS, m)), join(ROOT, "ui", "chart.js")]) {
    const code = readFileSync(name, "utf8").split("\n").filter((l) => !l.trim().startsWith("//")).join("\n");
    assert.doesNotMatch(code, PRIVATE, name);
    for (const m of code.matchAll(SELECTOR)) {
      const classes = m[4].match(/\.[\w-]+/g) || [];
      assert.ok(classes.every((c) => c.startsWith(".anatomy-")), `${name}: ${m[0]}`);
    }
    assert.doesNotMatch(code, /classList\.contains\("(?!anatomy-)/, name);
  }
});

const PYTHON = join(ROOT, ".venv", "bin", "python");
test("ui/chart.py's bundle of the modules is one module that loads", { skip: !existsSync(PYTHON) && "no .venv" }, async () => {
  const js = execFileSync(PYTHON, ["-c", "import sys, ui.chart; sys.stdout.write(ui.chart._JS)"],
    { cwd: ROOT, encoding: "utf8", env: { ...process.env, PYTHONPATH: ROOT } });
  assert.doesNotMatch(js, /^import /m);
  assert.equal(js.match(/^export /gm).length, 1);
  for (const name of MODULES) assert.ok(js.includes(`// ---- ui/chart/${name}\n`), name);
  const dir = mkdtempSync(join(tmpdir(), "anatomy-chart-"));
  try {
    writeFileSync(join(dir, "bundle.mjs"), js);
    const bundle = await withBrowser(() => import(pathToFileURL(join(dir, "bundle.mjs"))));
    assert.equal(typeof bundle.default, "function");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
