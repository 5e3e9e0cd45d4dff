// acp-proxy inspector: the page. Plain modern JavaScript, no framework, no build step.
//
// Rules:
// - Recorded text is data: it reaches the DOM only through text nodes (el() children,
//   textContent) and attributes set with setAttribute on our own element names; never
//   innerHTML, never a URL built from recorded text.
// - The URL's hash holds the state (view, connection, frame, filters, diff sides), so a link
//   opens the same thing; every request URL is relative, so it keeps the token.
// - The timeline is virtual: only the rows on screen exist in the DOM, fetched by page from
//   the server's row index; a million frames scroll without being loaded.
// - One EventSource at a time; the browser resumes it with Last-Event-ID after a drop.
"use strict";

const ROW_H = 22;
const REFRESH_MS = 200;  // a live view reads new rows at most this often
const PAGE = 100;
const $ = (selector) => document.querySelector(selector);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "on") {
      for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    } else if (name === "class") {
      node.className = value;
    } else {
      node.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => query.append(k, x));
    else if (v !== null && v !== undefined && v !== "") query.set(k, v);
  }
  const url = "api/" + path + (query.toString() ? "?" + query : "");
  const response = await fetch(url, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// ---------------------------------------------------------------------------- formatting

function duration(ns) {
  if (ns === null || ns === undefined) return "";
  if (ns < 1e6) return (ns / 1e3).toFixed(0) + " µs";
  if (ns < 1e9) { const ms = ns / 1e6; return (ms < 100 ? ms.toFixed(1) : ms.toFixed(0)) + " ms"; }
  return (ns / 1e9).toFixed(2) + " s";
}
function ms(value) { return value === null || value === undefined ? "" : duration(value * 1e6); }
function bytes(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(1) + " MB"; }
function wall(ns) { return ns ? new Date(ns / 1e6).toISOString().replace("T", " ").slice(0, 19) : ""; }
const DIR = { c2a: "c→a", a2c: "a→c", stderr: "err" };
function peer(info, argv) {
  if (info && typeof info === "object") {
    const name = info.title || info.name;
    if (name) return info.version ? name + " " + info.version : String(name);
  }
  return argv && argv.length ? argv.join(" ") : "unnamed";
}
function escaped(segments) {
  return segments.map(([text, esc]) => esc ? el("span", { class: "esc" }, text) : text);
}

// ---------------------------------------------------------------------------- state

const state = {
  params: new URLSearchParams(), info: null, connections: [], overview: null,
  source: null, sourceKey: null, lastFrameId: 0,
};
window.acpSeen = {};  // seq -> ms since epoch when the page first showed it (tests read it)

function hashParams() { return new URLSearchParams(location.hash.slice(1)); }
function setHash(changes, replace) {
  const params = hashParams();
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") params.delete(k); else params.set(k, v);
  }
  const hash = "#" + params.toString();
  if (hash === location.hash) return;
  if (replace) history.replaceState(null, "", hash); else location.hash = hash;
  if (replace) route();
}
const FILTERS = ["direction", "kind", "method", "session", "text"];
function filters() {
  const out = {};
  for (const name of FILTERS) if (state.params.get(name)) out[name] = state.params.get(name);
  return out;
}
function connectionId() { const c = state.params.get("c"); return c ? Number(c) : null; }

// ---------------------------------------------------------------------------- routing

let current = null;  // the view object on screen
let routed = "";

async function route() {
  state.params = hashParams();
  let view = state.params.get("view") || (connectionId() ? "timeline" : "recordings");
  const cid = connectionId();
  if (!cid && !["recordings", "diff"].includes(view)) view = "recordings";
  for (const tab of document.querySelectorAll("#tabs a")) {
    tab.classList.toggle("on", tab.dataset.view === view);
    const target = new URLSearchParams(state.params);
    target.set("view", tab.dataset.view);
    target.delete("f");
    tab.setAttribute("href", "#" + target.toString());
  }
  $("#filters").hidden = view !== "timeline";
  for (const name of FILTERS) {
    const input = $("#filters").elements[name];
    if (document.activeElement !== input) input.value = state.params.get(name) || "";
  }
  if (cid && (!state.overview || state.overview.id !== cid)) {
    state.overview = null;
    try { state.overview = await api("connections/" + cid); } catch (e) { state.overview = null; }
  }
  showCurrent();
  openStream(cid);
  const key = JSON.stringify([view, cid, filters(), state.params.get("a"), state.params.get("b")]);
  if (key !== routed || !current) {
    routed = key;
    if (current && current.leave) current.leave();
    $("#view").replaceChildren();
    $("#view").className = "";
    current = VIEWS[view]();
  }
  const frame = state.params.get("f");
  if (frame && current.focus) current.focus(Number(frame));
  if (!frame) $("#detail").hidden = true;
}

function showCurrent() {
  const o = state.overview;
  $("#current").textContent = o ? `#${o.id} ${o.label || ""} ${peer(o.agent_info, o.argv)}` : "";
  $("#live").hidden = !(o && o.status === "running");
}

