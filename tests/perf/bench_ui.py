"""The web inspector's costs: first screen of a large recording, a frame by URL, a long
conversation, many live clients, live delay, and forwarding.

    python -m tests.perf.bench_ui [--frames 100000 1000000] [--repeat 5] [--live 200]
        [--conversation 100000] [--clients 50 --rate 1000 --seconds 10]
        [--forward-repeat 5] [--forward-count 300000] [--source CHECKOUT] [--against CHECKOUT]

Needs the ``ui`` and ``test`` extras and Debian's chromium (``.ci/install-chromium``).

- first screen: a recording of N frames (a realistic mix per prompt turn: the prompt, a run of
  10 thought chunks, a tool call and 3 updates, an agent stderr line, a run of 40 message
  chunks, the response: 57 frames, 9 rows) is written once; then per repeat a fresh
  ``acp-proxy ui`` process (cold caches), and a fresh page timed from ``goto`` of the
  connection's timeline to the first row in the DOM. Also timed: the first ``rows`` answer
  alone over HTTP (cold), a jump to the middle frame by URL (``f=SEQ``, a hash change in the
  open page) to the moment its row and its detail are on screen, another frame's URL in a new
  tab of the same browser (the first page still open), and the next frame's URL opened in a
  fresh browser context (nothing cached). For that fresh page also the moment, from its
  navigation's start, when the frame's row and detail were in the DOM and the browser had
  rendered them (the page's own time, without Playwright's waits; an observer installed before
  the page loads). The jump and the fresh context on a static page that draws the frame's row
  and title at once from the URL: the browser's and the waits' own cost here.
- conversation: one prompt answered by ``--conversation`` chunks, thought and message in turn
  (each its own item); per repeat a fresh server and page, timed from ``goto`` of the
  conversation to its first item, and to the moment the page says every frame is read.
- fan-out: ``--clients`` HTTP clients each behave like a page following a live timeline (the
  event stream with ``frames=0``, the newest rows read at most every 200 ms after a progress
  event) while a writer commits ``--rate`` frames a second; a probe in a process of its own
  times ``/api/connections`` every 250 ms; the server's CPU time over the run (from /proc).
- live delay: a writer commits one frame at a time (20 per second) into a running connection
  while a page follows its timeline; delay = when the page first showed the frame
  (``window.acpSeen``) minus the moment its commit returned. Median, p95, max.
- forwarding: tests/perf's client and agent stream ``--forward-count`` small frames through
  ``acp-proxy record``, with and without an ``acp-proxy ui`` serving the same database and a
  page following the live connection's timeline; repeats interleaved, the order alternating.
  Reported: MB/s medians and the median of the per-repeat ratio (with page / without).

- memory (``--memory``): per checkout, a page on each first-screen recording's timeline (a
  finding on every frame: it has no ``initialize``) until the rule check has reached its end;
  the server's resident memory idle and then, and the page's JavaScript heap.

``--source`` measures another checkout's ``acp-proxy ui`` (the code before a change) with the
same page and clients; ``--against`` measures a second checkout in the same run for the first
screen and the frame by URL, its repeats interleaved with this one's (the order alternating),
and prints the ratios: on a busy machine only figures from one run compare. Also printed: the
load average at the start and the end, and how long each server took to say its address
(outside the page's figures). ``--json FILE`` also writes every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import Frame
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.perf import client as perf_client
from tests.support import ui_server
from tests.support.ui_server import CHROMIUM, CHROMIUM_ARGS, REPO

SOURCE = [REPO]  # the checkout whose acp-proxy ui is measured (--source: another one)


def env() -> dict[str, str]:
    return ui_server.env(SOURCE[0])


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _update(body: dict[str, Any]) -> bytes:
    return _line({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": "s1", "update": body}})  # fmt: skip


def turn(n: int) -> Iterator[tuple[Direction, bytes]]:
    """One prompt turn: 57 frames, 9 timeline rows."""
    c2a, a2c, err = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT, Direction.AGENT_STDERR
    yield c2a, _line({"jsonrpc": "2.0", "id": n, "method": "session/prompt", "params": {
        "sessionId": "s1", "prompt": [{"type": "text", "text": f"question {n}"}]}})  # fmt: skip
    for i in range(10):
        yield a2c, _update({"sessionUpdate": "agent_thought_chunk", "messageId": f"t{n}",
                            "content": {"type": "text", "text": f"think {i} "}})  # fmt: skip
    yield a2c, _update({"sessionUpdate": "tool_call", "toolCallId": f"c{n}", "title": "Read",
                        "status": "pending"})  # fmt: skip
    for status in ("in_progress", "in_progress", "completed"):
        yield a2c, _update({"sessionUpdate": "tool_call_update", "toolCallId": f"c{n}",
                            "status": status})  # fmt: skip
    yield err, f"agent: turn {n} read a file\n".encode()
    for i in range(40):
        yield a2c, _update({"sessionUpdate": "agent_message_chunk", "messageId": f"m{n}",
                            "content": {"type": "text", "text": f"word{i} "}})  # fmt: skip
    yield a2c, _line({"jsonrpc": "2.0", "id": n, "result": {"stopReason": "end_turn"}})


def records(count: int) -> Iterator[FrameRecord]:
    observer = ConnectionObserver()
    offsets = dict.fromkeys(Direction, 0)
    made, n, clock = 0, 0, time.monotonic_ns()
    while made < count:
        for direction, raw in turn(n):
            clock += 20_000
            yield observer.observe(direction, Frame(raw, offsets[direction]), clock, clock)
            offsets[direction] += len(raw)
            made += 1
            if made == count:
                return
        n += 1


def write_records(path: Path, frames: Iterator[FrameRecord]) -> None:
    """One ended recording of ``frames`` at ``path``, committed in large batches."""
    db = connect(path, recorder=True)
    writer = RecordingWriter.start(db, NewConnection(["bench-agent"], "/", "bench", 1))
    batch: list[FrameRecord] = []
    for record in frames:
        batch.append(record)
        if len(batch) == 20_000:
            writer.append(batch)
            batch = []
    writer.append(batch)
    writer.update(status="exited", exit_code=0, ended_ns=time.time_ns())
    writer.checkpoint()
    db.close()


def make_recording(path: Path, count: int) -> None:
    write_records(path, records(count))


class Ui:
    """An ``acp-proxy ui`` process of the measured checkout on a database
    (tests/support/ui_server.py starts it, as it does for the tests)."""

    def __init__(self, db: Path, log: Path) -> None:
        t = time.perf_counter()
        served = ui_server.launch_ui(["--db", str(db)], log, source=SOURCE[0], timeout=60)
        self.start_ms = (time.perf_counter() - t) * 1000  # until it said its address
        self.served, self.process, self.url = served, served.process, served.url

    def close(self) -> None:
        ui_server.stop_ui(self.served)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


# --------------------------------------------------------------------------- first screen


def first_screen(
    browser: Any, folder: Path, count: int, repeat: int, sources: list[Path]
) -> dict[str, Any]:
    """Per repeat, each of ``sources`` in turn (the order alternating): see the module's doc."""
    db = folder / f"frames-{count}.sqlite"
    started = time.perf_counter()
    make_recording(db, count)
    built = time.perf_counter() - started
    names = ["page_ms", "api_ms", "jump_ms", "url_ms", "drawn_ms", "tab_ms", "start_ms"]
    measured: dict[str, dict[str, list[float]]] = {
        str(s): {name: [] for name in names} for s in sources
    }
    readable = {source: _readable_by(source, db) for source in sources}
    for index in range(repeat):
        order = sources if index % 2 == 0 else sources[::-1]
        for source in order:
            SOURCE[0] = source
            found = _first_screen_once(browser, folder, readable[source], count, index)
            for name in names:
                measured[str(source)][name] += found[name]
    SOURCE[0] = sources[0]
    return {"frames": count, "db_mb": db.stat().st_size / 1e6, "built_s": built,
            **measured[str(sources[0])], "sources": measured}  # fmt: skip


