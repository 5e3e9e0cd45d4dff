// The timeline: one row per frame or per run of chunks, virtual (see virtual.js), filtered by
// the bar above it, following a live connection while scrolled to the bottom. The keyboard
// moves a selection cursor over the visual rows (aria-selected marks it).
import { api } from "../api.js";
import { el, $ } from "../dom.js";
import { findings, followFindings, findingsMoved } from "../findings.js";
import { bytes, counted, duration, offset, DIR, speed, number } from "../format.js";
import { state, setHash, filters, connectionId } from "../state.js";
import { RunRows, ROW_H, PAGE, windowOf, reveal } from "../virtual.js";
import { showFrame, detailOpen } from "./detail.js";

const REFRESH_MS = 200;  // a live view reads new rows at most this often
const PAUSE_CAP_MS = 2000;
const FINDINGS_AFTER_MS = 500;
const GROW_AFTER_MS = 500;
const CONTEXT_ROWS = 100;  // frames shown above a frame opened by URL in the middle
const FAR = 10000;  // frames beyond the index: a jump there opens the timeline near it at once
const COLUMNS = [["seq", "seq"], ["time", "time"], ["dir", "dir"], ["kind", "kind"], ["method", "method"],
  ["id", "id"], ["size", "size"], ["latency", "lat"], ["what", "what"]];

async function loadSessions(cid) {
  try {
    const found = await api(`connections/${cid}/sessions`);
    $("#sessions").replaceChildren(...found.map((s) => el("option", { value: s })));
  } catch (e) { /* the list stays empty */ }
}

