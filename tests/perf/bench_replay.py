"""Benchmark of ``acp-proxy replay`` to a sink, as fast as possible (``--timing asap``).

    python -m tests.perf.bench_replay [--frames 100000] [--repeat 3] [--dir DIR]

Builds, before any timing, a recording of one conversation: initialize, session/new, one
prompt answered by ``--frames`` agent frames in all (186-byte ``agent_message_chunk`` updates,
one ``notice`` in every 100 to exercise dropping, and the prompt response), written through
the observer and the store as ``record`` writes them. Then, per repeat:

* ``command``: the whole ``python -m acp_proxy replay --db DB 1``, the client's three requests
  from a file on stdin and stdout to /dev/null, timed from spawn to exit (interpreter start-up,
  imports, reading the database, building the script, replaying, writing, the summary);
* ``to-pipe``: the same command with stdout a pipe this process reads (what a client gives
  it), so that the writes are paced by a reader;
* its parts, in this process: ``load`` (store_replay.load_script: the SQLite query), ``build``
  (replay_script.build), ``replay`` (the engine sending every frame into memory).

Prints frames/s (recorded frames / seconds) for each, the median over repeats. The output of
the command is checked: it must be exactly the recorded agent bytes less the notices.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import Frame
from acp_proxy.replay.engine import Options, Replay
from acp_proxy.replay.match import Matcher
from acp_proxy.replay.script import build
from acp_proxy.store.database import connect
from acp_proxy.store.replay_reads import load_script
from acp_proxy.store.writer import NewConnection, RecordingWriter

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


def _line(message: Mapping[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def conversation(frames: int) -> list[tuple[Direction, bytes]]:
    chunk = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": ""},
            },
        },
    }
    base = len(_line(chunk))
    chunk["params"]["update"]["content"]["text"] = "x" * (186 - base)  # type: ignore[index]
    small = _line(chunk)
    notice = _line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s1", "update": {"sessionUpdate": "notice", "severity": "info",
                                      "title": "slow"}}})  # fmt: skip
    exchange = [
        (C2A, _line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"protocolVersion": 1, "clientCapabilities": {}}})),
        (A2C, _line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})),
        (C2A, _line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": "/tmp", "mcpServers": []}})),
        (A2C, _line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}})),
        (C2A, _line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}})),
    ]  # fmt: skip
    updates = frames - len(exchange) - 1
    exchange += [(A2C, notice if i % 100 == 99 else small) for i in range(updates)]
    exchange.append((A2C, _line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})))
    return exchange


def write(db_path: Path, exchange: list[tuple[Direction, bytes]]) -> None:
    observer = ConnectionObserver()
    offsets = {C2A: 0, A2C: 0}
    records = []
    for n, (direction, raw) in enumerate(exchange):
        records.append(observer.observe(direction, Frame(raw, offsets[direction]), n * 1000, n))
        offsets[direction] += len(raw)
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["bench"], "/", "bench", 1))
    writer.append(records, facts=observer.facts())
    db.close()


def _to_pipe(stdin: Path, db: Path, expected: bytes) -> float:
    """Seconds for the whole command, its stdout a pipe read here as fast as it comes."""
    with stdin.open("rb") as source:
        start = time.perf_counter()
        with subprocess.Popen(
            [sys.executable, "-m", "acp_proxy", "replay", "--db", str(db), "1"],
            stdin=source, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        ) as process:  # fmt: skip
            assert process.stdout is not None
            got = bytearray()
            while chunk := os.read(process.stdout.fileno(), 1 << 20):
                got += chunk
            status = process.wait()
        seconds = time.perf_counter() - start
    assert status == 0, f"the replay exited {status}"
    assert got == expected, "the replay did not send the recorded bytes"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        folder = Path(scratch)
        exchange = conversation(args.frames)
        db = folder / "bench.sqlite"
        write(db, exchange)
        stdin = folder / "client.bin"
        stdin.write_bytes(b"".join(raw for d, raw in exchange if d is C2A))
        expected = b"".join(r for d, r in exchange if d is A2C and b'"notice"' not in r)
        times: dict[str, list[float]] = {
            "command": [], "to-pipe": [], "load": [], "build": [], "replay": []
        }  # fmt: skip
        for _ in range(args.repeat):
            out = folder / "out.bin"
            with stdin.open("rb") as source, out.open("wb") as sink:
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "acp_proxy", "replay", "--db", str(db), "1"],
                    stdin=source, stdout=sink, stderr=subprocess.DEVNULL, check=True,
                )  # fmt: skip
                times["command"].append(time.perf_counter() - start)
            assert out.read_bytes() == expected, "the replay did not send the recorded bytes"
            times["to-pipe"].append(_to_pipe(stdin, db, expected))
            start = time.perf_counter()
            _, frames, _ = load_script(db, "1", None)
            times["load"].append(time.perf_counter() - start)
            start = time.perf_counter()
            matcher = Matcher()
            script = build(frames, matcher)
            times["build"].append(time.perf_counter() - start)
            start = time.perf_counter()
            replay = Replay(script, matcher, Options(), 0)
            for raw in (r for d, r in exchange if d is C2A):
                replay.receive(raw, 0)
            replay.client_closed(0)
            sent = replay.advance(0).out
            times["replay"].append(time.perf_counter() - start)
            assert sent == expected
        print(f"replay of {args.frames:,} recorded frames to a sink, median of {args.repeat}:")
        for name, values in times.items():
            seconds = statistics.median(values)
            print(f"  {name:8} {seconds * 1000:8.1f} ms  {args.frames / seconds:12,.0f} frames/s")


if __name__ == "__main__":
    main()
