// In class (see ui/classroom.py): "Copy link" and "Present" in the sidebar; in presenter mode a
// bar at the foot of the screen (previous / next section, previous / next lesson, copy the link,
// exit) and the keyboard. Every change goes to Python as the trigger value "action"; the bar
// itself keeps no state (the step is in the URL).

const BLOCK = '[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]';

// The page's top-level section headings (ui/classroom.py: _HEAD, the same rule in CSS).
function isHead(el) {
  if (el.matches('[data-testid="stElementContainer"]')) {
    return !!el.querySelector(':scope > [data-testid="stHeading"] :is(h2, h3)');
  }
  if (el.matches('[data-testid="stLayoutWrapper"]')) {
    return !!el.querySelector(':scope > [data-testid="stVerticalBlock"] > [data-testid="stElementContainer"]:first-child'
      + ' > [data-testid="stHeading"] :is(h2, h3)');
  }
  return false;
}

// Steps of this page: its opening, then one per section heading.
function steps() {
  const block = document.querySelector(BLOCK);
  if (!block) return 1;
  let n = 1;
  for (const el of block.children) if (isHead(el)) n += 1;
  return n;
}

function running() {
  const app = document.querySelector('[data-testid="stApp"]');
  return !app || app.getAttribute("data-test-script-state") === "running";
}

// Copy the address of what is on screen. navigator.clipboard needs a secure page (https or
// localhost); a classroom server on http://<address> gets the older copy command instead.
async function copyLink() {
  const url = window.location.href;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(url);
      return true;
    }
  } catch (err) { /* fall through */ }
  const box = document.createElement("textarea");
  box.value = url;
  box.setAttribute("readonly", "");
  box.style.position = "fixed";
  box.style.opacity = "0";
  document.body.appendChild(box);
  box.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
  box.remove();
  return ok;
}

// One listener for the whole tab; it reads the latest state the component was given.
const state = { present: false, step: 1, has_prev: false, has_next: false, send: null };

function go(delta, lesson) {
  if (!state.present || !state.send) return;
  const n = steps();
  if (lesson) {
    if (delta > 0 ? state.has_next : state.has_prev) state.send("action", "lesson:" + (delta > 0 ? 1 : -1));
    return;
  }
  const next = Math.min(state.step, n) + delta;
  if (next >= 1 && next <= n) state.send("action", "step:" + next);
  else if (next > n && state.has_next) state.send("action", "lesson:1");
  else if (next < 1 && state.has_prev) state.send("action", "lesson:-1");
}

// Keys act only when nothing that takes keys has focus (a slider moves with the arrows too).
const TAKES_KEYS = 'input, textarea, select, [contenteditable=""], [contenteditable="true"], [role="slider"],'
  + ' [role="combobox"], [role="listbox"], [role="radiogroup"], [role="radio"], [role="tablist"], [role="tab"],'
  + ' [role="spinbutton"], [role="menu"], [role="option"]';

