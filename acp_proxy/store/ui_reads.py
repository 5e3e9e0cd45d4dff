"""Read queries of the web inspector (``acp-proxy ui``): read-only, each bounded or streamed.

Rules:
- Never writes: every function takes a connection opened read-only (``open_for_reading``).
- Frames of one connection are reached through the ``(connection_id, seq)`` index; the event
  tail walks ``frame.id`` (the rowid), which grows in commit order because every writer holds
  the write lock from its first insert to its commit. So "every frame with an id above N" read
  after a commit never misses one committed before it, and a reconnect from the last id seen
  has no gap and no duplicate.
- Scans that could cover a whole recording (``scan_keys``, ``tail``) take a limit and a place
  to start from, so callers page through a million frames in bounded steps.
- Filters are parameters, never text: ``FrameFilter.where`` (readers.py, the one filter of
  every surface) builds SQL from constant fragments.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp_proxy.protocol.decode import column_value
from acp_proxy.store.frame_types import JOINED, Layout, mistyped_sql, require_typed
from acp_proxy.store.readers import FrameFilter

SUMMARY_COLUMNS = (
    "id", "seq", "direction", "mono_ns", "wall_ns", "size", "kind", "rpc_id", "method",
    "session_id", "update_kind", "message_id", "request_seq", "error_code", "stop_reason",
    "bad_json", "bad_utf8", "not_jsonrpc",
)  # fmt: skip
_SUMMARY = ", ".join(f"f.{c}" for c in SUMMARY_COLUMNS)
# What the row index needs of every frame: no payload.
KEY_COLUMNS = ("seq", "direction", "session_id", "update_kind", "message_id")
_KEYS = ", ".join(f"f.{c}" for c in KEY_COLUMNS)
# A summary, the time of the request a response answers, and the first bytes of the payload.
_WITH_PREVIEW = (
    f"SELECT {_SUMMARY}, r.mono_ns, substr(f.raw, 1, {{preview}}) FROM frame f "
    "LEFT JOIN frame r ON r.connection_id = f.connection_id AND r.seq = f.request_seq "
)
PREVIEW_BYTES = 4096
# What each query reads of a frame, its values checked (frame_types.py) before use.
_SUMMARY_LAYOUT = Layout(SUMMARY_COLUMNS)
_PREVIEW_LAYOUT = Layout((*SUMMARY_COLUMNS, "mono_ns" + JOINED, "raw"))
_FRAME_LAYOUT = Layout((*SUMMARY_COLUMNS, "raw", "offset", "batch", "no_newline", "tool_call_id"))
_KEY_LAYOUT = Layout(KEY_COLUMNS)
_TAIL_LAYOUT = Layout((*SUMMARY_COLUMNS, "connection_id"))
_FIRST = Layout(["mono_ns"])
_LAST = Layout(("id", "seq", "mono_ns"))
_NEWEST = Layout(("id", "seq"))
_SESSION = Layout(["session_id"])
_COUNTED = ("seq", "kind", "method", "bad_json", "bad_utf8", "not_jsonrpc")
_CALL_SPAN = Layout(
    ("seq", "method", "direction", "mono_ns", "mono_ns" + JOINED, "kind" + JOINED, "seq" + JOINED)
)
_EXCHANGE = Layout(("seq", "method", "raw", "raw" + JOINED))
_EXTENSION = Layout(("method", "direction", None))


# --------------------------------------------------------------------------- the database


def is_ready(path: Path) -> bool:
    """Whether a recording database exists at ``path`` with its tables made."""
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            db.execute("SELECT 1 FROM connection LIMIT 1").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return True


def data_version(db: sqlite3.Connection) -> int:
    """Changes whenever another connection commits (cheap: no table is read)."""
    return int(db.execute("PRAGMA data_version").fetchone()[0])


def max_frame_id(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT coalesce(max(id), 0) FROM frame").fetchone()[0])


def connection_states(db: sqlite3.Connection) -> list[tuple[int, str, int]]:
    """``(id, status, frames so far)`` of every connection: what tells the list to refresh."""
    rows = db.execute(
        "SELECT id, status, frames_c2a + frames_a2c + lines_stderr FROM connection ORDER BY id"
    )
    return [(int(i), str(s), int(n)) for i, s, n in rows]


# --------------------------------------------------------------------------- recordings


_CONNECTION = (
    "id", "uid", "label", "status", "started_ns", "ended_ns", "argv", "cwd", "exit_code",
    "exit_signal", "error", "protocol_version", "client_info", "agent_info", "frames_c2a",
    "frames_a2c", "lines_stderr", "frames_lost", "proxy_pid",
)  # fmt: skip


def connection_exists(db: sqlite3.Connection, connection_id: int) -> bool:
    return (
        db.execute("SELECT 1 FROM connection WHERE id = ?", (connection_id,)).fetchone() is not None
    )


def connection_head(db: sqlite3.Connection, connection_id: int) -> dict[str, Any] | None:
    """One connection's row and what the index reads at once (no scan of its frames)."""
    row = db.execute(
        f"SELECT {', '.join(_CONNECTION)} FROM connection WHERE id = ?", (connection_id,)
    ).fetchone()
    if row is None:
        return None
    record = dict(zip(_CONNECTION, row, strict=True))
    record["argv"] = column_value(record["argv"]) or []
    record["client_info"] = column_value(record["client_info"])
    record["agent_info"] = column_value(record["agent_info"])
    firsts = db.execute(
        "SELECT mono_ns FROM frame WHERE connection_id = ? ORDER BY seq LIMIT 1", (connection_id,)
    ).fetchall()
    lasts = db.execute(
        "SELECT id, seq, mono_ns FROM frame WHERE connection_id = ? ORDER BY seq DESC LIMIT 1",
        (connection_id,),
    ).fetchall()
    first = _FIRST.check(db, firsts, connection_id)[0] if firsts else None
    last = _LAST.check(db, lasts, connection_id)[0] if lasts else None
    findings = db.execute(
        "SELECT count(*) FROM finding WHERE connection_id = ?", (connection_id,)
    ).fetchone()[0]
    record.update(
        first_mono_ns=first[0] if first else None, last_mono_ns=last[2] if last else None,
        last_frame_id=last[0] if last else 0, last_seq=last[1] if last else 0,
        stored_findings=findings,
        frames=record["frames_c2a"] + record["frames_a2c"] + record["lines_stderr"],
    )  # fmt: skip
    return record


