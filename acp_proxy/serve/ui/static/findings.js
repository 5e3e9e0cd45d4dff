// Findings of the rule engine, checked in the background by the server (the same engine as
// `acp-proxy check`): polled until the connection has ended and been checked to its end.
import { api } from "./api.js";

const MORE_MS = 100;
export const findings = { cid: null, bySeq: new Map(), count: 0, timer: null, listeners: new Set() };

export function followFindings(cid) {
  if (findings.cid === cid) return;
  clearTimeout(findings.timer);
  Object.assign(findings, { cid, bySeq: new Map(), count: 0 });
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
    if (got.findings.length) findings.listeners.forEach((fn) => fn());
    // A long check's findings come a page at a time (``more``): the next page a moment later.
    if (got.more || !got.finished) findings.timer = setTimeout(poll, got.more ? MORE_MS : got.complete ? 1000 : 300);
  };
  poll();
}
