// kgplan's page: plain JavaScript and SVG over the HTTP API (no library, nothing fetched from elsewhere).
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const svg = ["svg", "g", "circle", "line", "text", "title"].includes(tag);
  const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
};
const state = { selected: null, highlight: { add: new Set(), remove: new Set() }, plan: [], view: null };

// ---- the API ------------------------------------------------------------------------------------
async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const token = $("#token").value || localStorage.getItem("kgplan-token");
  if (token) headers.Authorization = "Bearer " + token;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    const d = data.detail;
    const message = typeof d === "object" && !Array.isArray(d) ? d.message
      : Array.isArray(d) ? d.map((x) => `${x.loc.slice(1).join(".")}: ${x.msg}`).join("\n") : r.statusText;
    throw Object.assign(new Error(message), { detail: d, status: r.status });
  }
  return data;
}

function describeError(e) {
  const lines = [e.message];
  for (const i of (e.detail && e.detail.issues) || []) lines.push(`• [${i.kind}] ${i.message}`);
  ((e.detail && e.detail.rounds) || []).forEach((r, n) => lines.push(`reply ${n + 1} refused: ${r.join("; ")}`));
  return lines.join("\n");
}

async function job(op, body) {
  const progress = $("#progress");
  progress.replaceChildren();
  let j = await api("POST", `/api/jobs/${op}`, body);
  for (;;) {
    progress.replaceChildren(...j.progress.map((p) => el("li", {}, p)));
    if (j.status !== "running") break;
    await new Promise((r) => setTimeout(r, 250));
    j = await api("GET", `/api/jobs/${j.id}`);
  }
  if (j.status === "failed") throw Object.assign(new Error(j.error.detail.message), { detail: j.error.detail });
  return j.result;
}

// ---- colours by type ------------------------------------------------------------------------------
const colours = new Map();
function colour(type) {
  if (!colours.has(type)) {
    let h = 0;
    for (const c of type) h = (h * 31 + c.charCodeAt(0)) % 360;
    colours.set(type, `hsl(${h}, 60%, 70%)`);
  }
  return colours.get(type);
}

// ---- unknowns: placeholders (seen, not yet identified) and entities with facts the graph does not know ---
const marksClass = (e) => (e.placeholder ? "placeholder" : "") + (e.unknown.length ? " has-unknown" : "");
const markText = (e) => [e.placeholder ? "placeholder: not yet identified" : "",
  ...e.unknown.map((p) => "unknown: " + markName({ entity: e.name, predicate: p }))].filter(Boolean);
const markName = (u) => (u.predicate ? `(${u.predicate} ${u.entity} ?)` : `${u.entity} (placeholder)`);
const markBadge = (e) => (e.placeholder || e.unknown.length
  ? el("span", { class: "mark", title: markText(e).join("\n") }, "?") : "");

function showMarks(e) {  // the selected entity's panel
  $("#entity-marks").replaceChildren(...markText(e).map((t) => el("div", { class: "unknown-mark" }, t)));
}

// ---- entities -------------------------------------------------------------------------------------
async function loadEntities() {
  const q = $("#entity-search").value;
  const data = await api("GET", "/api/entities?limit=500" + (q ? "&search=" + encodeURIComponent(q) : ""));
  $("#entity-list").replaceChildren(...data.entities.map((e) =>
    el("li", { "data-name": e.name, class: (e.name === state.selected ? "current " : "") + marksClass(e),
      onclick: () => select(e.name) }, e.name, " ", el("span", { class: "type" }, e.type), markBadge(e))));
}

async function select(name) {
  state.selected = name;
  state.view = null;  // fit the new neighbourhood to the view
  $("#selected").textContent = name;
  document.querySelectorAll("#entity-list li").forEach((li) => li.classList.toggle("current", li.dataset.name === name));
  await Promise.all([drawGraph(), loadFacts()]);
}

// ---- the graph view -------------------------------------------------------------------------------
function layout(center, entities, facts) {
  const adj = new Map(entities.map((e) => [e.name, new Set()]));
  for (const f of facts) for (const a of f.args) for (const b of f.args) if (a !== b && adj.has(a)) adj.get(a).add(b);
  const ring = new Map([[center, 0]]);
  const queue = [center];
  while (queue.length) {
    const n = queue.shift();
    for (const m of adj.get(n) || []) if (!ring.has(m)) { ring.set(m, ring.get(n) + 1); queue.push(m); }
  }
  const rings = [];
  for (const e of entities) {
    const r = ring.has(e.name) ? ring.get(e.name) : 1;
    (rings[r] = rings[r] || []).push(e.name);
  }
  const pos = new Map();
  rings.forEach((names, r) => names.sort().forEach((n, i) => {
    const a = (2 * Math.PI * i) / names.length + r * 0.4;
    const radius = r === 0 ? 0 : 90 + (r - 1) * 170 + (names.length > 24 ? (i % 2) * 45 : 0);
    pos.set(n, { x: radius * Math.cos(a), y: radius * Math.sin(a) });
  }));
  return pos;
}

