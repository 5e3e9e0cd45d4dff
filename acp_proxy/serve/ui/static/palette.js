// The command palette (Ctrl+K): jump to a recording, a session, a method or a frame number.
// Entries are built from what the server lists; the typed text narrows them, Enter goes.
import { api } from "./api.js";
import { el, $ } from "./dom.js";
import { peer } from "./format.js";
import { setHash, connectionId } from "./state.js";

const SHOWN = 50;
let entries = [];
let cursor = 0;

async function gather() {
  const out = [];
  const found = await api("connections");
  for (const c of found.connections.slice().reverse()) {
    out.push({ kind: "recording", text: `#${c.id} ${c.label || ""} ${peer(c.agent_info, c.argv)}`, go: () => setHash({ view: "timeline", c: c.id, f: null, method: null, session: null }) });
  }
  const cid = connectionId();
  if (cid) {
    for (const s of await api(`connections/${cid}/sessions`)) {
      out.push({ kind: "session", text: s, go: () => setHash({ view: "timeline", session: s, f: null }) });
    }
    const perf = await api(`connections/${cid}/latency`);
    const methods = new Set(perf.methods.map((m) => m.method));
    for (const m of methods) out.push({ kind: "method", text: m, go: () => setHash({ view: "timeline", method: m, f: null }) });
  }
  return out;
}

function render(input, list) {
  const q = input.value.trim().toLowerCase();
  const shown = [];
  const cid = connectionId();
  const number = /^\d+$/.test(q) ? Number(q) : null;
  if (number !== null && cid) shown.push({ kind: "frame", text: "frame " + number, go: () => setHash({ view: "timeline", f: number }) });
  for (const e of entries) {
    if (shown.length >= SHOWN) break;
    if (!q || e.text.toLowerCase().includes(q) || e.kind.startsWith(q)) shown.push(e);
  }
  cursor = Math.min(cursor, Math.max(0, shown.length - 1));
  list.replaceChildren(...shown.map((e, i) => el("li", { role: "option", "aria-selected": i === cursor ? "true" : "false",
    on: { click: () => { $("#palette").close(); e.go(); } } }, el("span", { class: "badge" }, e.kind), " ", e.text)));
  return shown;
}

export async function openPalette() {
  const dialog = $("#palette");
  const input = dialog.querySelector("input");
  const list = dialog.querySelector("ul");
  input.value = "";
  cursor = 0;
  entries = [];
  dialog.showModal();
  input.focus();
  let shown = render(input, list);
  input.oninput = () => { cursor = 0; shown = render(input, list); };
  input.onkeydown = (event) => {
    if (event.key === "ArrowDown" || (event.ctrlKey && event.key === "n")) { cursor = Math.min(shown.length - 1, cursor + 1); shown = render(input, list); event.preventDefault(); }
    else if (event.key === "ArrowUp" || (event.ctrlKey && event.key === "p")) { cursor = Math.max(0, cursor - 1); shown = render(input, list); event.preventDefault(); }
    else if (event.key === "Enter") { event.preventDefault(); const e = shown[cursor]; if (e) { dialog.close(); e.go(); } }
  };
  try { entries = await gather(); } catch (e) { entries = []; }
  if (dialog.open) shown = render(input, list);

}
