// Performance: insights (from complete request/response pairs only), a waterfall of the calls
// over time with idle gaps compressed, and latency per method and per prompt turn (nearest-rank
// percentiles, `acp_proxy.protocol.latency`, as `acp-proxy stats --by-method`).
import { api } from "../api.js";
import { el, svg } from "../dom.js";
import { counted, duration, ms, speed, number } from "../format.js";
import { listNav } from "../nav.js";
import { state, setHash, connectionId } from "../state.js";
import { sortable } from "../table.js";
import { showFrame } from "./detail.js";

const GAP_NS = 250e6;      // idle time longer than this is compressed
const GAP_PX = 14;
const BAR_H = 14, LABEL_W = 190;

// Maps time to x with idle stretches compressed: busy intervals keep their length, scaled.
export function timeAxis(spans, width) {
  const sorted = spans.map(([s, e]) => [s, Math.max(e, s)]).sort((a, b) => a[0] - b[0]);
  const busy = [];
  for (const [s, e] of sorted) {
    const last = busy[busy.length - 1];
    if (last && s <= last[1] + GAP_NS) last[1] = Math.max(last[1], e); else busy.push([s, e]);
  }
  const gaps = Math.max(0, busy.length - 1);
  const total = busy.reduce((n, [s, e]) => n + (e - s), 0) || 1;
  const scale = Math.max(0, width - gaps * GAP_PX) / total;
  const starts = [];
  let x = 0;
  for (const [s, e] of busy) { starts.push(x); x += (e - s) * scale + GAP_PX; }
  function at(t) {
    let lo = 0, hi = busy.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (busy[mid][0] <= t) lo = mid; else hi = mid - 1; }
    const [s, e] = busy[lo] || [t, t];
    return (starts[lo] || 0) + (Math.min(Math.max(t, s), e) - s) * scale;
  }
  const breaks = busy.slice(1).map(([s], i) => ({ x: starts[i + 1] - GAP_PX, idle: s - busy[i][1] }));
  return { at, breaks };
}

function insightList(ins, live) {
  const items = [];
  const link = (seq, text) => el("span", { class: "link", "data-seq": seq, on: { click: () => setHash({ f: seq }) } }, text);
  if (live) items.push(el("li", { class: "note" }, `Live: figures cover the ${counted(ins.answered, "call")} answered so far; more may come.`));
  if (ins.pending) items.push(el("li", {}, `${number(ins.pending)} request${ins.pending > 1 ? "s" : ""} not answered${live ? " yet" : ""}: in no figure.`));
  if (ins.slowest) items.push(el("li", {}, "Slowest call: ", el("b", {}, ins.slowest.method), " ", el("span", { class: "lat " + speed(ins.slowest.latency_ns) }, duration(ins.slowest.latency_ns)), " (", link(ins.slowest.seq, "frame " + ins.slowest.seq), ")"));
  for (const t of ins.long_tail) items.push(el("li", {}, "Long tail: ", el("b", {}, t.method), ` p99 ${duration(t.p99_ns)} is ${t.ratio.toFixed(0)}× its p50 ${duration(t.p50_ns)}`));
  for (const o of ins.outliers) items.push(el("li", {}, "Outlier: ", el("b", {}, o.method), " ", el("span", { class: "lat " + speed(o.latency_ns) }, duration(o.latency_ns)), ` (p95 ${duration(o.p95_ns)}) `, link(o.seq, "frame " + o.seq)));
  for (const e of ins.errors) items.push(el("li", {}, "Errors: ", el("b", {}, e.method), ` ${e.count} error response${e.count > 1 ? "s" : ""}`));
  if (!ins.answered && !ins.pending) items.push(el("li", {}, "No requests."));
  return el("ul", { class: "insights", id: "insights" }, ...items);
}

