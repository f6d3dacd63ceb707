// In class (see ui/classroom.py): "Copy link" and "Present" in the sidebar; in presenter mode a
// bar at the foot of the screen (previous / next section, previous / next lesson, copy the link,
// exit) and the keyboard. Every change goes to Python as the trigger value "action"; the bar
// itself keeps no state (the step is in the URL).

const BLOCK = '[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]';

// Slides (ui/classroom.py). A slide starts at a section heading (an h2/h3 of st.header /
// st.subheader) or at a slide mark (ui.frame.slide); step 1 is what comes before the first.
// Headings are looked for at the top level of the page and one level in: a top-level container
// (st.container, a fragment's) whose first element is a heading is one section (the explorer,
// "Try this"); one with headings further down is cut at each of them (D4's fragment holds two
// sections, D1's whole lesson is one fragment with slide marks).
const HEADING = ':scope > [data-testid="stHeading"] :is(h2, h3), :scope > [data-testid="stHtml"] .anatomy-slide';

function isHeadElement(el) {
  return el.matches('[data-testid="stElementContainer"]') && !!el.querySelector(HEADING);
}

function innerBlock(el) {
  return el.matches('[data-testid="stLayoutWrapper"]')
    ? el.querySelector(':scope > [data-testid="stVerticalBlock"]') : null;
}

// The page's slides, [{title, head}] (head: the element that opens it), and, with ``mark``,
// every element's slide number(s) written on it as data-anatomy-slide (a container cut in
// several: "3 4 5"), which the step's style sheet reads (ui/classroom.py: presenter_css).
// Elements not yet numbered (just arrived) stay hidden until the next frame numbers them.
function slides(mark) {
  const block = document.querySelector(BLOCK);
  const found = [{ title: state.lesson, head: null }];
  if (!block) return found;
  const put = (el, value) => { if (mark && el.getAttribute("data-anatomy-slide") !== value) el.setAttribute("data-anatomy-slide", value); };
  const start = (head) => {
    const h = head.querySelector(":is(h2, h3), .anatomy-slide");
    found.push({ title: ((h && h.textContent) || "").replace(/\s+/g, " ").trim(), head });
  };
  for (const el of block.children) {
    const inner = innerBlock(el);
    const kids = inner ? Array.from(inner.children) : [];
    const heads = kids.filter(isHeadElement);
    const head = isHeadElement(el) || (heads.length === 1 && kids[0] === heads[0]);   // one section
    if (head || !heads.length) {                 // one element of one slide
      if (mark && el.hasAttribute("data-anatomy-split")) el.removeAttribute("data-anatomy-split");
      if (head) start(el);
      put(el, String(found.length));
      continue;
    }
    // A container cut at each heading inside it; what comes before its first heading belongs
    // to the slide before.
    const spans = isHeadElement(kids[0]) ? [] : [found.length];
    for (const kid of kids) {
      if (isHeadElement(kid)) { start(kid); spans.push(found.length); }
      put(kid, String(found.length));
    }
    if (mark) el.setAttribute("data-anatomy-split", "");
    put(el, Array.from(new Set(spans)).join(" "));
  }
  return found;
}

// Steps of this page: its opening, then one per slide.
function steps() {
  return slides(false).length;
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
const state = { present: false, step: 1, lesson: "", has_prev: false, has_next: false, send: null };

// Shift+→ / Shift+← (and « ») open the next / previous lesson on its first slide. Stepping past
// the last slide opens the next lesson on its first; stepping back past the first opens the
// previous lesson on its *last* ("lesson:-1:last": the page clamps step 99 to its last slide).
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
  else if (next < 1 && state.has_prev) state.send("action", "lesson:-1:last");
}

// The slides' titles, for the overview: the lesson's name, then each slide's heading.
function slideTitles() {
  return slides(false).map((slide) => slide.title);
}