# What each format added that an older checkout's reader would refuse: dropped from a copy.
_ADDED_IN = {10: "DROP INDEX frame_by_request"}


def _readable_by(source: Path, db: Path) -> Path:
    """``db``, or a copy of it in the newest format ``source``'s code reads (the code before a
    change may read an older format only; what the newer formats added is left out)."""
    from acp_proxy.store.schema import SCHEMA_VERSION

    said = subprocess.run(
        [sys.executable, "-c", "from acp_proxy.store.schema import SCHEMA_VERSION as v; print(v)"],
        check=True, capture_output=True, text=True, env=ui_server.env(source), cwd=source,
    )  # fmt: skip
    theirs = int(said.stdout)
    if theirs >= SCHEMA_VERSION:
        return db
    copy = db.with_name(f"{db.stem}-format-{theirs}.sqlite")
    if not copy.exists():
        shutil.copy(db, copy)
        handle = sqlite3.connect(copy)
        for version in range(SCHEMA_VERSION, theirs, -1):
            if version not in _ADDED_IN:
                raise SystemExit(f"{source} reads format {theirs}: no way down from {version}")
            handle.execute(_ADDED_IN[version])
        handle.execute(f"PRAGMA user_version = {theirs}")
        handle.commit()
        handle.close()
    return copy


