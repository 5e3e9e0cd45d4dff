// The conversation: the transcript model of the HTML export (messages, thoughts, plans, tool
// calls, permissions, terminals, turns ...), each item linking to its first frame. Items are
// put in the page a batch at a time as it is scrolled, so the work grows with what is shown.
import { api } from "../api.js";
import { el } from "../dom.js";
import { duration } from "../format.js";
import { listNav } from "../nav.js";
import { setHash, connectionId } from "../state.js";
import { showFrame } from "./detail.js";

const BATCH = 300;
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

export function conversationView(root) {
  const cid = connectionId();
  const host = el("div", { class: "conv", id: "conversation" });
  const sentinel = el("div", { class: "sentinel" });
  root.append(host, sentinel);
  const nav = listNav(host, ".item");
  let alive = true, timer = null, queue = [], placed = 0;
  // Builds the next batch of queued entries (functions making nodes) into the page.
  function place() {
    const end = Math.min(queue.length, placed + BATCH);
    const nodes = [];
    for (; placed < end; placed++) nodes.push(queue[placed]());
    host.append(...nodes);
    nav.refresh();
  }
  const watcher = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && placed < queue.length) place();
  }, { root, rootMargin: "800px" });
  watcher.observe(sentinel);
  async function load() {
    const c = await api(`connections/${cid}/conversation`);
    if (!alive) return;
    const kept = placed;
    queue = [() => el("p", {}, `Agent: ${c.agent} · Client: ${c.client} · protocol ${c.protocol_version ?? "?"} · ${c.frames.toLocaleString()} frames`)];
    for (const x of c.events) queue.push(() => item(x));
    for (const s of c.sessions) {
      queue.push(() => el("h2", {}, "Session ", el("code", {}, s.session_id), s.usage ? " · " + s.usage : ""));
      for (const x of s.items) queue.push(() => item(x));
    }
    host.replaceChildren();
    placed = 0;
    while (placed < Math.max(kept, 1) && placed < queue.length) place();
  }
  load();
  return {
    leave() { alive = false; watcher.disconnect(); },
    frame(frame) { if (frame.connection_id === cid && timer === null) timer = setTimeout(() => { timer = null; load(); }, 500); },
    focus(seq) { showFrame(cid, seq); },
    step(delta) { nav.step(delta); if (placed < queue.length && host.lastElementChild && host.lastElementChild.getAttribute("aria-selected") === "true") place(); },
    activate() { const node = host.querySelector('.item[aria-selected="true"]'); if (node && node.dataset.seq) setHash({ f: Number(node.dataset.seq) }); },
  };
}
