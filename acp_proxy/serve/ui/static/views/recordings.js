// The recordings: one line per connection, newest first, narrowed by the filter box, followed
// live. It fits the window: long names are cut with an ellipsis (whole in the tooltip).
import { api } from "../api.js";
import { el } from "../dom.js";
import { duration, wall, peer, number } from "../format.js";
import { listNav } from "../nav.js";
import { state, setHash } from "../state.js";

export function recordingsView(root) {
  const search = el("input", { type: "search", id: "recordings-filter", "data-filter": "", placeholder: "filter: label, agent, client, status", size: 40 });
  const body = el("tbody");
  const heads = [["id", "num"], ["label", "text"], ["agent", "text wide"], ["client", "text"], ["protocol", "num"],
    ["status", ""], ["started", "when"], ["turns", "num"], ["duration", "num"], ["frames", "num"],
    ["errors", "num"], ["findings", "num"], ["lost", "num"]];
  const table = el("table", { class: "list fit", id: "recordings", role: "grid" },
    el("thead", {}, el("tr", {}, heads.map(([h, cls]) => el("th", { class: cls }, h)))), body);
  const where = el("span", { id: "db", class: "cut" }, state.info ? state.info.db : "");
  root.append(el("div", { class: "toolbar" }, search, where), table);
  const nav = listNav(body, "tr");
  let rows = [];
  function cell(cls, text, content) { return el("td", { class: cls, title: text || null }, content === undefined ? text : content); }
  function render() {
    const q = search.value.toLowerCase();
    body.replaceChildren(...rows.filter((c) => {
      const text = [c.label, peer(c.agent_info, c.argv), peer(c.client_info), c.status, String(c.id)].join(" ").toLowerCase();
      return !q || text.includes(q);
    }).map((c) => {
      const live = c.status === "running";
      const ended = c.exit_signal !== null ? "signal " + c.exit_signal : c.exit_code !== null ? "exit " + c.exit_code : c.status;
      const span = c.ended_ns ? (c.ended_ns - c.started_ns) : (c.last_mono_ns && c.first_mono_ns ? c.last_mono_ns - c.first_mono_ns : null);
      return el("tr", { "data-id": c.id, "aria-selected": "false", on: { click: () => setHash({ view: "timeline", c: c.id, f: null }) } },
        cell("num", String(c.id)), cell("text", c.label || ""),
        cell("text wide", peer(c.agent_info, c.argv)), cell("text", peer(c.client_info)),
        cell("num", String(c.protocol_version ?? "")),
        el("td", {}, live ? el("span", { class: "badge live" }, "live") : ended),
        cell("when", wall(c.started_ns)), cell("num", String(c.turns)),
        cell("num", duration(span)), cell("num", number(c.frames)),
        el("td", { class: "num" }, c.errors ? el("span", { class: "badge error" }, c.errors) : 0),
        el("td", { class: "num" }, c.stored_findings || ""),
        el("td", { class: "num" }, c.frames_lost ? el("span", { class: "badge bad" }, c.frames_lost) : ""));
    }));
    nav.refresh();
  }
  async function load() {
    const found = await api("connections");
    rows = found.connections.slice().reverse();
    if (state.info) where.textContent = state.info.db;
    state.connections = rows;
    render();
  }
  search.addEventListener("input", render);
  load();
  return { connections: load, step: nav.step, activate: nav.activate, filter: search };
}