def _first_screen_once(
    browser: Any, folder: Path, db: Path, count: int, index: int
) -> dict[str, list[float]]:
    import urllib.request

    page_ms, api_ms, jump_ms, url_ms, tab_ms, start_ms = [], [], [], [], [], []
    drawn_ms: list[float] = []
    middle = count // 2
    ui = Ui(db, folder / f"ui-{count}-{index}.log")
    start_ms.append(ui.start_ms)
    try:
        # Alternate which comes first on the cold server: the page, or the bare API call.
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        page = context.new_page()
        if index % 2:
            t = time.perf_counter()
            with urllib.request.urlopen(ui.url + "api/connections/1/rows?limit=100") as r:
                r.read()
            api_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        page.goto(f"{ui.url}#view=timeline&c=1")
        page.wait_for_selector("#spacer .row", timeout=60_000)
        page_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        page.goto(f"{ui.url}#view=timeline&c=1&f={middle}")
        _wait_row(page, middle)
        jump_ms.append((time.perf_counter() - t) * 1000)
        # Another frame's link opened in a new tab of the same browser, the first one open.
        tab = context.new_page()
        t = time.perf_counter()
        tab.goto(f"{ui.url}#view=timeline&c=1&f={middle + 2}")
        _wait_row(tab, middle + 2)
        tab_ms.append((time.perf_counter() - t) * 1000)
        context.close()
        # The same link opened in a page of its own (a fresh browser context).
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        context.add_init_script(_DRAWN_MARK)
        page = context.new_page()
        t = time.perf_counter()
        page.goto(f"{ui.url}#view=timeline&c=1&f={middle + 1}")
        _wait_row(page, middle + 1)
        url_ms.append((time.perf_counter() - t) * 1000)
        drawn_ms.append(_drawn_ms(page))
        context.close()
    finally:
        ui.close()
    if not index % 2:
        ui = Ui(db, folder / f"ui-{count}-{index}-api.log")
        try:
            t = time.perf_counter()
            with urllib.request.urlopen(ui.url + "api/connections/1/rows?limit=100") as r:
                r.read()
            api_ms.append((time.perf_counter() - t) * 1000)
        finally:
            ui.close()
    return {"page_ms": page_ms, "api_ms": api_ms, "jump_ms": jump_ms, "url_ms": url_ms,
            "drawn_ms": drawn_ms, "tab_ms": tab_ms, "start_ms": start_ms}  # fmt: skip


_ROW_ON_SCREEN = """seq => [...document.querySelectorAll('#spacer .row')].some(
    r => Number(r.dataset.seq) <= seq && seq <= Number(r.dataset.last || r.dataset.seq))"""


_DETAIL_OF = """seq => { const h = document.querySelector('#detail h2');
    return h && h.textContent.startsWith('Frame ' + seq + ' '); }"""