def sessions(db: sqlite3.Connection, connection_id: int) -> list[str]:
    """The session ids of a connection, in order of first use (reads the session index only)."""
    rows = db.execute(
        "SELECT session_id FROM frame INDEXED BY frame_by_session "
        "WHERE session_id IS NOT NULL AND connection_id = ? GROUP BY session_id ORDER BY min(seq)",
        (connection_id,),
    )
    return [str(r[0]) for r in _SESSION.check(db, rows.fetchall(), connection_id)]


def frame_counts(
    db: sqlite3.Connection, connection_id: int, after_seq: int
) -> tuple[int, int, int, int]:
    """``(last seq, prompt turns, error responses, malformed)`` among frames after ``after_seq``."""
    row = db.execute(
        "SELECT max(seq), coalesce(sum(kind = 'request' AND method = 'session/prompt'), 0), "
        "coalesce(sum(kind = 'error'), 0), coalesce(sum(bad_json OR bad_utf8 OR not_jsonrpc), 0), "
        f"coalesce(sum({mistyped_sql(_COUNTED)}), 0) "
        "FROM frame WHERE connection_id = ? AND seq > ?",
        (connection_id, after_seq),
    ).fetchone()
    if row[-1]:
        require_typed(db, connection_id, _COUNTED)
    return int(row[0] or after_seq), int(row[1]), int(row[2]), int(row[3])


def connection_ids(db: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in db.execute("SELECT id FROM connection ORDER BY id")]


