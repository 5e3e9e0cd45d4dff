"""Whether a SQLite file is ours to read and write: the one rule every command's opening follows.

Rules:
- A file is written (its schema created or migrated, its journal switched to WAL) only when it
  is new (no schema object at all, format 0) or already a recording database: a format
  between 1 and this code's, with a ``connection`` and a ``frame`` table holding their
  format-1 columns and an integer ``connection.id``. Anything else (another program's SQLite,
  a browser's history) is refused before a byte of it is changed, read-only or not.
- A recording of a newer format than this code knows is refused, never modified, and so is one
  whose ``connection`` rows hold values that are not of their column's type (a hand-edited
  ``started_ns = 'yesterday'``) or JSON columns that are not JSON: every reader can then take
  each column's type for granted. The check reads the ``connection`` table once (one row per
  recording); frames are checked where they are imported.
- Every refusal is ``UnreadableRecording``: one line, exit 2, naming the file and what is wrong.
- The format and the schema objects are read in one snapshot: a file another proxy is creating
  at that moment is new or a recording, never half of each.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from acp_proxy.errors import UnreadableRecording

_CONNECTION_V1 = frozenset({
    "id", "uid", "label", "status", "started_ns", "ended_ns", "argv", "cwd", "proxy_version",
    "proxy_pid", "agent_pid", "exit_code", "exit_signal", "error", "protocol_version",
    "client_info", "agent_info", "frames_c2a", "frames_a2c", "lines_stderr", "bytes_c2a",
    "bytes_a2c", "bytes_stderr", "frames_lost",
})  # fmt: skip
_FRAME_V1 = frozenset({
    "id", "connection_id", "seq", "direction", "mono_ns", "wall_ns", "offset", "size", "raw",
    "kind", "rpc_id", "method", "request_seq", "session_id", "update_kind", "message_id",
    "tool_call_id", "error_code", "stop_reason", "bad_json", "bad_utf8", "not_jsonrpc",
    "batch", "no_newline",
})  # fmt: skip
_JSON_COLUMNS = ("argv", "client_argv", "client_info", "agent_info")
_STORAGE = {"INTEGER": "integer", "TEXT": "text"}


def require_ours(db: sqlite3.Connection, path: Path, newest: int, *, readonly: bool) -> None:
    """Refuse ``db`` (the file at ``path``) unless it is ours (see the rules); ``newest`` is the
    newest format this code knows. Reads only."""
    # One statement, so one snapshot: another proxy may be creating the file this moment, and
    # its format and its tables commit together.
    version, objects = db.execute(
        "SELECT user_version, (SELECT count(*) FROM sqlite_master) FROM pragma_user_version"
    ).fetchone()
    version, objects = int(version), int(objects)
    if version == 0 and objects == 0 and not readonly:
        return  # new: ours to create
    if version == 0 and objects == 0:
        raise UnreadableRecording(f"{path} is not an acp-proxy recording database (it is empty)")
    if version == 0 or not _has_recording_tables(db):
        raise UnreadableRecording(
            f"{path} is not an acp-proxy recording database (another program's file?); "
            "it is left as it is"
        )
    if version > newest:
        raise UnreadableRecording(
            f"{path} uses recording format {version}; this acp-proxy reads up to {newest}: "
            "upgrade acp-proxy"
        )
    _require_typed_connections(db, path)


def _columns(db: sqlite3.Connection, table: str) -> dict[str, tuple[str, int]]:
    return {
        str(row[1]): (str(row[2]).upper(), int(row[5]))
        for row in db.execute(f"PRAGMA table_info({table})")
    }


def _has_recording_tables(db: sqlite3.Connection) -> bool:
    connection, frame = _columns(db, "connection"), _columns(db, "frame")
    return (
        connection.keys() >= _CONNECTION_V1
        and frame.keys() >= _FRAME_V1
        and connection["id"] == ("INTEGER", 1)
    )


def _require_typed_connections(db: sqlite3.Connection, path: Path) -> None:
    checks: list[tuple[str, str]] = []
    for name, (declared, _) in _columns(db, "connection").items():
        storage = _STORAGE.get(declared)
        if storage is not None:
            checks.append((name, f"typeof({name}) NOT IN ('{storage}', 'null')"))
        if name in _JSON_COLUMNS:
            checks.append((name, f"({name} IS NOT NULL AND NOT json_valid({name}))"))
    cases = " ".join(f"WHEN {test} THEN '{name}'" for name, test in checks)
    row = db.execute(
        f"SELECT id, CASE {cases} END AS wrong FROM connection WHERE wrong IS NOT NULL LIMIT 1"
    ).fetchone()
    if row is None:
        return
    connection_id, column = row
    value = db.execute(
        f"SELECT quote(substr({column}, 1, 40)) FROM connection WHERE id = ?", (connection_id,)
    ).fetchone()[0]
    declared = _columns(db, "connection")[column][0]
    wanted = "JSON text" if column in _JSON_COLUMNS and declared == "TEXT" else declared.lower()
    raise UnreadableRecording(
        f"{path}: connection {connection_id} holds {column} = {value}, not {wanted}: the "
        "database was changed by something other than acp-proxy"
    )