async function drawGraph() {
  if (!state.selected) return;
  const depth = $("#depth").value;
  const n = await api("GET", `/api/entities/${encodeURIComponent(state.selected)}?depth=${depth}`);
  const pos = layout(n.entity.name, n.entities, n.facts);
  const types = new Map(n.entities.map((e) => [e.name, e.type]));
  const ents = new Map(n.entities.map((e) => [e.name, e]));
  showMarks(n.entity);
  const unary = new Map();
  const edges = [];
  for (const f of n.facts) {
    if (f.args.length === 1) (unary.get(f.args[0]) || unary.set(f.args[0], []).get(f.args[0])).push(f.predicate);
    for (const b of f.args.slice(1)) {
      const p = pos.get(f.args[0]), q = pos.get(b);
      if (!p || !q) continue;
      const cls = "edge" + (state.highlight.add.has(f.text) ? " added" : "") + (f.unknown ? " unknown" : "");
      edges.push(el("g", { class: cls, "data-fact": f.text },
        el("line", { x1: p.x, y1: p.y, x2: q.x, y2: q.y }),
        el("text", { x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 - 3 }, f.predicate),
        el("title", {}, f.text)));
    }
  }
  for (const t of state.highlight.remove) {  // a step's removed relations, drawn dashed
    const f = t.slice(1, -1).split(" ");
    const p = pos.get(f[1]), q = pos.get(f[2]);
    if (p && q) edges.push(el("g", { class: "edge removed", "data-fact": t },
      el("line", { x1: p.x, y1: p.y, x2: q.x, y2: q.y }), el("title", {}, "removed: " + t)));
  }
  const nodes = [...pos].map(([name, p]) => {
    const flags = unary.get(name) || [];
    const e = ents.get(name);
    const touched = [...state.highlight.add].some((t) => t.slice(1, -1).split(" ").slice(1).includes(name));
    const r = name === n.entity.name ? 16 : 11;
    return el("g", { class: "node " + marksClass(e) + (name === n.entity.name ? " center" : "") + (touched ? " added" : ""),
      "data-name": name, transform: `translate(${p.x},${p.y})`, onclick: (ev) => { ev.stopPropagation(); select(name); } },
    el("circle", { r, fill: colour(types.get(name)) }),
    e.unknown.length ? el("circle", { r: r + 4, class: "unknown-ring" }) : "",
    e.placeholder ? el("text", { y: 4, class: "qmark" }, "?") : "",
    el("text", { y: -15 }, name),
    el("text", { y: 24, class: "unary" }, [...flags, ...e.unknown.map((p) => p + " ?")].join(", ")),
    el("title", {}, [`${name} - ${types.get(name)}`, ...flags, ...markText(e)].join("\n")));
  });
  $("#viewport").replaceChildren(...edges, ...nodes);
  if (!state.view) {
    const svg = $("#graph");
    const extent = Math.max(...[...pos.values()].map((p) => Math.max(Math.abs(p.x), Math.abs(p.y)))) + 60;
    state.view = { x: 0, y: 0, k: Math.min(1.5, Math.min(svg.clientWidth, svg.clientHeight) / 2 / extent) };
  }
  $("#legend").replaceChildren(...[...new Set(types.values())].sort().map((t) =>
    el("span", {}, el("i", { style: `background:${colour(t)}` }), t)),
  el("span", { class: "legend-placeholder" }, el("i", { class: "placeholder" }), "placeholder (not yet identified)"),
  el("span", { class: "legend-unknown" }, el("i", { class: "has-unknown" }), "has unknown facts (name ?)"),
  el("span", { class: "legend-edge" }, el("b", {}, "- - "), "fact about an unknown"));
  applyView();
}

function applyView() {
  if (!state.view) return;
  const svg = $("#graph");
  const { x, y, k } = state.view;
  $("#viewport").setAttribute("transform",
    `translate(${svg.clientWidth / 2 + x},${svg.clientHeight / 2 + y}) scale(${k})`);
}

function panAndZoom() {
  const svg = $("#graph");
  let drag = null;
  svg.addEventListener("mousedown", (e) => {
    if (state.view) drag = { x: e.clientX - state.view.x, y: e.clientY - state.view.y };
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    state.view.x = e.clientX - drag.x;
    state.view.y = e.clientY - drag.y;
    applyView();
  });
  window.addEventListener("mouseup", () => { drag = null; });
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    if (!state.view) return;
    const r = svg.getBoundingClientRect();
    const cx = e.clientX - r.left - svg.clientWidth / 2, cy = e.clientY - r.top - svg.clientHeight / 2;
    const f = Math.exp(-e.deltaY / 500);
    state.view = { k: state.view.k * f, x: cx - (cx - state.view.x) * f, y: cy - (cy - state.view.y) * f };
    applyView();
  }, { passive: false });
  window.addEventListener("resize", applyView);
}