// Findings of the rule engine, checked in the background by the server: polled until the
// connection has ended and been checked to its end.
const findings = { cid: null, bySeq: new Map(), count: 0, timer: null, listeners: new Set() };
function followFindings(cid) {
  if (findings.cid === cid) return;
  clearTimeout(findings.timer);
  Object.assign(findings, { cid, bySeq: new Map(), count: 0 });
  const poll = async () => {
    if (findings.cid !== cid) return;
    let got;
    try { got = await api(`connections/${cid}/findings`, { since: findings.count }); } catch (e) { return; }
    if (findings.cid !== cid) return;
    findings.count += got.findings.length;
    for (const f of got.findings) {
      if (f.seq === null) continue;
      if (!findings.bySeq.has(f.seq)) findings.bySeq.set(f.seq, []);
      findings.bySeq.get(f.seq).push(f);
    }
    if (got.findings.length) findings.listeners.forEach((fn) => fn());
    if (!got.finished) findings.timer = setTimeout(poll, got.complete ? 1000 : 300);
  };
  poll();
}
async function loadSessions(cid) {
  try {
    const found = await api(`connections/${cid}/sessions`);
    $("#sessions").replaceChildren(...found.map((s) => el("option", { value: s })));
  } catch (e) { /* the list stays empty */ }
}

// ---------------------------------------------------------------------------- live events

let refreshListTimer = null;
function openStream(cid) {
  const key = String(cid || "");
  if (state.source && state.sourceKey === key) return;
  if (state.source) state.source.close();
  const params = new URLSearchParams();
  if (cid) {
    params.set("connection", cid);
    params.set("after", state.overview ? state.overview.last_frame_id : 0);
    params.set("frames", "0");  // only how far it got: the views read what they show
  }
  state.sourceKey = key;
  state.source = new EventSource("api/events?" + params);
  state.source.addEventListener("progress", (event) => {
    const progress = JSON.parse(event.data);
    state.lastFrameId = Number(event.lastEventId);
    if (current && current.frame) current.frame({ connection_id: cid, seq: progress.seq });
  });
  state.source.addEventListener("connections", () => {
    clearTimeout(refreshListTimer);
    refreshListTimer = setTimeout(async () => {
      if (current && current.connections) current.connections();
      const cid2 = connectionId();
      if (cid2) {
        try { state.overview = await api("connections/" + cid2); showCurrent(); } catch (e) { /* gone */ }
      }
    }, 100);
  });
}

// ---------------------------------------------------------------------------- recordings

function recordingsView() {
  const root = $("#view");
  const search = el("input", { type: "search", placeholder: "filter: label, agent, client, status", size: 40 });
  const body = el("tbody");
  const table = el("table", { class: "list", id: "recordings" },
    el("thead", {}, el("tr", {},
      ["id", "label", "agent", "client", "protocol", "status", "started", "turns", "duration",
       "frames", "errors", "findings", "lost"].map((h) => el("th", {}, h)))), body);
  root.append(el("div", { class: "toolbar" }, search, el("span", { id: "db" }, state.info ? state.info.db : "")), table);
  let rows = [];
  function render() {
    const q = search.value.toLowerCase();
    body.replaceChildren(...rows.filter((c) => {
      const text = [c.label, peer(c.agent_info, c.argv), peer(c.client_info), c.status, String(c.id)].join(" ").toLowerCase();
      return !q || text.includes(q);
    }).map((c) => {
      const live = c.status === "running";
      const ended = c.exit_signal !== null ? "signal " + c.exit_signal : c.exit_code !== null ? "exit " + c.exit_code : c.status;
      const span = c.ended_ns ? (c.ended_ns - c.started_ns) : (c.last_mono_ns && c.first_mono_ns ? c.last_mono_ns - c.first_mono_ns : null);
      return el("tr", { "data-id": c.id, on: { click: () => setHash({ view: "timeline", c: c.id, f: null }) } },
        el("td", { class: "num" }, c.id), el("td", {}, c.label || ""),
        el("td", {}, peer(c.agent_info, c.argv)), el("td", {}, peer(c.client_info)),
        el("td", {}, c.protocol_version ?? ""),
        el("td", {}, live ? el("span", { class: "badge live" }, "live") : ended),
        el("td", {}, wall(c.started_ns)), el("td", { class: "num" }, c.turns),
        el("td", { class: "num" }, duration(span)), el("td", { class: "num" }, c.frames),
        el("td", { class: "num" }, c.errors ? el("span", { class: "badge error" }, c.errors) : 0),
        el("td", { class: "num" }, c.stored_findings || ""),
        el("td", { class: "num" }, c.frames_lost ? el("span", { class: "badge bad" }, c.frames_lost) : ""));
    }));
  }
  async function load() {
    const found = await api("connections");
    rows = found.connections.slice().reverse();
    render();
  }
  search.addEventListener("input", render);
  load();
  return { connections: load };
}

// ---------------------------------------------------------------------------- timeline

