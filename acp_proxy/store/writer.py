"""The writer: one connection's frames, findings and running totals appended to a recording.

Rules:
- A connection's row is made when its recording starts (``RecordingWriter.start``) and its
  columns are set as it goes (``update``) or from outside its recorder (``update_by_uid``);
  only the columns in ``_UPDATABLE`` can be set.
- A batch (frames, findings, totals, facts) is one ``BEGIN IMMEDIATE`` transaction: all or
  nothing. ``RecordingBusy`` means nothing was written and the same call may be retried.
- ``raw`` is the last column of ``frame`` (schema.py, format 3): a large frame is inserted as
  ``zeroblob(size)`` and its bytes written in place through an incremental blob.
- A frame longer than the database takes (``SQLITE_LIMIT_LENGTH``) keeps its row with an empty
  ``raw`` (``length(raw) < size`` says the bytes are missing); ``append`` returns those frames
  so that the recorder counts them as lost.
- A recorder's connection does not checkpoint the WAL on commit (copying every page into the
  main file as frames stream in slowed large frames down: docs/performance.md); the recorder
  checkpoints when it is idle, when the WAL passes a size, and when its connection is done
  (``checkpoint``).
- The process that writes a connection's frames names itself in ``recorder_pid`` from the
  row's first transaction until it is done (``done`` sets it back to null): while that
  process lives the connection is live, whatever its status says (store/tidy.py).
- Frames are never written for a connection whose row is gone (``delete``, ``prune``): every
  batch checks, in its transaction, that the row is still there, else raises
  ``RecordingDeleted`` and writes nothing. Connection ids are never reused (format 9), so
  nothing written later can join another recording.
- The writer indexes its connection's frames for search (search_index.py) either in the
  transaction that inserts them (``index=True``) or when told to (``index_pending``: the
  recorder does it when the traffic pauses and once the client is done). Indexing never costs
  a frame: a failure rolls back the index part alone, stops this writer's indexing and is left
  to ``search``'s catch-up.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.errors import RecordingError
from acp_proxy.protocol.observer import FRAME_COLUMNS, ConnectionFacts, FrameRecord
from acp_proxy.store.database import connect, error_for, write_transaction
from acp_proxy.store.search_index import index_frames

LARGE_FRAME_BYTES = 1024 * 1024
# Room a frame's row needs besides ``raw`` (its other columns), below the length limit.
ROW_OVERHEAD_BYTES = 64 * 1024


def _now_ns() -> int:
    return time.time_ns()


class RecordingDeleted(RecordingError):
    """The connection's row was deleted while it was recorded: nothing more is written."""


# (seq, direction, rule, severity, message) of one rule finding.
StoredFinding = tuple[int | None, str | None, str, str, str]


@dataclass(frozen=True, slots=True)
class NewConnection:
    """What is known about a connection when the proxy starts it."""

    argv: Sequence[str]
    cwd: str
    proxy_version: str
    proxy_pid: int
    label: str | None = None
    started_ns: int | None = None
    uid: str | None = None  # chosen by the proxy: it finds the row again (``update_by_uid``), and
    # ``record --otlp`` names the trace after it from the start
    client_argv: Sequence[str] | None = None  # the client's command line, when it is known
    # How the connection was carried: ``stdio``, or ``http`` / ``websocket`` (remote; the
    # other fields are then the upstream's URL, where the proxy listened, the client's address).
    transport: str = "stdio"
    remote_url: str | None = None
    listen_url: str | None = None
    client_address: str | None = None


def new_uid() -> str:
    """A fresh connection uid: random 128 bits in hex."""
    return uuid.uuid4().hex


_UPDATABLE = frozenset({
    "agent_pid", "status", "ended_ns", "exit_code", "exit_signal", "error", "frames_lost",
    "bytes_lost", "otlp_frames_dropped", "otlp_spans_dropped", "remote_connection_id",
    "recorder_pid",
})  # fmt: skip


