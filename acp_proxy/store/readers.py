"""Read queries of the inspecting commands (ls, show, tail, stats, export).

Rules:
- Read only: never writes, never migrates (``open_for_reading`` opens the file read-only).
- Everything that can be large streams: frames come from a cursor in ``seq`` order in batches,
  so the first rows reach the caller before the last are read. Each query that reads frames of
  one connection walks the ``(connection_id, seq)`` index; nothing counts a table up front.
- SQL text is built only from this module's constant fragments; values are parameters.
- Rows become ``recording_values`` dataclasses; JSON columns are parsed here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_proxy.errors import UnknownRecording
from acp_proxy.protocol.decode import column_value
from acp_proxy.protocol.latency import Call
from acp_proxy.store.database import connect
from acp_proxy.store.frame_types import JOINED, STORAGE, Layout, mistyped_sql, require_typed
from acp_proxy.store.remote import REMOTE_FORMAT, carriers
from acp_proxy.store.transport_kind import is_remote
from acp_proxy.store.values import ConnectionRow, FrameRow

BATCH = 256
Database = sqlite3.Connection  # for modules that hold one without speaking SQL
FLAG_COLUMNS = ("bad_json", "bad_utf8", "not_jsonrpc", "batch", "no_newline")
DIRECTIONS = {"c2a": "c2a", "client": "c2a", "a2c": "a2c", "agent": "a2c", "stderr": "stderr"}

_CONNECTION_COLUMNS = (
    "id, uid, label, status, started_ns, ended_ns, argv, cwd, proxy_version, exit_code, "
    "exit_signal, error, protocol_version, client_info, agent_info, frames_c2a, frames_a2c, "
    "lines_stderr, frames_lost, client_argv, "
)
_REMOTE_COLUMNS = "transport, remote_url, client_address"  # format 8
_NO_REMOTE_COLUMNS = "'stdio', NULL, NULL"  # an older format, read without migrating


def _connection_columns(db: sqlite3.Connection) -> str:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    return _CONNECTION_COLUMNS + (
        _REMOTE_COLUMNS if version >= REMOTE_FORMAT else _NO_REMOTE_COLUMNS
    )


# FrameRow's fields in order, the request's mono_ns in place of the latency (computed here).
_FRAME_LAYOUT = Layout((
    "seq", "direction", "mono_ns", "wall_ns", "raw", "kind", "rpc_id", "method", "session_id",
    "update_kind", "request_seq", "stop_reason", "error_code", "mono_ns" + JOINED, "offset",
    "size", "message_id", "tool_call_id", *FLAG_COLUMNS,
))  # fmt: skip
_LATENCY = _FRAME_LAYOUT.columns.index("mono_ns" + JOINED)
_FRAME_SELECT = (
    "SELECT f.seq, f.direction, f.mono_ns, f.wall_ns, f.raw, f.kind, f.rpc_id, f.method, "
    "f.session_id, f.update_kind, f.request_seq, f.stop_reason, f.error_code, "
    "r.mono_ns, f.offset, f.size, f.message_id, f.tool_call_id, "
    "f.bad_json, f.bad_utf8, f.not_jsonrpc, f.batch, f.no_newline "
    "FROM frame f LEFT JOIN frame r "
    "ON r.connection_id = f.connection_id AND r.seq = f.request_seq "
)


def open_for_reading(path: Path) -> sqlite3.Connection:
    """Open an existing recording database read-only (``UnknownRecording`` when missing)."""
    return connect(path, create=False, readonly=True)


def _connection(row: tuple[Any, ...]) -> ConnectionRow:
    values = list(row)
    values[6] = column_value(values[6]) or []
    values[13], values[14] = column_value(values[13]), column_value(values[14])
    values[19] = column_value(values[19])
    values[20] = values[20] if isinstance(values[20], str) else "stdio"
    return ConnectionRow(*values)


def connection(db: sqlite3.Connection, connection_id: int) -> ConnectionRow:
    row = db.execute(
        f"SELECT {_connection_columns(db)} FROM connection WHERE id = ?",
        (connection_id,),
    ).fetchone()
    if row is None:
        raise UnknownRecording(f"no connection {connection_id}")
    return _connection(row)


def connections(db: sqlite3.Connection, limit: int | None) -> list[ConnectionRow]:
    """The newest ``limit`` connections (all when None), oldest first: by their start (an
    import keeps the start it had), then their id."""
    rows = db.execute(
        f"SELECT {_connection_columns(db)} FROM connection "
        "ORDER BY started_ns DESC, id DESC LIMIT ?",
        (-1 if limit is None else limit,),
    ).fetchall()
    return [_connection(r) for r in reversed(rows)]


@dataclass(frozen=True, slots=True)
class ConnectionCounts:
    """What ``ls`` tells about a connection beyond its row."""

    frames: int
    prompts: int
    errors: int  # error responses
    malformed: int  # frames that are not clean JSON-RPC
    first_ns: int | None
    last_ns: int | None
    sessions: list[tuple[str, int]]  # session id, prompts


_COUNTED = ("seq", "kind", "method", "session_id", "mono_ns", "bad_json", "bad_utf8", "not_jsonrpc")


def counts(db: sqlite3.Connection, connection_id: int) -> ConnectionCounts:
    row = db.execute(
        "SELECT count(*), coalesce(sum(kind = 'request' AND method = 'session/prompt'), 0), "
        "coalesce(sum(kind = 'error'), 0), "
        "coalesce(sum(bad_json OR bad_utf8 OR not_jsonrpc), 0), min(mono_ns), max(mono_ns), "
        f"coalesce(sum({mistyped_sql(_COUNTED)}), 0) FROM frame WHERE connection_id = ?",
        (connection_id,),
    ).fetchone()
    if row[-1]:
        require_typed(db, connection_id, _COUNTED)
    sessions = db.execute(
        "SELECT session_id, sum(kind = 'request' AND method = 'session/prompt') FROM frame "
        "WHERE connection_id = ? AND session_id IS NOT NULL GROUP BY session_id ORDER BY min(seq)",
        (connection_id,),
    ).fetchall()
    frames, prompts, errors, malformed, first, last, _ = row
    return ConnectionCounts(
        frames, prompts, errors, malformed, first, last, [tuple(s) for s in sessions]
    )


@dataclass(frozen=True, slots=True)
class FrameFilter:
    """Which frames ``show``, ``tail``, the MCP server and the inspector's timeline list: every
    field optional, combined with AND.

    ``text`` is a substring of the frame's raw bytes in which ASCII letters match either case
    (``Error`` finds ``error`` and ``ERROR``) and every other character only itself: the one
    case rule of every surface that filters frames by text (SQLite's LIKE).
    """

    session: str | None = None
    method: str | None = None  # a GLOB pattern: session/* matches every session method
    kind: str | None = None  # a frame kind (request, ...) or an update kind
    direction: str | None = None  # c2a, a2c, stderr (or client, agent)
    text: str | None = None  # a substring of the raw bytes (see above for case)

    @property
    def empty(self) -> bool:
        return not any((self.session, self.method, self.kind, self.direction, self.text))

    def key(self) -> tuple[str | None, ...]:
        return (self.session, self.method, self.kind, self.direction, self.text)

    def where(self) -> tuple[str, list[Any]]:
        """SQL ``AND`` clauses over ``frame f`` and their values (never text of the filter)."""
        clauses: list[str] = []
        values: list[Any] = []
        if self.session:
            clauses.append("f.session_id = ?")
            values.append(self.session)
        if self.method:
            clauses.append("f.method GLOB ?")
            values.append(self.method)
        if self.kind:
            clauses.append("(f.kind = ? OR f.update_kind = ?)")
            values += [self.kind, self.kind]
        if self.direction:
            clauses.append("f.direction = ?")
            values.append(DIRECTIONS.get(self.direction, self.direction))
        if self.text:
            escaped = self.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            clauses.append("CAST(f.raw AS TEXT) LIKE ? ESCAPE '\\'")
            values.append(f"%{escaped}%")
        return "".join(f" AND {c}" for c in clauses), values


def _frame(row: tuple[Any, ...], carried: dict[int, Any] | None = None) -> FrameRow:
    flags = tuple(name for name, on in zip(FLAG_COLUMNS, row[18:], strict=True) if on)
    values = list(row[:18])  # FrameRow's fields, in order
    if values[_LATENCY] is not None:
        values[_LATENCY] = values[2] - values[_LATENCY]
    make: Any = FrameRow
    carrier = None if carried is None else carried.get(row[0])
    return make(*values, flags=flags, carrier=carrier)  # type: ignore[no-any-return]


def _with_carriers(
    db: sqlite3.Connection, connection_id: int, rows: list[Any], remote: bool
) -> Iterator[FrameRow]:
    """``rows`` as frames; a remote connection's with how each crossed (store/remote.py)."""
    carried = carriers(db, connection_id, rows[0][0], rows[-1][0]) if remote and rows else None
    return (_frame(r, carried) for r in rows)


def frames(
    db: sqlite3.Connection,
    connection_id: int,
    where: FrameFilter | None = None,
    *,
    after_seq: int = 0,
    limit: int | None = None,
    newest: bool = False,
    until_seq: int | None = None,
) -> Iterator[FrameRow]:
    """Frames of one connection in ``seq`` order, streamed (``newest``: the last ``limit``);
    a remote connection's carry their ``carrier``.

    ``after_seq`` is exclusive, ``until_seq`` inclusive.
    """
    remote = is_remote(db, connection_id)
    clauses, values = (where or FrameFilter()).where()
    if until_seq is not None:
        clauses += " AND f.seq <= ?"
        values.append(until_seq)
    order = " ORDER BY f.seq DESC LIMIT ?" if newest else " ORDER BY f.seq LIMIT ?"
    cursor = db.execute(
        _FRAME_SELECT + "WHERE f.connection_id = ? AND f.seq > ?" + clauses + order,
        (connection_id, after_seq, *values, -1 if limit is None else limit),
    )
    check = _FRAME_LAYOUT.check
    if newest:
        rows = check(db, cursor.fetchall(), connection_id)
        yield from _with_carriers(db, connection_id, rows[::-1], remote)
        return
    while rows := cursor.fetchmany(BATCH):
        yield from _with_carriers(db, connection_id, check(db, rows, connection_id), remote)


_SEQ = Layout(["seq" + JOINED])  # an aggregate of a connection's seqs: NULL when it has none


def last_seq(db: sqlite3.Connection, connection_id: int) -> int:
    row = db.execute("SELECT max(seq) FROM frame WHERE connection_id = ?", (connection_id,))
    return int(_SEQ.check_one(db, row.fetchone(), connection_id)[0] or 0)


def holds_recordings(db: sqlite3.Connection) -> bool:
    """Whether the database has its tables yet (a file just created may not)."""
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'connection'")
    return row.fetchone() is not None


def connection_count(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM connection").fetchone()[0])


def newest_connection_id(db: sqlite3.Connection) -> int:
    """The id of the connection written last, 0 when there is none: ids only grow (format
    9), so ``connection_after`` it is the next one to be written (``tail --wait``)."""
    return int(db.execute("SELECT coalesce(max(id), 0) FROM connection").fetchone()[0])


def connection_after(db: sqlite3.Connection, connection_id: int) -> int | None:
    """The id of the first connection newer than ``connection_id``, if one exists yet."""
    row = db.execute("SELECT min(id) FROM connection WHERE id > ?", (connection_id,)).fetchone()
    return None if row[0] is None else int(row[0])


_MONO_NS = Layout(["mono_ns"])


def first_mono_ns(db: sqlite3.Connection, connection_id: int) -> int | None:
    row = db.execute(
        "SELECT mono_ns FROM frame WHERE connection_id = ? ORDER BY seq LIMIT 1", (connection_id,)
    ).fetchone()
    return None if row is None else int(_MONO_NS.check_one(db, row, connection_id)[0])


def status(db: sqlite3.Connection, connection_id: int) -> str:
    row = db.execute("SELECT status FROM connection WHERE id = ?", (connection_id,)).fetchone()
    return "gone" if row is None else str(row[0])


def export_rows(db: sqlite3.Connection, connection_id: int) -> Iterator[dict[str, Any]]:
    """Every column of every frame of one connection (but ids), in ``seq`` order, streamed."""
    cursor = db.execute(
        "SELECT * FROM frame WHERE connection_id = ? ORDER BY seq", (connection_id,)
    )
    names = [d[0] for d in cursor.description]
    layout = Layout(name if name in STORAGE else None for name in names)
    while rows := cursor.fetchmany(BATCH):
        for row in layout.check(db, rows, connection_id):
            record = dict(zip(names, row, strict=True))
            del record["id"], record["connection_id"]
            yield record


# Columns that only mean something on the machine, while the recording is written: left out
# of every record that leaves the database (exports, bundles, MCP).
LOCAL_COLUMNS = frozenset({"recorder_pid"})


def connection_record(db: sqlite3.Connection, connection_id: int) -> dict[str, Any]:
    """Every column of one connection row, as stored (JSON columns stay text), but the
    ``LOCAL_COLUMNS``."""
    cursor = db.execute("SELECT * FROM connection WHERE id = ?", (connection_id,))
    row = cursor.fetchone()
    if row is None:
        raise UnknownRecording(f"no connection {connection_id}")
    names = [d[0] for d in cursor.description]
    return {k: v for k, v in zip(names, row, strict=True) if k not in LOCAL_COLUMNS}


_CALL = Layout(("method", "direction", "mono_ns", "mono_ns" + JOINED, "kind" + JOINED))


def calls(db: sqlite3.Connection, connection_id: int) -> Iterator[Call]:
    """Every request of a connection with its answer's latency (``protocol.latency``'s input)."""
    cursor = db.execute(
        "SELECT req.method, req.direction, req.mono_ns, resp.mono_ns, resp.kind "
        "FROM frame req LEFT JOIN frame resp "
        "ON resp.connection_id = req.connection_id AND resp.request_seq = req.seq "
        "WHERE req.connection_id = ? AND req.kind = 'request' ORDER BY req.seq",
        (connection_id,),
    )
    while rows := cursor.fetchmany(BATCH):
        for method, direction, sent, answered, kind in _CALL.check(db, rows, connection_id):
            latency_ns = None if answered is None else answered - sent
            yield Call(method or "", direction, latency_ns, kind == "error")


_TURNS = (
    "seq", "direction", "kind", "method", "session_id", "request_seq", "mono_ns", "stop_reason",
    "message_id", "update_kind", "raw",
)  # fmt: skip


def prompt_turns(
    db: sqlite3.Connection, connection_id: int, limit: int = 200
) -> list[tuple[Any, ...]]:
    """(session, prompt seq, end seq, stop reason, status, duration ms) of the first turns."""
    require_typed(db, connection_id, _TURNS)  # the view reads these columns of every frame
    rows = db.execute(
        "SELECT session_id, prompt_seq, end_seq, stop_reason, status, duration_ms "
        "FROM prompt_turns WHERE connection_id = ? ORDER BY prompt_seq LIMIT ?",
        (connection_id, limit),
    ).fetchall()
    return [tuple(r) for r in rows]


def frame_id(db: sqlite3.Connection, connection_id: int, seq: int) -> int:
    """The row id of one frame (0 when there is none)."""
    row = db.execute(
        "SELECT id FROM frame WHERE connection_id = ? AND seq = ?", (connection_id, seq)
    ).fetchone()
    return 0 if row is None else int(row[0])
