// Findings of the rule engine, checked in the background by the server (the same engine as
// `acp-proxy check`): polled until the connection has ended and been checked to its end.
import { api } from "./api.js";

// How far the page's findings go: `checkedSeq` (every finding up to that frame is here) and
// `done` (checked to the end of what is recorded); `progress` listeners hear of each poll.
const MORE_MS = 100;
export const findings = { cid: null, bySeq: new Map(), count: 0, timer: null, listeners: new Set(),
  checkedSeq: 0, done: false, progress: new Set() };

// Whether the findings of frame `seq` are all here, for connection `cid`.
export function checkedUpTo(cid, seq) {
  return findings.cid === cid && (findings.done || findings.checkedSeq >= seq);
}

export function followFindings(cid) {
  if (findings.cid === cid) return;
  clearTimeout(findings.timer);
  Object.assign(findings, { cid, bySeq: new Map(), count: 0, checkedSeq: 0, done: false });
  const poll = async () => {
    if (findings.cid !== cid) return;
    let got;
    try { got = await api(`connections/${cid}/findings`, { since: findings.count }); } catch (e) { return; }
    if (findings.cid !== cid) return;
    findings.count += got.findings.length;
    for (const f of got.findings) {
      if (f.seq === null) continue;
      if (!findings.bySeq.has(f.seq)) findings.bySeq.set(f.seq, []);
      findings.bySeq.get(f.seq).push(f);
    }
    // With more to come, the findings here reach as far as the last one received.
    const last = got.findings.length ? got.findings[got.findings.length - 1].seq : null;
    findings.checkedSeq = got.more ? Math.max(findings.checkedSeq, last ?? 0) : got.checked_seq;
    findings.done = !got.more && got.complete;
    if (got.findings.length) findings.listeners.forEach((fn) => fn());
    findings.progress.forEach((fn) => fn());
    // A long check's findings come a page at a time (``more``): the next page a moment later.
    if (got.more || !got.finished) findings.timer = setTimeout(poll, got.more ? MORE_MS : got.complete ? 1000 : 300);
  };
  poll();
}
