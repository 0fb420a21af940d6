// kgplan's page: plain JavaScript over the HTTP API; the graph is drawn by Cytoscape.js (shipped in vendor/).
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
};
const state = { selected: null, drawn: null, draws: 0, highlight: { add: new Set(), remove: new Set() }, plan: [],
  head: undefined };

// ---- the API ------------------------------------------------------------------------------------
async function api(method, path, body) {  // a write always sends a JSON body (`{}` if none) and says it is the page's
  const headers = {};
  const token = $("#token").value || localStorage.getItem("kgplan-token");
  if (token) headers.Authorization = "Bearer " + token;
  const write = method !== "GET";
  if (write) Object.assign(headers, { "Content-Type": "application/json", "X-Requested-With": "kgplan" });
  const r = await fetch(path, { method, headers, body: write ? JSON.stringify(body === undefined ? {} : body) : undefined });
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

// ---- messages: they clear after a few seconds, or when the user acts again -----------------------------
const timers = new Map();
function say(box, kind, text) {  // kind: ok, issues or note; no text clears the box
  clearTimeout(timers.get(box));
  box.replaceChildren(...(text ? [el("div", { class: kind }, text)] : []));
  if (text) timers.set(box, setTimeout(() => box.replaceChildren(), kind === "ok" ? 4000 : 10000));
}
document.addEventListener("click", (e) => {
  if (e.target.closest("button")) document.querySelectorAll(".msg").forEach((box) => say(box));
}, true);

// ---- colours by type: a fixed categorical palette (Kelly's colours) in the order the page meets the types ---
const PALETTE = ["#f3c300", "#875692", "#f38400", "#a1caf1", "#be0032", "#c2b280", "#848482", "#008856", "#e68fac",
  "#0067a5", "#f99379", "#604e97", "#f6a600", "#b3446c", "#dcd300", "#882d17", "#8db600", "#654522", "#e25822",
  "#2b3d26"];
const SHAPES = ["ellipse", "round-rectangle", "diamond", "hexagon"];  // past the palette, the shape tells types apart
const types = [];
function learnTypes(names) {
  for (const t of [...new Set(names)].sort()) if (!types.includes(t)) types.push(t);
}
function look(type) {
  learnTypes([type]);
  const i = types.indexOf(type);
  return { colour: PALETTE[i % PALETTE.length], shape: SHAPES[Math.floor(i / PALETTE.length) % SHAPES.length] };
}

// ---- unknowns: placeholders (seen, not yet identified) and entities with facts the graph does not know ---
const marksClass = (e) => (e.placeholder ? "placeholder" : "") + (e.unknown.length ? " has-unknown" : "");
const markText = (e) => [e.placeholder ? "placeholder: not yet identified" : "",
  ...e.unknown.map((p) => "unknown: " + markName({ entity: e.name, predicate: p }))].filter(Boolean);
const markName = (u) => (u.predicate ? `(${u.predicate} ${u.entity} ?)` : `${u.entity} (placeholder)`);
const markBadge = (e) => (e.placeholder || e.unknown.length
  ? el("span", { class: "mark", title: markText(e).join("\n") }, "?") : "");
const counted = (shown, total, what) => (shown < total ? `showing ${shown} of ${total} ${what}` : `${total} ${what}`);

// ---- entities -------------------------------------------------------------------------------------
async function loadEntities() {
  const q = $("#entity-search").value;
  const data = await api("GET", "/api/entities?limit=500" + (q ? "&search=" + encodeURIComponent(q) : ""));
  learnTypes(data.entities.map((e) => e.type));
  $("#entity-count").textContent = counted(data.entities.length, data.total, "entities");
  $("#entity-list").replaceChildren(...data.entities.map((e) =>
    el("li", { "data-name": e.name, class: (e.name === state.selected ? "current " : "") + marksClass(e),
      onclick: () => select(e.name) }, e.name, " ", el("span", { class: "type" }, e.type), markBadge(e))));
}

async function select(name) {
  state.selected = name;
  $("#selected").textContent = name || "(select an entity)";
  document.querySelectorAll("#entity-list li").forEach((li) => li.classList.toggle("current", li.dataset.name === name));
  await Promise.all([drawGraph(), loadFacts()]);
}

function lost(name) {  // the selected entity is gone (an undo, another client): say so, show the whole graph's facts
  if (state.selected !== name) return;
  say($("#graph-msg"), "note", `${name} no longer exists (a change removed it); nothing is selected now`);
  return select(null);
}

// ---- the graph view (Cytoscape.js) -------------------------------------------------------------------
let cy = null;

function makeGraph() {
  cy = cytoscape({ container: $("#graph"), minZoom: 0.2, maxZoom: 3, style: [
    { selector: "node", style: { label: "data(label)", "background-color": "data(colour)", shape: "data(shape)",
      width: 24, height: 24, "border-width": 1, "border-color": "#333", "font-size": 14, "text-valign": "bottom",
      "text-margin-y": 4, "text-wrap": "wrap", "text-max-width": 160, "text-background-color": "#fff",
      "text-background-opacity": 0.75, "text-background-padding": 1 } },
    { selector: "node.center", style: { width: 36, height: 36, "border-width": 3, "font-weight": "bold" } },
    { selector: "node.placeholder", style: { "border-style": "dashed", "background-opacity": 0.45 } },
    { selector: "node.has-unknown", style: { "border-style": "dashed", "border-color": "#ef6c00", "border-width": 3 } },
    { selector: "node.plan", style: { "underlay-color": "#ffb300", "underlay-opacity": 0.35, "underlay-padding": 6 } },
    { selector: "node.added", style: { "underlay-color": "#2e7d32", "underlay-opacity": 0.5, "underlay-padding": 8 } },
    { selector: "edge", style: { label: "data(label)", "curve-style": "bezier", width: 1.5, "line-color": "#9e9e9e",
      "target-arrow-shape": "triangle", "target-arrow-color": "#9e9e9e", "arrow-scale": 0.8, "font-size": 12,
      "min-zoomed-font-size": 7,
      color: "#37474f", "text-rotation": "autorotate", "text-background-color": "#fcfcfb",
      "text-background-opacity": 1, "text-background-padding": 1 } },
    { selector: "edge.unknown", style: { "line-style": "dashed" } },
    { selector: "edge.added", style: { "line-color": "#2e7d32", "target-arrow-color": "#2e7d32", width: 4 } },
    { selector: "edge.removed", style: { "line-color": "#c62828", "target-arrow-color": "#c62828", width: 3,
      "line-style": "dashed" } },
  ] });
  cy.on("tap", "node", (e) => select(e.target.id()));
}

const factArgs = (text) => text.slice(1, -1).split(" ").slice(1);  // "(on apple table)" -> [apple, table]
const stepNames = (step) => [...step.add, ...step.remove].flatMap((f) => f.args);

function elements(center, entities, facts) {
  const unary = new Map();
  for (const f of facts) if (f.args.length === 1) unary.set(f.args[0], [...(unary.get(f.args[0]) || []), f.predicate]);
  const inPlan = new Set(state.plan.flatMap(stepNames));
  const nodes = entities.map((e) => {
    const flags = [...(unary.get(e.name) || []), ...e.unknown.map((p) => p + " ?")];
    const touched = [...state.highlight.add, ...state.highlight.remove].some((t) => factArgs(t).includes(e.name));
    return { group: "nodes", data: { id: e.name, ...look(e.type),
      label: (e.placeholder ? "? " : "") + e.name + (flags.length ? "\n" + flags.join(", ") : "") },
    classes: [marksClass(e), e.name === center ? "center" : "", inPlan.has(e.name) ? "plan" : "",
      touched ? "added" : ""].join(" ") };
  });
  const names = new Set(entities.map((e) => e.name));
  const present = new Set(facts.map((f) => f.text));
  const shown = [...state.highlight.add, ...state.highlight.remove].filter((t) => !present.has(t))  // a step's effects
    .map((text) => ({ text, args: factArgs(text), unknown: false }));
  const edges = [];
  for (const f of [...facts, ...shown]) {
    const cls = [state.highlight.add.has(f.text) ? "added" : "", state.highlight.remove.has(f.text) ? "removed" : "",
      f.unknown ? "unknown" : ""].join(" ");
    f.args.slice(1).forEach((b, i) => names.has(f.args[0]) && names.has(b) && edges.push({ group: "edges", classes: cls,
      data: { id: `${f.text}#${i}`, source: f.args[0], target: b, fact: f.text, label: f.text.slice(1).split(" ")[0] } }));
  }
  return [...nodes, ...edges];
}

async function drawGraph() {
  const draw = ++state.draws, name = state.selected, depth = $("#depth").value;
  if (!name) {
    cy.elements().remove();
    state.drawn = null;
    $("#entity-marks").replaceChildren();
    $("#legend").replaceChildren();
    return;
  }
  let n;
  try {
    n = await api("GET", `/api/entities/${encodeURIComponent(name)}?depth=${depth}`);
  } catch (e) {
    if (e.status === 404) return lost(name);
    throw e;
  }
  const have = new Set(n.entities.map((e) => e.name));
  const missing = state.highlight.step ? [...new Set([...state.highlight.add, ...state.highlight.remove]
    .flatMap(factArgs))].filter((x) => !have.has(x)) : [];  // a plan step's entities outside the neighbourhood
  const extra = await Promise.all(missing.map((x) => api("GET", `/api/entities/${encodeURIComponent(x)}?depth=0`)
    .then((r) => r.entity, () => null)));
  if (draw !== state.draws) return;  // a newer drawing is on its way
  const entities = [...n.entities, ...extra.filter(Boolean)];
  $("#entity-marks").replaceChildren(...markText(n.entity).map((t) => el("div", { class: "unknown-mark" }, t)));
  const key = [name, depth, ...entities.map((e) => e.name).sort()].join(" ");
  const kept = new Map(cy.nodes().map((v) => [v.id(), { ...v.position() }]));
  cy.batch(() => {
    cy.elements().remove();
    cy.add(elements(name, entities, n.facts));
  });
  if (key === state.drawn) cy.nodes().forEach((v) => kept.has(v.id()) && v.position(kept.get(v.id())));
  else arrange(name);
  state.drawn = key;
  legend(entities);
}

function arrange(center) {  // rings by distance from the centre, refined by a force-directed layout, turned to the view
  cy.layout({ name: "breadthfirst", roots: [center], circle: true, animate: false }).run();
  cy.layout({ name: "cose", randomize: false, animate: false, nodeDimensionsIncludeLabels: true,
    idealEdgeLength: () => 35, nodeRepulsion: () => 8000, gravity: 4, numIter: 1500 }).run();
  const box = cy.nodes().boundingBox();
  if ((box.h > box.w) !== (cy.height() > cy.width())) {  // a tall drawing in a wide view: mirror it on the diagonal
    cy.nodes().positions((v) => ({ x: v.position("y"), y: v.position("x") }));
  }
  cy.fit(undefined, 20);
  if (cy.zoom() > 1.2) cy.zoom({ level: 1.2, position: cy.$id(center).position() });  // a small graph: not enlarged
}

function legend(entities) {
  const shown = [...new Set(entities.map((e) => e.type))].sort();
  $("#legend").replaceChildren(...shown.map((t) => el("span", { "data-type": t },
    el("i", { class: look(t).shape, style: `background:${look(t).colour}` }), t)),
  el("span", { class: "legend-placeholder" }, el("i", { class: "placeholder" }), "placeholder (not yet identified)"),
  el("span", { class: "legend-unknown" }, el("i", { class: "has-unknown" }), "has unknown facts (name ?)"),
  el("span", { class: "legend-edge" }, el("b", {}, "- - "), "fact about an unknown"));
}

// ---- facts: search, inline correction, removal, addition ---------------------------------------------
async function loadFacts() {
  if (document.activeElement && document.activeElement.matches("input.fact-edit")) return;  // the user is editing
  const q = $("#fact-search").value;
  let path = "/api/facts?limit=500";
  if (state.selected) path += "&entity=" + encodeURIComponent(state.selected);
  if (q) path += "&search=" + encodeURIComponent(q);
  const data = await api("GET", path);
  $("#fact-count").textContent = counted(data.facts.length, data.total, "facts");
  $("#facts tbody").replaceChildren(...data.facts.map(factRow));
}

function factRow(f) {
  const cell = el("td", {}, f.text, f.unknown ? el("span", { class: "mark", title: "it names a placeholder, or more "
    + "facts of its predicate may hold than the graph knows" }, "?") : "");
  const row = el("tr", { "data-fact": f.text, class: f.unknown ? "unknown" : "" }, cell);
  const edit = el("button", { class: "edit", onclick: () => {
    const input = el("input", { class: "fact-edit", value: f.text });
    const msg = el("div", { class: "issues msg" });
    const save = el("button", { class: "save",
      onclick: () => change({ remove: [f.text], add: [input.value], note: "corrected in the web page" }, msg) }, "Save");
    const cancel = el("button", { onclick: loadFacts }, "Cancel");
    cell.replaceChildren(input, msg);
    row.lastChild.replaceChildren(save, cancel);
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") save.click(); });
    input.focus();
  } }, "edit");
  const remove = el("button", { class: "remove-fact",
    onclick: () => change({ remove: [f.text], note: "corrected in the web page" }, $("#facts-msg")) }, "remove");
  row.append(el("td", {}, edit, " ", remove));
  return row;
}

// ---- one verified change: facts, entities and unknown marks together -------------------------------------
async function change(body, box, dryRun = false, applied = () => {}) {  // true when applied (or, dry, verified)
  let c;
  try {
    c = await api("POST", "/api/changes", { ...body, dry_run: dryRun });
  } catch (e) {
    say(box, "issues", describeError(e));
    return false;
  }
  say(box, "ok", dryRun ? "checked: the change is valid (nothing applied)" : `applied as change #${c.id}`);
  if (!dryRun) {
    applied();  // before the views follow (the change feed may show it first)
    state.highlight = { add: new Set(c.add.map((f) => f.text)), remove: new Set(c.remove.map((f) => f.text)) };
    await refresh();
  }
  return true;
}

const items = (sel, sep) => $(sel).value.split(sep).map((s) => s.trim()).filter(Boolean);
const mark = (text) => {  // "(on apple ?)": the apple's place is unknown; "room_east": a placeholder
  const m = text.match(/^\(\s*(\S+)\s+(\S+)\s+\?\s*\)$/);
  return m ? { entity: m[2], predicate: m[1] } : { entity: text };
};

function changeForm() {
  const newEntities = items("#change-new", /[,\n]/).map((s) => {
    const [name, type] = s.split(":").map((x) => x.trim());
    if (!type) throw new Error(`write a new entity as name:type (${s})`);
    return { name, type };
  });
  return { add: items("#change-add", "\n"), remove: items("#change-remove", "\n"), new_entities: newEntities,
    removed_entities: items("#change-gone", /[,\s]+/), unknown: items("#change-unknown", ",").map(mark),
    known: items("#change-known", ",").map(mark), note: $("#change-note").value.trim() || "changed in the web page" };
}

async function submitChange(dryRun) {
  let body;
  try {
    body = changeForm();
  } catch (e) {
    return say($("#change-msg"), "issues", e.message);
  }
  await change(body, $("#change-msg"), dryRun, () => $("#change-form").reset());
}

// ---- history with provenance and undo ----------------------------------------------------------------
const PAGE = 30, DIFF_PAGE = 500;  // changes per history page; items per list when a change is opened further

function factLines(c) {  // removed, then added facts, each with how it was chosen (a told change's provenance)
  const line = (kind, sign) => (f) => el("div", { class: kind }, sign + f.text,
    ...(c.how && c.how[f.text] ? [el("span", { class: "how dim" }, ` (${c.how[f.text]})`)] : []));
  return [...c.remove.map(line("remove", "- ")), ...c.add.map(line("add", "+ "))];
}

function diffItems(c) {
  return [...c.new_entities.map((e) => el("div", { class: "add" }, `new ${e.name} - ${e.type}`)),
    ...c.removed_entities.map((name) => el("div", { class: "remove" }, `gone ${name}`)),
    ...factLines(c),
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
  else {
    $("#history").replaceChildren(...items);
    state.head = changes.length ? changes[0].id : 0;
  }
  const older = $("#history-older");
  older.hidden = changes.length < PAGE;
  older.onclick = () => loadHistory(changes[changes.length - 1].id);
}

async function undo(id) {
  try {
    const c = await api("POST", `/api/undo/${id}`);
    say($("#history-msg"), "ok", `undone by change #${c.id}`);
  } catch (e) {
    return say($("#history-msg"), "issues", describeError(e));
  }
  await refresh();
}

// ---- tell and plan ----------------------------------------------------------------------------------
function outcome(...children) { $("#outcome").replaceChildren(...children); }

// a question instead of a guess: the options as buttons; a click asks again with the answer added
function clarify(r, again) {
  outcome(el("div", { class: "question" }, r.question),
    el("div", { class: "buttons", id: "options" }, ...r.options.map((o) => el("button", {
      class: "option", title: o.value, onclick: () => again({ ...r.answers, [r.word]: o.value }) }, o.label))));
}

async function tell(dryRun, answers = {}) {
  const text = $("#ask").value.trim();
  if (!text) return;
  outcome(el("span", { class: "dim" }, "working…"));
  let r;
  try {
    r = await job("tell", { text, dry_run: dryRun, answers });
  } catch (e) {
    return outcome(el("div", { class: "issues" }, describeError(e)));
  }
  if (r.status === "needs_clarification") return clarify(r, (more) => tell(dryRun, more));
  const c = r.change || r.proposed;
  outcome(el("div", { class: "ok" }, r.change ? `applied as change #${c.id}` : "dry run: verified, not applied"),
    ...factLines(c),
    ...r.rounds.map((issues, i) => el("div", { class: "dim" }, `reply ${i + 1} refused: ${issues.join("; ")}`)));
  state.highlight = { add: new Set(c.add.map((f) => f.text)), remove: new Set(c.remove.map((f) => f.text)) };
  await refresh();
}

async function plan(kind, answers = {}) {
  const text = $("#ask").value.trim();
  if (!text) return;
  outcome(el("span", { class: "dim" }, "planning…"));
  $("#plan-steps").replaceChildren();
  $("#run-btn").hidden = true;
  let p;
  try {
    p = await job("plan", kind === "goal" ? { goal: text } : { task: text, answers });
  } catch (e) {
    return outcome(el("div", { class: "issues" }, describeError(e)));
  }
  if (p.status === "needs_clarification") return clarify(p, (more) => plan(kind, more));
  const where = p.used_full_state ? "the full state" : `${p.report.facts_pruned} of ${p.report.facts_full} facts`;
  outcome(el("div", { class: p.status === "solved" ? "ok" : "issues" },
    `${p.status} by ${p.planner} in ${p.seconds.toFixed(2)} s on ${where}`),
  el("div", { class: "dim" }, "goal: " + p.goal), p.message ? el("div", { class: "dim" }, p.message) : "",
  ...whyNot(p));
  state.plan = p.steps;
  $("#plan-steps").replaceChildren(...p.steps.map((s, i) => el("li", { onclick: () => showStep(i) }, s.action,
    el("div", {}, ...s.remove.map((f) => el("div", { class: "remove" }, "- " + f.text)),
      ...s.add.map((f) => el("div", { class: "add" }, "+ " + f.text))))));
  $("#run-btn").hidden = !p.steps.length;
  if (p.steps.length) showStep(0);
}

// why a goal cannot be reached: each cause, and the closest goal that can be (a click plans it)
function whyNot(p) {
  const alt = p.alternative ? [el("div", { class: "why" }, "the closest goal that can be reached: ",
    el("a", { href: "#", id: "alternative", onclick: (e) => {
      e.preventDefault();
      $("#ask").value = p.alternative;
      plan("goal");
    } }, p.alternative))] : [];
  return [...p.why.map((c) => el("div", { class: "why" }, `why not: [${c.kind}] ${c.explanation}`)), ...alt];
}

function showStep(i) {
  const s = state.plan[i];
  document.querySelectorAll("#plan-steps li").forEach((li, j) => li.classList.toggle("current", i === j));
  state.highlight = { add: new Set(s.add.map((f) => f.text)), remove: new Set(s.remove.map((f) => f.text)), step: true };
  drawGraph();
}

async function runPlan() {
  let r;
  try {
    r = await job("run");
  } catch (e) {
    return outcome(el("div", { class: "issues" }, describeError(e)));
  }
  outcome(el("div", { class: r.done ? "ok" : "issues" },
    `executed ${r.changes.length} of ${r.steps} steps` + (r.failure ? `; stopped: ${r.failure}` : "")));
  $("#run-btn").hidden = true;
  state.plan = [];
  state.highlight = { add: new Set(), remove: new Set() };
  await refresh();
}

// ---- following the server: every view again when the history's head moves (this page or another client) --
let refreshing = null, again = false;
async function refresh() {  // never fails: a part that cannot load says so and the others go on
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      const parts = await Promise.allSettled([drawGraph().then(loadFacts), loadEntities(), loadHistory()]);
      const failed = parts.find((p) => p.status === "rejected");
      if (failed) say($("#graph-msg"), "issues", "cannot refresh: " + failed.reason.message);
    } while (again);
  })();
  try {
    await refreshing;
  } finally {
    refreshing = null;
  }
}