# Installed in a fresh context before its page loads: the moment, from the navigation's start,
# that the frame named by the URL has its row and its detail in the DOM, and the end of the
# next frame the browser renders after that (what the user sees; Playwright's own waits and
# round trips are not in it).
_DRAWN_MARK = """(() => {
  const said = () => new URLSearchParams(location.hash.slice(1)).get("f");
  const observer = new MutationObserver(() => {
    const seq = Number(said());
    if (!seq || window.acpBenchDrawn !== undefined) return;
    const holds = (r) => +r.dataset.seq <= seq && seq <= +(r.dataset.last || r.dataset.seq);
    const h = document.querySelector("#detail h2");
    if (![...document.querySelectorAll("#spacer .row")].some(holds)
        || !h || !h.textContent.startsWith("Frame " + seq + " ")) return;
    window.acpBenchDrawn = null;
    observer.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.acpBenchDrawn = performance.now(); }, 0));
  });
  observer.observe(document, { subtree: true, childList: true, characterData: true });
})()"""


def _drawn_ms(page: Any) -> float:
    """When the page drew the frame named by its URL (``_DRAWN_MARK``), from the navigation's
    start."""
    return float(page.wait_for_function("() => window.acpBenchDrawn", timeout=60_000).json_value())


def _wait_row(page: Any, seq: int) -> None:
    """Until the row holding frame ``seq`` is on screen (a run holds the frames after its
    first) and the frame's detail is open."""
    page.wait_for_function(_ROW_ON_SCREEN, arg=seq, timeout=60_000)
    page.wait_for_function(_DETAIL_OF, arg=seq, timeout=60_000)


# --------------------------------------------------------------------------- the browser's floor

