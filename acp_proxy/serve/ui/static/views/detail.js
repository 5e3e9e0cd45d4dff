// The frame detail beside a view: when and how big, its pair with the latency, the findings,
// the JSON as a tree with the schema's field descriptions, and the exact bytes with escapes
// marked (a terminal escape in agent stderr is shown, never obeyed).
import { api } from "../api.js";
import { el, escaped, $ } from "../dom.js";
import { bytes, duration, wall, DIR, speed, number } from "../format.js";
import { setHash } from "../state.js";
import { findings, checkedUpTo } from "../findings.js";

export function detailOpen() { return !$("#detail").hidden; }
export function closeDetail() { $("#detail").hidden = true; shownKey = null; }

function tree(value, descriptions) {
  function node(key, v, path, depth) {
    const label = key === null ? [] : [el("span", { class: "key" + (descriptions.has(path) ? " described" : ""), title: descriptions.get(path) || null }, key), ": "];
    if (v !== null && typeof v === "object") {
      const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
      const summary = el("summary", {}, ...label, Array.isArray(v) ? `[${entries.length}]` : `{${entries.length}}`);
      const box = el("details", { "data-path": path }, summary,
        ...entries.map(([k, x]) => node(Array.isArray(v) ? String(k) : k, x, Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`, depth + 1)));
      if (depth < 3) box.open = true;
      return box;
    }
    const cls = typeof v === "string" ? "str" : typeof v === "number" ? "num" : "lit";
    const shown = typeof v === "string" ? JSON.stringify(v) : String(v);
    return el("div", { class: "leaf", "data-path": path }, ...label, el("span", { class: cls }, shown));
  }
  return el("div", { class: "tree" }, node(null, value, "$", 0));
}

let shownKey = null, shown = Promise.resolve();
// The frame shown before the rule check reached it: drawn again once the check has.
let unchecked = null;
findings.progress.add(() => {
  if (!unchecked || shownKey !== unchecked.cid + ":" + unchecked.seq || findings.cid !== unchecked.cid) return;
  if (findings.done || (!unchecked.reached && checkedUpTo(unchecked.cid, unchecked.seq))) {
    const { cid, seq } = unchecked;
    unchecked = null;
    shownKey = null;
    showFrame(cid, seq);
  } else if (!unchecked.reached && findings.checkedSeq) {  // on its way: where it is now
    const note = $("#detail #unchecked");
    if (note) note.textContent = notReached(findings.checkedSeq);
  }
});
const notReached = (at) => `The rule check has not reached this frame yet (it is at frame ${number(at)}).`;
// Resolves once the frame's detail is on screen (or said it could not be read).
export function showFrame(cid, seq) {
  const key = cid + ":" + seq;
  $("#detail").hidden = false;
  if (shownKey === key) return shown;  // shown, or on its way
  shownKey = key;
  shown = drawFrame(cid, seq, key);
  return shown;
}
async function drawFrame(cid, seq, key) {
  const pane = $("#detail");
  pane.setAttribute("aria-label", "frame " + seq);
  pane.replaceChildren(el("p", {}, "loading frame " + seq + "…"));
  let d;
  try { d = await api(`connections/${cid}/frames/${seq}`); } catch (e) { pane.replaceChildren(el("p", {}, String(e.message))); return; }
  if (shownKey !== key) return;  // another frame was asked for meanwhile
  const f = d.frame;
  const descriptions = new Map(d.descriptions);
  const close = el("button", { class: "close", title: "close (Esc)", on: { click: () => setHash({ f: null }) } }, "×");
  const parts = [close, el("h2", {}, `Frame ${f.seq} · ${DIR[f.direction] || f.direction} · ${f.kind}${f.method ? " · " + f.method : ""}`)];
  parts.push(el("div", { class: "mono" }, `${wall(f.wall_ns)} · ${bytes(f.size)}${f.rpc_id !== null ? " · id " + f.rpc_id : ""}${f.session_id ? " · session " + f.session_id : ""}`));
  if (d.carrier) parts.push(el("div", { class: "mono", id: "carrier" }, "via " + d.carrier.text));
  if (d.pair) {
    const p = d.pair;
    parts.push(el("h3", {}, f.kind === "request" ? "Its response" : "Its request"),
      el("div", { id: "pair" }, el("span", { class: "link", "data-seq": p.seq, on: { click: () => setHash({ f: p.seq }) } }, `frame ${p.seq}`),
        ` ${p.kind} ${p.method || ""} · latency `, el("span", { class: "lat " + speed(d.latency_ns) }, duration(d.latency_ns))));
  } else if (f.kind === "request") {
    parts.push(el("h3", {}, "Its response"), el("div", { id: "pair" }, "pending: not answered (yet)"));
  }
  const found = [...d.findings, ...d.stored_findings.map((s) => ({ ...s, fix: null, stored: true }))];
  // Until the check has finished, the findings shown are those found so far, and it says so.
  const checked = d.checked.finished;
  const reached = d.checked.checked_seq >= f.seq;
  unchecked = checked ? null : { cid, seq, reached };
  if (!checked) {
    const at = number(d.checked.checked_seq);
    parts.push(el("h3", {}, "Findings"), el("p", { class: "fix", id: "unchecked" },
      !d.checked.started ? "The rule check has not started yet."
        : reached ? `The rule check is still running (at frame ${at}): a finding about this frame made later (an unanswered request, say) is not shown yet.`
          : notReached(d.checked.checked_seq)));
  }
  if (found.length) {
    if (checked) parts.push(el("h3", {}, "Findings"));
    parts.push(...found.map((x) => el("div", { class: "finding " + x.severity },
      el("b", {}, x.rule), " ", el("span", { class: "badge " + x.severity }, x.severity), " ", x.message,
      x.fix ? el("div", { class: "fix" }, "Fix: " + x.fix) : null, x.source ? el("div", { class: "fix" }, "Spec: " + x.source) : null)));
  }
  if (d.json !== null) parts.push(el("h3", {}, "JSON"), tree(d.json, descriptions));
  if (d.descriptions.length) {
    parts.push(el("h3", {}, "Fields (official JSON Schema)"), el("table", { class: "fields" },
      ...d.descriptions.map(([path, text]) => el("tr", {}, el("td", {}, path), el("td", {}, text)))));
  } else if (!d.schemas && d.json !== null) {
    parts.push(el("p", { class: "fix" }, "Field descriptions need the schemas: acp-proxy schemas fetch"));
  }
  parts.push(el("h3", {}, "Exact bytes"), el("pre", { class: "raw", id: "raw" }, escaped(d.segments)));
  if (d.truncated) parts.push(el("p", {}, `… ${number(d.truncated)} more bytes`));
  parts.push(el("p", {}, el("a", { class: "link", href: `api/connections/${cid}/frames/${seq}/raw`, download: "" }, "download the bytes")));
  pane.replaceChildren(...parts);
}
