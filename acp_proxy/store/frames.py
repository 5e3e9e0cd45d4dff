"""The queries of ``check`` and ``diff``: reading recorded frames back, in order. Read-only.

Rules:
- Frames come back as ``observer.FrameRecord`` values, exactly the rows the recorder wrote
  (same column order), so the rule engine sees the same thing live and from a recording.
- Frames are streamed (cursor iteration), never loaded all at once.
- A REF that names a session (rather than a connection id, uid or label) narrows ``diff``
  to that session's frames.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from acp_proxy.errors import RecordingError
from acp_proxy.protocol.observer import FRAME_COLUMNS, FrameRecord
from acp_proxy.store.database import resolve_ref

_SELECT = f"SELECT {', '.join(FRAME_COLUMNS)} FROM frame"
_BATCH = 4096


@dataclass(frozen=True, slots=True)
class Scope:
    """What a REF names: a connection, possibly narrowed to one session."""

    connection_id: int
    session_id: str | None
    protocol_version: int | None
    label: str | None


def all_connections(db: sqlite3.Connection) -> list[int]:
    return [int(row[0]) for row in db.execute("SELECT id FROM connection ORDER BY id")]


def scope(db: sqlite3.Connection, ref: str | None, *, sessions: bool = False) -> Scope:
    """Resolve ``ref`` (see ``store.resolve_ref``); with ``sessions``, a session id narrows."""
    connection_id = resolve_ref(db, ref)
    row = db.execute(
        "SELECT protocol_version, label, uid FROM connection WHERE id = ?", (connection_id,)
    ).fetchone()
    session = None
    if sessions and ref is not None and ref not in (str(connection_id), row[1], row[2], "last"):
        hit = db.execute(
            "SELECT 1 FROM frame WHERE session_id = ? AND connection_id = ? LIMIT 1",
            (ref, connection_id),
        ).fetchone()
        session = ref if hit else None
    return Scope(connection_id, session, row[0], row[1])


def frames(db: sqlite3.Connection, target: Scope) -> Iterator[FrameRecord]:
    """The frames of a connection (or one session of it), in ``seq`` order."""
    query = f"{_SELECT} WHERE connection_id = ?"
    args: list[int | str] = [target.connection_id]
    if target.session_id is not None:
        query += " AND session_id = ?"
        args.append(target.session_id)
    try:
        cursor = db.execute(query + " ORDER BY seq", args)
        while rows := cursor.fetchmany(_BATCH):
            for row in rows:
                yield FrameRecord._make(row)
    except sqlite3.Error as error:
        raise RecordingError(f"cannot read the recording: {error}") from error