async function poll() {  // the history's head every 2 s while the page is in view (where the change feed fails)
  try {
    if (!document.hidden) {
      const [head] = await api("GET", "/api/history?limit=1");
      if ((head ? head.id : 0) !== state.head) await refresh();
    }
  } catch (e) {
    say($("#graph-msg"), "issues", "cannot reach the server: " + e.message);
  }
  setTimeout(poll, 2000);
}

let stale = false;  // a change came while the page was out of view: refresh when it is back
function changed(id) {
  if (id <= state.head) return;  // this page has shown it already
  if (document.hidden) stale = true;
  else refresh();
}
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && stale) {
    stale = false;
    refresh();
  }
});

function follow() {  // the server's change feed (server-sent events, resumed by the browser after a drop)
  if (!window.EventSource) return poll();
  const feed = new EventSource("/api/events" + (state.head === undefined ? "" : `?after=${state.head}`));
  feed.addEventListener("change", (e) => changed(Number(e.lastEventId)));
  feed.addEventListener("reset", () => {  // the store was cleared and begun anew
    state.head = 0;
    changed(Infinity);
  });
  feed.addEventListener("open", () => { document.body.dataset.feed = "live"; });
  feed.addEventListener("error", () => {
    if (feed.readyState !== EventSource.CLOSED) return;  // reconnecting by itself
    document.body.dataset.feed = "polling";
    say($("#graph-msg"), "note", "live updates are unavailable: the page checks for changes every 2 s");
    poll();
  });
}

