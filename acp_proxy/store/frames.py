"""The queries of ``check`` and ``diff``: reading recorded frames back, in order. Read-only.

Rules:
- Frames come back as ``observer.FrameRecord`` values, exactly the rows the recorder wrote
  (same column order), so the rule engine sees the same thing live and from a recording.
- Frames are streamed (cursor iteration), never loaded all at once.
- What a REF names (a ``Scope``) comes from the REF opener (refs.py); a REF that names a
  session narrows ``diff`` and ``replay`` to that session's frames.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from acp_proxy.errors import RecordingError
from acp_proxy.protocol.observer import FRAME_COLUMNS, FrameRecord
from acp_proxy.store.frame_types import Layout
from acp_proxy.store.refs import Scope, scope

__all__ = ["Scope", "all_connections", "frames", "losses", "scope"]

_SELECT = f"SELECT {', '.join(FRAME_COLUMNS)} FROM frame"
_BATCH = 4096
_LAYOUT = Layout(FRAME_COLUMNS)


def all_connections(db: sqlite3.Connection) -> list[int]:
    return [int(row[0]) for row in db.execute("SELECT id FROM connection ORDER BY id")]


def losses(db: sqlite3.Connection, connection_id: int) -> tuple[int, int, str | None]:
    """``frames_lost``, ``bytes_lost`` (0 before format 6) and ``error`` of a connection."""
    try:
        row = db.execute(
            "SELECT frames_lost, bytes_lost, error FROM connection WHERE id = ?", (connection_id,)
        ).fetchone()
    except sqlite3.OperationalError:  # an older format, read without migrating
        row = db.execute(
            "SELECT frames_lost, 0, error FROM connection WHERE id = ?", (connection_id,)
        ).fetchone()
    return (0, 0, None) if row is None else (int(row[0] or 0), int(row[1] or 0), row[2])


def frames(
    db: sqlite3.Connection, target: Scope, *, after_seq: int = 0, limit: int = -1
) -> Iterator[FrameRecord]:
    """The frames of a connection (or one session of it) after ``after_seq``, in ``seq`` order,
    at most ``limit`` of them (all when negative)."""
    query = f"{_SELECT} WHERE connection_id = ? AND seq > ?"
    args: list[int | str] = [target.connection_id, after_seq]
    if target.session_id is not None:
        query += " AND session_id = ?"
        args.append(target.session_id)
    try:
        cursor = db.execute(query + " ORDER BY seq LIMIT ?", [*args, limit])
        while rows := cursor.fetchmany(_BATCH):
            for row in _LAYOUT.check(db, rows, target.connection_id):
                yield FrameRecord._make(row)
    except sqlite3.Error as error:
        raise RecordingError(f"cannot read the recording: {error}") from error