class RecordingWriter:
    """Appends one connection's frames. Used from a single thread.

    ``index``: index each batch in the transaction that writes it (else see ``index_pending``);
    ``index_error`` says why indexing stopped, if it had to.
    """

    def __init__(self, db: sqlite3.Connection, connection_id: int, *, index: bool = True) -> None:
        self._db = db
        self.connection_id = connection_id
        self._index = index
        self._unindexed = 0  # frames written since the last index_pending, when not ``index``
        self.index_error: str | None = None
        self._last_totals: dict[str, tuple[int, int]] = {}
        self._wal_path = db.execute("PRAGMA database_list").fetchone()[2] + "-wal"
        columns = ", ".join(FRAME_COLUMNS)
        marks = ", ".join("?" for _ in FRAME_COLUMNS)
        # The connection id is an integer we own, so it can be part of the statement text.
        self._insert = (
            f"INSERT INTO frame (connection_id, {columns}) VALUES ({int(connection_id)}, {marks})"
        )
        # Large frames: the row gets a zero-filled blob of the right size, then the bytes are
        # written into it in place (binding them would make SQLite copy them all first).
        raw_index = FRAME_COLUMNS.index("raw")
        self._raw_index = raw_index
        large_marks = ", ".join(
            "zeroblob(?)" if i == raw_index else "?" for i in range(len(FRAME_COLUMNS))
        )
        self._insert_large = (
            f"INSERT INTO frame (connection_id, {columns}) "
            f"VALUES ({int(connection_id)}, {large_marks})"
        )
        self.max_raw_bytes = max(0, db.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) - ROW_OVERHEAD_BYTES)
        # Frames from this size on take the row-by-row path (large, or too long to store).
        self._row_path_bytes = min(LARGE_FRAME_BYTES, self.max_raw_bytes + 1)

    @classmethod
    def start(
        cls, db: sqlite3.Connection, new: NewConnection, *, index: bool = True
    ) -> RecordingWriter:
        try:
            with write_transaction(db):
                cursor = db.execute(
                    "INSERT INTO connection (uid, label, status, started_ns, argv, cwd, "
                    "proxy_version, proxy_pid, client_argv, transport, remote_url, listen_url, "
                    "client_address, recorder_pid) "
                    "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        new.uid or new_uid(), new.label, new.started_ns or _now_ns(),
                        orjson.dumps(list(new.argv)).decode(), new.cwd, new.proxy_version,
                        new.proxy_pid,
                        None if new.client_argv is None
                        else orjson.dumps(list(new.client_argv)).decode(),
                        new.transport, new.remote_url, new.listen_url, new.client_address,
                        os.getpid(),
                    ),
                )  # fmt: skip
        except sqlite3.Error as error:
            raise error_for(error, "start a recording") from error
        assert cursor.lastrowid is not None
        return cls(db, cursor.lastrowid, index=index)

    def append(
        self,
        records: Sequence[FrameRecord],
        counts: Iterable[tuple[str, int, int]] = (),
        facts: ConnectionFacts | None = None,
        findings: Sequence[StoredFinding] = (),
        lost: tuple[int, int] | None = None,
    ) -> list[FrameRecord]:
        """Write a batch of frames and the connection's running totals in one transaction.

        ``counts`` holds ``(direction, frames, bytes)`` totals so far for each direction;
        ``findings`` are rule findings about these frames (``record --check``); ``lost`` the
        ``(frames_lost, bytes_lost)`` totals so far. Returns the frames whose bytes were too
        long to store (their rows hold an empty ``raw``). Raises ``RecordingBusy`` when the
        write lock could not be had: nothing was written, the same call may be retried; and
        ``RecordingDeleted`` when the connection's row is gone: nothing was written, nothing
        more will be.
        """
        too_long: list[FrameRecord] = []
        totals = {direction: (frames, size) for direction, frames, size in counts}
        try:
            with write_transaction(self._db):
                self._require_row()
                if records:
                    too_long = self._insert_records(records)
                    if self._index:
                        self._index_frames()
                    else:
                        self._unindexed += len(records)
                if findings:
                    now = _now_ns()
                    self._db.executemany(
                        "INSERT INTO finding (connection_id, seq, direction, rule, severity, "
                        "message, found_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(self.connection_id, *finding, now) for finding in findings],
                    )
                if totals and totals != self._last_totals:
                    assignments = ", ".join(
                        f"{column} = ?"
                        for direction in totals
                        for column in _COUNT_COLUMNS[direction]
                    )
                    values = [value for pair in totals.values() for value in pair]
                    self._db.execute(
                        f"UPDATE connection SET {assignments} WHERE id = ?",
                        (*values, self.connection_id),
                    )
                if lost is not None:
                    self._db.execute(
                        "UPDATE connection SET frames_lost = ?, bytes_lost = ? WHERE id = ?",
                        (*lost, self.connection_id),
                    )
                if facts is not None:
                    self._db.execute(
                        "UPDATE connection SET protocol_version = ?, client_info = ?, "
                        "agent_info = ? WHERE id = ?",
                        (facts.protocol_version, _json_or_none(facts.client_info),
                         _json_or_none(facts.agent_info), self.connection_id),
                    )  # fmt: skip
        except sqlite3.Error as error:
            raise error_for(error, "write to the recording") from error
        if totals:
            self._last_totals = totals
        return too_long

    def _require_row(self) -> None:
        """Inside a write transaction: the connection's row must still exist (see the rules)."""
        found = self._db.execute(
            "SELECT 1 FROM connection WHERE id = ?", (self.connection_id,)
        ).fetchone()
        if found is None:
            raise RecordingDeleted(
                f"connection {self.connection_id} was deleted while it was being recorded "
                "(acp-proxy delete or prune): nothing more is recorded"
            )

    def done(self) -> None:
        """This process writes no more of the connection: ``recorder_pid`` back to null."""
        try:
            with write_transaction(self._db):
                self._db.execute(
                    "UPDATE connection SET recorder_pid = NULL WHERE id = ? AND recorder_pid = ?",
                    (self.connection_id, os.getpid()),
                )
        except sqlite3.Error as error:
            raise error_for(error, "update the recording") from error

    def _insert_records(self, records: Sequence[FrameRecord]) -> list[FrameRecord]:
        raw_index = self._raw_index
        start = 0
        too_long: list[FrameRecord] = []
        row_path_bytes = self._row_path_bytes
        for index, record in enumerate(records):
            raw = record.raw
            if len(raw) >= row_path_bytes:
                self._insert_small(records[start:index])
                start = index + 1
                row = list(record)
                if len(raw) > self.max_raw_bytes:
                    too_long.append(record)
                    row[raw_index] = 0
                    self._db.execute(self._insert_large, row)
                    continue
                row[raw_index] = len(raw)
                cursor = self._db.execute(self._insert_large, row)
                assert cursor.lastrowid is not None
                with self._db.blobopen("frame", "raw", cursor.lastrowid) as blob:
                    blob.write(raw)
        self._insert_small(records[start:])
        return too_long

    def _index_frames(self, limit: int | None = None) -> int:
        """Index this connection's frames not yet indexed; on failure, stop indexing them."""
        self._db.execute("SAVEPOINT search_index")
        try:
            return index_frames(self._db, self.connection_id, limit)
        except sqlite3.Error as error:
            self._db.execute("ROLLBACK TO search_index")
            self._index = False
            self.index_error = str(error)
            return 0
        finally:
            self._db.execute("RELEASE search_index")

    def index_pending(self, limit: int | None = None) -> int:
        """Index up to ``limit`` of this connection's frames not indexed yet, in a transaction
        of its own; how many it took (0 once indexing failed: see ``index_error``)."""
        if self.index_error is not None or not self._unindexed:
            return 0
        try:
            with write_transaction(self._db):
                self._require_row()
                taken = self._index_frames(limit)
        except RecordingDeleted as error:
            self.index_error = str(error)
            return 0
        except sqlite3.Error as error:
            self.index_error = str(error)
            return 0
        # Nothing taken: someone else (``search``) indexed them first.
        self._unindexed = max(self._unindexed - taken, 0) if taken else 0
        return taken

    def _insert_small(self, records: Sequence[FrameRecord]) -> None:
        if records:
            # Plain tuples: the sqlite3 module binds a tuple subclass through the generic
            # sequence protocol, slower per row (docs/performance.md).
            self._db.executemany(self._insert, map(tuple, records))

    def wal_size(self) -> int:
        """Bytes in the write-ahead log not yet known to be checkpointed (0 if unknown)."""
        try:
            return os.path.getsize(self._wal_path)
        except OSError:
            return 0

    def checkpoint(self) -> None:
        """Copy what the WAL holds into the main file, without waiting for readers or writers."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as error:
            raise error_for(error, "checkpoint the recording") from error

    def update(self, **fields: Any) -> None:
        """Set columns of this connection's row (agent pid, exit status, lost frames ...)."""
        _update(self._db, "id", self.connection_id, fields)