function timelineView() {
  const cid = connectionId();
  const root = $("#view");
  root.className = "fill";
  const head = el("div", { class: "head" },
    ["seq", "time", "dir", "kind", "method", "id", "size", "latency", "what"].map((h) =>
      el("div", { class: "cell " + ({ seq: "seq", time: "time", dir: "dir", kind: "kind", method: "method", id: "id", size: "size", latency: "lat", what: "what" })[h] }, h)));
  const spacer = el("div", { id: "spacer" });
  const scroller = el("div", { id: "rows" }, spacer);
  root.append(head, scroller);
  const where = filters();
  const pages = new Map();  // page number -> rows
  const loading = new Set();
  const expanded = new Map();  // row index -> {row, subs: Map}
  let total = 0, caughtUp = false, complete = false, selected = null, follow = true;
  let first = state.overview ? state.overview.first_mono_ns : null;
  let alive = true, refreshing = false, again = false;

  function visualTotal() { let n = total; for (const e of expanded.values()) n += e.row.count; return n; }
  function locate(v) {
    let extra = 0;
    for (const r of [...expanded.keys()].sort((a, b) => a - b)) {
      const at = r + extra;
      if (v < at) return { row: v - extra };
      if (v === at) return { row: r };
      const count = expanded.get(r).row.count;
      if (v <= at + count) return { row: r, sub: v - at - 1 };
      extra += count;
    }
    return { row: v - extra };
  }
  function visualOf(row) {
    let extra = 0;
    for (const r of expanded.keys()) if (r < row) extra += expanded.get(r).row.count;
    return row + extra;
  }
  function rowAt(index) {
    const page = pages.get(Math.floor(index / PAGE));
    return page ? page[index % PAGE] : undefined;
  }
  async function loadPage(number) {
    if (loading.has(number)) return;
    loading.add(number);
    try {
      const got = await api(`connections/${cid}/rows`, { ...where, offset: number * PAGE, limit: PAGE });
      if (!alive) return;
      accept(got);
      const list = [];
      for (const row of got.rows) list[row.index - number * PAGE] = row;
      pages.set(number, list);
    } finally { loading.delete(number); }
    render();
  }
  function accept(got) {
    const before = total;
    total = got.total; caughtUp = got.caught_up; complete = got.complete;
    if (total !== before) {
      // the last page known may have grown (a run, or new rows): read it again
      const last = Math.floor(Math.max(0, before - 1) / PAGE);
      for (const n of pages.keys()) if (n >= last) pages.delete(n);
    }
    const o = state.overview;
    $("#count").textContent = `${total.toLocaleString()} rows` + (caughtUp ? "" : " (indexing…)");
    if (o && first === null) first = o.first_mono_ns;
  }
  async function loadSubs(r, start) {
    const e = expanded.get(r);
    if (!e || e.loading.has(start)) return;
    e.loading.add(start);
    const got = await api(`connections/${cid}/frames`, { ...where, first: e.row.first_seq, last: e.row.last_seq, offset: start, limit: PAGE });
    got.frames.forEach((f, i) => e.subs.set(start + i, f));
    render();
  }
  function cells(frame, what, latency, extraClass) {
    const t = first !== null && first !== undefined ? ((frame.mono_ns - first) / 1e6).toFixed(1) : "";
    const bad = frame.bad_json || frame.bad_utf8 || frame.not_jsonrpc;
    const cls = ["row", "dir-" + frame.direction, extraClass || "",
      frame.kind === "error" ? "is-error" : "", bad ? "bad" : "", frame.seq === selected ? "selected" : ""].join(" ");
    return [cls, [
      el("div", { class: "cell seq" }, frame.seq), el("div", { class: "cell time" }, t),
      el("div", { class: "cell dir" }, DIR[frame.direction] || frame.direction),
      el("div", { class: "cell kind" }, frame.kind), el("div", { class: "cell method" }, frame.method || ""),
      el("div", { class: "cell id" }, frame.rpc_id ?? ""), el("div", { class: "cell size" }, bytes(frame.size)),
      el("div", { class: "cell lat" }, latency === undefined ? "" : duration(latency)),
      el("div", { class: "cell what" }, what)]];
  }
  function render() {
    if (!alive) return;
    const count = visualTotal();
    spacer.style.height = count * ROW_H + "px";
    const top = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - 5);
    const shown = Math.ceil(scroller.clientHeight / ROW_H) + 10;
    const nodes = [];
    const now = Date.now();
    for (let v = top; v < Math.min(count, top + shown); v++) {
      const at = locate(v);
      const row = rowAt(at.row);
      if (!row) { loadPage(Math.floor(at.row / PAGE)); continue; }
      let node;
      if (at.sub === undefined) {
        const open = expanded.has(at.row);
        const what = row.count > 1
          ? [el("span", { class: "toggle", "data-run": row.first_seq }, (open ? "▾ " : "▸ ") + row.count + " chunks"), row.frame.update_kind + ": ", row.text || ""]
          : [row.frame.update_kind ? row.frame.update_kind + ": " : "", row.frame.preview || ""];
        const [cls, parts] = cells(row.frame, what, row.latency_ns);
        const marks = [];
        for (let s = row.first_seq; s <= row.last_seq && s - row.first_seq < 1000; s++) marks.push(...(findings.bySeq.get(s) || []));
        node = el("div", { class: cls + (marks.length ? " has-finding" : "") + (row.count > 1 ? " run" : ""),
          "data-seq": row.frame.seq, "data-last": row.last_seq, "data-count": row.count,
          title: marks.length ? marks.map((f) => `${f.rule} (${f.severity}): ${f.message}`).join("\n") : null }, parts);
        node.addEventListener("click", (event) => {
          if (row.count > 1 && (event.target.classList.contains("toggle") || !open)) {
            if (open) expanded.delete(at.row); else expanded.set(at.row, { row, subs: new Map(), loading: new Set() });
            render();
            if (!event.target.classList.contains("toggle")) select(row.frame.seq);
            return;
          }
          select(row.frame.seq);
        });
        for (let s = row.first_seq; s <= row.last_seq; s++) if (!(s in window.acpSeen)) window.acpSeen[s] = now;
      } else {
        const e = expanded.get(at.row);
        const frame = e.subs.get(at.sub);
        if (!frame) { loadSubs(at.row, at.sub - (at.sub % PAGE)); continue; }
        const [cls, parts] = cells(frame, [frame.update_kind + ": ", frame.preview || ""], frame.latency_ns ?? undefined, "sub");
        node = el("div", { class: cls, "data-seq": frame.seq }, parts);
        node.addEventListener("click", () => select(frame.seq));
      }
      node.style.top = v * ROW_H + "px";
      nodes.push(node);
    }
    spacer.replaceChildren(...nodes);
    if (!caughtUp && !refreshing) refresh();
  }
  function select(seq) {
    selected = seq;
    setHash({ f: seq });
  }
  let lastRefresh = 0;
  async function refresh() {
    // Brings the end of the index up to date (new frames, or a large recording still being
    // indexed), at most every REFRESH_MS while frames keep coming.
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      do {
        again = false;
        const wait = lastRefresh + REFRESH_MS - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        lastRefresh = Date.now();
        const last = Math.max(0, total - 1);
        const got = await api(`connections/${cid}/rows`, { ...where, offset: last - (last % PAGE), limit: PAGE, scan: caughtUp ? "" : "1" });
        if (!alive) return;
        const number = Math.floor(Math.max(0, got.offset) / PAGE);
        accept(got);
        const list = [];
        for (const row of got.rows) list[row.index - number * PAGE] = row;
        pages.set(number, list);
        if (follow) scroller.scrollTop = scroller.scrollHeight;
        render();
      } while (again && alive);
    } finally { refreshing = false; }
  }
  scroller.addEventListener("scroll", () => {
    follow = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW_H;
    render();
  });
  const start = async () => {
    const got = await api(`connections/${cid}/rows`, { ...where, offset: 0, limit: PAGE });
    if (!alive) return;
    accept(got);
    const list = [];
    for (const row of got.rows) list[row.index] = row;
    pages.set(0, list);
    follow = state.overview && state.overview.status === "running" && !state.params.get("f");
    if (follow) refresh();
    render();
    followFindings(cid);
    findings.listeners.add(render);
    loadSessions(cid);
    const f = state.params.get("f");
    if (f) view.focus(Number(f));
  };
  const view = {
    leave() { alive = false; findings.listeners.delete(render); },
    frame(frame) { if (frame.connection_id === cid) refresh(); },
    async focus(seq) {
      selected = seq;
      showFrame(cid, seq);
      const found = await api(`connections/${cid}/locate`, { ...where, seq });
      if (!alive) return;
      accept({ total: Math.max(total, found.total), caught_up: found.caught_up && caughtUp, complete });
      if (found.index === null) { render(); return; }
      const v = visualOf(found.index);
      if (v * ROW_H < scroller.scrollTop || v * ROW_H > scroller.scrollTop + scroller.clientHeight - ROW_H) {
        follow = false;
        spacer.style.height = visualTotal() * ROW_H + "px";
        scroller.scrollTop = Math.max(0, v * ROW_H - scroller.clientHeight / 3);
      }
      render();
    },
  };
  start();
  return view;
}

