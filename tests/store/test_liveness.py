"""Liveness and ids: a recording being written is never removed, and nothing written for a
removed one can reach another.

Before, ``delete``/``prune`` judged liveness by the proxy alone, a recorder went on writing
frames for a deleted row, and its id was given to the next recording, which then held them.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from acp_proxy.errors import RecordingError
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import FrameRecord
from acp_proxy.store import schema, tidy
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import observe_all, write_recording
from tests.support.processes import started


def _records() -> list[FrameRecord]:
    return observe_all(V1_CONVERSATION)[1]


def test_a_writer_never_writes_into_a_deleted_row(db_path: Path) -> None:
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1))
    writer.append(_records()[:2])
    other = connect(db_path)
    tidy.remove(other, db_path, [writer.connection_id])
    with pytest.raises(RecordingError, match="was deleted while it was being recorded"):
        writer.append(_records()[2:])
    assert other.execute("SELECT count(*) FROM frame").fetchone() == (0,)
    assert writer.index_pending() == 0


def test_connection_ids_are_never_reused(db_path: Path) -> None:
    first = write_recording(db_path, V1_CONVERSATION)
    second = write_recording(db_path, V1_CONVERSATION)
    db = connect(db_path)
    tidy.remove(db, db_path, [second])
    third = write_recording(db_path, V1_CONVERSATION)
    assert (first, second) == (1, 2)
    assert third == 3


def test_the_writing_process_is_named_until_it_is_done(db_path: Path) -> None:
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1))
    row = tidy.candidates(db)[0]
    assert row.recorder_pid == os.getpid()
    assert tidy.is_live(row)
    writer.done()
    row = tidy.candidates(db)[0]
    assert row.recorder_pid is None
    assert tidy.is_live(row)  # still ``running`` by a proxy (this process) that is alive


def _dead_pid() -> int:
    with started([sys.executable, "-c", "pass"]) as dead:
        dead.wait()
    return dead.pid


def test_liveness_is_read_from_the_recorder_as_well_as_the_proxy() -> None:
    dead, me = _dead_pid(), os.getpid()
    assert tidy.is_live(tidy.Candidate(1, None, 0, "exited", dead, recorder_pid=me))
    assert tidy.is_live(tidy.Candidate(1, None, 0, "running", dead, recorder_pid=me))
    assert tidy.is_live(tidy.Candidate(1, None, 0, "running", me, recorder_pid=None))
    assert not tidy.is_live(tidy.Candidate(1, None, 0, "running", dead, recorder_pid=dead))
    assert not tidy.is_live(tidy.Candidate(1, None, 0, "exited", me, recorder_pid=None))


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while True:  # exited, not yet reaped: a zombie
        state = Path(f"/proc/{child.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        if state == b"Z":
            break
        os.sched_yield()
    try:
        assert not tidy.process_alive(child.pid)
    finally:
        child.wait()
    assert tidy.process_alive(os.getpid())


def _format_8(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    for step in schema.MIGRATIONS[:8]:
        for statement in schema.statements(step):
            db.execute(statement)
    db.execute("PRAGMA user_version = 8")
    return db


def test_the_format_9_migration_keeps_every_row_and_starts_ids_above_any_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    old = _format_8(path)
    for number in (1, 2, 3):
        old.execute(
            "INSERT INTO connection (id, uid, label, status, started_ns, argv, cwd, "
            "proxy_version, proxy_pid, bytes_lost, client_argv, transport) "
            "VALUES (?, ?, 'l', 'exited', ?, '[]', '/', 't', 1, 7, '[\"c\"]', 'stdio')",
            (number, f"u{number}", number * 10),
        )
    # connection 3 deleted under format 8, a frame of connection 5 left behind by a recorder
    old.execute("DELETE FROM connection WHERE id = 3")
    old.execute(
        "INSERT INTO frame (connection_id, seq, direction, mono_ns, wall_ns, offset, size, kind, "
        "raw) VALUES (5, 1, 'c2a', 0, 0, 0, 1, 'request', x'0a')"
    )
    before = old.execute("SELECT * FROM connection ORDER BY id").fetchall()
    old.close()
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (schema.SCHEMA_VERSION,)
    after = db.execute("SELECT * FROM connection ORDER BY id").fetchall()
    assert [row[:-1] for row in after] == before  # every column kept; recorder_pid added, null
    assert [row[-1] for row in after] == [None, None]
    writer = RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1))
    assert writer.connection_id == 6
    writer.append([r for r in _records() if r.direction == Direction.CLIENT_TO_AGENT][:1])
    assert db.execute("SELECT count(*) FROM frame WHERE connection_id = 6").fetchone() == (1,)
