"""Benchmark of the readers built on the transcript: ``stats`` and the Markdown and HTML exports
of one agent message streamed as N chunks.

    python -m tests.perf.bench_transcript [--chunks 10000,40000,200000] [--repeat 3]
        [--shape v1|v2] [--timeout 600] [--dir DIR]

Builds, before any timing, one recording per chunk count: initialize, session/new, one prompt
answered by N ``agent_message_chunk`` updates of one agent message (``v1``: chunks without a
``messageId``, appended to the newest message; ``v2``: every chunk names the same
``messageId``), then the prompt response, written through the observer and the store as
``record`` writes them. Then, per repeat and per count, it runs the commands a user runs, each
timed from spawn to exit (interpreter start-up included):

* ``stats``: ``python -m acp_proxy stats --db DB 1``
* ``markdown``: ``python -m acp_proxy export --db DB 1 --format markdown`` to /dev/null
* ``html``: ``python -m acp_proxy export --db DB 1 --format html`` to /dev/null

Prints the median seconds of each, and the ratio of each count's time to the smallest count's:
with readers linear in the frames that ratio follows the ratio of the counts. A command still
running after ``--timeout`` seconds is killed and shown as ``>TIMEOUT``.
"""

from __future__ import annotations

import argparse
import json
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
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
COMMANDS = {
    "stats": ["stats"],
    "markdown": ["export", "--format", "markdown"],
    "html": ["export", "--format", "html"],
}


def _line(message: Mapping[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def conversation(chunks: int, shape: str) -> list[tuple[Direction, bytes]]:
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
    for n in range(chunks):
        update: dict[str, object] = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": f"token {n} "},
        }
        if shape == "v2":
            update["messageId"] = "m1"
        exchange.append(
            (A2C, _line({"jsonrpc": "2.0", "method": "session/update",
                         "params": {"sessionId": "s1", "update": update}}))
        )  # fmt: skip
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


def run(db: Path, args: list[str], timeout: float) -> float | None:
    """Seconds the command took, or None when it was killed after ``timeout``."""
    argv = [sys.executable, "-m", "acp_proxy", args[0], "--db", str(db), "1", *args[1:]]
    start = time.perf_counter()
    try:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
                       timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", default="10000,40000,200000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shape", choices=("v1", "v2"), default="v1")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    counts = [int(c) for c in args.chunks.split(",")]
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        dbs = {}
        for count in counts:
            dbs[count] = Path(scratch) / f"chunks-{count}.sqlite"
            write(dbs[count], conversation(count, args.shape))
        times: dict[tuple[str, int], list[float | None]] = {}
        for _ in range(args.repeat):
            for count in counts:
                for name, command in COMMANDS.items():
                    times.setdefault((name, count), []).append(
                        run(dbs[count], command, args.timeout)
                    )
    print(f"one agent message of N chunks ({args.shape}), seconds per command, median of "
          f"{args.repeat} (ratio to {counts[0]:,} chunks):")  # fmt: skip
    print("| command | " + " | ".join(f"{c:,} chunks" for c in counts) + " |")
    print("|---|" + "---|" * len(counts))
    for name in COMMANDS:
        cells = []
        base: float | None = None
        for count in counts:
            values = times[(name, count)]
            if any(v is None for v in values):
                cells.append(f">{args.timeout:g}")
                continue
            seconds = statistics.median(v for v in values if v is not None)
            base = seconds if base is None else base
            cells.append(f"{seconds:.2f} ({seconds / base:.1f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