// ---- facts: search, inline correction, removal, addition ---------------------------------------------
async function loadFacts() {
  const q = $("#fact-search").value;
  let path = "/api/facts?limit=500";
  if (state.selected) path += "&entity=" + encodeURIComponent(state.selected);
  if (q) path += "&search=" + encodeURIComponent(q);
  const data = await api("GET", path);
  $("#facts tbody").replaceChildren(...data.facts.map(factRow));
}

function factRow(f) {
  const cell = el("td", {}, f.text, f.unknown ? el("span", { class: "mark", title: "it names a placeholder, or more "
    + "facts of its predicate may hold than the graph knows" }, "?") : "");
  const row = el("tr", { "data-fact": f.text, class: f.unknown ? "unknown" : "" }, cell);
  const edit = el("button", { class: "edit", onclick: () => {
    const input = el("input", { class: "fact-edit", value: f.text });
    const msg = el("div", { class: "issues" });
    const save = el("button", { class: "save", onclick: () => correct(f.text, input.value, msg) }, "Save");
    const cancel = el("button", { onclick: loadFacts }, "Cancel");
    cell.replaceChildren(input, msg);
    row.lastChild.replaceChildren(save, cancel);
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") save.click(); });
    input.focus();
  } }, "edit");
  const remove = el("button", { class: "remove-fact", onclick: () => correct(f.text, null, $("#facts-msg")) }, "remove");
  row.append(el("td", {}, edit, " ", remove));
  return row;
}

async function correct(old, fact, msg) {
  msg.textContent = "";
  const body = { remove: old ? [old] : [], add: fact ? [fact] : [], note: "corrected in the web page" };
  try {
    const c = await api("POST", "/api/changes", body);
    $("#facts-msg").replaceChildren(el("span", { class: "ok" }, `applied as change #${c.id}`));
    await refresh();
  } catch (e) {
    msg.textContent = describeError(e);
  }
}

// ---- history with provenance and undo ----------------------------------------------------------------
const PAGE = 30, DIFF_PAGE = 500;  // changes per history page; items per list when a change is opened further

function diffItems(c) {
  return [...c.new_entities.map((e) => el("div", { class: "add" }, `new ${e.name} - ${e.type}`)),
    ...c.removed_entities.map((name) => el("div", { class: "remove" }, `gone ${name}`)),
    ...c.remove.map((f) => el("div", { class: "remove" }, "- " + f.text)),
    ...c.add.map((f) => el("div", { class: "add" }, "+ " + f.text)),
    ...c.unknown.map((u) => el("div", { class: "unknown-mark" }, "unknown " + markName(u))),
    ...c.known.map((u) => el("div", { class: "add" }, "known " + markName(u)))];
}

function changeItem(c) {
  const who = [c.source, c.model, c.tokens && c.tokens.prompt ? `${c.tokens.prompt}+${c.tokens.completion || 0} tokens` : ""]
    .filter(Boolean).join(", ");
  const diff = el("div", { class: "diff" }, ...diffItems(c));
  let shown = Math.max(c.add.length, c.remove.length, c.new_entities.length, c.removed_entities.length);
  const more = el("button", { class: "more" });
  const label = () => {
    more.hidden = !Object.values(c.sizes).some((n) => n > shown);
    more.textContent = `more (${c.sizes.add} added, ${c.sizes.remove} removed, ${c.sizes.new_entities} new, `
      + `${c.sizes.removed_entities} gone in all)`;
  };
  more.addEventListener("click", async () => {  // the next page of this change's diff
    const part = await api("GET", `/api/history/${c.id}?offset=${shown}&limit=${DIFF_PAGE}`);
    diff.append(...diffItems(part));
    shown += DIFF_PAGE;
    label();
  });
  label();
  return el("li", { "data-change": c.id },
    el("b", {}, `#${c.id} `), el("span", { class: "dim" }, `${new Date(c.time).toLocaleString()} (${who}) `),
    c.text || "", c.undo_of ? el("span", { class: "dim" }, ` undoes #${c.undo_of}`) : "", " ",
    el("button", { class: "undo", onclick: () => undo(c.id) }, "undo"), diff, more);
}

async function loadHistory(before) {
  const changes = await api("GET", `/api/history?limit=${PAGE}` + (before ? `&before=${before}` : ""));
  const items = changes.map(changeItem);
  if (before) $("#history").append(...items);
  else $("#history").replaceChildren(...items);
  const older = $("#history-older");
  older.hidden = changes.length < PAGE;
  older.onclick = () => loadHistory(changes[changes.length - 1].id);
}

