"""The queries of ``replay``: the frames of a recording, as the replay script needs them.

Rules:
- Read only. Only the columns replay uses are read (``store.replay_rows.RecordedFrame``), in
  ``seq`` order from the ``(connection_id, seq)`` index, in large batches: loading is most of
  the cost of replaying a long recording.
- A REF that names a session narrows the replay to that session (see refs.scope).
- ``load_script`` leaves out what replay does not need: an agent ``session/update``
  notification that is neither a notice nor a compaction (the bulk of a recording, sent
  verbatim) comes as a ``store.replay_rows.Verbatim`` row (``seq``, ``mono_ns``, ``raw`` and 1);
  the other frames (0 in that column) are then read in full, by ``seq``, as ``RecordedFrame``.
  SQLite classifies them. When a session is selected (by REF or ``session``), every frame comes as a
  ``RecordedFrame``, since selecting a session needs them all.
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from acp_proxy.errors import RecordingError
from acp_proxy.protocol.acp import COMPACTION_KINDS, LIVE_ONLY_UPDATE_KINDS, SESSION_UPDATE
from acp_proxy.store.database import connect
from acp_proxy.store.frame_types import Layout
from acp_proxy.store.refs import Scope, scope
from acp_proxy.store.replay_rows import RecordedFrame, ScriptRow
from acp_proxy.store.transport_kind import is_remote

_BATCH = 8192
_COLUMNS = (
    "seq, direction, mono_ns, raw, kind, rpc_id, method, update_kind, request_seq, session_id"
)
_SELECT_SEQS = f"SELECT {_COLUMNS} FROM frame WHERE connection_id = ? AND seq IN"
_SELECT = (
    "SELECT seq, direction, mono_ns, raw, kind, rpc_id, method, update_kind, request_seq, "
    "session_id FROM frame WHERE connection_id = ?1 AND direction IS NOT 'stderr' ORDER BY seq"
)
# Our own constants, never input: the update kinds replay does not send verbatim.
_KEPT = ", ".join(f"'{kind}'" for kind in sorted(LIVE_ONLY_UPDATE_KINDS | COMPACTION_KINDS))
_LAYOUT = Layout(_COLUMNS.split(", "))
# Never NULL, so that NOT _VERBATIM is exactly the other frames. A verbatim row is typed: the
# equalities hold only for text (direction, kind, method) and NULL (request_seq), and the
# columns it is made of (seq, mono_ns, raw) and its update kind are tested; a frame that fails
# any of it is one of the others, and so checked in full (frame_types.py).
_VERBATIM = (
    f"(direction = 'a2c' AND kind = 'notification' AND method IS '{SESSION_UPDATE}' "
    f"AND request_seq IS NULL AND typeof(update_kind) = 'text' "
    f"AND update_kind NOT IN ({_KEPT}) "
    "AND typeof(seq) = 'integer' AND typeof(mono_ns) = 'integer' AND typeof(raw) = 'blob')"
)
_SELECT_SCRIPT = (  # Verbatim rows: (seq, mono_ns, raw, 1); 0 in the last column: look it up
    f"SELECT seq, mono_ns, raw, {_VERBATIM} FROM frame "
    "WHERE connection_id = ?1 AND direction IS NOT 'stderr' ORDER BY seq"
)
_IN = 500  # seqs per look-up of the other frames
_SEQ = Layout(["seq"])


def load(db_path: Path, ref: str | None) -> tuple[Scope, list[RecordedFrame]]:
    """What ``ref`` names, and its protocol frames (``UnknownRecording`` when nothing)."""
    db = connect(db_path, create=False, readonly=True)
    try:
        target = scope(db, ref, sessions=True)
        return target, _frames(db, target.connection_id)
    except sqlite3.Error as error:
        raise RecordingError(f"cannot read the recording: {error}") from error
    finally:
        db.close()


def load_script(
    db_path: Path, ref: str | None, session: str | None
) -> tuple[Scope, list[ScriptRow], bool]:
    """``load`` for ``replay.script.build``, verbatim frames as ``Verbatim`` rows (see rules),
    and whether the connection was carried remotely (its frames are not lines)."""
    db = connect(db_path, create=False, readonly=True)
    try:
        target = scope(db, ref, sessions=True)
        remote = is_remote(db, target.connection_id)
        if (session or target.session_id) is not None:
            return target, list(_frames(db, target.connection_id)), remote
        return target, _script_rows(db, target.connection_id), remote
    except sqlite3.Error as error:
        raise RecordingError(f"cannot read the recording: {error}") from error
    finally:
        db.close()


_make = functools.partial(tuple.__new__, RecordedFrame)  # _make, without its Python call


def _frames(db: sqlite3.Connection, connection_id: int) -> list[RecordedFrame]:
    frames: list[RecordedFrame] = []
    cursor = db.execute(_SELECT, (connection_id,))
    while rows := cursor.fetchmany(_BATCH):
        frames.extend(map(_make, _LAYOUT.check(db, rows, connection_id)))
    return frames


def _script_rows(db: sqlite3.Connection, connection_id: int) -> list[ScriptRow]:
    rows: list[Any] = []
    cursor = db.execute(_SELECT_SCRIPT, (connection_id,))
    while batch := cursor.fetchmany(_BATCH):
        rows += batch
    others = [row[0] for row in rows if not row[3]]
    _SEQ.check(db, [(seq,) for seq in others], connection_id)  # what looks the others up
    frames: dict[int, RecordedFrame] = {}
    for start in range(0, len(others), _IN):
        seqs = others[start : start + _IN]
        query = f"{_SELECT_SEQS} ({', '.join('?' * len(seqs))})"
        found = _LAYOUT.check(
            db, db.execute(query, (connection_id, *seqs)).fetchall(), connection_id
        )
        frames.update((row[0], _make(row)) for row in found)
    return [row if row[3] else frames[row[0]] for row in rows]
