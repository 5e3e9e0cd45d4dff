// The router: the URL's hash says which view is on screen; a change of view, connection,
// filters or diff sides builds the view anew, a change of frame only focuses it.
import { api } from "./api.js";
import { el, $ } from "./dom.js";
import { peer } from "./format.js";
import { openStream, onOverviewChange } from "./stream.js";
import { state, hashParams, onRoute, filters, connectionId, FILTERS } from "./state.js";
import { recordingsView } from "./views/recordings.js";
import { timelineView } from "./views/timeline.js";
import { sequenceView } from "./views/sequence.js";
import { conversationView } from "./views/conversation.js";
import { performanceView } from "./views/performance.js";
import { diffView } from "./views/diff.js";
import { closeDetail } from "./views/detail.js";

export const VIEWS = {
  recordings: recordingsView, timeline: timelineView, sequence: sequenceView,
  conversation: conversationView, performance: performanceView, diff: diffView,
};
const ALIASES = { latency: "performance" };
const NEEDS_NOTHING = ["recordings", "diff"];

let routed = "";

export function viewName() {
  let view = state.params.get("view") || (connectionId() ? "timeline" : "recordings");
  view = ALIASES[view] || view;
  if (!VIEWS[view]) view = "recordings";
  if (!connectionId() && !NEEDS_NOTHING.includes(view)) view = "recordings";
  return view;
}

export async function route() {
  state.params = hashParams();
  const view = viewName();
  const cid = connectionId();
  for (const tab of document.querySelectorAll("#tabs a")) {
    const on = tab.dataset.view === view;
    tab.classList.toggle("on", on);
    if (on) tab.setAttribute("aria-current", "page"); else tab.removeAttribute("aria-current");
    const target = new URLSearchParams(state.params);
    target.set("view", tab.dataset.view);
    target.delete("f");
    target.delete("from");
    tab.setAttribute("href", "#" + target.toString());
  }
  $("#filters").hidden = view !== "timeline";
  for (const name of FILTERS) {
    const input = $("#filters").elements[name];
    if (document.activeElement !== input) input.value = state.params.get(name) || "";
  }
  if (cid && (!state.overview || state.overview.id !== cid) && state.overviewOf !== cid) {
    // Asked for beside the view's own first answers, not before them.
    state.overview = null;
    state.overviewOf = cid;
    state.overviewReady = api("connections/" + cid).then((found) => { state.overview = found; return found; },
      () => null);
  }
  if (!cid) { state.overviewOf = null; state.overviewReady = Promise.resolve(null); }
  const key = JSON.stringify([view, cid, filters(), state.params.get("from"), state.params.get("a"), state.params.get("b")]);
  if (key !== routed || !state.view) {
    routed = key;
    if (state.view && state.view.leave) state.view.leave();
    // A fresh element: listeners of the view before go with it.
    const root = el("section", { id: "view", "data-view": view });
    $("#view").replaceWith(root);
    state.view = VIEWS[view](root);
  }
  const frame = state.params.get("f");
  if (frame && state.view.focus) state.view.focus(Number(frame));
  if (!frame) closeDetail();
  await state.overviewReady;
  showCurrent();
  // The live stream once the view's first screen is shown (a frame named by the URL first).
  if (state.view.ready) await state.view.ready;
  if (cid === connectionId()) openStream(cid);
}
onRoute(route);

export function showCurrent() {
  const o = state.overview;
  const text = o ? `#${o.id} ${o.label || ""} ${peer(o.agent_info, o.argv)}` : "";
  $("#current").textContent = text;
  $("#current").title = text;
  $("#live").hidden = !(o && o.status === "running");
}
onOverviewChange(showCurrent);