// ---- start -----------------------------------------------------------------------------------------
async function start() {
  const s = await api("GET", "/api/settings");
  $("#settings").textContent = `${s.domain || "no domain"} · ${s.store} · LLM ${s.llm.model}`;
  $("#token-box").hidden = !s.writes_need_token;
  $("#token").value = localStorage.getItem("kgplan-token") || "";
  $("#token").addEventListener("change", () => localStorage.setItem("kgplan-token", $("#token").value));
  $("#entity-search").addEventListener("input", loadEntities);
  $("#fact-search").addEventListener("input", loadFacts);
  $("#depth").addEventListener("change", drawGraph);
  $("#fit-btn").addEventListener("click", () => cy.fit(undefined, 20));
  $("#add-btn").addEventListener("click", () =>
    change({ add: [$("#new-fact").value], note: "corrected in the web page" }, $("#facts-msg")));
  $("#tell-btn").addEventListener("click", () => tell(false));
  $("#dry-btn").addEventListener("click", () => tell(true));
  $("#plan-btn").addEventListener("click", () => plan("task"));
  $("#goal-btn").addEventListener("click", () => plan("goal"));
  $("#run-btn").addEventListener("click", runPlan);
  $("#check-btn").addEventListener("click", () => submitChange(true));
  $("#change-form").addEventListener("submit", (e) => { e.preventDefault(); submitChange(false); });
  makeGraph();
  await refresh();
  document.body.dataset.ready = "1";
  follow();
}

start().catch((e) => outcome(el("div", { class: "issues" }, "cannot reach the API: " + e.message)));