def _update(db: sqlite3.Connection, key: str, value: object, fields: dict[str, Any]) -> None:
    unknown = set(fields) - _UPDATABLE
    if unknown:
        raise ValueError(f"not connection columns: {sorted(unknown)}")
    if not fields:
        return
    assignments = ", ".join(f"{name} = ?" for name in fields)
    try:
        with write_transaction(db):
            db.execute(
                f"UPDATE connection SET {assignments} WHERE {key} = ?", (*fields.values(), value)
            )
    except sqlite3.Error as error:
        raise error_for(error, "update the recording") from error


def connection_id_of_uid(path: Path, uid: str) -> int | None:
    """The id of the connection ``uid`` in ``path``, or None."""
    db = connect(path, create=False, readonly=True)
    try:
        row = db.execute("SELECT id FROM connection WHERE uid = ?", (uid,)).fetchone()
    except sqlite3.Error as error:
        raise error_for(error, "read the recording") from error
    finally:
        db.close()
    return None if row is None else int(row[0])


def update_by_uid(path: Path, uid: str, **fields: Any) -> bool:
    """Set columns of the connection ``uid`` in ``path`` from outside its recorder.

    For the proxy, when its recorder process ended early and cannot say how the recording
    ended itself. Returns False if there is no such row (the recorder never wrote it).
    """
    db = connect(path)
    try:
        if db.execute("SELECT 1 FROM connection WHERE uid = ?", (uid,)).fetchone() is None:
            return False
        _update(db, "uid", uid, fields)
    except sqlite3.Error as error:
        raise error_for(error, "update the recording") from error
    finally:
        db.close()
    return True


_COUNT_COLUMNS = {
    "c2a": ("frames_c2a", "bytes_c2a"),
    "a2c": ("frames_a2c", "bytes_a2c"),
    "stderr": ("lines_stderr", "bytes_stderr"),
}


def _json_or_none(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return None
