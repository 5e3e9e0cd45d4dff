// The conversation: the transcript model of the HTML export (messages, thoughts, plans, tool
// calls, permissions, terminals, turns ...), each item linking to its first frame. Items are
// put in the page a batch at a time as it is scrolled, so the work grows with what is shown.
import { api } from "../api.js";
import { el } from "../dom.js";
import { counted, duration } from "../format.js";
import { listNav } from "../nav.js";
import { setHash, connectionId } from "../state.js";
import { showFrame } from "./detail.js";

const BATCH = 500;
const WHO = { user: "User", agent: "Agent", thought: "Thought", session: "Session message" };

function go(seq) {
  return seq ? el("span", { class: "link go", "data-seq": seq, on: { click: (event) => { event.stopPropagation(); setHash({ view: "timeline", f: seq }); } } }, "frame " + seq) : null;
}
// A box: its heading line (with the frame link at its end, inside the box) and its body.
function box(cls, who, seq, ...body) {
  return el("div", { class: "item " + cls, "data-seq": seq || null, "aria-selected": "false" },
    el("div", { class: "who" }, el("span", {}, who), go(seq)), ...body);
}
function line(cls, seq, text) {
  return el("div", { class: "item line " + cls, "data-seq": seq || null, "aria-selected": "false" }, el("div", { class: "who" }, el("span", {}, text), go(seq)));
}

export function item(x) {
  switch (x.type) {
    case "Message": return box(x.role, WHO[x.role] || x.role, x.seq, el("div", { class: "body" }, x.text));
    case "ToolCall": return box("tool", `Tool call: ${x.title} — ${x.status || "no status"}${x.kind ? " (" + x.kind + ")" : ""}`, x.seq,
      x.locations && x.locations.length ? el("div", { class: "mono" }, "at " + x.locations.map((l) => l.path + (l.line ? ":" + l.line : "")).join(", ")) : null,
      ...x.content.map((c) => el("pre", {}, c)));
    case "Plan": return box("plan", "Plan", x.seq, el("ul", {}, ...x.entries.map((e) => el("li", {}, e))));
    case "Permission": return box("permission", "Permission asked", x.seq,
      el("div", { class: "body" }, `${x.title || "Permission"}\nOptions: ${x.options}\nAnswer: ${x.answer}${x.wait_ns !== null ? " after " + duration(x.wait_ns) : ""}`),
      x.answered_seq ? el("div", { class: "fix" }, "answered in ", go(x.answered_seq)) : null);
    case "Terminal": return box("tool", "Terminal " + x.terminal_id, x.seq, el("pre", {}, x.output));
    case "Compaction": return box("thought", `Compaction ${x.compaction_id}: ${x.status || "?"}`, x.seq, el("div", { class: "body" }, x.text));
    case "Subagent": return box("tool", "Subagent " + x.session_id, x.seq, el("pre", {}, JSON.stringify(x.fields, null, 2)));
    case "UnknownUpdate": return box("thought", `Update ${x.kind} (kept verbatim)`, x.seq, el("pre", {}, JSON.stringify(x.update, null, 2)));
    case "TurnMark": {
      const t = x.detail || {};
      if (!x.end) return line("turn", x.seq, `Turn ${x.turn}`);
      const took = t.end_ns && t.started_ns ? duration(t.end_ns - t.started_ns) : "";
      return line("turn", x.seq, `Turn ${x.turn} ended: ${t.stop_reason || t.status || ""} after ${took}${x.usage ? " · usage " + x.usage : ""}`);
    }
    case "Notice": return box("notice", `Notice (${x.severity || "info"})`, x.seq, el("div", { class: "body" }, `${x.title || ""}: ${x.description || ""}`));
    case "StateChange": return line("mono", x.seq, `state: ${x.state || "?"}${x.stop_reason ? " (" + x.stop_reason + ")" : ""}`);
    case "Call": return line("mono", x.seq, `${x.caller}: ${x.method} ${x.error ? "error" : x.notification ? "sent" : "answered"}${x.latency_ns !== null ? " in " + duration(x.latency_ns) : ""}`);
    case "Malformed": return box("malformed", "Not JSON-RPC", x.seq, el("div", { class: "body" }, x.reason));
    default: return line("mono", x.seq, x.type);
  }
}

function entry(x) {
  if (x.type === "Session") return el("h2", {}, "Session ", el("code", {}, x.session_id), x.usage ? " · " + x.usage : "");
  return item(x);
}

export function conversationView(root) {
  const cid = connectionId();
  const status = el("p", { id: "conversation-status" });
  const host = el("div", { class: "conv", id: "conversation" });
  const sentinel = el("div", { class: "sentinel" });
  root.append(el("div", { class: "conv" }, status), host, sentinel);
  const nav = listNav(host, ".item");
  let alive = true, timer = null, placed = 0, total = 0, complete = false, busy = false;
  // The next page of entries from the server, after those in the page.
  async function more() {
    if (busy || !alive || (complete && placed >= total)) return;
    busy = true;
    try {
      const c = await api(`connections/${cid}/conversation`, { offset: placed, limit: BATCH });
      if (!alive) return;
      show(c);
      host.append(...c.entries.map(entry));
      placed += c.entries.length;
      nav.refresh();
    } finally { busy = false; }
    if (!complete) { clearTimeout(timer); timer = setTimeout(reload, 400); }
  }
  function show(c) {
    total = c.total; complete = c.complete;
    status.textContent = `Agent: ${c.agent} · Client: ${c.client} · protocol ${c.protocol_version ?? "?"} · ${counted(c.frames, "frame")}` +
      (complete ? "" : ` · reading… (${counted(c.applied_seq, "frame")} so far)`);
  }
  // While a long recording is still being read, only how far; then everything in the page
  // again (the end of what was read may have grown). A live connection reloads likewise.
  async function reload() {
    timer = null;
    if (busy || !alive) return;
    busy = true;
    try {
      let c = await api(`connections/${cid}/conversation`, { offset: 0, limit: 0 });
      if (!alive) return;
      if (c.complete) {
        c = await api(`connections/${cid}/conversation`, { offset: 0, limit: Math.max(placed, BATCH) });
        if (!alive) return;
        host.replaceChildren(...c.entries.map(entry));
        placed = c.entries.length;
        nav.refresh();
      }
      show(c);
    } finally { busy = false; }
    if (!complete) timer = setTimeout(reload, 400);
  }
  const watcher = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) more();
  }, { root, rootMargin: "800px" });
  watcher.observe(sentinel);
  more();
  return {
    leave() { alive = false; clearTimeout(timer); watcher.disconnect(); },
    frame(frame) { if (frame.connection_id === cid && timer === null) timer = setTimeout(reload, 500); },
    focus(seq) { showFrame(cid, seq); },
    step(delta) { nav.step(delta); const last = host.lastElementChild; if (last && last.getAttribute("aria-selected") === "true") more(); },
    activate() { const node = host.querySelector('.item[aria-selected="true"]'); if (node && node.dataset.seq) setHash({ f: Number(node.dataset.seq) }); },
  };
}
