"""Recorder sinks: each committed batch reaches them in order; a failing sink is dropped aloud."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import FrameRecord
from acp_proxy.record.chunk_queue import ChunkQueue
from acp_proxy.record.recorder import Recorder
from acp_proxy.store.writer import NewConnection

LINES = [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n for n in range(5)]


class Collecting:
    def __init__(self) -> None:
        self.seen: list[tuple[int, bytes]] = []
        self.closed = False

    def committed(self, connection_id: int, records: Sequence[FrameRecord]) -> None:
        self.seen += [(connection_id, bytes(r.raw)) for r in records]

    def close(self) -> None:
        self.closed = True


class Failing(Collecting):
    def committed(self, connection_id: int, records: Sequence[FrameRecord]) -> None:
        raise RuntimeError("collector is down")


def _record(db_path: Path, *sinks: Collecting) -> tuple[Recorder, list[str]]:
    messages: list[str] = []
    queue = ChunkQueue(report=messages.append)
    new = NewConnection(argv=["agent"], cwd=os.getcwd(), proxy_version="t", proxy_pid=os.getpid())
    recorder = Recorder(db_path, new, queue, messages.append)
    recorder.sinks.extend(sinks)
    for n, line in enumerate(LINES):
        queue.put(Direction.CLIENT_TO_AGENT, n, line)
    queue.close()
    recorder.run()
    return recorder, messages


def test_sinks_see_every_committed_frame_in_order(tmp_path: Path) -> None:
    sink = Collecting()
    recorder, _ = _record(tmp_path / "r.sqlite", sink)
    assert [raw for _, raw in sink.seen] == LINES
    assert {cid for cid, _ in sink.seen} == {recorder.status.connection_id}
    assert sink.closed


def test_a_failing_sink_is_dropped_and_the_recording_goes_on(tmp_path: Path) -> None:
    good = Collecting()
    recorder, messages = _record(tmp_path / "r.sqlite", Failing(), good)
    assert [raw for _, raw in good.seen] == LINES
    assert recorder.status.error is None
    assert any("Failing failed (collector is down)" in m for m in messages)
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        assert db.execute("SELECT count(*) FROM frame").fetchone() == (len(LINES),)
