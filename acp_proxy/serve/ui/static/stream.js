// The live event stream: one EventSource at a time, resumed by the browser with Last-Event-ID
// after a drop. It says only how far a connection got; the views read what they show.
import { api } from "./api.js";
import { state, connectionId } from "./state.js";

const LIST_MS = 1000;
let refreshListTimer = null;
let onOverview = () => {};
export function onOverviewChange(fn) { onOverview = fn; }

export function openStream(cid) {
  const key = String(cid || "");
  if (state.source && state.sourceKey === key) return;
  if (state.source) state.source.close();
  const params = new URLSearchParams();
  if (cid) {
    params.set("connection", cid);
    params.set("after", state.overview ? state.overview.last_frame_id : 0);
    params.set("frames", "0");
  }
  state.sourceKey = key;
  state.source = new EventSource("api/events?" + params);
  state.source.addEventListener("progress", (event) => {
    const progress = JSON.parse(event.data);
    state.lastFrameId = Number(event.lastEventId);
    const view = state.view;
    if (view && view.frame) view.frame({ connection_id: cid, seq: progress.seq });
  });
  // The list changed: the view that shows it reloads at most once a LIST_MS; the header
  // reads the current connection again only when its status changed.
  let statuses = new Map();
  state.source.addEventListener("connections", (event) => {
    statuses = new Map(JSON.parse(event.data).map(([id, status]) => [id, status]));
    if (refreshListTimer !== null) return;
    refreshListTimer = setTimeout(async () => {
      refreshListTimer = null;
      const view = state.view;
      if (view && view.connections) view.connections();
      const current = connectionId();
      if (current && (!state.overview || state.overview.status !== statuses.get(current))) {
        try { state.overview = await api("connections/" + current); onOverview(); } catch (e) { /* gone */ }
      }
    }, LIST_MS);
  });
}