_FLOOR_PAGE = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><script>
function show() {
  const seq = new URLSearchParams(location.hash.slice(1)).get("f");
  const row = document.createElement("div");
  row.className = "row"; row.dataset.seq = seq;
  const title = document.createElement("h2");
  title.textContent = "Frame " + seq + " ";
  document.getElementById("spacer").replaceChildren(row);
  document.getElementById("detail").replaceChildren(title);
}
document.addEventListener("DOMContentLoaded", show);
addEventListener("hashchange", show);
</script></head><body><div id="spacer"></div><div id="detail"></div></body></html>"""


def floor(browser: Any, repeat: int) -> dict[str, list[float]]:
    """The same two measures on a page that needs nothing: one static file that draws the
    frame's row and title from the URL at once. What the browser, Playwright's waits and this
    machine cost whatever the inspector does (the least a frame by URL can take here)."""
    import http.server

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(_FLOOR_PAGE)))
            self.end_headers()
            self.wfile.write(_FLOOR_PAGE)

        def log_message(self, *args: Any) -> None:
            del args

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    jump_ms, url_ms, drawn_ms = [], [], []
    try:
        for _ in range(repeat):
            context = browser.new_context(viewport={"width": 1400, "height": 820})
            context.add_init_script(_DRAWN_MARK)
            page = context.new_page()
            t = time.perf_counter()
            page.goto(f"{url}#f=1")
            _wait_row(page, 1)
            url_ms.append((time.perf_counter() - t) * 1000)
            drawn_ms.append(_drawn_ms(page))
            t = time.perf_counter()
            page.goto(f"{url}#f=2")
            _wait_row(page, 2)
            jump_ms.append((time.perf_counter() - t) * 1000)
            context.close()
    finally:
        server.shutdown()
        server.server_close()
    return {"jump_ms": jump_ms, "url_ms": url_ms, "drawn_ms": drawn_ms}


# --------------------------------------------------------------------------- conversation


def alternating(count: int) -> Iterator[tuple[Direction, bytes]]:
    """One prompt turn whose answer is ``count`` chunks, thought and message in turn (every
    chunk a conversation item of its own)."""
    c2a, a2c = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
    yield c2a, _line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {
        "sessionId": "s1", "prompt": [{"type": "text", "text": "question"}]}})  # fmt: skip
    for i in range(count):
        kind = "agent_thought_chunk" if i % 2 == 0 else "agent_message_chunk"
        yield a2c, _update({"sessionUpdate": kind, "content": {"type": "text", "text": f"w{i} "}})
    yield a2c, _line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})


def write_exchange(path: Path, exchange: Iterator[tuple[Direction, bytes]]) -> None:
    write_records(path, _observed(exchange))


def _observed(exchange: Iterator[tuple[Direction, bytes]]) -> Iterator[FrameRecord]:
    observer = ConnectionObserver()
    offsets = dict.fromkeys(Direction, 0)
    clock = time.monotonic_ns()
    for direction, raw in exchange:
        clock += 20_000
        yield observer.observe(direction, Frame(raw, offsets[direction]), clock, clock)
        offsets[direction] += len(raw)


# (A page without the status line shows everything at once.)
_CONVERSATION_READ = """() => { const s = document.querySelector('#conversation-status');
    return !s || (s.textContent.includes('frames') && !s.textContent.includes('reading')); }"""


def conversation(browser: Any, folder: Path, chunks: int, repeat: int) -> dict[str, Any]:
    """A fresh server and page per repeat: ``goto`` of the conversation to its first item,
    and to the moment every frame is read (the page stops saying "reading")."""
    db = folder / f"conversation-{chunks}.sqlite"
    write_exchange(db, alternating(chunks))
    first_ms, whole_ms = [], []
    for index in range(repeat):
        ui = Ui(db, folder / f"ui-conversation-{index}.log")
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 820})
            page = context.new_page()
            t = time.perf_counter()
            page.goto(f"{ui.url}#view=conversation&c=1")
            page.wait_for_selector("#conversation .item", timeout=180_000)
            first_ms.append((time.perf_counter() - t) * 1000)
            page.wait_for_function(_CONVERSATION_READ, timeout=120_000)
            whole_ms.append((time.perf_counter() - t) * 1000)
            context.close()
        finally:
            ui.close()
    return {"chunks": chunks, "first_ms": first_ms, "whole_ms": whole_ms}


# --------------------------------------------------------------------------- memory

_CHECKING = "() => document.querySelector('#checking')?.textContent"


def _rss_mb(pid: int) -> float:
    for entry in Path(f"/proc/{pid}/status").read_text().splitlines():
        if entry.startswith("VmRSS:"):
            return int(entry.split()[1]) / 1024
    return float("nan")


def memory(browser: Any, folder: Path, count: int, sources: list[Path]) -> dict[str, Any]:
    """Per checkout: a page on the timeline of the first screen's recording (a finding on
    every frame: it has no ``initialize``) until the rule check has reached its end; then the
    server's resident memory and the page's JavaScript heap (after a collection)."""
    db = folder / f"frames-{count}.sqlite"
    found: dict[str, dict[str, float]] = {}
    for source in sources:
        SOURCE[0] = source
        ui = Ui(_readable_by(source, db), folder / f"ui-memory-{count}.log")
        try:
            idle_mb = _rss_mb(ui.process.pid)
            context = browser.new_context(viewport={"width": 1400, "height": 820})
            page = context.new_page()
            t = time.perf_counter()
            page.goto(f"{ui.url}#view=timeline&c=1")
            page.wait_for_function(f"() => ({_CHECKING})()", timeout=60_000)  # check begun
            page.wait_for_function(f"() => ({_CHECKING})() === ''", timeout=600_000, polling=500)
            checked_s = time.perf_counter() - t
            session = context.new_cdp_session(page)
            session.send("HeapProfiler.collectGarbage")
            heap = session.send("Runtime.getHeapUsage")["usedSize"] / 2**20
            found[str(source)] = {"idle_mb": idle_mb, "server_mb": _rss_mb(ui.process.pid),
                                  "page_mb": heap, "checked_s": checked_s}  # fmt: skip
            context.close()
        finally:
            ui.close()
    SOURCE[0] = sources[0]
    return {"frames": count, "sources": found}


# --------------------------------------------------------------------------- fan-out


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fan_out(folder: Path, clients: int, rate: int, seconds: float) -> dict[str, Any]:
    """``clients`` pages' worth of HTTP clients follow one live connection while a writer
    commits ``rate`` frames a second: each holds the event stream open (``frames=0``, as the
    page does) and reads the newest rows at most every 200 ms after a progress event, as the
    page does. Measured: ``/api/connections`` latency (a probe every 250 ms) and the server's
    CPU time over the run."""
    import asyncio

    import httpx

    db = folder / "fan-out.sqlite"
    handle = connect(db)
    writer = RecordingWriter.start(handle, NewConnection(["bench-agent"], "/", "bench", 1))
    source = records(10**9)
    writer.append([next(source) for _ in range(100)])
    ui = Ui(db, folder / "ui-fan-out.log")
    stop = threading.Event()

    def write() -> None:
        per_tick = max(1, rate // 20)
        next_at = time.monotonic()
        while not stop.is_set():
            writer.append([next(source) for _ in range(per_tick)])
            next_at += 0.05
            time.sleep(max(0.0, next_at - time.monotonic()))

    row_ms: list[float] = []

    async def follow(client: httpx.AsyncClient, done: asyncio.Event) -> int:
        reads, last_read, total = 0, 0.0, 0
        async with client.stream("GET", ui.url + "api/events?connection=1&frames=0") as events:
            async for line in events.aiter_lines():
                if done.is_set():
                    break
                if not line.startswith("event: progress"):
                    continue
                if time.monotonic() - last_read < 0.2:
                    continue
                last_read = time.monotonic()
                last = max(0, total - 1)
                window = {"offset": last - last % 100, "limit": 100}
                t = time.perf_counter()
                got = await client.get(ui.url + "api/connections/1/rows", params=window)
                row_ms.append((time.perf_counter() - t) * 1000)
                total = orjson.loads(got.content)["total"]
                reads += 1
        return reads

    async def run() -> dict[str, Any]:
        done = asyncio.Event()
        latencies: list[float] = []
        limits = httpx.Limits(max_connections=clients + 10)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            followers = [asyncio.create_task(follow(client, done)) for _ in range(clients)]
            await asyncio.sleep(2)  # every stream open
            cpu0, t0 = _cpu_s(ui.process.pid), time.monotonic()
            # The probe is a process of its own: this one is busy being fifty clients.
            prober = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "tests.perf.bench_ui", "--probe", ui.url, str(seconds),
                stdout=asyncio.subprocess.PIPE, env=env() | {"PYTHONPATH": str(REPO)},
            )  # fmt: skip
            out, _ = await prober.communicate()
            cpu = (_cpu_s(ui.process.pid) - cpu0) / (time.monotonic() - t0)
            latencies += json.loads(out)
            done.set()
            for task in followers:
                task.cancel()
            reads = [r for r in await asyncio.gather(*followers, return_exceptions=True)
                     if isinstance(r, int)]  # fmt: skip
        del reads
        return {"connections_ms": latencies, "server_cores": cpu, "row_reads": len(row_ms),
                "rows_ms": row_ms}  # fmt: skip

    thread = threading.Thread(target=write)
    thread.start()
    try:
        result = asyncio.run(run())
    finally:
        stop.set()
        thread.join()
        ui.close()
        handle.close()
    return {"clients": clients, "rate": rate, "seconds": seconds, **result}


# --------------------------------------------------------------------------- live delay


def live_delay(browser: Any, folder: Path, count: int) -> dict[str, Any]:
    db = folder / "live.sqlite"
    handle = connect(db)
    writer = RecordingWriter.start(handle, NewConnection(["bench-agent"], "/", "bench", 1))
    source = records(count)
    writer.append([next(source)])
    ui = Ui(db, folder / "ui-live.log")
    committed: dict[int, float] = {}
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 820})
        page = context.new_page()
        page.goto(f"{ui.url}#view=timeline&c={writer.connection_id}")
        page.wait_for_selector("#spacer .row")
        for record in source:
            writer.append([record])
            committed[record.seq] = time.time() * 1000
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            seen = page.evaluate("window.acpSeen")
            if all(str(s) in seen for s in committed):
                break
            time.sleep(0.05)
        context.close()
    finally:
        ui.close()
        handle.close()
    delays = [seen[str(s)] - at for s, at in committed.items() if str(s) in seen]
    return {"frames": len(committed), "shown": len(delays), "delays_ms": delays}


# --------------------------------------------------------------------------- forwarding


def _follow(browser: Any, ui: Ui, db: Path, stop: threading.Event, opened: list[float]) -> None:
    """Open a page on the first connection of ``db`` as soon as it exists; keep it open."""
    del browser  # the sync Playwright API belongs to the thread that started it
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        own = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=CHROMIUM_ARGS)  # fmt: skip
        page = own.new_page()
        page.goto(ui.url)
        while not stop.is_set():
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                row = con.execute("SELECT max(id) FROM connection").fetchone()
            finally:
                con.close()
            if row[0] is not None:
                page.goto(f"{ui.url}#view=timeline&c={row[0]}")
                opened.append(time.monotonic())
                break
            time.sleep(0.005)
        while not stop.wait(0.1):
            page.evaluate("1")
        own.close()


def forwarding(folder: Path, repeat: int, count: int) -> dict[str, Any]:
    results: dict[str, list[float]] = {"record": [], "record + page": []}
    ratios: list[float] = []
    for index in range(repeat):
        order = ["record", "record + page"] if index % 2 == 0 else ["record + page", "record"]
        this: dict[str, float] = {}
        for variant in order:
            run = folder / f"forward-{index}-{variant.replace(' ', '')}"
            run.mkdir()
            db = run / "r.sqlite"
            connect(db).close()
            ui, stop, opened = None, threading.Event(), list[float]()
            follower = None
            if variant != "record":
                ui = Ui(db, run / "ui.log")
                follower = threading.Thread(target=_follow, args=(None, ui, db, stop, opened))
                follower.start()
                time.sleep(3)  # the browser is up and the page open on the list
            argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--",
                    sys.executable, str(perf_client.AGENT_SCRIPT)]  # fmt: skip
            with (run / "stderr").open("wb") as sink:
                result = perf_client.run_stream(argv, "small", count, stderr=sink)
            stop.set()
            if follower is not None:
                follower.join()
            if ui is not None:
                ui.close()
            if not result.ok or result.mbps is None:
                raise SystemExit(f"{variant}: the run failed: {result.error}")
            this[variant] = result.mbps
            results[variant].append(result.mbps)
            if variant != "record" and not opened:
                raise SystemExit("the page never opened on the live connection")
        ratios.append(this["record + page"] / this["record"])
    return {"count": count, "mbps": results, "ratios": ratios}


# --------------------------------------------------------------------------- main


def probe(url: str, seconds: float) -> list[float]:
    """``/api/connections`` latencies, one request every 250 ms for ``seconds``."""
    import httpx

    out: list[float] = []
    end = time.monotonic() + seconds
    with httpx.Client(timeout=60) as client:
        while time.monotonic() < end:
            t = time.perf_counter()
            client.get(url + "api/connections").raise_for_status()
            out.append((time.perf_counter() - t) * 1000)
            time.sleep(0.25)
    return out


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--probe"]:
        print(json.dumps(probe(sys.argv[2], float(sys.argv[3]))))
        return 0
    parser = argparse.ArgumentParser(prog="python -m tests.perf.bench_ui", description=__doc__)
    parser.add_argument("--frames", type=int, nargs="*", default=[100_000, 1_000_000],
                        help="recording sizes for the first screen (none: skip it)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--live", type=int, default=200, help="frames (0: skip)")
    parser.add_argument("--forward-repeat", type=int, default=5)
    parser.add_argument("--forward-count", type=int, default=300_000)
    parser.add_argument("--conversation", type=int, default=100_000,
                        help="chunks in the conversation's recording (0: skip)")  # fmt: skip
    parser.add_argument("--memory", action="store_true",
                        help="memory of the server and the page once each --frames recording "
                             "is checked to its end")  # fmt: skip
    parser.add_argument("--clients", type=int, default=50, help="fan-out clients (0: skip)")
    parser.add_argument("--rate", type=int, default=1000, help="fan-out frames per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="fan-out duration")
    parser.add_argument("--source", type=Path, default=REPO,
                        help="the checkout whose acp-proxy ui is measured")  # fmt: skip
    parser.add_argument("--against", type=Path,
                        help="another checkout measured in the same run (first screen, frame "
                             "by URL), repeats interleaved: the code before a change")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    SOURCE[0] = args.source.resolve()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="acp-ui-bench-"))
    report: dict[str, Any] = {"load": os.getloadavg()}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=CHROMIUM_ARGS)  # fmt: skip
            sources = [SOURCE[0], *([args.against.resolve()] if args.against else [])]
            report["first_screen"] = [
                first_screen(browser, folder, n, args.repeat, sources) for n in args.frames
            ]
            if args.memory:
                report["memory"] = [memory(browser, folder, n, sources) for n in args.frames]
            if args.frames:
                report["floor"] = floor(browser, args.repeat)
            if args.conversation:
                report["conversation"] = conversation(browser, folder, args.conversation,
                                                      args.repeat)  # fmt: skip
            if args.live:
                report["live"] = live_delay(browser, folder, args.live)
            browser.close()
        if args.clients:
            report["fan_out"] = fan_out(folder, args.clients, args.rate, args.seconds)
        if args.forward_repeat:
            report["forwarding"] = forwarding(folder, args.forward_repeat, args.forward_count)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report["load_after"] = os.getloadavg()
    print(f"load average at the start {report['load'][0]:.2f}, at the end "
          f"{report['load_after'][0]:.2f} (1 min; {os.cpu_count()} cores)")  # fmt: skip
    if report["first_screen"]:
        sources = list(report["first_screen"][0]["sources"])
        print(f"\nmedians of {args.repeat} (a fresh server and browser context each)"
              + (f"; `{sources[1]}` measured in the same run, repeats interleaved"
                 if len(sources) > 1 else ""))  # fmt: skip
        print("\n| frames | database | checkout | first screen (page) | first rows (API) "
              "| jump to middle | middle frame by URL (new page) | drawn, in that page "
              "| the same, a new tab | server start to address |")  # fmt: skip
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    keys = ("page_ms", "api_ms", "jump_ms", "url_ms", "drawn_ms", "tab_ms", "start_ms")
    for part in report["first_screen"]:
        figures = {}
        for source, found in part["sources"].items():
            figures[source] = [median(found[k]) for k in keys]
            name = "this" if source == str(SOURCE[0]) else Path(source).name
            print(f"| {part['frames']:,} | {part['db_mb']:.0f} MB | {name} | "
                  + " | ".join(f"{x:.0f} ms" for x in figures[source]) + " |")  # fmt: skip
        if len(figures) == 2:
            this, other = figures.values()
            print(f"| {part['frames']:,} | | ratio this / other | "
                  + " | ".join(f"{a / b:.2f}" for a, b in zip(this, other, strict=True))
                  + " |")  # fmt: skip
    if "floor" in report:
        f = report["floor"]
        print(f"| | | a static page (the browser's floor) | | | {median(f['jump_ms']):.0f} ms "
              f"| {median(f['url_ms']):.0f} ms | {median(f['drawn_ms']):.0f} ms | | |")  # fmt: skip
    for part in report.get("memory", []):
        for source, m in part["sources"].items():
            name = "this" if source == str(SOURCE[0]) else Path(source).name
            print(f"\nmemory, {part['frames']:,} frames checked to the end ({name}, "
                  f"{m['checked_s']:.0f} s): server {m['idle_mb']:.0f} MB idle, "
                  f"{m['server_mb']:.0f} MB checked; page heap {m['page_mb']:.0f} MB")  # fmt: skip
    if "conversation" in report:
        c = report["conversation"]
        print(
            f"\nconversation of {c['chunks']:,} alternating chunks: first items "
            f"{median(c['first_ms']):.0f} ms, every frame read {median(c['whole_ms']):.0f} ms"
        )
    if "fan_out" in report:
        f = report["fan_out"]
        print(
            f"\n{f['clients']} clients, {f['rate']} frames/s for {f['seconds']:.0f} s: "
            f"/api/connections p50 {median(f['connections_ms']):.0f} ms, p95 "
            f"{percentile(f['connections_ms'], 95):.0f} ms ({len(f['connections_ms'])} probes); "
            f"server {f['server_cores']:.2f} cores; {f['row_reads']} row reads, p50 "
            f"{median(f['rows_ms']):.0f} ms"
        )
    if "live" in report:
        live = report["live"]["delays_ms"]
        print(f"\nlive delay, commit to page, {len(live)} frames: median {median(live):.0f} ms, "
              f"p95 {percentile(live, 95):.0f} ms, max {max(live):.0f} ms")  # fmt: skip
    if "forwarding" in report:
        f = report["forwarding"]
        print(f"\nforwarding {f['count']:,} small frames, {len(f['ratios'])} repeats: "
              f"record {median(f['mbps']['record']):.1f} MB/s, record + page "
              f"{median(f['mbps']['record + page']):.1f} MB/s, ratio {median(f['ratios']):.3f} "
              f"(per repeat: {', '.join(f'{r:.3f}' for r in f['ratios'])})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
