"""Writing the live part of a replay (a new episode) into a recording database.

Rules:
- When ``replay --go-live`` went live, what crossed the real agent's pipes (replay/shell/:
  chunks with their monotonic times) is recorded as a connection of its own, as ``record``
  would have recorded that agent: frames cut by wire.LineSplitter, columns from
  observer.ConnectionObserver, the initialize facts, the totals, how the agent ended.
- It is written once the run is over, in one go, through store.RecordingWriter; ``argv`` is
  the agent's command. Returns the new connection id.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from acp_proxy import __version__
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.store.database import NewConnection, RecordingWriter, connect

Chunk = tuple[Direction, int, bytes]


def record_chunks(
    db_path: Path, argv: Sequence[str], chunks: Sequence[Chunk], clock_origin: tuple[int, int],
    exit_code: int | None,
) -> int:  # fmt: skip
    """Record ``chunks`` (see the module rules); ``clock_origin`` is (monotonic, wall) ns."""
    offset_ns = clock_origin[1] - clock_origin[0]
    observer = ConnectionObserver()
    splitters = {direction: LineSplitter() for direction in Direction}
    totals = {direction: [0, 0] for direction in Direction}
    records: list[FrameRecord] = []
    last_ns = clock_origin[0]
    for direction, mono_ns, chunk in chunks:
        last_ns = mono_ns
        frames = splitters[direction].feed(chunk)
        records += [observer.observe(direction, f, mono_ns, mono_ns + offset_ns) for f in frames]
        totals[direction][0] += len(frames)
        totals[direction][1] += len(chunk)
    for direction, splitter in splitters.items():
        tail = splitter.finish()
        if tail is not None:
            records.append(observer.observe(direction, tail, last_ns, last_ns + offset_ns))
            totals[direction][0] += 1
    first_ns = chunks[0][1] + offset_ns if chunks else time.time_ns()
    new = NewConnection(
        argv=list(argv), cwd=os.getcwd(), proxy_version=__version__, proxy_pid=os.getpid(),
        started_ns=first_ns,
    )  # fmt: skip
    db = connect(db_path)
    try:
        writer = RecordingWriter.start(db, new)
        counts = [(d.value, frames, size) for d, (frames, size) in totals.items()]
        writer.append(records, counts, observer.facts())
        writer.update(status="exited", ended_ns=last_ns + offset_ns, exit_code=exit_code)
    finally:
        db.close()
    return writer.connection_id
