"""The recorder keeps the search index: off the stream, when the traffic pauses, and at the end."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.chunk_queue import ChunkQueue
from acp_proxy.record.recorder import Recorder
from acp_proxy.store.writer import NewConnection
from tests.support.polling import until


def _line(n: int) -> bytes:
    return b'{"jsonrpc":"2.0","method":"note","params":{"text":"word%d shared"}}\n' % n


def _indexed(db_path: Path) -> int:
    try:
        row = sqlite3.connect(db_path).execute("SELECT indexed_seq FROM search_progress")
        found = row.fetchone()
    except sqlite3.OperationalError:
        return 0
    return 0 if found is None else int(found[0])


def test_frames_are_indexed_when_the_traffic_pauses(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    queue = ChunkQueue(report=lambda message: None)
    new = NewConnection(argv=["agent"], cwd=os.getcwd(), proxy_version="t", proxy_pid=os.getpid())
    recorder = Recorder(db_path, new, queue, lambda message: None)
    thread = threading.Thread(target=recorder.run)
    thread.start()
    try:
        for n in range(50):
            queue.put(Direction.AGENT_TO_CLIENT, n, _line(n))
        # The queue is open: only a pause can have indexed them.
        until(lambda: _indexed(db_path) >= 50, "the frames indexed while the traffic paused")
        queue.put(Direction.AGENT_TO_CLIENT, 50, _line(50))
    finally:
        queue.close()
        thread.join(20)
    recorder.checkpoint()  # the final act: the rest of the index, then the checkpoint
    assert _indexed(db_path) == 51
    db = sqlite3.connect(db_path)
    hits = db.execute("SELECT rowid FROM frame_search WHERE frame_search MATCH 'word50'")
    assert len(hits.fetchall()) == 1
    assert db.execute("SELECT count(*) FROM frame_search WHERE frame_search MATCH 'shared'") \
        .fetchone() == (51,)  # fmt: skip