function waterfall(calls, end, WIDTH) {
  if (!calls.length) return el("p", {}, "No calls.");
  const spans = calls.map((c) => [c.start_ns, c.latency_ns !== null ? c.start_ns + c.latency_ns : end]);
  const axis = timeAxis(spans, WIDTH - LABEL_W - 80);
  const height = calls.length * (BAR_H + 2) + 20;
  const pic = svg("svg", { class: "waterfall", id: "waterfall", width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}` });
  for (const b of axis.breaks) {
    const band = svg("rect", { class: "break", x: LABEL_W + b.x, y: 0, width: GAP_PX - 2, height });
    band.append(svg("title", {}, "idle " + duration(b.idle)));
    pic.append(band);
  }
  calls.forEach((c, i) => {
    const y = 16 + i * (BAR_H + 2);
    const x1 = LABEL_W + axis.at(c.start_ns), x2 = LABEL_W + axis.at(spans[i][1]);
    const cls = c.latency_ns === null ? "pending" : c.error ? "error" : speed(c.latency_ns);
    const g = svg("g", { class: "call " + cls, "data-seq": c.seq, "aria-selected": "false" });
    g.append(svg("text", { x: 4, y: y + BAR_H - 3 }, `${c.direction === "a2c" ? "↩ " : ""}${c.method}`.slice(0, 28)),
      svg("rect", { x: x1, y, width: Math.max(2, x2 - x1), height: BAR_H, rx: 2 }),
      svg("text", { x: Math.min(WIDTH - 70, x2 + 4), y: y + BAR_H - 3, class: "t" }, c.latency_ns === null ? "pending" : duration(c.latency_ns)));
    g.addEventListener("click", () => setHash({ f: c.seq }));
    pic.append(g);
  });
  return pic;
}

const READING_MS = 500;  // while the turns are still being read, asked again this often

export function performanceView(root) {
  const cid = connectionId();
  let alive = true, timer = null;
  let nav = listNav(root, "#waterfall g.call, #methods tbody tr, #turns tbody tr");
  async function load() {
    const p = await api(`connections/${cid}/performance`);
    if (!alive) return;
    const methods = p.methods.map((m) => ({
      sort: m, cls: { p50_ms: speed(m.p50_ns), p95_ms: speed(m.p95_ns), p99_ms: speed(m.p99_ns), max_ms: speed(m.max_ns) },
      show: { method: m.method, direction: m.direction === "c2a" ? "client → agent" : "agent → client", count: m.count,
        p50_ms: ms(m.p50_ms), p95_ms: ms(m.p95_ms), p99_ms: ms(m.p99_ms), max_ms: ms(m.max_ms), errors: m.errors, unanswered: m.unanswered },
    }));
    const turns = p.turns.map((t) => ({
      sort: t, attrs: { on: { click: () => setHash({ f: t.prompt_seq }) } },
      show: { session_id: t.session_id, turn: t.turn, prompt_seq: t.prompt_seq, accepted_ms: ms(t.accepted_ms), first_text_ms: ms(t.first_text_ms),
        duration_ms: ms(t.duration_ms), tool_calls: t.tool_calls, permissions: t.permissions,
        permission_wait_ms: t.permissions ? ms(t.permission_wait_ms) : "", stop_reason: t.stop_reason || t.status },
    }));
    const end = p.last_mono_ns || 0;
    root.replaceChildren(
      el("h3", { class: "toolbar" }, "Insights (complete request/response pairs only)"), insightList(p.insights, p.live),
      el("h3", { class: "toolbar" }, `Waterfall: ${number(p.calls.length)} of ${number(p.calls_total)} calls; idle stretches over ${duration(GAP_NS)} compressed (hatched)`),
      el("div", { class: "scroll-x" }, waterfall(p.calls, end, Math.max(480, root.clientWidth - 40))),
      el("h3", { class: "toolbar" }, "Per method (nearest-rank percentiles, as acp-proxy stats --by-method)"),
      sortable([["method", "method"], ["direction", "direction"], ["count", "count", true], ["p50", "p50_ms", true], ["p95", "p95_ms", true],
        ["p99", "p99_ms", true], ["max", "max_ms", true], ["errors", "errors", true], ["unanswered", "unanswered", true]], methods, "methods"),
      el("h3", { class: "toolbar", id: "turns-status" }, "Per prompt turn" + (p.turns_complete ? "" : ` (reading the recording… ${number(turns.length)} turns so far)`)),
      sortable([["session", "session_id"], ["turn", "turn", true], ["prompt frame", "prompt_seq", true], ["accepted", "accepted_ms", true],
        ["first text", "first_text_ms", true], ["duration", "duration_ms", true], ["tools", "tool_calls", true], ["permissions", "permissions", true],
        ["permission wait", "permission_wait_ms", true], ["stop", "stop_reason"]], turns, "turns"));
    nav.refresh();
    if (!p.turns_complete && timer === null) timer = setTimeout(() => { timer = null; load(); }, READING_MS);
  }
  load();
  return {
    leave() { alive = false; clearTimeout(timer); },
    frame(frame) { if (frame.connection_id === cid && timer === null) timer = setTimeout(() => { timer = null; load(); }, 1000); },
    focus(seq) { showFrame(cid, seq); },
    step: (d) => nav.step(d), activate: () => nav.activate(),
  };
}
