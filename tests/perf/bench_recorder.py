"""Offline benchmark of the recorder alone: no processes, no pipes, just the recording path.

    python -m tests.perf.bench_recorder [--small 200000] [--large 300] [--chunk 65536]
                                        [--repeat 3] [--dir DIR]

It builds, before any timing, the chunks the recorder process would get for one conversation
(initialize, session/new, one prompt, then N ``session/update`` frames of tests/perf/agent.py and
the prompt response), cut in ``--chunk`` byte pieces as the relay reads them (64 KiB) regardless
of frame boundaries. Workloads: ``small`` (186 B frames) and ``large1m`` (1 MiB frames).

Then it does what acp_proxy/recorder_process.py does in the child: garbage collection off, a
``ChunkQueue`` fed by one thread (``put(direction, monotonic ns, chunk)``, an empty chunk ending
each direction, then ``close()``), and ``Recorder.run()`` on the main thread, which frames,
classifies and commits into a fresh SQLite file. Timed from the first ``put`` to ``run()``
returning (everything committed); the database is then checked with sqlite3 (``count(*)`` and
``sum(size)`` of the ``frame`` table). Prints frames/s and MB/s committed (MB = 10**6 bytes),
the median over repeats and every repeat.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.chunk_queue import ChunkQueue
from acp_proxy.record.recorder import Recorder
from acp_proxy.store.writer import NewConnection
from tests.perf import agent, client

Chunk = tuple[Direction, bytes]
C2A, A2C, STDERR = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT, Direction.AGENT_STDERR


def _cut(parts: Iterable[bytes], size: int) -> Iterator[bytes]:
    """Re-cut a byte stream into ``size`` byte chunks (the last one may be shorter)."""
    pending = bytearray()
    for part in parts:
        pending += part
        while len(pending) >= size:
            yield bytes(pending[:size])
            del pending[:size]
    if pending:
        yield bytes(pending)


def _handshake_answers() -> list[bytes]:
    init = (
        b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":'
        b'{"loadSession":false},"authMethods":[]}}\n'
    )
    new = b'{"jsonrpc":"2.0","id":2,"result":{"sessionId":"%s"}}\n' % agent.SESSION_ID.encode()
    return [init, new]


def conversation(shape: str, count: int, chunk_size: int) -> list[Chunk]:
    """The chunks of one benchmark conversation, in timeline order."""
    init_answer, new_answer = _handshake_answers()
    chunks: list[Chunk] = [
        (C2A, client.INITIALIZE),
        (A2C, init_answer),
        (C2A, client.SESSION_NEW),
        (A2C, new_answer),
        (C2A, client.prompt(client.PROMPT_ID, shape, count)),
    ]
    stream = agent.stream_parts(shape, count, client.PROMPT_ID)
    chunks += [(A2C, piece) for piece in _cut(stream, chunk_size)]
    chunks += [(C2A, b""), (A2C, b""), (STDERR, b"")]
    return chunks


@dataclass
class Outcome:
    seconds: float
    frames: int
    size: int
    db_frames: int
    db_size: int
    waits: int

    @property
    def ok(self) -> bool:
        return (self.frames, self.size) == (self.db_frames, self.db_size)


def record_once(chunks: list[Chunk], folder: Path) -> Outcome:
    """Feed ``chunks`` through a ChunkQueue into a Recorder, as the recorder process does."""
    db_path = folder / "bench.sqlite"
    messages: list[str] = []
    queue = ChunkQueue(report=messages.append)
    new = NewConnection(
        argv=["tests/perf/agent.py"], cwd=os.getcwd(), proxy_version="bench",
        proxy_pid=os.getpid(),
    )  # fmt: skip
    recorder = Recorder(db_path, new, queue, messages.append)

    def feed() -> None:
        put, clock = queue.put, time.monotonic_ns
        try:
            for direction, chunk in chunks:
                put(direction, clock(), chunk)
        finally:
            queue.close()

    feeder = threading.Thread(target=feed, name="bench feeder")
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        feeder.start()
        recorder.run()
        seconds = time.perf_counter() - start
        feeder.join()
    finally:
        gc.enable()
    if recorder.status.error is not None:
        raise RuntimeError(f"the recorder failed: {recorder.status.error}")
    db = sqlite3.connect(db_path)
    try:
        db_frames, db_size = db.execute("SELECT count(*), sum(size) FROM frame").fetchone()
    finally:
        db.close()
    frames = sum(chunk.count(b"\n") for _, chunk in chunks)
    size = sum(len(chunk) for _, chunk in chunks)
    return Outcome(seconds, frames, size, db_frames, db_size or 0, queue.waits)


def bench(shape: str, count: int, chunk_size: int, repeat: int, root: Path) -> list[Outcome]:
    chunks = conversation(shape, count, chunk_size)
    outcomes = []
    for _ in range(repeat):
        folder = Path(tempfile.mkdtemp(prefix="acp-perf-recorder-", dir=root))
        try:
            outcomes.append(record_once(chunks, folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return outcomes


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.bench_recorder", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--small", type=int, default=200_000, help="186 B frames (0: skip)")
    parser.add_argument("--large", type=int, default=300, help="1 MiB frames (0: skip)")
    parser.add_argument("--chunk", type=int, default=64 * 1024, help="chunk size in bytes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    options = parser.parse_args(args)
    failed = False
    print(
        "| workload | frames/s | MB/s | seconds | queue waits | DB check | each repeat, frames/s |"
    )
    print("|---|---:|---:|---:|---:|---|---|")
    for shape, count in (("small", options.small), ("large1m", options.large)):
        if count <= 0:
            continue
        outcomes = bench(shape, count, options.chunk, options.repeat, options.dir)
        seconds = statistics.median(o.seconds for o in outcomes)
        frames, size = outcomes[0].frames, outcomes[0].size
        good = sum(1 for o in outcomes if o.ok)
        failed = failed or good < len(outcomes)
        label = f"{shape}: {count:,} x {agent.SIZES[shape]:,} B in {options.chunk:,} B chunks"
        each = ", ".join(f"{o.frames / o.seconds:,.0f}" for o in outcomes)
        print(
            f"| {label} | {frames / seconds:,.0f} | {size / seconds / 1e6:,.1f} | {seconds:.2f} "
            f"| {statistics.median(o.waits for o in outcomes):.0f} | {good}/{len(outcomes)} "
            f"| {each} |",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
