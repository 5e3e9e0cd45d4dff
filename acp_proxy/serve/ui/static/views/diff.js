// The diff of two recordings, normalized as `acp-proxy diff` does: the messages of each
// direction aligned (a message only one side has is added or removed, not a shift), the fields
// that differ in each changed pair, the metadata (versions, capabilities) and the latency per
// method in A and B.
import { api } from "../api.js";
import { el } from "../dom.js";
import { duration, peer, speed } from "../format.js";
import { listNav } from "../nav.js";
import { state, setHash, connectionId } from "../state.js";

function delta(a, b) {
  if (a === null || b === null || a === undefined || b === undefined) return "";
  const d = b - a;
  return (d >= 0 ? "+" : "−") + duration(Math.abs(d));
}

export function diffView(root) {
  const a = el("select", { name: "a", "aria-label": "recording A" }), b = el("select", { name: "b", "aria-label": "recording B" });
  const out = el("div", { id: "diff" });
  root.append(el("div", { class: "toolbar wrap" }, el("label", {}, "A ", a), el("label", {}, "B ", b),
    el("span", { class: "fix" }, "normalized as acp-proxy diff does (ids, session and message ids, timestamps)")), out);
  const nav = listNav(out, "tr.differ");
  let alive = true;
  async function options() {
    const found = await api("connections");
    for (const select of [a, b]) {
      select.replaceChildren(el("option", { value: "" }, "choose…"), ...found.connections.slice().reverse().map((c) =>
        el("option", { value: c.id }, `#${c.id} ${c.label || ""} ${peer(c.agent_info, c.argv)}`.slice(0, 80))));
    }
    a.value = state.params.get("a") || (connectionId() ? String(connectionId()) : "");
    b.value = state.params.get("b") || "";
    compare();
  }
  function pairRow(p, i, first) {
    const cls = first ? "divergence differ" : p.same ? "" : "differ";
    const status = !p.a ? "added in B" : !p.b ? "only in A" : p.same ? "" : "changed";
    const rows = [el("tr", { class: cls, "data-index": i, "aria-selected": "false" },
      el("td", { class: "n" }, p.a ? p.a.seq : ""), el("td", {}, el("pre", {}, p.a ? p.a.text : "(none)")),
      el("td", { class: "n" }, p.b ? p.b.seq : ""), el("td", {}, el("pre", {}, p.b ? p.b.text : "(none)")),
      el("td", { class: "st" }, status))];
    if (p.changes && p.changes.length) {
      rows.push(el("tr", { class: "changes" }, el("td", { colspan: 5 },
        el("table", { class: "fields changes" }, ...p.changes.map((c) => el("tr", {},
          el("td", {}, c.path), el("td", { class: "old" }, c.a === null ? "(absent)" : c.a), el("td", { class: "new" }, c.b === null ? "(absent)" : c.b)))))));
    }
    return rows;
  }
  async function compare() {
    if (!a.value || !b.value) { out.replaceChildren(el("p", { class: "summary" }, "Choose two recordings.")); return; }
    const d = await api("diff", { a: a.value, b: b.value });
    if (!alive) return;
    const v = d.divergence;
    const parts = [el("p", { class: "summary", id: "verdict" }, d.equal ? "The same, message for message." :
      `First divergence: ${v.direction} message ${v.index + 1} (A frame ${v.a_seq ?? "none"}, B frame ${v.b_seq ?? "none"})${v.path ? " at " + v.path : ""}`)];
    const meta = d.metadata.filter((m) => !m.same);
    parts.push(el("h3", { class: "toolbar" }, `Metadata: ${meta.length ? meta.length + " differences" : "the same"}`),
      el("table", { class: "fields", id: "metadata" }, ...d.metadata.map((m) => el("tr", { class: m.same ? "" : "differ" },
        el("td", {}, m.field), el("td", { class: m.same ? "" : "old" }, m.a), el("td", { class: m.same ? "" : "new" }, m.b)))));
    parts.push(el("h3", { class: "toolbar" }, "Latency per method (p50, p95 and p99, A → B)"),
      el("table", { class: "list", id: "latency-deltas" },
        el("thead", {}, el("tr", {}, ...["method", "direction", "calls A", "calls B", ...["p50", "p95", "p99"].flatMap((p) => [p + " A", p + " B", "Δ " + p])].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...d.latency.map((r) => el("tr", {}, el("td", {}, r.method), el("td", {}, r.direction),
          el("td", { class: "num" }, r.a_count), el("td", { class: "num" }, r.b_count),
          ...["p50", "p95", "p99"].flatMap((p) => {
            const x = r[`a_${p}_ns`], y = r[`b_${p}_ns`];
            return [el("td", { class: "num " + speed(x) }, duration(x)), el("td", { class: "num " + speed(y) }, duration(y)),
              el("td", { class: "num" }, delta(x, y))];
          }))))));
    for (const [direction, pairs] of Object.entries(d.directions)) {
      const [na, nb] = d.counts[direction];
      parts.push(el("h3", { class: "toolbar" }, `${direction === "c2a" ? "client → agent" : "agent → client"}: ${na} vs ${nb} messages`));
      parts.push(el("table", { class: "diff" }, el("colgroup", {}, el("col", { class: "n" }), el("col", {}), el("col", { class: "n" }), el("col", {}), el("col", { class: "st" })),
        ...pairs.flatMap((p, i) => pairRow(p, i, v && v.direction === direction && (p.a ? p.a.seq : null) === v.a_seq && (p.b ? p.b.seq : null) === v.b_seq))));
      if (v && v.direction === direction && !parts[parts.length - 1].querySelector("tr.divergence")) {
        const near = parts[parts.length - 1].querySelector("tr.differ");
        if (near) near.classList.add("divergence");
      }
    }
    out.replaceChildren(...parts);
    nav.refresh();
    const hit = out.querySelector("tr.divergence");
    if (hit) hit.scrollIntoView({ block: "center" });
  }
  for (const select of [a, b]) select.addEventListener("change", () => setHash({ a: a.value, b: b.value }, true));
  options();
  return { leave() { alive = false; }, step: nav.step, activate: () => {} };
}