// ---------------------------------------------------------------------------- frame detail

function tree(value, descriptions) {
  function node(key, v, path, depth) {
    const label = key === null ? [] : [el("span", { class: "key" + (descriptions.has(path) ? " described" : ""), title: descriptions.get(path) || null }, key), ": "];
    if (v !== null && typeof v === "object") {
      const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
      const summary = el("summary", {}, ...label, Array.isArray(v) ? `[${entries.length}]` : `{${entries.length}}`);
      const box = el("details", { "data-path": path }, summary,
        ...entries.map(([k, x]) => node(Array.isArray(v) ? String(k) : k, x, Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`, depth + 1)));
      if (depth < 3) box.open = true;
      return box;
    }
    const cls = typeof v === "string" ? "str" : typeof v === "number" ? "num" : "lit";
    const shown = typeof v === "string" ? JSON.stringify(v) : String(v);
    return el("div", { class: "leaf", "data-path": path }, ...label, el("span", { class: cls }, shown));
  }
  return el("div", { class: "tree" }, node(null, value, "$", 0));
}

async function showFrame(cid, seq) {
  const pane = $("#detail");
  pane.hidden = false;
  pane.replaceChildren(el("p", {}, "loading frame " + seq + "…"));
  let d;
  try { d = await api(`connections/${cid}/frames/${seq}`); } catch (e) { pane.replaceChildren(el("p", {}, String(e.message))); return; }
  const f = d.frame;
  const descriptions = new Map(d.descriptions);
  const close = el("button", { class: "close", title: "close", on: { click: () => setHash({ f: null }) } }, "×");
  const parts = [close, el("h2", {}, `Frame ${f.seq} · ${DIR[f.direction] || f.direction} · ${f.kind}${f.method ? " · " + f.method : ""}`)];
  parts.push(el("div", { class: "mono" }, `${wall(f.wall_ns)} · ${bytes(f.size)}${f.rpc_id !== null ? " · id " + f.rpc_id : ""}${f.session_id ? " · session " + f.session_id : ""}`));
  if (d.pair) {
    const p = d.pair;
    parts.push(el("h3", {}, f.kind === "request" ? "Its response" : "Its request"),
      el("div", { id: "pair" }, el("span", { class: "link", "data-seq": p.seq, on: { click: () => setHash({ f: p.seq }) } }, `frame ${p.seq}`),
        ` ${p.kind} ${p.method || ""} · latency ${duration(d.latency_ns)}`));
  } else if (f.kind === "request") {
    parts.push(el("h3", {}, "Its response"), el("div", { id: "pair" }, "not answered (yet)"));
  }
  const findings = [...d.findings, ...d.stored_findings.map((s) => ({ ...s, fix: null, stored: true }))];
  if (findings.length) {
    parts.push(el("h3", {}, "Findings"), ...findings.map((x) => el("div", { class: "finding " + x.severity },
      el("b", {}, x.rule), " ", el("span", { class: "badge " + x.severity }, x.severity), " ", x.message,
      x.fix ? el("div", { class: "fix" }, "Fix: " + x.fix) : null, x.source ? el("div", { class: "fix" }, "Spec: " + x.source) : null)));
  }
  if (d.json !== null) parts.push(el("h3", {}, "JSON"), tree(d.json, descriptions));
  if (d.descriptions.length) {
    parts.push(el("h3", {}, "Fields (official JSON Schema)"), el("table", { class: "fields" },
      ...d.descriptions.map(([path, text]) => el("tr", {}, el("td", {}, path), el("td", {}, text)))));
  } else if (!d.schemas && d.json !== null) {
    parts.push(el("p", { class: "fix" }, "Field descriptions need the schemas: acp-proxy schemas fetch"));
  }
  parts.push(el("h3", {}, "Exact bytes"), el("pre", { class: "raw", id: "raw" }, escaped(d.segments)));
  if (d.truncated) parts.push(el("p", {}, `… ${d.truncated.toLocaleString()} more bytes`));
  parts.push(el("p", {}, el("a", { class: "link", href: `api/connections/${cid}/frames/${seq}/raw`, download: "" }, "download the bytes")));
  pane.replaceChildren(...parts);
}

// ---------------------------------------------------------------------------- sequence

const COLOURS = ["#2f6fde", "#d9480f", "#1a9b50", "#9b1ab0", "#c58a00", "#0c8599", "#e03131", "#5c7cfa", "#66a80f", "#ae3ec9"];
function sequenceView() {
  const cid = connectionId();
  const root = $("#view");
  const W = 760, CLIENT = 170, AGENT = 590, STEP = 26, GAP = 22, GAP_NS = 1e9;
  const host = el("div", { id: "sequence" });
  const more = el("button", { class: "more" }, "more");
  root.append(el("div", { class: "toolbar" }, "client (left) ⇄ agent (right); a request and its response share a colour; dashed: notifications; gaps over 1 s compressed"), host, more);
  let after = 0, lastNs = null, alive = true, busy = false, done = false, pending = null;
  function colourOf(seq) { return COLOURS[seq % COLOURS.length]; }
  async function load() {
    if (busy || !alive) return;
    busy = true;
    try {
      const got = await api(`connections/${cid}/sequence`, { after, limit: 400 });
      if (!got.messages.length) { done = true; more.hidden = state.overview && state.overview.status !== "running"; return; }
      let y = 18;
      const g = [];
      for (const m of got.messages) {
        if (lastNs !== null && m.mono_ns - lastNs > GAP_NS) {
          g.push(svg("g", { class: "gap" }));
          const band = g[g.length - 1];
          band.append(svg("rect", { x: 0, y: y - 12, width: W, height: GAP - 4 }), svg("text", { x: W / 2 - 40, y: y + 1 }, "… " + duration(m.mono_ns - lastNs) + " …"));
          y += GAP;
        }
        lastNs = m.mono_ns;
        const c2a = m.direction === "c2a";
        const x1 = c2a ? CLIENT : AGENT, x2 = c2a ? AGENT : CLIENT;
        const note = m.kind === "notification";
        const answer = m.kind === "response" || m.kind === "error";
        const colour = note ? "#999" : answer ? colourOf(m.request_seq ?? m.seq) : colourOf(m.seq);
        const label = (m.direction === "a2c" && m.kind === "request" ? "↩ " : "") +
          (answer ? (m.kind === "error" ? "error " : "result ") + (m.method || "") : (m.method || m.kind)) +
          (m.rpc_id !== null && m.rpc_id !== undefined ? ` #${m.rpc_id}` : "") + (m.update_kind ? " " + m.update_kind : "");
        const group = svg("g", { class: "msg" + (note ? " note" : "") + (answer ? " answer" : ""), "data-seq": m.seq, "data-kind": m.kind });
        group.append(svg("text", { x: 8, y: y + 4, fill: "#888" }, String(m.seq)),
          svg("line", { class: "arrow", x1, y1: y, x2: x2 + (c2a ? -6 : 6), y2: y, stroke: colour, "stroke-width": 2, "marker-end": "url(#head)" }),
          svg("polygon", { points: c2a ? `${x2},${y} ${x2 - 8},${y - 4} ${x2 - 8},${y + 4}` : `${x2},${y} ${x2 + 8},${y - 4} ${x2 + 8},${y + 4}`, fill: colour }),
          svg("text", { x: (CLIENT + AGENT) / 2, y: y - 4, "text-anchor": "middle", fill: colour }, label.slice(0, 70)));
        group.addEventListener("click", () => setHash({ f: m.seq }));
        g.push(group);
        y += STEP;
        after = m.seq;
      }
      const height = y;
      const pic = svg("svg", { class: "seq", width: W, height, viewBox: `0 0 ${W} ${height}` });
      pic.append(svg("line", { class: "lane", x1: CLIENT, y1: 0, x2: CLIENT, y2: height }), svg("line", { class: "lane", x1: AGENT, y1: 0, x2: AGENT, y2: height }));
      if (!host.childElementCount) {
        const top = svg("svg", { class: "seq", width: W, height: 24 });
        top.append(svg("text", { x: CLIENT - 20, y: 16, "font-weight": 700 }, "client"), svg("text", { x: AGENT - 20, y: 16, "font-weight": 700 }, "agent"));
        host.append(top);
      }
      g.forEach((x) => pic.append(x));
      host.append(pic);
      if (got.messages.length < 400) done = true;
    } finally { busy = false; }
  }
  more.addEventListener("click", load);
  root.addEventListener("scroll", () => { if (!done && root.scrollTop + root.clientHeight > root.scrollHeight - 200) load(); });
  load();
  return {
    leave() { alive = false; },
    frame(frame) {
      if (frame.connection_id !== cid || pending) return;
      pending = setTimeout(() => { pending = null; done = false; load(); }, 300);
    },
    focus(seq) { showFrame(cid, seq); },
  };
}

// ---------------------------------------------------------------------------- conversation

function conversationView() {
  const cid = connectionId();
  const root = $("#view");
  const box = el("div", { class: "conv", id: "conversation" });
  root.append(box);
  let alive = true, timer = null;
  function go(seq) { return seq ? el("span", { class: "link go", "data-seq": seq, on: { click: () => setHash({ view: "timeline", f: seq }) } }, "frame " + seq) : null; }
  function item(x) {
    const link = go(x.seq);
    switch (x.type) {
      case "Message": return el("div", { class: "item " + x.role }, link, el("div", { class: "who" }, { user: "User", agent: "Agent", thought: "Thought", session: "Session message" }[x.role] || x.role), el("div", { class: "body" }, x.text));
      case "ToolCall": return el("div", { class: "item tool" }, link, el("div", { class: "who" }, `Tool call: ${x.title} — ${x.status || "no status"}${x.kind ? " (" + x.kind + ")" : ""}`),
        x.locations && x.locations.length ? el("div", { class: "mono" }, "at " + x.locations.map((l) => l.path + (l.line ? ":" + l.line : "")).join(", ")) : null,
        ...x.content.map((c) => el("pre", {}, c)));
      case "Plan": return el("div", { class: "item plan" }, link, el("div", { class: "who" }, "Plan"), el("ul", {}, ...x.entries.map((e) => el("li", {}, e))));
      case "Permission": return el("div", { class: "item permission" }, link, el("div", { class: "who" }, "Permission asked"),
        el("div", { class: "body" }, `${x.title || "Permission"}\nOptions: ${x.options}\nAnswer: ${x.answer}${x.wait_ns !== null ? " after " + duration(x.wait_ns) : ""}`), go(x.answered_seq));
      case "Terminal": return el("div", { class: "item tool" }, link, el("div", { class: "who" }, "Terminal " + x.terminal_id), el("pre", {}, x.output));
      case "Compaction": return el("div", { class: "item thought" }, link, el("div", { class: "who" }, `Compaction ${x.compaction_id}: ${x.status || "?"}`), el("div", { class: "body" }, x.text));
      case "Subagent": return el("div", { class: "item tool" }, link, el("div", { class: "who" }, "Subagent " + x.session_id), el("pre", {}, JSON.stringify(x.fields, null, 2)));
      case "UnknownUpdate": return el("div", { class: "item thought" }, link, el("div", { class: "who" }, `Update ${x.kind} (kept verbatim)`), el("pre", {}, JSON.stringify(x.update, null, 2)));
      case "TurnMark": {
        const t = x.detail || {};
        if (!x.end) return el("div", { class: "turn" }, link, `Turn ${x.turn}`);
        const took = t.end_ns && t.started_ns ? duration(t.end_ns - t.started_ns) : "";
        return el("div", { class: "turn" }, link, `Turn ${x.turn} ended: ${t.stop_reason || t.status || ""} after ${took}`, x.usage ? ` · usage ${x.usage}` : "");
      }
      case "Notice": return el("div", { class: "item notice" }, link, el("div", { class: "who" }, `Notice (${x.severity || "info"})`), el("div", { class: "body" }, `${x.title || ""}: ${x.description || ""}`));
      case "StateChange": return el("div", { class: "mono" }, link, `state: ${x.state || "?"}${x.stop_reason ? " (" + x.stop_reason + ")" : ""}`);
      case "Call": return el("div", { class: "mono" }, link, `${x.caller}: ${x.method} ${x.error ? "error" : x.notification ? "sent" : "answered"}${x.latency_ns !== null ? " in " + duration(x.latency_ns) : ""}`);
      case "Malformed": return el("div", { class: "item malformed" }, link, el("div", { class: "who" }, "Not JSON-RPC"), el("div", { class: "body" }, x.reason));
      default: return el("div", {}, x.type);
    }
  }
  async function load() {
    const c = await api(`connections/${cid}/conversation`);
    if (!alive) return;
    box.replaceChildren(el("p", {}, `Agent: ${c.agent} · Client: ${c.client} · protocol ${c.protocol_version ?? "?"} · ${c.frames} frames`),
      ...c.events.map(item),
      ...c.sessions.flatMap((s) => [el("h2", {}, "Session ", el("code", {}, s.session_id), s.usage ? " · " + s.usage : ""), ...s.items.map(item)]));
  }
  load();
  return {
    leave() { alive = false; },
    frame(frame) { if (frame.connection_id === cid && timer === null) timer = setTimeout(() => { timer = null; load(); }, 500); },
    focus(seq) { showFrame(cid, seq); },
  };
}

// ---------------------------------------------------------------------------- latency

function sortable(headers, rows, id) {
  // headers: [label, key, numeric]; rows: objects; cells shown by format(key, row)
  const body = el("tbody");
  let key = null, down = false;
  const table = el("table", { class: "list", id }, el("thead", {}, el("tr", {}, ...headers.map(([label, k, numeric]) =>
    el("th", { class: numeric ? "num" : "", "data-key": k, on: { click: () => { down = key === k ? !down : numeric; key = k; fill(); } } }, label)))), body);
  function fill() {
    const sorted = rows.slice();
    if (key) sorted.sort((a, b) => {
      const x = a.sort[key], y = b.sort[key];
      const r = x === y ? 0 : x === null || x === undefined ? 1 : y === null || y === undefined ? -1 : x < y ? -1 : 1;
      return down ? -r : r;
    });
    body.replaceChildren(...sorted.map((r) => el("tr", r.attrs || {}, ...headers.map(([, k, numeric]) => el("td", { class: numeric ? "num" : "" }, r.show[k])))));
  }
  fill();
  return table;
}

function latencyView() {
  const cid = connectionId();
  const root = $("#view");
  let alive = true;
  async function load() {
    const l = await api(`connections/${cid}/latency`);
    if (!alive) return;
    const methods = l.methods.map((m) => ({
      sort: m, show: { method: m.method, direction: m.direction === "c2a" ? "client → agent" : "agent → client", count: m.count,
        p50_ms: ms(m.p50_ms), p95_ms: ms(m.p95_ms), p99_ms: ms(m.p99_ms), max_ms: ms(m.max_ms), errors: m.errors, unanswered: m.unanswered },
    }));
    const turns = l.turns.map((t) => ({
      sort: t, attrs: { on: { click: () => setHash({ view: "timeline", f: t.prompt_seq }) } },
      show: { session_id: t.session_id, turn: t.turn, prompt_seq: t.prompt_seq, accepted_ms: ms(t.accepted_ms), first_text_ms: ms(t.first_text_ms),
        duration_ms: ms(t.duration_ms), tool_calls: t.tool_calls, permissions: t.permissions,
        permission_wait_ms: t.permissions ? ms(t.permission_wait_ms) : "", stop_reason: t.stop_reason || t.status },
    }));
    root.replaceChildren(
      el("h3", { class: "toolbar" }, "Per method (nearest-rank percentiles, as `acp-proxy stats --by-method`)"),
      sortable([["method", "method"], ["direction", "direction"], ["count", "count", true], ["p50", "p50_ms", true], ["p95", "p95_ms", true],
        ["p99", "p99_ms", true], ["max", "max_ms", true], ["errors", "errors", true], ["unanswered", "unanswered", true]], methods, "methods"),
      el("h3", { class: "toolbar" }, "Per prompt turn"),
      sortable([["session", "session_id"], ["turn", "turn", true], ["prompt frame", "prompt_seq", true], ["accepted", "accepted_ms", true],
        ["first text", "first_text_ms", true], ["duration", "duration_ms", true], ["tools", "tool_calls", true], ["permissions", "permissions", true],
        ["permission wait", "permission_wait_ms", true], ["stop", "stop_reason"]], turns, "turns"));
  }
  load();
  return { leave() { alive = false; }, focus(seq) { showFrame(cid, seq); } };
}

// ---------------------------------------------------------------------------- diff

function diffView() {
  const root = $("#view");
  const a = el("select", { name: "a" }), b = el("select", { name: "b" });
  const out = el("div", { id: "diff" });
  root.append(el("div", { class: "toolbar" }, "A ", a, " B ", b, el("span", { class: "fix" }, "normalized as `acp-proxy diff` does (ids, session and message ids, timestamps)")), out);
  let alive = true;
  async function options() {
    const found = await api("connections");
    for (const select of [a, b]) {
      select.replaceChildren(el("option", { value: "" }, "choose…"), ...found.connections.slice().reverse().map((c) =>
        el("option", { value: c.id }, `#${c.id} ${c.label || ""} ${peer(c.agent_info, c.argv)}`)));
    }
    a.value = state.params.get("a") || (connectionId() ? String(connectionId()) : "");
    b.value = state.params.get("b") || "";
    compare();
  }
  async function compare() {
    if (!a.value || !b.value) { out.replaceChildren(el("p", { class: "summary" }, "Choose two recordings.")); return; }
    const d = await api("diff", { a: a.value, b: b.value });
    if (!alive) return;
    const v = d.divergence;
    const parts = [el("p", { class: "summary", id: "verdict" }, d.equal ? "The same, message for message." :
      `First divergence: ${v.direction} message ${v.index + 1} (A frame ${v.a_seq ?? "none"}, B frame ${v.b_seq ?? "none"})${v.path ? " at " + v.path : ""}`)];
    for (const [direction, pairs] of Object.entries(d.directions)) {
      const [na, nb] = d.counts[direction];
      parts.push(el("h3", { class: "toolbar" }, `${direction === "c2a" ? "client → agent" : "agent → client"}: ${na} vs ${nb} messages`));
      parts.push(el("table", { class: "diff" }, ...pairs.map((p, i) => {
        const first = v && v.direction === direction && v.index === i;
        return el("tr", { class: first ? "divergence differ" : p.same ? "" : "differ", "data-index": i },
          el("td", { class: "n" }, p.a ? p.a.seq : ""), el("td", {}, el("pre", {}, p.a ? p.a.text : "(none)")),
          el("td", { class: "n" }, p.b ? p.b.seq : ""), el("td", {}, el("pre", {}, p.b ? p.b.text : "(none)")));
      })));
    }
    out.replaceChildren(...parts);
    const hit = out.querySelector("tr.divergence");
    if (hit) hit.scrollIntoView({ block: "center" });
  }
  for (const select of [a, b]) select.addEventListener("change", () => setHash({ a: a.value, b: b.value }, true));
  options();
  return { leave() { alive = false; } };
}

const VIEWS = { recordings: recordingsView, timeline: timelineView, sequence: sequenceView, conversation: conversationView, latency: latencyView, diff: diffView };

// ---------------------------------------------------------------------------- start

let filterTimer = null;
$("#filters").addEventListener("input", (event) => {
  const form = $("#filters");
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => {
    const changes = { f: null };
    for (const name of FILTERS) changes[name] = form.elements[name].value;
    setHash(changes);
  }, event.target.tagName === "SELECT" ? 0 : 250);
});
$("#filters").addEventListener("submit", (event) => event.preventDefault());
window.addEventListener("hashchange", route);

(async () => {
  state.info = await api("info");
  const initial = state.info.initial || {};
  if (!location.hash && initial.connection) history.replaceState(null, "", "#view=timeline&c=" + initial.connection);
  if (!location.hash && initial.proxy_pid) {
    // record --ui: open on the connection this proxy records, once it is there
    const pick = async () => {
      const found = await api("connections");
      const mine = found.connections.filter((c) => c.proxy_pid === initial.proxy_pid).pop();
      if (mine) setHash({ view: "timeline", c: mine.id });
      else setTimeout(pick, 200);
    };
    pick();
  }
  $("#kinds").replaceChildren(...["request", "response", "notification", "error", "stderr", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", "usage_update"].map((k) => el("option", { value: k })));
  route();
})();
