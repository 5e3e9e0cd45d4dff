// acp-proxy inspector: the page's entry point. Plain modern JavaScript as ES modules, no
// framework, no build step.
//
// Modules: dom.js (building nodes; recorded text only ever as text), api.js (the JSON
// endpoints), format.js (units and names), state.js (the URL's hash), router.js (which view),
// stream.js (the live event stream), findings.js (the rule engine's findings), virtual.js (the
// timeline's virtual list), nav.js and keys.js (the keyboard), palette.js (Ctrl+K), info.js
// (session info), table.js (sortable tables) and views/ (one module per view, and the detail).
import { api } from "./api.js";
import { el, $ } from "./dom.js";
import { SHORTCUTS, installKeys } from "./keys.js";
import { route } from "./router.js";
import { state, setHash, FILTERS } from "./state.js";

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
$("#help .body").replaceChildren(el("table", { class: "fields", id: "shortcuts" },
  ...SHORTCUTS.map(([key, what]) => el("tr", {}, el("td", {}, el("kbd", {}, key)), el("td", {}, what)))));
for (const dialog of document.querySelectorAll("dialog")) {
  dialog.querySelector("button.close").addEventListener("click", () => dialog.close());
}
$("#help-button").addEventListener("click", () => $("#help").showModal());
installKeys();

(async () => {
  $("#kinds").replaceChildren(...["request", "response", "notification", "error", "stderr", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", "usage_update"].map((k) => el("option", { value: k })));
  const info = api("info").then((found) => { state.info = found; return found; });
  // A link says what to show: shown at once, the server's info read meanwhile.
  if (location.hash) { route(); await info; return; }
  const initial = (await info).initial || {};
  if (initial.connection) history.replaceState(null, "", "#view=timeline&c=" + initial.connection);
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
  route();
})();