// The overview (key O): a numbered list of this lesson's slides; a click or the slide's number
// (then Enter, for 10 and more) jumps there, Escape or O again closes it.
let overview = null;
let typed = "";
function closeOverview() {
  if (overview) overview.remove();
  overview = null;
  typed = "";
}
function openOverview() {
  closeOverview();
  const titles = slideTitles();
  overview = document.createElement("div");
  overview.className = "anatomy-overview";
  overview.setAttribute("role", "dialog");
  overview.style.cssText = "position:fixed; inset:0; z-index:999991; background:rgba(20,22,30,0.55);"
    + " display:flex; align-items:center; justify-content:center;";
  const panel = document.createElement("div");
  panel.style.cssText = "background:white; border-radius:1rem; padding:1.2rem 1.6rem; max-height:85vh;"
    + " overflow:auto; min-width:40vw; font-size:24px; color:#31333f; box-shadow:0 4px 24px rgba(0,0,0,0.3);";
  const head = document.createElement("div");
  head.textContent = state.labels.overview;
  head.style.cssText = "font-size:20px; color:#5f6270; margin-bottom:0.6rem;";
  const list = document.createElement("ol");
  list.style.cssText = "margin:0; padding-left:2.2em; line-height:1.7;";
  titles.forEach((title, i) => {
    const item = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "anatomy-overview-item";
    b.dataset.step = String(i + 1);
    b.textContent = title;
    b.style.cssText = "font:inherit; border:0; background:none; cursor:pointer; padding:0.05rem 0.3rem;"
      + " border-radius:0.4rem; text-align:left;" + (i + 1 === Math.min(state.step, titles.length)
        ? " background:#fde7e9; font-weight:600;" : "");
    b.addEventListener("click", () => { closeOverview(); state.send("action", "step:" + (i + 1)); });
    item.appendChild(b);
    list.appendChild(item);
  });
  panel.append(head, list);
  overview.appendChild(panel);
  overview.addEventListener("click", (e) => { if (e.target === overview) closeOverview(); });
  document.body.appendChild(overview);
}
function overviewKey(e) {
  if (e.key === "Escape" || e.key === "o" || e.key === "O") { closeOverview(); return true; }
  if (/^[0-9]$/.test(e.key)) {
    typed += e.key;
    const n = slideTitles().length;
    const k = parseInt(typed, 10);
    if (k >= 1 && k <= n && (k * 10 > n || typed.length >= 2)) { closeOverview(); state.send("action", "step:" + k); }
    return true;
  }
  if (e.key === "Enter" && typed) {
    const k = parseInt(typed, 10);
    closeOverview();
    if (k >= 1 && k <= slideTitles().length) state.send("action", "step:" + k);
    return true;
  }
  return e.key !== "Tab";
}

// Keys act only when no control of the page has focus (issue 43 §2): a slider moves with the arrows,
// a button (a segmented control's, a chart toolbar's, a code panel's copy) or a link takes Enter and
// Space, a formula or table that scrolls in its own box scrolls with the arrows. The presenter's own
// bar is the exception (OWN_KEYS): a teacher who clicked "Next" and presses → steps on. The page
// itself (the body, Streamlit's <main>, which a click on the text focuses) takes no keys.
const TAKES_KEYS = 'input, textarea, select, button, a[href], summary, [contenteditable=""], [contenteditable="true"],'
  + ' [role="slider"], [role="combobox"], [role="listbox"], [role="radiogroup"], [role="radio"], [role="tablist"],'
  + ' [role="tab"], [role="spinbutton"], [role="menu"], [role="menuitem"], [role="option"], [role="button"],'
  + ' [role="link"], [role="checkbox"], [role="switch"], .katex-display[tabindex], [class*="st-key-anatomy-scroll-"][tabindex]';
const OWN_KEYS = ".anatomy-classroom";

// Whether the element with focus keeps the keys to itself (the presenter's keys then do nothing).
function takesKeys(t) {
  return !!(t && t.closest && t.closest(TAKES_KEYS) && !t.closest(OWN_KEYS));
}

