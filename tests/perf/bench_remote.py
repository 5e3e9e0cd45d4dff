"""What ``record --listen`` costs a remote conversation: the same client and agent, direct and
through the proxy, interleaved in one run.

    python -m tests.perf.bench_remote [--repeat 5] [--pings 2000] [--updates 100000]
                                      [--connections 100] [--per-connection 1000] [--otlp]
                                      [--stream-blocks 3] [--baseline CHECKOUT]
                                      [--only PART]...

The agent is tests/support/tools/remote_agent.py (raw ASGI on hypercorn, so that the agent
costs little); the client runs here, on httpx (Streamable HTTP) and websockets. Per repeat, for
``direct`` (the client talks to the agent) and ``acp-proxy`` (``record --listen 127.0.0.1:0
--upstream URL`` between them, one listener and a fresh database per repeat), alternating
(ping blocks of 200 round trips, then each stream and the concurrent run, in an order that
rotates from repeat to repeat):

- ``ping-http`` / ``ping-ws``: ``--pings`` sequential round trips of a small request and its
  answer (HTTP: POST, 202, the answer on the connection's event stream; WS: one message each
  way); p50 and p99 per message.
- ``stream-http`` / ``stream-ws``: one request answered by ``--updates`` ``session/update``
  notifications of 100 bytes of text; throughput of the notifications' bytes at the client,
  over ``--stream-blocks`` streams per mode (the modes alternating stream by stream, each
  block in the other order); and the listener's own CPU time per 100,000 updates (from
  /proc: a cost that does not depend on how busy the machine is).
- ``concurrent``: ``--connections`` Streamable HTTP connections at once, each streaming
  ``--per-connection`` notifications; the listener's peak resident memory above its idle
  memory, per connection, and its recorder process's.

With ``--otlp``, a third mode, ``acp-proxy --otlp`` (a second listener of its own, sending its
spans live to an OTLP receiver in a process of its own, tests/support/otlp_receiver.py), takes
its turn in every alternation, and the report adds its figures and their ratio to
``acp-proxy``'s in the same repeat: what live export costs forwarding.

``--only PART`` (repeatable: ``ping``, ``stream-http``, ``stream-ws``, ``concurrent``) runs
those parts alone, e.g. ``--only stream-ws`` to measure one stream's cost quickly; the report
then has their rows only.

With ``--baseline CHECKOUT``, ``acp-proxy before`` (a listener run from another checkout's
``acp_proxy`` package with this interpreter, e.g. ``git worktree add /tmp/before COMMIT``)
takes its turn too, and the report adds both listeners against direct in the same repeats:
before and after a change in one run.

Every proxy run's database is checked: every message recorded, none lost. Prints medians over
repeats, ratios and differences against direct taken within each repeat. Not run by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
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

import httpx

REPO = Path(__file__).resolve().parents[2]
INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
JSON = {"content-type": "application/json"}
BLOCK = 200  # round trips per ping block; direct and proxied blocks alternate


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def _env(repo: Path = REPO) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(repo)}


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def agent() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tests/support/tools/remote_agent.py"), str(port)], env=_env(),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_port(port)
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(20)


class Listener:
    def __init__(self, upstream: str, db: Path, *options: str, repo: Path = REPO) -> None:
        argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--listen",
                "127.0.0.1:0", "--upstream", upstream, *options]  # fmt: skip
        # Run from the checkout: ``-m`` puts the working directory first on the path, so a
        # listener started from another directory would import that directory's package.
        self.process = subprocess.Popen(
            argv, env=_env(repo), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=repo
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline().decode()
        if "listening on " not in line:
            raise RuntimeError(f"the listener said {line!r}")
        self.url = line.split("listening on ", 1)[1].strip()
        self._rest = threading.Thread(target=self.process.stderr.read, daemon=True)
        self._rest.start()
        self.recorder = self.recorder_pid()

    def recorder_pid(self) -> int:
        pid = self.process.pid
        return int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])

    def stop(self) -> None:
        """Stop the listener, then wait for its recorder to commit everything (it may go on
        after the listener's exit when it is behind)."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(60)
        deadline = time.monotonic() + 300
        while Path(f"/proc/{self.recorder}").exists() and time.monotonic() < deadline:
            status = Path(f"/proc/{self.recorder}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if status == "Z":
                break
            time.sleep(0.05)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _request(method: str, rpc_id: int, **params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}).encode()


class HttpConnection:
    """One Streamable HTTP connection: POST messages, read answers off its event stream."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url
        self.events: asyncio.Queue[bytes] = asyncio.Queue()
        self.bytes = 0
        self._task: asyncio.Task[None] | None = None
        self.cid = ""

    async def open(self) -> None:
        answer = await self.client.post(self.url, content=INIT, headers=JSON)
        self.cid = answer.headers["acp-connection-id"]
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        headers = {"acp-connection-id": self.cid, "accept": "text/event-stream"}
        async with self.client.stream("GET", self.url, headers=headers) as response:
            pending = b""
            async for chunk in response.aiter_raw():
                pending += chunk
                *events, pending = pending.split(b"\n\n")
                for event in events:
                    data = event[6:]
                    self.bytes += len(data)
                    self.events.put_nowait(data)

    async def post(self, body: bytes) -> None:
        answer = await self.client.post(
            self.url, content=body, headers={**JSON, "acp-connection-id": self.cid}
        )
        assert answer.status_code == 202, answer.status_code

    async def until_answer(self, rpc_id: int) -> None:
        """Wait for the answer; a stream that ended first fails the run instead of hanging."""
        marker = f'"id": {rpc_id}, "result"'.encode()
        while True:
            try:
                event = await asyncio.wait_for(self.events.get(), 1.0)
            except TimeoutError:
                if self._task is not None and self._task.done():
                    raise RuntimeError(f"the event stream of {self.cid} ended early") from None
                continue
            if marker in event:
                return

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        await self.client.request("DELETE", self.url, headers={"acp-connection-id": self.cid})


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=httpx.Timeout(None), limits=httpx.Limits(max_connections=None))


async def ping_http(url: str, count: int) -> list[int]:
    async with _client() as client:
        connection = HttpConnection(client, url)
        await connection.open()
        times = []
        for n in range(1, count + 1):
            started = time.perf_counter_ns()
            await connection.post(_request("bench/ping", n))
            await connection.until_answer(n)
            times.append(time.perf_counter_ns() - started)
        await connection.close()
    return times


async def stream_http(url: str, updates: int) -> tuple[float, int]:
    async with _client() as client:
        connection = HttpConnection(client, url)
        await connection.open()
        started = time.perf_counter()
        await connection.post(_request("bench/stream", 1, count=updates, size=100))
        await connection.until_answer(1)
        elapsed = time.perf_counter() - started
        received = connection.bytes
        await connection.close()
    return elapsed, received


def _ws(url: str) -> str:
    return "ws" + url[len("http") :]


async def ping_ws(url: str, count: int) -> list[int]:
    from websockets.asyncio.client import connect

    async with connect(_ws(url), compression=None, max_size=None) as ws:
        times = []
        for n in range(1, count + 1):
            started = time.perf_counter_ns()
            await ws.send(_request("bench/ping", n).decode())
            await ws.recv()
            times.append(time.perf_counter_ns() - started)
    return times


async def stream_ws(url: str, updates: int) -> tuple[float, int]:
    from websockets.asyncio.client import connect

    async with connect(_ws(url), compression=None, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(_request("bench/stream", 1, count=updates, size=100).decode())
        received = 0
        for _ in range(updates + 1):
            received += len(await ws.recv())
        elapsed = time.perf_counter() - started
    return elapsed, received


async def concurrent(url: str, connections: int, per_connection: int) -> float:
    async with _client() as client:
        opened = [HttpConnection(client, url) for _ in range(connections)]
        await asyncio.gather(*(c.open() for c in opened))
        started = time.perf_counter()
        await asyncio.gather(
            *(c.post(_request("bench/stream", 1, count=per_connection, size=100)) for c in opened)
        )
        await asyncio.gather(*(c.until_answer(1) for c in opened))
        elapsed = time.perf_counter() - started
        await asyncio.gather(*(c.close() for c in opened))
    return elapsed


def _each(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def _ratio(values: list[float]) -> str:
    """The median ratio, then each repeat's."""
    return f"{statistics.median(values):.2f}x ({_each(values)})"


def _percentile(values: list[int], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(fraction * len(ordered)) - 1)] / 1000.0  # microseconds


