"""Removing recordings: ``delete`` and ``prune``, and the size of a database on disk.

Rules:
- A live connection is never touched. Live: its recorder (``recorder_pid``, the process that
  writes its frames, format 9) is still alive on this machine, whatever the status says (a
  proxy killed, or one that exited while its recorder still commits); or its status is
  ``running`` while its proxy (``proxy_pid``) is alive. A process that has exited but not
  been reaped (a zombie) is not alive. A ``running`` row whose proxy and recorder are both
  gone is finished in all but name and may be removed. Should liveness ever be misjudged, a
  recorder still writes nothing into a deleted row (store/writer.py) and ids are never reused.
- "Newest" is the latest start (``started_ns``, then the id): an imported recording keeps the
  start it had, so it is as old as it was when it was made.
- A connection goes with every row that names it: each table with a ``connection_id`` column
  (frames, findings, and whatever later formats add), and its frames' words in the search
  index, in one transaction with the row itself.
- Space is reclaimed afterwards with ``VACUUM``; if that cannot run (a writer holds the
  database past the busy timeout), the rows are still gone and the caller is told.
- Choosing what to prune is pure (``prune_candidates``); only this module's constant SQL runs.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

Alive = Callable[[int], bool]


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    label: str | None
    started_ns: int
    status: str
    proxy_pid: int
    recorder_pid: int | None = None


@dataclass(frozen=True, slots=True)
class Removed:
    connections: list[int]
    frames: int
    findings: int
    reclaimed: int | None  # bytes the file shrank by; None when VACUUM could not run
    vacuum_error: str | None = None


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (a zombie does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc to ask: it exists
    return state not in (b"Z", b"X")


def database_bytes(path: Path) -> int:
    """What the database takes on disk: the file and its write-ahead log."""
    total = 0
    for part in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(FileNotFoundError):
            total += part.stat().st_size
    return total


def candidates(db: sqlite3.Connection, ids: Iterable[int] | None = None) -> list[Candidate]:
    """Connections (all, or those of ``ids``), oldest first (by start, see the rules)."""
    rows = db.execute(
        "SELECT id, label, started_ns, status, proxy_pid, recorder_pid FROM connection "
        "ORDER BY started_ns, id"
    ).fetchall()
    wanted = None if ids is None else set(ids)
    return [Candidate(*r) for r in rows if wanted is None or r[0] in wanted]


def is_live(candidate: Candidate, alive: Alive = process_alive) -> bool:
    """Whether the connection may still be written (see the rules)."""
    if candidate.recorder_pid is not None and alive(candidate.recorder_pid):
        return True
    return candidate.status == "running" and alive(candidate.proxy_pid)


def _start_order(candidate: Candidate) -> tuple[int, int]:
    return candidate.started_ns, candidate.id


def prune_candidates(
    connections: Sequence[Candidate], *, before_ns: int | None, keep: int, alive: Alive
) -> list[Candidate]:
    """What ``prune`` removes: started before ``before_ns`` (any age when None), except the
    ``keep`` that started last and every live one; oldest first."""
    newest_first = sorted(connections, key=_start_order, reverse=True)
    chosen = [
        c
        for c in newest_first[keep:]
        if (before_ns is None or c.started_ns < before_ns) and not is_live(c, alive)
    ]
    return sorted(chosen, key=_start_order)


def _tables_naming_connections(db: sqlite3.Connection) -> list[str]:
    names = [
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return [
        name
        for name in names
        if any(col[1] == "connection_id" for col in db.execute(f'PRAGMA table_info("{name}")'))
    ]


def _unindex(db: sqlite3.Connection, connection_id: int) -> None:
    """Take a connection's indexed frames out of the search index (an external-content index
    forgets a row only when told its words, which the ``frame_text`` view still gives)."""
    db.execute(
        "INSERT INTO frame_search (frame_search, rowid, text) "
        "SELECT 'delete', t.id, t.text FROM frame_text t "
        "JOIN search_progress p ON p.connection_id = t.connection_id "
        "WHERE t.connection_id = ? AND t.seq <= p.indexed_seq",
        (connection_id,),
    )


def remove(db: sqlite3.Connection, path: Path, ids: Sequence[int]) -> Removed:
    """Delete these connections with everything that names them, then reclaim the space."""
    before = database_bytes(path)
    frames = findings = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        tables = _tables_naming_connections(db)
        for connection_id in ids:
            _unindex(db, connection_id)
            for table in tables:
                cursor = db.execute(
                    f'DELETE FROM "{table}" WHERE connection_id = ?', (connection_id,)
                )
                if table == "frame":
                    frames += cursor.rowcount
                elif table == "finding":
                    findings += cursor.rowcount
            db.execute("DELETE FROM connection WHERE id = ?", (connection_id,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    try:
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as error:
        return Removed(list(ids), frames, findings, None, str(error))
    return Removed(list(ids), frames, findings, max(before - database_bytes(path), 0))