function onKey(e) {
  if (!state.present || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
  if (overview) {
    if (overviewKey(e)) e.preventDefault();
    return;
  }
  if (takesKeys(e.target)) return;
  if ((e.key === "o" || e.key === "O") && !e.shiftKey) {
    e.preventDefault();
    openOverview();
    return;
  }
  if ((e.key === "j" || e.key === "J") && !e.shiftKey) {   // a class room's join card, shown or hidden
    e.preventDefault();
    state.send("action", "join");
    return;
  }
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
  const { parentElement, setTriggerValue } = component;
  const data = Array.isArray(component.data) ? component.data[0] : component.data;   // ui/classroom.py: a one-item list
  if (!data) return;
  const L = data.labels;
  Object.assign(state, { present: data.present, step: data.step, lesson: data.lesson, labels: L,
    has_prev: data.has_prev, has_next: data.has_next, send: setTriggerValue });
  if (!data.present) closeOverview();
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
  root.style.cssText = "position:fixed; left:50%; bottom:0.25rem; transform:translateX(-50%); z-index:999990;"
    + " display:flex; align-items:center; gap:0.4rem; padding:0.25rem 0.5rem; border-radius:0.8rem;"
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
  root.append(prevLesson, prev, where, next, nextLesson, copyButton(L));
  if (data.can_start_room) {   // issue 42: a class room (ui/room.py), from the bar: no room on the slide
    const start = button(L.start_room, "", () => setTriggerValue("action", "room"));
    start.className = "anatomy-start-room";
    root.append(start);
  }
  root.append(exit);
  for (const b of root.querySelectorAll("button")) {
    b.style.cssText = "padding:0.25rem 0.6rem; border-radius:0.5rem; border:1px solid rgba(49,51,63,0.25);"
      + " background:white; cursor:pointer; font:inherit;";
  }

  // "B1 · Attention — 2 / 5", kept right as the page's sections arrive; a step past the last
  // one (an old link) is brought back to the last once the page has finished running.
  let asked = false;
  const update = () => {
    const n = slides(true).length;
    root.dataset.steps = String(n);
    watchInner();
    const name = document.createElement("span");
    name.className = "anatomy-lesson";
    name.textContent = data.lesson + " — ";
    where.replaceChildren(name, L.step_of.replace("{step}", Math.min(data.step, n)).replace("{n}", n));
    prev.disabled = data.step <= 1 && !data.has_prev;
    next.disabled = data.step >= n && !data.has_next;
    // Only the newest bar corrects: an older one (the lesson before a switch) still watches the
    // page, and corrected the new lesson to the old step's last slide (D3 -> D4 opened on step 3).
    const current = state.step === data.step && state.lesson === data.lesson;
    if (!asked && current && !running() && n > 1 && data.step > n) {
      asked = true;
      setTriggerValue("action", "clamp:" + n + "@" + data.page);
    }
  };
  if (root.__watch) root.__watch.disconnect();
  let queued = false;
  root.__watch = new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; update(); });
  });
  const block = document.querySelector(BLOCK);
  if (block) root.__watch.observe(block, { childList: true });
  // and inside each top-level container (a fragment's elements arrive there)
  function watchInner() {
    if (!block || !root.__watch) return;
    for (const el of block.children) {
      const inner = innerBlock(el);
      if (inner) root.__watch.observe(inner, { childList: true });
    }
  }
  const app = document.querySelector('[data-testid="stApp"]');
  if (app) root.__watch.observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
  update();
  if (root.__shown !== data.step) {   // a new section starts at the top of the screen
    root.__shown = data.step;
    for (const el of [document.querySelector('[data-testid="stMain"]'), document.scrollingElement]) {
      if (el) el.scrollTop = 0;
    }
  }
  return () => { if (!root.isConnected && root.__watch) root.__watch.disconnect(); };
}