export function timelineView(root) {
  const cid = connectionId();
  root.className = "fill";
  const head = el("div", { class: "head", role: "presentation" },
    COLUMNS.map(([label, cls]) => el("div", { class: "cell " + cls }, label)));
  const spacer = el("div", { id: "spacer" });
  const scroller = el("div", { id: "rows", role: "listbox", "aria-label": "frames", tabindex: "0" }, spacer);
  root.append(head, scroller);
  // A timeline may start at a frame (`from=` in the URL): a link into the middle of a long
  // recording opens there at once instead of waiting for the index to reach it.
  const fromSeq = Number(state.params.get("from")) || 0;
  const where = fromSeq ? { ...filters(), from: fromSeq } : filters();
  const list = new RunRows();
  // How far the rule check has got (`rules checked to frame N…`), beside the row count, until
  // every frame is checked.
  const checking = el("span", { id: "checking" });
  const sayChecking = () => {
    checking.textContent = findings.cid !== cid || findings.done ? ""
      : ` · ${findings.checkedSeq ? "rules checked to frame " + number(findings.checkedSeq) : "rules not checked yet"}…`;
  };
  let caughtUp = false, complete = false, selected = null, cursor = null, follow = true, scannedSeq = 0;
  let shownSpan = null;  // [first, last] seq of the frames on screen
  let first = state.overview ? state.overview.first_mono_ns : null;
  let alive = true, refreshing = false, again = false;
  // A frame named by the URL is shown first: the index's growth, the findings and the live
  // stream start once its row and detail are on screen (`ready`).
  let background = false, frameShown = Promise.resolve(), markReady;
  const ready = new Promise((resolve) => { markReady = resolve; });
  const live = () => state.overview && state.overview.status === "running";

  async function loadPage(pageNumber) {
    if (list.loading.has(pageNumber)) return;
    list.loading.add(pageNumber);
    try {
      const got = await api(`connections/${cid}/rows`, { ...where, offset: pageNumber * PAGE, limit: PAGE });
      if (!alive) return;
      accept(got);
      list.store(pageNumber, got.rows);
    } finally { list.loading.delete(pageNumber); }
    render();
  }
  function accept(got) {
    list.setTotal(got.total);
    caughtUp = got.caught_up; complete = got.complete;
    if (got.scanned_seq !== undefined) scannedSeq = got.scanned_seq;
    const count = $("#count");
    count.replaceChildren(counted(list.total, "row") + (caughtUp ? "" : " (indexing…)"));
    if (fromSeq) {
      count.append(` from frame ${number(fromSeq)} · `,
        el("span", { class: "link", id: "from-start", on: { click: () => setHash({ from: null }) } }, "from the start"));
    }
    count.append(checking);
    if (state.overview && first === null) first = state.overview.first_mono_ns;
  }
  async function loadSubs(r, start) {
    const e = list.expanded.get(r);
    if (!e || e.loading.has(start)) return;
    e.loading.add(start);
    const got = await api(`connections/${cid}/frames`, { ...where, first: e.row.first_seq, last: e.row.last_seq, offset: start, limit: PAGE });
    got.frames.forEach((f, i) => e.subs.set(start + i, f));
    render();
  }
  function latencyCell(frame, latency) {
    if (latency !== undefined && latency !== null) return el("div", { class: "cell lat " + speed(latency) }, duration(latency));
    if (frame.kind === "request" && frame.direction !== "stderr") return el("div", { class: "cell lat pending" }, live() ? "pending" : "unanswered");
    return el("div", { class: "cell lat" });
  }
  function cells(frame, what, latency, extraClass, v) {
    const t = first !== null && first !== undefined ? offset(frame.mono_ns - first) : "";
    const bad = frame.bad_json || frame.bad_utf8 || frame.not_jsonrpc;
    const cls = ["row", "dir-" + frame.direction, extraClass || "",
      frame.kind === "error" ? "is-error" : "", bad ? "bad" : "", frame.seq === selected ? "selected" : ""].join(" ");
    return [cls, [
      el("div", { class: "cell seq" }, frame.seq), el("div", { class: "cell time" }, t),
      el("div", { class: "cell dir" }, DIR[frame.direction] || frame.direction),
      el("div", { class: "cell kind" }, frame.kind),
      el("div", { class: "cell method", title: frame.method || null }, frame.method || ""),
      el("div", { class: "cell id" }, frame.rpc_id ?? ""), el("div", { class: "cell size" }, bytes(frame.size)),
      latencyCell(frame, latency),
      el("div", { class: "cell what" }, what)]];
  }
  // The frame shown at a visual position, if loaded.
  function frameAt(v) {
    const at = list.locate(v);
    const row = list.rowAt(at.row);
    if (!row) return null;
    if (at.sub === undefined) return { frame: row.frame, row, index: at.row };
    const e = list.expanded.get(at.row);
    const frame = e && e.subs.get(at.sub);
    return frame ? { frame, row: null, index: at.row } : null;
  }
  // Playback: the rows up to the play head are shown, the head moves at the recorded pace
  // (times 1 to 8, a pause longer than PAUSE_CAP_MS shortened to it); the slider seeks.
  const play = { active: false, on: false, speed: 1, head: 0, timer: null };
  const playButton = el("button", { type: "button", id: "play", title: "play / pause (Space)" }, "▶ play");
  const speedSelect = el("select", { id: "speed", "aria-label": "playback speed" }, ...[1, 2, 4, 8].map((x) => el("option", { value: x }, x + "×")));
  const seek = el("input", { type: "range", id: "seek", min: 0, max: 0, value: 0, "aria-label": "seek" });
  const stopButton = el("button", { type: "button", id: "stop", title: "show every row", hidden: true }, "■");
  $("#playback").replaceChildren(playButton, speedSelect, seek, stopButton);
  function playPause() {
    if (play.on) { play.on = false; clearTimeout(play.timer); playButton.textContent = "▶ play"; return; }
    if (!play.active) { play.active = true; play.head = cursor === null || cursor >= list.visualTotal() - 1 ? 0 : cursor; }
    play.on = true; stopButton.hidden = false; playButton.textContent = "⏸ pause";
    follow = false;
    moveHead(play.head);
    tick();
  }
  function stopPlayback() {
    play.on = false; play.active = false; clearTimeout(play.timer);
    playButton.textContent = "▶ play"; stopButton.hidden = true;
    render();
  }
  function moveHead(v) {
    play.head = Math.max(0, Math.min(list.visualTotal() - 1, v));
    cursor = play.head;
    seek.value = String(play.head);
    render();
    reveal(scroller, play.head);
    render();
  }
  function tick() {
    if (!play.on || !alive) return;
    const here = frameAt(play.head), next = frameAt(play.head + 1);
    if (play.head + 1 >= list.visualTotal()) { if (!live()) { playPause(); return; } play.timer = setTimeout(tick, 200); return; }
    if (!here || !next) { render(); play.timer = setTimeout(tick, 30); return; }
    const wait = Math.min(PAUSE_CAP_MS, Math.max(0, (next.frame.mono_ns - here.frame.mono_ns) / 1e6)) / play.speed;
    play.timer = setTimeout(() => { moveHead(play.head + 1); tick(); }, wait);
  }
  playButton.addEventListener("click", playPause);
  stopButton.addEventListener("click", stopPlayback);
  speedSelect.addEventListener("change", () => { play.speed = Number(speedSelect.value); });
  seek.addEventListener("input", () => { if (!play.active) { play.active = true; stopButton.hidden = false; } follow = false; moveHead(Number(seek.value)); });

  function render() {
    if (!alive) return;
    const all = list.visualTotal();
    seek.max = String(Math.max(0, all - 1));
    const count = play.active ? Math.min(all, play.head + 1) : all;
    spacer.style.height = count * ROW_H + "px";
    const [top, bottom] = windowOf(scroller, count);
    const nodes = [];
    const now = Date.now();
    let low = null, high = null;  // the frames drawn: their findings are the ones the page holds
    const drawn = (first, last) => { low = low === null ? first : Math.min(low, first); high = high === null ? last : Math.max(high, last); };
    for (let v = top; v < bottom; v++) {
      const at = list.locate(v);
      const row = list.rowAt(at.row);
      if (!row) { loadPage(Math.floor(at.row / PAGE)); continue; }
      let node;
      if (at.sub === undefined) {
        const open = list.expanded.has(at.row);
        const what = row.count > 1
          ? [el("span", { class: "toggle", "data-run": row.first_seq }, (open ? "▾ " : "▸ ") + row.count + " chunks"), row.frame.update_kind + ": ", row.text || ""]
          : [row.frame.update_kind ? row.frame.update_kind + ": " : "", row.frame.preview || ""];
        const [cls, parts] = cells(row.frame, what, row.latency_ns, "", v);
        const marks = [];
        for (let s = row.first_seq; s <= row.last_seq && s - row.first_seq < 1000; s++) marks.push(...(findings.bySeq.get(s) || []));
        node = el("div", { class: cls + (marks.length ? " has-finding" : "") + (row.count > 1 ? " run" : ""),
          role: "option", "data-seq": row.frame.seq, "data-last": row.last_seq, "data-count": row.count,
          title: marks.length ? marks.map((f) => `${f.rule} (${f.severity}): ${f.message}`).join("\n") : null }, parts);
        node.addEventListener("click", (event) => {
          cursor = v;
          if (row.count > 1 && (event.target.classList.contains("toggle") || !open)) {
            list.toggle(at.row, row);
            render();
            if (!event.target.classList.contains("toggle")) select(row.frame.seq);
            return;
          }
          select(row.frame.seq);
        });
        for (let s = row.first_seq; s <= row.last_seq; s++) if (!(s in window.acpSeen)) window.acpSeen[s] = now;
        drawn(row.first_seq, row.last_seq);
      } else {
        const e = list.expanded.get(at.row);
        const frame = e.subs.get(at.sub);
        if (!frame) { loadSubs(at.row, at.sub - (at.sub % PAGE)); continue; }
        const [cls, parts] = cells(frame, [frame.update_kind + ": ", frame.preview || ""], frame.latency_ns ?? undefined, "sub", v);
        node = el("div", { class: cls, role: "option", "data-seq": frame.seq }, parts);
        node.addEventListener("click", () => { cursor = v; select(frame.seq); });
        drawn(frame.seq, frame.seq);
      }
      node.setAttribute("aria-selected", v === cursor ? "true" : "false");
      if (v === cursor) node.classList.add("cursor");
      node.style.top = v * ROW_H + "px";
      nodes.push(node);
    }
    spacer.replaceChildren(...nodes);
    if (low !== null && (!shownSpan || shownSpan[0] !== low || shownSpan[1] !== high)) {
      shownSpan = [low, high];
      findingsMoved();
    }
    if (background && !caughtUp && !refreshing) refresh();
  }
  function select(seq) {
    selected = seq;
    setHash({ f: seq });
  }
  let lastRefresh = 0;
  async function refresh() {
    // Brings the end of the index up to date (new frames, or a large recording still being
    // indexed), at most every REFRESH_MS while frames keep coming.
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      do {
        again = false;
        const wait = lastRefresh + REFRESH_MS - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        lastRefresh = Date.now();
        const last = Math.max(0, list.total - 1);
        const got = await api(`connections/${cid}/rows`, { ...where, offset: last - (last % PAGE), limit: PAGE, scan: caughtUp ? "" : "1" });
        if (!alive) return;
        accept(got);
        list.store(Math.floor(Math.max(0, got.offset) / PAGE), got.rows);
        if (follow) scroller.scrollTop = scroller.scrollHeight;
        render();
      } while (again && alive);
    } finally { refreshing = false; }
  }
  scroller.addEventListener("scroll", () => {
    follow = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW_H;
    render();
  });
  const start = async () => {
    list.loading.add(0);  // a render meanwhile does not ask for the first page again
    let got;
    try {
      [got] = await Promise.all([api(`connections/${cid}/rows`, { ...where, offset: 0, limit: PAGE }), state.overviewReady]);
    } finally { list.loading.delete(0); }
    if (!alive) return;
    accept(got);
    list.store(0, got.rows);
    const named = Number(state.params.get("f")) || 0;
    follow = live() && !named;
    const found = named ? loadedIndexOf(named) : null;
    if (found) placeCursor(found.index);  // the frame's row drawn selected the first time
    render();
    await frameShown;
    if (!alive) return;
    // Growing the index of a long recording is not needed for the first screen either, and on
    // a busy machine it takes the CPU the browser needs to paint it: a moment later, unless the
    // view follows a live connection (new frames are shown as they come).
    const grow = () => { if (!alive) return; background = true; if (follow || !caughtUp) refresh(); };
    if (follow) grow(); else setTimeout(grow, GROW_AFTER_MS);
    // The findings and the session list are not needed for the first screen: asked a moment
    // later (the list of sessions when the session filter is first used).
    setTimeout(() => { if (alive) { followFindings(cid, () => shownSpan); sayChecking(); } }, FINDINGS_AFTER_MS);
    findings.listeners.add(render);
    findings.progress.add(sayChecking);
    $("#filters").elements.session.addEventListener("focus", () => loadSessions(cid), { once: true });
  };
  const view = {
    ready,
    leave() { alive = false; clearTimeout(play.timer); findings.listeners.delete(render); findings.progress.delete(sayChecking); $("#playback").replaceChildren(); },
    playPause,
    frame(frame) { if (frame.connection_id === cid) refresh(); },
    // The keyboard: move the cursor over the visual rows; with the detail open, it follows.
    step(delta) {
      const count = list.visualTotal();
      if (!count) return;
      if (cursor === null) {
        const found = selected !== null ? [...spacer.children].find((n) => Number(n.dataset.seq) === selected) : null;
        cursor = found ? Math.round(parseFloat(found.style.top) / ROW_H) : Math.floor(scroller.scrollTop / ROW_H) - (delta > 0 ? 1 : 0);
      }
      cursor = Math.max(0, Math.min(count - 1, cursor + delta));
      follow = false;
      reveal(scroller, cursor);
      render();
      if (detailOpen()) { const shown = frameAt(cursor); if (shown) { selected = shown.frame.seq; setHash({ f: selected }, true); } }
    },
    activate() {
      if (cursor === null) return;
      const shown = frameAt(cursor);
      if (!shown) return;
      if (shown.row && shown.row.count > 1 && !list.expanded.has(shown.index)) { list.toggle(shown.index, shown.row); render(); }
      select(shown.frame.seq);
    },
    selectedSeq() { return selected; },
    async focus(seq) {
      if (fromSeq && seq < fromSeq) { setHash({ from: null }, true); return; }
      if (focusing === seq) return;  // asked again while on its way
      focusing = seq;
      try { await locateFrame(seq); } finally { if (focusing === seq) focusing = null; }
    },
  };
  let focusing = null;
  // The place of frame seq among the rows loaded so far (what locate would say), or null.
  function loadedIndexOf(seq) {
    for (const rows of list.pages.values()) {
      for (const row of rows) {
        if (row && row.first_seq <= seq && seq <= row.last_seq) return { index: row.index, total: list.total, caught_up: caughtUp, behind: false };
      }
    }
    return null;
  }
  function placeCursor(index) {
    const v = list.visualOf(index);
    cursor = v;
    if (v * ROW_H < scroller.scrollTop || v * ROW_H > scroller.scrollTop + scroller.clientHeight - ROW_H) {
      follow = false;
      spacer.style.height = list.visualTotal() * ROW_H + "px";
      scroller.scrollTop = Math.max(0, v * ROW_H - scroller.clientHeight / 3);
    }
  }
  async function locateFrame(seq) {
      selected = seq;
      frameShown = showFrame(cid, seq);
      if (!fromSeq && list.total && !caughtUp && seq - scannedSeq > FAR) {
        // the index is far from this frame (its last answer said how far it got): no need to ask
        setHash({ from: Math.max(1, seq - CONTEXT_ROWS) }, true);
        return;
      }
      await started;  // the first rows: a frame among the rows loaded needs no question
      if (!alive) return;
      const found = loadedIndexOf(seq) ?? await api(`connections/${cid}/locate`, { ...where, seq, quick: "1" });
      if (!alive) return;
      if (found.behind && !fromSeq) {
        // the index is far from this frame yet: the timeline that starts shortly before it
        setHash({ from: Math.max(1, seq - CONTEXT_ROWS) }, true);
        return;
      }
      accept({ total: Math.max(list.total, found.total), caught_up: found.caught_up && caughtUp, complete });
      if (found.index === null) { render(); return; }
      if (cursor === list.visualOf(found.index)) return;  // drawn there by the first screen
      placeCursor(found.index);
      render();
  }
  const started = start();
  started.then(markReady, markReady);  // ready even if the first rows could not be read
  return view;
}