async function undo(id) {
  $("#history-msg").textContent = "";
  try {
    await api("POST", `/api/undo/${id}`);
    await refresh();
  } catch (e) {
    $("#history-msg").textContent = describeError(e);
  }
}

// ---- tell and plan ----------------------------------------------------------------------------------
function outcome(...children) { $("#outcome").replaceChildren(...children); }

async function tell(dryRun) {
  const text = $("#ask").value.trim();
  if (!text) return;
  outcome(el("span", { class: "dim" }, "working…"));
  try {
    const r = await job("tell", { text, dry_run: dryRun });
    const c = r.change || r.proposed;
    outcome(el("div", { class: "ok" }, r.change ? `applied as change #${c.id}` : "dry run: verified, not applied"),
      ...c.remove.map((f) => el("div", { class: "remove" }, "- " + f.text)),
      ...c.add.map((f) => el("div", { class: "add" }, "+ " + f.text)),
      ...r.rounds.map((issues, i) => el("div", { class: "dim" }, `reply ${i + 1} refused: ${issues.join("; ")}`)));
    state.highlight = { add: new Set(c.add.map((f) => f.text)), remove: new Set(c.remove.map((f) => f.text)) };
    await refresh();
  } catch (e) {
    outcome(el("div", { class: "issues" }, describeError(e)));
  }
}

async function plan(kind) {
  const text = $("#ask").value.trim();
  if (!text) return;
  outcome(el("span", { class: "dim" }, "planning…"));
  $("#plan-steps").replaceChildren();
  $("#run-btn").hidden = true;
  try {
    const p = await job("plan", kind === "goal" ? { goal: text } : { task: text });
    const where = p.used_full_state ? "the full state" : `${p.report.facts_pruned} of ${p.report.facts_full} facts`;
    outcome(el("div", { class: p.status === "solved" ? "ok" : "issues" },
      `${p.status} by ${p.planner} in ${p.seconds.toFixed(2)} s on ${where}`),
    el("div", { class: "dim" }, "goal: " + p.goal), p.message ? el("div", { class: "dim" }, p.message) : "");
    state.plan = p.steps;
    $("#plan-steps").replaceChildren(...p.steps.map((s, i) => el("li", { onclick: () => showStep(i) }, s.action,
      el("div", {}, ...s.remove.map((f) => el("div", { class: "remove" }, "- " + f.text)),
        ...s.add.map((f) => el("div", { class: "add" }, "+ " + f.text))))));
    $("#run-btn").hidden = !p.steps.length;
    if (p.steps.length) showStep(0);
  } catch (e) {
    outcome(el("div", { class: "issues" }, describeError(e)));
  }
}

function showStep(i) {
  const s = state.plan[i];
  document.querySelectorAll("#plan-steps li").forEach((li, j) => li.classList.toggle("current", i === j));
  state.highlight = { add: new Set(s.add.map((f) => f.text)), remove: new Set(s.remove.map((f) => f.text)) };
  drawGraph();
}

async function runPlan() {
  try {
    const r = await job("run");
    outcome(el("div", { class: r.done ? "ok" : "issues" },
      `executed ${r.changes.length} of ${r.steps} steps` + (r.failure ? `; stopped: ${r.failure}` : "")));
    $("#run-btn").hidden = true;
    await refresh();
  } catch (e) {
    outcome(el("div", { class: "issues" }, describeError(e)));
  }
}

// ---- start -----------------------------------------------------------------------------------------
async function refresh() {  // what the user looks at first, then the lists
  await Promise.all([drawGraph(), loadFacts()]);
  await Promise.all([loadEntities(), loadHistory()]);
}

async function start() {
  const s = await api("GET", "/api/settings");
  $("#settings").textContent = `${s.domain || "no domain"} · ${s.store} · LLM ${s.llm.model}`;
  $("#token-box").hidden = !s.writes_need_token;
  $("#token").value = localStorage.getItem("kgplan-token") || "";
  $("#token").addEventListener("change", () => localStorage.setItem("kgplan-token", $("#token").value));
  $("#entity-search").addEventListener("input", loadEntities);
  $("#fact-search").addEventListener("input", loadFacts);
  $("#depth").addEventListener("change", drawGraph);
  $("#add-btn").addEventListener("click", () => correct(null, $("#new-fact").value, $("#facts-msg")));
  $("#tell-btn").addEventListener("click", () => tell(false));
  $("#dry-btn").addEventListener("click", () => tell(true));
  $("#plan-btn").addEventListener("click", () => plan("task"));
  $("#goal-btn").addEventListener("click", () => plan("goal"));
  $("#run-btn").addEventListener("click", runPlan);
  panAndZoom();
  await refresh();
  document.body.dataset.ready = "1";
}

start().catch((e) => outcome(el("div", { class: "issues" }, "cannot reach the API: " + e.message)));
