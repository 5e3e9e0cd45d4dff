// A table sorted by a click on its column heads. headers: [label, key, numeric]; rows: objects
// with `sort` (values to sort by), `show` (what each cell shows) and optional `attrs`.
import { el } from "./dom.js";

export function sortable(headers, rows, id) {
  const body = el("tbody");
  let key = null, down = false;
  const table = el("table", { class: "list", id, role: "grid" }, el("thead", {}, el("tr", {}, ...headers.map(([label, k, numeric]) =>
    el("th", { class: numeric ? "num" : "", "data-key": k, on: { click: () => { down = key === k ? !down : numeric; key = k; fill(); } } }, label)))), body);
  function fill() {
    const sorted = rows.slice();
    if (key) sorted.sort((a, b) => {
      const x = a.sort[key], y = b.sort[key];
      const r = x === y ? 0 : x === null || x === undefined ? 1 : y === null || y === undefined ? -1 : x < y ? -1 : 1;
      return down ? -r : r;
    });
    body.replaceChildren(...sorted.map((r) => el("tr", { "aria-selected": "false", ...(r.attrs || {}) },
      ...headers.map(([, k, numeric]) => el("td", { class: (numeric ? "num " : "") + (r.cls && r.cls[k] ? r.cls[k] : "") }, r.show[k])))));
  }
  fill();
  return table;
}
