// The sequence diagram: client and agent lanes, one arrow per message, a run of chunks folded
// into one arrow (as the timeline does), errors in red, long gaps compressed. Pages of arrows
// load as it is scrolled; "more" exists only while there can be more.
import { api } from "../api.js";
import { el, svg } from "../dom.js";
import { duration } from "../format.js";
import { listNav } from "../nav.js";
import { state, setHash, connectionId } from "../state.js";
import { showFrame } from "./detail.js";

const COLOURS = ["#2f6fde", "#d9480f", "#1a9b50", "#9b1ab0", "#c58a00", "#0c8599", "#5c7cfa", "#66a80f", "#ae3ec9"];
const ERROR = "#d33";
const W = 760, CLIENT = 170, AGENT = 590, STEP = 26, GAP = 22, GAP_NS = 1e9, PAGE = 400;

export function sequenceView(root) {
  const cid = connectionId();
  const host = el("div", { id: "sequence" });
  const more = el("button", { class: "more", hidden: true }, "more");
  root.append(el("div", { class: "toolbar" }, "client (left) ⇄ agent (right); a request and its response share a colour; dashed: notifications; red: errors; ▸ N: a run of chunks; gaps over 1 s compressed"), host, more);
  let after = 0, run = null, lastNs = null, alive = true, busy = false, done = false, pending = null;
  let lastGroup = null;
  const nav = listNav(host, "g.msg");
  const live = () => state.overview && state.overview.status === "running";
  function colourOf(seq) { return COLOURS[seq % COLOURS.length]; }
  function labelOf(m) {
    const answer = m.kind === "response" || m.kind === "error";
    if (m.count > 1) return `▸ ${m.count} ${m.update_kind}`;
    return (m.direction === "a2c" && m.kind === "request" ? "↩ " : "") +
      (answer ? (m.kind === "error" ? "error " : "result ") + (m.method || "") : (m.method || m.kind)) +
      (m.rpc_id !== null && m.rpc_id !== undefined ? ` #${m.rpc_id}` : "") + (m.update_kind ? " " + m.update_kind : "");
  }
  async function load() {
    if (busy || !alive || done) return;
    busy = true;
    try {
      const got = await api(`connections/${cid}/sequence`, { after, limit: PAGE, run });
      if (!alive) return;
      let messages = got.messages;
      if (messages.length && messages[0].continues && lastGroup) {
        // the run the last page ended in grew: its arrow says so
        const head = messages.shift();
        lastGroup.count += head.count;
        lastGroup.label.textContent = `▸ ${lastGroup.count} ${head.update_kind}`;
      }
      after = got.after; run = got.run;
      done = got.end && !live();
      more.hidden = got.end;
      if (!messages.length) return;
      let y = 18;
      const g = [];
      for (const m of messages) {
        if (lastNs !== null && m.mono_ns - lastNs > GAP_NS) {
          const band = svg("g", { class: "gap" });
          band.append(svg("rect", { x: 0, y: y - 12, width: W, height: GAP - 4 }), svg("text", { x: W / 2 - 40, y: y + 1 }, "… " + duration(m.mono_ns - lastNs) + " …"));
          g.push(band);
          y += GAP;
        }
        lastNs = m.mono_ns;
        const c2a = m.direction === "c2a";
        const x1 = c2a ? CLIENT : AGENT, x2 = c2a ? AGENT : CLIENT;
        const note = m.kind === "notification";
        const answer = m.kind === "response" || m.kind === "error";
        const error = m.kind === "error";
        const colour = error ? ERROR : note ? "#999" : answer ? colourOf(m.request_seq ?? m.seq) : colourOf(m.seq);
        const group = svg("g", { class: "msg" + (note ? " note" : "") + (answer ? " answer" : "") + (error ? " error" : "") + (m.count > 1 ? " run" : ""),
          "data-seq": m.seq, "data-kind": m.kind, "data-count": m.count, "aria-selected": "false" });
        const label = svg("text", { x: (CLIENT + AGENT) / 2, y: y - 4, "text-anchor": "middle", fill: colour }, labelOf(m).slice(0, 70));
        group.append(svg("text", { x: 8, y: y + 4, fill: "#888" }, String(m.seq)),
          svg("line", { class: "arrow", x1, y1: y, x2: x2 + (c2a ? -6 : 6), y2: y, stroke: colour, "stroke-width": m.count > 1 ? 4 : 2 }),
          svg("polygon", { points: c2a ? `${x2},${y} ${x2 - 8},${y - 4} ${x2 - 8},${y + 4}` : `${x2},${y} ${x2 + 8},${y - 4} ${x2 + 8},${y + 4}`, fill: colour }),
          label);
        group.addEventListener("click", () => setHash({ f: m.seq }));
        if (m.update_kind && m.update_kind.endsWith("_chunk")) lastGroup = { count: m.count, label }; else lastGroup = null;
        g.push(group);
        y += STEP;
      }
      const height = y;
      const pic = svg("svg", { class: "seq", width: W, height, viewBox: `0 0 ${W} ${height}` });
      pic.append(svg("line", { class: "lane", x1: CLIENT, y1: 0, x2: CLIENT, y2: height }), svg("line", { class: "lane", x1: AGENT, y1: 0, x2: AGENT, y2: height }));
      if (!host.childElementCount) {
        const top = svg("svg", { class: "seq", width: W, height: 24 });
        top.append(svg("text", { x: CLIENT - 20, y: 16, "font-weight": 700 }, "client"), svg("text", { x: AGENT - 20, y: 16, "font-weight": 700 }, "agent"));
        host.append(top);
      }
      g.forEach((x) => pic.append(x));
      host.append(pic);
      nav.refresh();
      if (!got.end && root.scrollHeight <= root.clientHeight + 200) setTimeout(load, 0);
    } finally { busy = false; }
  }
  more.addEventListener("click", load);
  root.addEventListener("scroll", () => { if (!done && root.scrollTop + root.clientHeight > root.scrollHeight - 200) load(); });
  load();
  return {
    leave() { alive = false; },
    frame(frame) {
      if (frame.connection_id !== cid || pending) return;
      pending = setTimeout(() => { pending = null; done = false; load(); }, 300);
    },
    connections() { if (!live()) { done = done || more.hidden; } },
    focus(seq) { showFrame(cid, seq); },
    step: nav.step, activate: nav.activate,
  };
}