function onKey(e) {
  if (!state.present || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
  const t = e.target;
  if (t && t.closest && t.closest(TAKES_KEYS)) return;
  let delta = 0;
  if (e.key === "ArrowRight" || e.key === "PageDown") delta = 1;
  else if (e.key === "ArrowLeft" || e.key === "PageUp") delta = -1;
  else return;
  e.preventDefault();
  go(delta, e.shiftKey);
}

if (!window.__anatomyClassroomKeys) {
  window.__anatomyClassroomKeys = true;
  window.addEventListener("keydown", onKey, true);
}

function button(text, title, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (title) b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

function copyButton(labels) {
  const b = button(labels.copy, "", async () => {
    const ok = await copyLink();
    b.textContent = ok ? labels.copied : labels.copy_failed;
    setTimeout(() => { b.textContent = labels.copy; }, 2000);
  });
  b.className = "anatomy-copy";
  return b;
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  if (!data) return;
  const L = data.labels;
  Object.assign(state, { present: data.present, step: data.step, has_prev: data.has_prev,
    has_next: data.has_next, send: setTriggerValue });
  let root = parentElement.querySelector(":scope > .anatomy-classroom");
  if (!root) {
    root = document.createElement("div");
    root.className = "anatomy-classroom";
    parentElement.appendChild(root);
  }
  root.replaceChildren();
  root.dataset.present = data.present ? "1" : "0";
  root.dataset.step = String(data.step);

  if (!data.present) {
    root.style.cssText = "display:flex; gap:0.5rem; flex-wrap:wrap;";
    const present = button(L.present, L.keys, () => setTriggerValue("action", "on"));
    present.className = "anatomy-present";
    root.append(copyButton(L), present);
    for (const b of root.querySelectorAll("button")) {
      b.style.cssText = "padding:0.3rem 0.7rem; border-radius:0.5rem; border:1px solid rgba(49,51,63,0.2);"
        + " background:white; cursor:pointer; font:inherit;";
    }
    return;
  }

  // The presenter's bar, fixed at the foot of the screen.
  root.style.cssText = "position:fixed; left:50%; bottom:0.6rem; transform:translateX(-50%); z-index:999990;"
    + " display:flex; align-items:center; gap:0.4rem; padding:0.35rem 0.6rem; border-radius:0.8rem;"
    + " background:rgba(255,255,255,0.94); box-shadow:0 2px 10px rgba(0,0,0,0.18); white-space:nowrap;";
  const where = document.createElement("span");
  where.className = "anatomy-where";
  where.style.cssText = "padding:0 0.5rem; color:#31333f;";
  const prevLesson = button("«", L.prev_lesson, () => go(-1, true));
  const prev = button("‹ " + L.prev, L.keys, () => go(-1, false));
  const next = button(L.next + " ›", L.keys, () => go(1, false));
  const nextLesson = button("»", L.next_lesson, () => go(1, true));
  prevLesson.className = "anatomy-prev-lesson";
  prev.className = "anatomy-prev";
  next.className = "anatomy-next";
  nextLesson.className = "anatomy-next-lesson";
  prevLesson.disabled = !data.has_prev;
  nextLesson.disabled = !data.has_next;
  const exit = button(L.exit, "", () => setTriggerValue("action", "off"));
  exit.className = "anatomy-exit";
  root.append(prevLesson, prev, where, next, nextLesson, copyButton(L), exit);
  for (const b of root.querySelectorAll("button")) {
    b.style.cssText = "padding:0.25rem 0.6rem; border-radius:0.5rem; border:1px solid rgba(49,51,63,0.25);"
      + " background:white; cursor:pointer; font:inherit;";
  }

  // "B1 · Attention — 2 / 5", kept right as the page's sections arrive; a step past the last
  // one (an old link) is brought back to the last once the page has finished running.
  let asked = false;
  const update = () => {
    const n = steps();
    const name = document.createElement("span");
    name.className = "anatomy-lesson";
    name.textContent = data.lesson + " — ";
    where.replaceChildren(name, L.step_of.replace("{step}", Math.min(data.step, n)).replace("{n}", n));
    prev.disabled = data.step <= 1 && !data.has_prev;
    next.disabled = data.step >= n && !data.has_next;
    if (!asked && !running() && n > 1 && data.step > n) {
      asked = true;
      setTriggerValue("action", "step:" + n);
    }
  };
  update();
  if (root.__watch) root.__watch.disconnect();
  let queued = false;
  root.__watch = new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; update(); });
  });
  const block = document.querySelector(BLOCK);
  if (block) root.__watch.observe(block, { childList: true });
  const app = document.querySelector('[data-testid="stApp"]');
  if (app) root.__watch.observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
  if (root.__shown !== data.step) {   // a new section starts at the top of the screen
    root.__shown = data.step;
    for (const el of [document.querySelector('[data-testid="stMain"]'), document.scrollingElement]) {
      if (el) el.scrollTop = 0;
    }
  }
  return () => { if (!root.isConnected && root.__watch) root.__watch.disconnect(); };
}
