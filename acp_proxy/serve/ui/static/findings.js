// Findings of the rule engine, checked in the background by the server (the same engine as
// `acp-proxy check`). The page holds only those of the frames it shows (asked for by range of
// frames: a long recording's findings stay in the server's file) and how far the check has
// got, polled until the connection has ended and been checked to its end.
import { api } from "./api.js";

// `bySeq`: the findings of the frames in `span` ([first, last] seq); `checkedSeq`: every
// finding up to that frame is known; `done`: checked to the end of what is recorded.
// `listeners` hear of a change of the findings held, `progress` of each poll.
const POLL_MS = 300, DONE_POLL_MS = 1000, MOVED_MS = 100, LIMIT = 5000;
export const findings = { cid: null, bySeq: new Map(), span: null, wanted: null, timer: null,
  listeners: new Set(), checkedSeq: 0, done: false, finished: false, progress: new Set() };

// Whether the findings of frame `seq` are all known, for connection `cid`.
export function checkedUpTo(cid, seq) {
  return findings.cid === cid && (findings.done || findings.checkedSeq >= seq);
}

// Follow the check of `cid`; `wanted()` says which frames are shown ([first, last] or null).
// A new view of the same connection (a filter, a jump) asks for its own frames' findings.
export function followFindings(cid, wanted) {
  if (findings.cid === cid) { findings.wanted = wanted; findingsMoved(); return; }
  clearTimeout(findings.timer);
  Object.assign(findings, { cid, bySeq: new Map(), span: null, wanted, checkedSeq: 0, done: false, finished: false });
  poll(cid);
}

// The frames shown have changed: their findings a moment later (once the scrolling settles),
// unless those held already cover them and nothing more can come.
export function findingsMoved() {
  const span = findings.wanted && findings.wanted();
  if (!findings.cid || !span) return;
  const held = findings.span;
  if (held && held[0] <= span[0] && span[1] <= held[1] && findings.finished) return;
  clearTimeout(findings.timer);
  const cid = findings.cid;
  findings.timer = setTimeout(() => poll(cid), MOVED_MS);
}

async function poll(cid) {
  if (findings.cid !== cid) return;
  const span = findings.wanted && findings.wanted();
  let got;
  try {
    got = await api(`connections/${cid}/findings`, span ? { first: span[0], last: span[1], limit: LIMIT } : { limit: 0 });
  } catch (e) { return; }
  if (findings.cid !== cid) return;
  if (span) {
    const bySeq = new Map();
    for (const f of got.findings) {
      if (!bySeq.has(f.seq)) bySeq.set(f.seq, []);
      bySeq.get(f.seq).push(f);
    }
    // Findings only accumulate: the same frames and as many findings is the same answer.
    const held = findings.span;
    const changed = !held || held[0] !== span[0] || held[1] !== span[1] || got.findings.length !== countOf(findings.bySeq);
    findings.bySeq = bySeq;
    findings.span = span;
    if (changed) findings.listeners.forEach((fn) => fn());
  }
  findings.checkedSeq = got.checked_seq;
  findings.done = got.complete;
  findings.finished = got.finished && got.complete;
  findings.progress.forEach((fn) => fn());
  clearTimeout(findings.timer);
  if (!findings.finished) findings.timer = setTimeout(() => poll(cid), got.complete ? DONE_POLL_MS : POLL_MS);
}

function countOf(bySeq) {
  let n = 0;
  for (const list of bySeq.values()) n += list.length;
  return n;
}