def _check(db: Path, expected_frames: int) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        frames, lost = conn.execute(
            "SELECT sum(frames_c2a + frames_a2c), sum(frames_lost) FROM connection"
        ).fetchone()
    if frames != expected_frames or lost:
        raise RuntimeError(
            f"{db}: {frames} frames recorded, {expected_frames} expected, {lost} lost"
        )


class Sampler:
    """The peak resident memory of some processes, sampled every 20 ms."""

    def __init__(self, pids: list[int]) -> None:
        self.peaks = {pid: rss_kib(pid) for pid in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for pid in self.peaks:
                with contextlib.suppress(OSError):
                    self.peaks[pid] = max(self.peaks[pid], rss_kib(pid))

    def stop(self) -> dict[int, int]:
        self._stop.set()
        self._thread.join()
        return self.peaks


OTLP_MODE = "acp-proxy --otlp"
PARTS = ("ping", "stream-http", "stream-ws", "concurrent")
BASELINE_MODE = "acp-proxy before"


@contextlib.contextmanager
def otlp_collector() -> Iterator[str]:
    """An OTLP receiver in a process of its own (it decodes every span, as a collector would)."""
    with tempfile.TemporaryDirectory() as scratch:
        said = Path(scratch) / "port"
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.otlp_receiver", str(said)], env=_env(),
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 20
            while not (said.exists() and said.read_text()) and time.monotonic() < deadline:
                time.sleep(0.02)
            yield f"http://127.0.0.1:{said.read_text().split()[0]}"
        finally:
            process.terminate()
            process.wait(20)
            got = said.read_text().split()
            print(f"the OTLP receiver got {got[1] if len(got) > 1 else '?'} spans", file=sys.stderr)


def one_repeat(
    upstream: str, args: argparse.Namespace, order: list[str], otlp: str | None = None
) -> dict[str, Any]:
    """One repeat: one listener per proxied mode; direct and proxied runs alternate, ping
    blocks of ``BLOCK`` round trips at a time, so all see the same moments of a busy machine."""
    results: dict[str, Any] = {mode: {"ping-http": [], "ping-ws": []} for mode in order}
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "r.sqlite"
        listener = Listener(upstream, db)
        urls = {"direct": upstream, "acp-proxy": listener.url}
        listeners = {"acp-proxy": listener}
        exporting = None
        if otlp is not None:
            exporting = Listener(upstream, Path(scratch) / "otlp.sqlite", "--otlp", otlp)
            urls[OTLP_MODE] = exporting.url
            listeners[OTLP_MODE] = exporting
        baseline = None
        if args.baseline is not None:
            baseline = Listener(upstream, Path(scratch) / "before.sqlite", repo=args.baseline)
            urls[BASELINE_MODE] = baseline.url
            listeners[BASELINE_MODE] = baseline
        blocks = 0
        parts = set(args.only or PARTS)
        pings = args.pings if "ping" in parts else 0
        profiles = [(p, s) for p, s in (("http", stream_http), ("ws", stream_ws))
                    if f"stream-{p}" in parts]  # fmt: skip
        try:
            for start in range(0, pings, BLOCK):
                count = min(BLOCK, pings - start)
                blocks += 1
                for mode in order if blocks % 2 else order[::-1]:
                    results[mode]["ping-http"] += asyncio.run(ping_http(urls[mode], count))
                    results[mode]["ping-ws"] += asyncio.run(ping_ws(urls[mode], count))
            for block in range(args.stream_blocks):
                for mode in order if block % 2 == 0 else order[::-1]:
                    for profile, stream in profiles:
                        proxy = listeners.get(mode)
                        used = cpu_seconds(proxy.process.pid) if proxy else 0.0
                        seconds, size = asyncio.run(stream(urls[mode], args.updates))
                        used = cpu_seconds(proxy.process.pid) - used if proxy else 0.0
                        total = results[mode].setdefault(f"stream-{profile}", [0.0, 0])
                        total[0] += seconds
                        total[1] += size
                        key = f"listener-cpu-100k-{profile}"
                        cpu = results[mode].setdefault(key, 0.0) if proxy else 0.0
                        per_100k = used / (args.stream_blocks * args.updates) * 1e5
                        if proxy:
                            results[mode][key] = cpu + per_100k
            for mode in order if "concurrent" in parts else []:
                serving = listeners.get(mode, listener)  # direct: the listener stands idle
                pids = [serving.process.pid, serving.recorder]
                idle = {pid: rss_kib(pid) for pid in pids}
                sampler = Sampler(pids)
                try:
                    results[mode]["concurrent"] = asyncio.run(
                        concurrent(urls[mode], args.connections, args.per_connection)
                    )
                except (RuntimeError, httpx.HTTPError) as error:
                    if mode != BASELINE_MODE:
                        raise
                    # The baseline may have the faults this checkout fixed: say it, go on.
                    print(f"{BASELINE_MODE}: the concurrent run failed ({error!r})",
                          file=sys.stderr)  # fmt: skip
                    results[mode]["concurrent"] = math.nan
                peaks = sampler.stop()
                if mode in listeners:
                    results[mode]["memory"] = {
                        "listener_idle_kib": idle[pids[0]], "listener_peak_kib": peaks[pids[0]],
                        "recorder_idle_kib": idle[pids[1]], "recorder_peak_kib": peaks[pids[1]],
                    }  # fmt: skip
        finally:
            listener.stop()
            if exporting is not None:
                exporting.stop()
            if baseline is not None:
                baseline.stop()
        # HTTP: each ping block opens a connection (initialize and its answer), then each
        # request and its answer (a stream's answer is its updates and the result); WS sends
        # no initialize.
        expected = 2 * blocks + 2 * pings + 2 * pings
        expected += args.stream_blocks * (2 + 2 + args.updates) * ("stream-http" in parts)
        expected += args.stream_blocks * (2 + args.updates) * ("stream-ws" in parts)
        expected += args.connections * (2 + 2 + args.per_connection) * ("concurrent" in parts)
        _check(db, expected)
        if exporting is not None:
            _check(Path(scratch) / "otlp.sqlite", expected)
        if baseline is not None and not math.isnan(results[BASELINE_MODE].get("concurrent", 0)):
            _check(Path(scratch) / "before.sqlite", expected)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pings", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--per-connection", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument(
        "--otlp", action="store_true", help=f"also run {OTLP_MODE!r} (live export to a receiver)"
    )
    parser.add_argument(
        "--stream-blocks", type=int, default=3,
        help="each stream runs this many times per mode and repeat, the modes alternating",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", type=Path, metavar="CHECKOUT",
        help=f"also run {BASELINE_MODE!r}: a listener from another checkout of acp-proxy (its "
        "acp_proxy package, this interpreter), e.g. `git worktree add /tmp/before <commit>`",
    )  # fmt: skip
    parser.add_argument(
        "--only", action="append", choices=PARTS, metavar="PART",
        help=f"run only this part (repeatable; one of {', '.join(PARTS)})",
    )  # fmt: skip
    args = parser.parse_args()
    repeats = []
    modes = ["direct", "acp-proxy", *([OTLP_MODE] if args.otlp else [])]
    modes += [BASELINE_MODE] if args.baseline is not None else []
    with agent() as upstream, otlp_collector() if args.otlp else contextlib.nullcontext() as otlp:
        for n in range(args.repeat):
            order = modes[n % len(modes) :] + modes[: n % len(modes)]  # rotates per repeat
            repeats.append(one_repeat(upstream, args, order, otlp))
            print(f"repeat {n + 1}/{args.repeat} done", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(repeats))
    print(report(repeats, args))


def report(repeats: list[dict[str, Any]], args: argparse.Namespace) -> str:
    median = statistics.median
    lines = [
        f"{args.repeat} repeats, interleaved; medians over repeats (per repeat: direct and "
        "acp-proxy in the same run)",
        "",
        "| figure | direct | acp-proxy | acp-proxy - direct (or ratio) |",
        "|---|---|---|---|",
    ]
    first = repeats[0]["acp-proxy"]
    for profile in ("http", "ws") if first["ping-http"] else ():
        for name, fraction in (("p50", 0.5), ("p99", 0.99)):
            d = [_percentile(r["direct"][f"ping-{profile}"], fraction) for r in repeats]
            p = [_percentile(r["acp-proxy"][f"ping-{profile}"], fraction) for r in repeats]
            added = [b - a for a, b in zip(d, p, strict=True)]
            lines.append(
                f"| round trip {profile} {name} (us) | {median(d):.0f} | {median(p):.0f} | "
                f"{median(added):+.0f} us |"
            )
    for profile in [p for p in ("http", "ws") if f"stream-{p}" in first]:
        d = [r["direct"][f"stream-{profile}"][1] / r["direct"][f"stream-{profile}"][0] / 1e6
             for r in repeats]  # fmt: skip
        p = [r["acp-proxy"][f"stream-{profile}"][1] / r["acp-proxy"][f"stream-{profile}"][0] / 1e6
             for r in repeats]  # fmt: skip
        ratios = [b / a for a, b in zip(d, p, strict=True)]
        lines.append(
            f"| {args.updates:,} updates over {profile} (MB/s at the client) | {median(d):.1f} | "
            f"{median(p):.1f} | {median(ratios):.2f}x (per repeat {_each(ratios)}) |"
        )
    if "concurrent" in first:
        d = [r["direct"]["concurrent"] for r in repeats]
        p = [r["acp-proxy"]["concurrent"] for r in repeats]
        ratios = [a / b for a, b in zip(d, p, strict=True)]
        lines.append(
            f"| {args.connections} connections x {args.per_connection:,} updates (s) | "
            f"{median(d):.2f} | {median(p):.2f} | {median(ratios):.2f}x (per repeat "
            f"{_each(ratios)}) |"
        )
    for profile in [p for p in ("http", "ws") if f"listener-cpu-100k-{p}" in first]:
        per_100k = [r["acp-proxy"][f"listener-cpu-100k-{profile}"] for r in repeats]
        lines.append(
            f"| listener CPU per 100,000 updates over {profile} (s) | | {median(per_100k):.2f} | |"
        )
    memory = [r["acp-proxy"]["memory"] for r in repeats if "memory" in r["acp-proxy"]]
    per = [(m["listener_peak_kib"] - m["listener_idle_kib"]) / args.connections for m in memory]
    rec = [(m["recorder_peak_kib"] - m["recorder_idle_kib"]) / args.connections for m in memory]
    lines.append("")
    if memory:
        lines.append(
            f"listener idle RSS {median([m['listener_idle_kib'] for m in memory]) / 1024:.1f} MiB, "
            f"peak {median([m['listener_peak_kib'] for m in memory]) / 1024:.1f} MiB: "
            f"{median(per):.0f} KiB per connection; recorder process idle "
            f"{median([m['recorder_idle_kib'] for m in memory]) / 1024:.1f} MiB, peak "
            f"{median([m['recorder_peak_kib'] for m in memory]) / 1024:.1f} MiB "
            f"({median(rec):.0f} KiB per connection). "
        )
    else:
        lines.append("")
    lines[-1] += "Every proxy run's database held every message, none lost."
    if OTLP_MODE in repeats[0]:
        lines += ["", *otlp_report(repeats, args)]
    if BASELINE_MODE in repeats[0]:
        lines += ["", *baseline_report(repeats, args)]
    return "\n".join(lines)


def _figures(result: dict[str, Any], connections: int = 1) -> dict[str, float]:
    """One mode's figures of one repeat: round trips in us, streams in MB/s, the concurrent
    run in seconds."""
    figures = {
        f"round trip {profile} {name} (us)": _percentile(result[f"ping-{profile}"], q)
        for profile in ("http", "ws")
        for name, q in (("p50", 0.5), ("p99", 0.99))
        if result[f"ping-{profile}"]
    }
    for profile in [p for p in ("http", "ws") if f"stream-{p}" in result]:
        seconds, size = result[f"stream-{profile}"]
        figures[f"updates over {profile} (MB/s at the client)"] = size / seconds / 1e6
    if "concurrent" in result:
        figures["concurrent connections (s)"] = result["concurrent"]
    if "memory" in result:
        memory = result["memory"]
        for process in ("listener", "recorder"):
            grown = memory[f"{process}_peak_kib"] - memory[f"{process}_idle_kib"]
            figures[f"{process} memory per concurrent connection (KiB)"] = grown / connections
    for profile in ("http", "ws"):
        if f"listener-cpu-100k-{profile}" in result:
            figures[f"listener CPU per 100,000 updates over {profile} (s)"] = result[
                f"listener-cpu-100k-{profile}"
            ]
    return figures


def baseline_report(repeats: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """This checkout's listener against the one of ``--baseline``, both against direct."""
    median = statistics.median
    lines = [
        f"This checkout ('acp-proxy') against --baseline {args.baseline} ({BASELINE_MODE!r}), "
        "same repeats:",
        "",
        f"| figure | direct | {BASELINE_MODE} | acp-proxy | {BASELINE_MODE} vs direct | "
        "acp-proxy vs direct |",
        "|---|---|---|---|---|---|",
    ]
    modes = ("direct", BASELINE_MODE, "acp-proxy")
    per_repeat = [{mode: _figures(r[mode], args.connections) for mode in modes}
                  for r in repeats]  # fmt: skip
    for name in per_repeat[0][BASELINE_MODE]:
        d, b, p = ([r[mode].get(name, 0.0) for r in per_repeat] for mode in
                   ("direct", BASELINE_MODE, "acp-proxy"))  # fmt: skip
        digits = 0 if "(us)" in name or "(KiB)" in name else 2
        if "(us)" in name:
            against = [f"{median([y - x for x, y in zip(d, v, strict=True)]):+.0f} us"
                       for v in (b, p)]  # fmt: skip
        elif "MB/s" in name:
            against = [_ratio([y / x for x, y in zip(d, v, strict=True)]) for v in (b, p)]
        elif "CPU" in name or "memory" in name:
            against = ["", ""]
        else:  # seconds: direct's time over the proxy's, above 1 is faster
            against = [_ratio([x / y for x, y in zip(d, v, strict=True)]) for v in (b, p)]
        shown = name.replace("concurrent connections",
                             f"{args.connections} x {args.per_connection:,} updates")  # fmt: skip
        if name.startswith("updates over"):
            shown = f"{args.updates:,} {name}"
        failed = sum(math.isnan(value) for value in b)
        if failed:  # the baseline's concurrent runs that failed are left out, and said
            kept = [i for i, value in enumerate(b) if not math.isnan(value)] or [0]
            d, b, p = ([v[i] for i in kept] for v in (d, b, p))
            shown += f" (before failed in {failed} of {len(repeats)} repeats)"
            if "(s)" in name:
                against[0] = f"{median([x / y for x, y in zip(d, b, strict=True)]):.2f}x"
        direct_shown = "" if "CPU" in name or "memory" in name else f"{median(d):.{digits}f}"
        lines.append(
            f"| {shown} | {direct_shown} | {median(b):.{digits}f} | {median(p):.{digits}f} | "
            f"{against[0]} | {against[1]} |"
        )
    lines += ["", "Against direct per repeat, then the median: round trips as time added, "
              "streams as throughput ratios, the concurrent run as direct's time over the "
              "proxy's (above 1 is faster than direct)."]  # fmt: skip
    return lines


def otlp_report(repeats: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """``acp-proxy --otlp`` against ``acp-proxy``, both against direct, ratios per repeat."""
    median = statistics.median
    lines = [
        f"Live OTLP export ({OTLP_MODE!r}: a listener of its own, its spans sent to an OTLP "
        "receiver process), same repeats:",
        "",
        f"| figure | direct | acp-proxy | {OTLP_MODE} | {OTLP_MODE} / acp-proxy |",
        "|---|---|---|---|---|",
    ]
    per_repeat = [{mode: _figures(r[mode]) for mode in ("direct", "acp-proxy", OTLP_MODE)}
                  for r in repeats]  # fmt: skip
    for name in per_repeat[0]["direct"]:
        d, p, o = ([r[mode][name] for r in per_repeat] for mode in
                   ("direct", "acp-proxy", OTLP_MODE))  # fmt: skip
        ratios = [b / a for a, b in zip(p, o, strict=True)]
        shown = name.replace("updates", f"{args.updates:,} updates").replace(
            "concurrent connections", f"{args.connections} x {args.per_connection:,} updates"
        )
        digits = 0 if "(us)" in name else 2
        lines.append(
            f"| {shown} | {median(d):.{digits}f} | {median(p):.{digits}f} | "
            f"{median(o):.{digits}f} | {median(ratios):.2f}x |"
        )
    lines += ["", "Ratios per repeat, then the median: above 1 is slower for times (us, s), "
              "faster for MB/s."]  # fmt: skip
    return lines


if __name__ == "__main__":
    main()
