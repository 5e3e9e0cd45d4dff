"""The query of ``replay``: the frames of a recording, as the replay script needs them.

Rules:
- Read only. Only the columns replay uses are read (``replay_script.RecordedFrame``), in
  ``seq`` order from the ``(connection_id, seq)`` index, in large batches: loading is most of
  the cost of replaying a long recording.
- A REF that names a session narrows the replay to that session (see store_check.scope).
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

from .errors import RecordingError
from .replay_script import RecordedFrame
from .store import connect
from .store_check import Scope, scope

_BATCH = 8192
_SELECT = (
    "SELECT seq, direction, mono_ns, raw, kind, rpc_id, method, update_kind, request_seq, "
    "session_id FROM frame WHERE connection_id = ? AND direction != 'stderr' ORDER BY seq"
)


def load(db_path: Path, ref: str | None) -> tuple[Scope, list[RecordedFrame]]:
    """What ``ref`` names, and its protocol frames (``UnknownRecording`` when nothing)."""
    db = connect(db_path, create=False, readonly=True)
    frames: list[RecordedFrame] = []
    try:
        target = scope(db, ref, sessions=True)
        cursor = db.execute(_SELECT, (target.connection_id,))
        make = functools.partial(tuple.__new__, RecordedFrame)  # _make, without its Python call
        while rows := cursor.fetchmany(_BATCH):
            frames.extend(map(make, rows))
    except sqlite3.Error as error:
        raise RecordingError(f"cannot read the recording: {error}") from error
    finally:
        db.close()
    return target, frames
