"""Losses are counted exactly: whatever chunks are left out of a recording (by the tap, by a
failing spill file), every frame they touch is lost, counted once, with all its bytes; every
other frame is stored whole at its true offset. A frame longer than the database takes is
counted too, and the recording goes on after it."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.acp import Direction
from acp_proxy.record import recorder as recorder_module
from acp_proxy.record.chunk_queue import ChunkQueue
from acp_proxy.record.losses import Lost
from acp_proxy.record.recorder import Recorder
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
NEW = NewConnection(["agent"], "/", "test", 1, started_ns=10**18)


def _record(db_path: Path, items: list[tuple[Direction, int, bytes | Lost]]) -> list[str]:
    said: list[str] = []
    queue = ChunkQueue()
    queue.put_many(list(items))
    queue.close()
    Recorder(db_path, NEW, queue, said.append).run()
    return said


def _stored(db_path: Path, direction: Direction) -> list[tuple[int, bytes]]:
    con = sqlite3.connect(db_path)
    rows = con.execute(
        "SELECT offset, raw FROM frame WHERE direction = ? ORDER BY seq", (direction.value,)
    ).fetchall()
    con.close()
    return [(offset, bytes(raw)) for offset, raw in rows]


def _losses(db_path: Path) -> tuple[int, int, str, str | None]:
    con = sqlite3.connect(db_path)
    row = con.execute("SELECT frames_lost, bytes_lost, status, error FROM connection").fetchone()
    con.close()
    return row


def _frames(stream: bytes) -> list[tuple[int, bytes]]:
    frames, start = [], 0
    while start < len(stream):
        end = stream.find(b"\n", start)
        end = len(stream) if end < 0 else end + 1
        frames.append((start, stream[start:end]))
        start = end
    return frames


lines = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=25)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bodies=lines,
    unterminated=st.binary(max_size=10).map(lambda b: b.replace(b"\n", b"")),
    cuts=st.lists(st.integers(min_value=0, max_value=1200), max_size=30),
    dropped=st.lists(st.booleans(), max_size=31),
)
def test_every_frame_a_hole_touches_is_lost_and_counted_once(
    tmp_path_factory: pytest.TempPathFactory,
    bodies: list[bytes], unterminated: bytes, cuts: list[int], dropped: list[bool],
) -> None:  # fmt: skip
    stream = b"".join(body + b"\n" for body in bodies) + unterminated
    points = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    chunks = [(a, stream[a:b]) for a, b in itertools.pairwise(points)]
    drop = [i < len(dropped) and dropped[i] for i in range(len(chunks))]
    items: list[tuple[Direction, int, bytes | Lost]] = []
    for index, (_, chunk) in enumerate(chunks):
        items.append((C2A, index, Lost.of(chunk, "test hole") if drop[index] else chunk))
        items.append((A2C, index, b'{"n":%d}\n' % index))  # the other way loses nothing
    items += [(C2A, len(chunks), b""), (A2C, len(chunks), b"")]
    holes = [(a, a + len(c)) for (a, c), d in zip(chunks, drop, strict=True) if d]
    db_path = tmp_path_factory.mktemp("losses") / "rec.sqlite"
    _record(db_path, items)

    def touched(offset: int, raw: bytes) -> bool:
        return any(a < offset + len(raw) and offset < b for a, b in holes)

    frames = _frames(stream)
    lost = [f for f in frames if touched(*f)]
    assert _stored(db_path, C2A) == [f for f in frames if not touched(*f)]
    assert _stored(db_path, A2C) == _frames(b"".join(b'{"n":%d}\n' % i for i in range(len(chunks))))
    frames_lost, bytes_lost, status, error = _losses(db_path)
    assert (frames_lost, bytes_lost) == (len(lost), sum(len(raw) for _, raw in lost))
    assert (status == "incomplete") == bool(lost)
    assert (error is not None and "test hole" in error) == bool(lost)


def test_a_frame_longer_than_the_database_takes_is_counted_and_recording_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 300_000

    def small_connect(path: Path, **kwargs: bool) -> sqlite3.Connection:
        db = connect(path, **kwargs)
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
        return db

    monkeypatch.setattr(recorder_module, "connect", small_connect)
    db_path = tmp_path / "rec.sqlite"
    huge = b'{"big":"' + b"x" * 400_000 + b'"}\n'
    said = _record(db_path, [
        (A2C, 1, b'{"n":1}\n'), (A2C, 2, huge), (A2C, 3, b'{"n":3}\n'), (A2C, 4, b""),
    ])  # fmt: skip
    con = sqlite3.connect(db_path)
    rows = con.execute("SELECT seq, size, length(raw) FROM frame ORDER BY seq").fetchall()
    assert rows == [(1, 8, 8), (2, len(huge), 0), (3, 8, 8)]  # flagged: raw shorter than size
    frames_lost, bytes_lost, status, error = _losses(db_path)
    assert (frames_lost, bytes_lost, status) == (1, len(huge), "incomplete")
    assert "longer than the database takes" in str(error)
    assert said == []  # counted in the database, nothing to say while recording


def test_a_busy_database_is_waited_for_and_nothing_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_proxy.store import database

    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 50)  # each attempt gives up quickly
    db_path = tmp_path / "rec.sqlite"
    connect(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another proxy holding the write lock for long
    said: list[str] = []
    queue = ChunkQueue()
    recorder = Recorder(db_path, NEW, queue, said.append)
    thread = threading.Thread(target=recorder.run)
    thread.start()
    for n in range(500):
        queue.put(C2A, n, b'{"n":%d}\n' % n)
    deadline = time.monotonic() + 10
    while recorder.status.busy_waits < 3:  # several attempts failed meanwhile
        assert time.monotonic() < deadline
        thread.join(0.01)
    holder.execute("COMMIT")
    holder.close()
    queue.close()
    thread.join(30)
    assert not thread.is_alive()
    assert len(said) == 1, said
    assert "waiting for it" in said[0]
    assert recorder.status.error is None
    assert [raw for _, raw in _stored(db_path, C2A)] == [b'{"n":%d}\n' % n for n in range(500)]
    assert _losses(db_path)[:3] == (0, 0, "running")
