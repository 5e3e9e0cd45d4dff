// The session info panel (key `i`): versions, both sides' capabilities side by side, the
// negotiated protocol version, auth methods, modes, models, commands, config options and
// extensions, read from the recorded messages.
import { api } from "./api.js";
import { el, $ } from "./dom.js";
import { peer } from "./format.js";
import { connectionId, setHash } from "./state.js";

const json = (v) => v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v);

function names(list, key) {
  if (!Array.isArray(list)) return "—";
  return list.map((x) => (x && typeof x === "object" ? (x[key] ?? x.id ?? x.name) : x)).map(json).join(", ") || "—";
}

export async function openInfo() {
  const dialog = $("#info");
  const cid = connectionId();
  const body = dialog.querySelector(".body");
  if (!cid) { body.replaceChildren(el("p", {}, "Open a recording first.")); dialog.showModal(); return; }
  body.replaceChildren(el("p", {}, "loading…"));
  if (!dialog.open) dialog.showModal();
  let d;
  try { d = await api(`connections/${cid}/info`); } catch (e) { body.replaceChildren(el("p", {}, e.message)); return; }
  const link = (seq) => seq ? el("span", { class: "link", on: { click: () => { dialog.close(); setHash({ view: "timeline", f: seq }); } } }, "frame " + seq) : "";
  const parts = [
    el("table", { class: "fields", id: "versions" },
      el("tr", {}, el("th", {}), el("th", {}, "client"), el("th", {}, "agent")),
      el("tr", {}, el("td", {}, "implementation"), el("td", {}, d.client.info ? peer(d.client.info) : "—"), el("td", {}, d.agent.info ? peer(d.agent.info) : "—")),
      el("tr", {}, el("td", {}, "protocol version"), el("td", {}, json(d.client.protocol_version)), el("td", {}, json(d.agent.protocol_version)))),
    el("p", {}, "Negotiated protocol version: ", el("b", { id: "negotiated" }, json(d.negotiated_version)), " · initialize ", link(d.initialize_seq)),
    el("h3", {}, "Capabilities"),
    d.capabilities.length ? el("table", { class: "fields matrix", id: "capabilities" },
      el("tr", {}, el("th", {}, "capability"), el("th", {}, "client"), el("th", {}, "agent")),
      ...d.capabilities.map(([path, c, a]) => el("tr", {}, el("td", {}, path),
        el("td", { class: c === null ? "none" : "" }, json(c)), el("td", { class: a === null ? "none" : "" }, json(a)))))
      : el("p", {}, "No capabilities declared."),
    el("p", {}, "Auth methods: ", names(d.auth_methods, "id")),
  ];
  parts.push(el("h3", {}, "Sessions"));
  if (!d.sessions.length) parts.push(el("p", {}, "No session opened."));
  for (const s of d.sessions) {
    const state = d.session_states.find((x) => x.session_id === s.session_id) || {};
    parts.push(el("div", { class: "session" },
      el("div", {}, el("code", {}, json(s.session_id)), ` ${s.method} `, link(s.seq), s.answered ? "" : " (not answered)"),
      el("div", {}, "Modes: ", names(s.modes && s.modes.availableModes, "id"), s.modes && s.modes.currentModeId ? ` (current ${json(state.mode || s.modes.currentModeId)})` : ""),
      el("div", {}, "Models: ", names(s.models && s.models.availableModels, "modelId"), s.models && s.models.currentModelId ? ` (current ${json(s.models.currentModelId)})` : ""),
      el("div", {}, "Commands: ", names(state.commands, "name")),
      el("div", {}, "Config options: ", names(state.config_options || s.config_options, "id"))));
  }
  parts.push(el("h3", {}, "Extensions"),
    el("p", {}, "_meta in capabilities: ", d.meta.length ? d.meta.join(", ") : "none"),
    el("p", {}, "Extension methods: ", d.extension_methods.length ? d.extension_methods.map((m) => `${m.method} (${m.direction}, ${m.count})`).join(", ") : "none"));
  body.replaceChildren(...parts);
}
