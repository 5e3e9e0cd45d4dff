// The page's state. The URL's hash holds what is shown (view, connection, frame, filters, diff
// sides), so a link or a reload opens the same thing; the rest is what the server said.

export const state = {
  params: new URLSearchParams(), info: null, overview: null,
  source: null, sourceKey: null, lastFrameId: 0,
  view: null,  // the view object on screen
  overviewOf: null, overviewReady: Promise.resolve(null),  // the connection's row, on its way
};
window.acpSeen = {};  // seq -> ms since epoch when the page first showed it (tests read it)

let routeHook = () => {};
export function onRoute(fn) { routeHook = fn; }

export function hashParams() { return new URLSearchParams(location.hash.slice(1)); }
export function setHash(changes, replace) {
  const params = hashParams();
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") params.delete(k); else params.set(k, v);
  }
  const hash = "#" + params.toString();
  if (hash === location.hash) return;
  if (replace) { history.replaceState(null, "", hash); routeHook(); } else location.hash = hash;
}
export const FILTERS = ["direction", "kind", "method", "session", "text"];
export function filters() {
  const out = {};
  for (const name of FILTERS) if (state.params.get(name)) out[name] = state.params.get(name);
  return out;
}
export function connectionId() { const c = state.params.get("c"); return c ? Number(c) : null; }
