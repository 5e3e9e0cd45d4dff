"""The busy v2 recording the check and redaction benchmarks share, written through the real
recorder's writer (observer + RecordingWriter), so it is stored as ``record`` would store it.

Rules: whole turns only (a recording never ends in the middle of a prompt turn), at least
``frames`` frames; ``make_turn`` lets a benchmark seed its own content into each turn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_checks import turn, v2
from tests.support.helpers import A2C, C2A

FRAMES = 100_000
BATCH = 5000


def build(path: Path, frames: int = FRAMES, make_turn: Callable[[int], list[Any]] = turn) -> int:
    """Write connection 1 (label ``bench``) to ``path``; the number of frames written."""
    observer, splitters = ConnectionObserver(), {C2A: LineSplitter(), A2C: LineSplitter()}
    db = connect(path)
    writer = RecordingWriter.start(db, NewConnection(["bench"], "/", "bench", 1, label="bench"))
    batch, n, count = [], 0, 0
    pending = v2()
    while count < frames or pending:
        if not pending:
            pending, n = make_turn(n), n + 1
        direction, data = pending.pop(0)
        for frame in splitters[direction].feed(data):
            count += 1
            batch.append(observer.observe(direction, frame, count, count))
        if len(batch) >= BATCH:
            writer.append(batch, facts=observer.facts())
            batch = []
    writer.append(batch, facts=observer.facts())
    db.close()
    return count