def stored_findings(
    db: sqlite3.Connection, connection_id: int, frames: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """The stored findings (``record --check``) of a connection, or of its frames ``frames =
    (first, last)``."""
    where, values = ("", ()) if frames is None else (" AND seq BETWEEN ? AND ?", frames)
    rows = db.execute(
        "SELECT seq, direction, rule, severity, message, origin FROM finding "
        f"WHERE connection_id = ?{where} ORDER BY coalesce(seq, 0), id",
        (connection_id, *values),
    )
    names = ("seq", "direction", "rule", "severity", "message", "origin")
    return [dict(zip(names, r, strict=True)) for r in rows]


# --------------------------------------------------------------------------- frames


def _summaries(cursor: sqlite3.Cursor, connection_id: int) -> list[dict[str, Any]]:
    rows = _SUMMARY_LAYOUT.check(cursor.connection, cursor.fetchall(), connection_id)
    return [dict(zip(SUMMARY_COLUMNS, r, strict=True)) for r in rows]


def scan_keys(
    db: sqlite3.Connection, connection_id: int, where: FrameFilter, after_seq: int, limit: int
) -> list[tuple[Any, ...]]:
    """Up to ``limit`` frames after ``after_seq`` that pass ``where``, as ``KEY_COLUMNS``."""
    clauses, values = where.where()
    rows = db.execute(
        f"SELECT {_KEYS} FROM frame f WHERE f.connection_id = ? AND f.seq > ?{clauses} "
        "ORDER BY f.seq LIMIT ?",
        (connection_id, after_seq, *values, limit),
    ).fetchall()
    return _KEY_LAYOUT.check(db, rows, connection_id)


def _previewed(cursor: sqlite3.Cursor, connection_id: int) -> list[dict[str, Any]]:
    out = []
    width = len(SUMMARY_COLUMNS)
    for row in _PREVIEW_LAYOUT.check(cursor.connection, cursor.fetchall(), connection_id):
        record = dict(zip(SUMMARY_COLUMNS, row[:width], strict=True))
        asked = row[width]
        record["latency_ns"] = None if asked is None else record["mono_ns"] - asked
        record["head"] = bytes(row[width + 1])
        out.append(record)
    return out


def summaries_at(
    db: sqlite3.Connection, connection_id: int, seqs: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """Summaries, response latency and payload head of the frames at ``seqs``."""
    found: dict[int, dict[str, Any]] = {}
    select = _WITH_PREVIEW.format(preview=PREVIEW_BYTES)
    for start in range(0, len(seqs), 500):
        part = list(seqs[start : start + 500])
        marks = ", ".join("?" for _ in part)
        cursor = db.execute(
            f"{select} WHERE f.connection_id = ? AND f.seq IN ({marks})", (connection_id, *part)
        )
        found.update((r["seq"], r) for r in _previewed(cursor, connection_id))
    return found


def frames_between(
    db: sqlite3.Connection,
    connection_id: int,
    where: FrameFilter,
    first_seq: int,
    last_seq: int,
    limit: int,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Summaries with previews of the frames in ``[first_seq, last_seq]`` passing ``where``."""
    clauses, values = where.where()
    cursor = db.execute(
        f"{_WITH_PREVIEW.format(preview=PREVIEW_BYTES)} WHERE f.connection_id = ? "
        f"AND f.seq >= ? AND f.seq <= ?{clauses} ORDER BY f.seq LIMIT ? OFFSET ?",
        (connection_id, first_seq, last_seq, *values, limit, offset),
    )
    return _previewed(cursor, connection_id)


def frame(db: sqlite3.Connection, connection_id: int, seq: int) -> dict[str, Any] | None:
    """One frame with its exact bytes."""
    row = db.execute(
        f"SELECT {_SUMMARY}, f.raw, f.offset, f.batch, f.no_newline, f.tool_call_id "
        "FROM frame f WHERE f.connection_id = ? AND f.seq = ?",
        (connection_id, seq),
    ).fetchone()
    if row is None:
        return None
    _FRAME_LAYOUT.check_one(db, row, connection_id)
    record = dict(zip(SUMMARY_COLUMNS, row[: len(SUMMARY_COLUMNS)], strict=True))
    raw, offset, batch, no_newline, tool_call_id = row[len(SUMMARY_COLUMNS) :]
    record.update(
        raw=bytes(raw), offset=offset, batch=batch, no_newline=no_newline,
        tool_call_id=tool_call_id,
    )  # fmt: skip
    return record


def answer_of(
    db: sqlite3.Connection, connection_id: int, request_seq: int
) -> dict[str, Any] | None:
    """The response to the request at ``request_seq`` (None: none yet): by the answers'
    index (format 10), or, in an older database read as it is, walking forward from it."""
    # An answer always comes after its request: ``seq > ?`` changes nothing with the index,
    # and is what the walk forward needs without it.
    by = "INDEXED BY frame_by_request " if has_answer_index(db) else ""
    cursor = db.execute(
        f"SELECT {_SUMMARY} FROM frame f {by}WHERE f.connection_id = ? AND f.seq > ? "
        "AND f.request_seq = ? ORDER BY f.seq LIMIT 1",
        (connection_id, request_seq, request_seq),
    )
    found = _summaries(cursor, connection_id)
    return found[0] if found else None


def has_answer_index(db: sqlite3.Connection) -> bool:
    """Whether answers are indexed by their request (format 10 on; a database of an older
    format opened read-only has no such index)."""
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'frame_by_request'"
    ).fetchone()
    return row is not None


def summary(db: sqlite3.Connection, connection_id: int, seq: int) -> dict[str, Any] | None:
    found = _summaries(
        db.execute(
            f"SELECT {_SUMMARY} FROM frame f WHERE f.connection_id = ? AND f.seq = ?",
            (connection_id, seq),
        ),
        connection_id,
    )
    return found[0] if found else None


def protocol_frames(
    db: sqlite3.Connection, connection_id: int, after_seq: int, limit: int
) -> list[dict[str, Any]]:
    """Summaries of the next ``limit`` protocol frames (not stderr): the sequence diagram."""
    cursor = db.execute(
        f"SELECT {_SUMMARY} FROM frame f WHERE f.connection_id = ? AND f.seq > ? "
        "AND f.direction IS NOT 'stderr' ORDER BY f.seq LIMIT ?",
        (connection_id, after_seq, limit),
    )
    return _summaries(cursor, connection_id)


def newest_frame(db: sqlite3.Connection, connection_id: int) -> dict[str, Any] | None:
    """The id and seq of a connection's newest frame (None: it has none)."""
    row = db.execute(
        "SELECT id, seq FROM frame WHERE connection_id = ? ORDER BY seq DESC LIMIT 1",
        (connection_id,),
    ).fetchone()
    if row is None:
        return None
    _NEWEST.check_one(db, row, connection_id)
    return {"id": int(row[0]), "seq": int(row[1])}


def tail(
    db: sqlite3.Connection, after_id: int, connection_id: int | None, limit: int
) -> list[dict[str, Any]]:
    """Frames committed with an id above ``after_id`` (of one connection, or all), by id."""
    if connection_id is None:
        cursor = db.execute(
            f"SELECT {_SUMMARY}, f.connection_id FROM frame f WHERE f.id > ? ORDER BY f.id LIMIT ?",
            (after_id, limit),
        )
    else:
        # Walks the rowid, not the (connection_id, seq) index: ids of other connections are
        # skipped, ids of this one come in commit order.
        cursor = db.execute(
            f"SELECT {_SUMMARY}, f.connection_id FROM frame f WHERE f.id > ? "
            "AND f.connection_id = ? ORDER BY f.id LIMIT ?",
            (after_id, connection_id, limit),
        )
    out = []
    for row in _TAIL_LAYOUT.check(db, cursor.fetchall(), connection_id):
        record = dict(zip(SUMMARY_COLUMNS, row[:-1], strict=True))
        record["connection_id"] = row[-1]
        out.append(record)
    return out


def call_spans(db: sqlite3.Connection, connection_id: int, limit: int) -> list[tuple[Any, ...]]:
    """The first ``limit`` requests as ``(seq, method, direction, start mono_ns, latency_ns,
    is_error, answer seq)``; latency and answer are None for a request not answered."""
    cursor = db.execute(
        "SELECT req.seq, req.method, req.direction, req.mono_ns, resp.mono_ns, resp.kind, "
        "resp.seq FROM frame req LEFT JOIN frame resp "
        "ON resp.connection_id = req.connection_id AND resp.request_seq = req.seq "
        "WHERE req.connection_id = ? AND req.kind = 'request' ORDER BY req.seq LIMIT ?",
        (connection_id, limit),
    )
    return [
        (seq, method, direction, sent, None if answered is None else answered - sent,
         None if kind is None else int(kind == "error"), answer)
        for seq, method, direction, sent, answered, kind, answer
        in _CALL_SPAN.check(db, cursor.fetchall(), connection_id)
    ]  # fmt: skip


def requests_with_answers(
    db: sqlite3.Connection, connection_id: int, methods: Sequence[str], limit: int
) -> list[tuple[Any, ...]]:
    """The first ``limit`` requests of ``methods`` as ``(seq, method, request raw, answer raw)``
    (answer raw is None while unanswered): the session info's sources."""
    marks = ", ".join("?" for _ in methods)
    cursor = db.execute(
        "SELECT req.seq, req.method, req.raw, resp.raw FROM frame req LEFT JOIN frame resp "
        "ON resp.connection_id = req.connection_id AND resp.request_seq = req.seq "
        f"WHERE req.connection_id = ? AND req.kind = 'request' AND req.method IN ({marks}) "
        "ORDER BY req.seq LIMIT ?",
        (connection_id, *methods, limit),
    )
    rows = _EXCHANGE.check(db, cursor.fetchall(), connection_id)
    return [(r[0], r[1], bytes(r[2]), None if r[3] is None else bytes(r[3])) for r in rows]


def extension_methods(db: sqlite3.Connection, connection_id: int) -> list[tuple[str, str, int]]:
    """Methods outside the protocol's names (``_`` first) with direction and count."""
    cursor = db.execute(
        "SELECT method, direction, count(*) FROM frame WHERE connection_id = ? "
        "AND method GLOB '_*' GROUP BY method, direction ORDER BY method",
        (connection_id,),
    )
    rows = _EXTENSION.check(db, cursor.fetchall(), connection_id)
    return [(str(m), str(d), int(n)) for m, d, n in rows]


def change_stamp(db: sqlite3.Connection) -> tuple[int, ...]:
    """Changes whenever a frame, connection, status or stored finding is added (cheap: ends
    of indexes): answers computed at one stamp can be served again while it holds."""
    row = db.execute(
        "SELECT (SELECT coalesce(max(id), 0) FROM frame), (SELECT count(*) FROM connection), "
        "(SELECT count(*) FROM connection WHERE status = 'running'), "
        "(SELECT coalesce(max(id), 0) FROM finding)"
    ).fetchone()
    return tuple(int(x) for x in row)
