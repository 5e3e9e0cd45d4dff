"""Typed reads of frame columns: a frame whose column holds the wrong type never reaches a reader.

Rules:
- SQLite is dynamically typed: a column declared INTEGER keeps ``'yesterday'``, and a table
  rebuilt by hand keeps NULL anywhere. A database handed to us (a bug report's attachment, a
  file edited with sqlite3) can hold such a frame; acp-proxy's own writers never store one.
  ``STORAGE`` says which storage classes each frame column may hold (docs/recording-format.md).
- Checked where read, never by a scan when the file is opened: each reader names the columns
  it reads (a ``Layout``) and checks every row it takes (``Layout.check``: one pass of
  ``isinstance`` over the row, in C); a query that aggregates counts its wrong rows in the same
  pass (``mistyped_sql``); a reader of a view checks the columns the view reads
  (``require_typed``, one pass over that connection's frames).
- A wrong value is ``UnreadableRecording`` (one line, exit 2): the file, the connection, the
  frame's seq, the column and the value as SQL quotes it (cut to 40 characters), found by one
  more query over that connection's frames, run only once something is wrong.
- SQL text is built only from this module's constant names; values are parameters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from acp_proxy.errors import UnreadableRecording

_NULLABLE_TEXT = ("text", "null")
_FLAG = ("integer",)
# The storage classes (SQLite's ``typeof``) each frame column may hold.
STORAGE: dict[str, tuple[str, ...]] = {
    "id": ("integer",), "connection_id": ("integer",), "seq": ("integer",),
    "direction": ("text",), "mono_ns": ("integer",), "wall_ns": ("integer",),
    "offset": ("integer",), "size": ("integer",), "raw": ("blob",), "kind": ("text",),
    "rpc_id": ("integer", "real", "text", "null"), "method": _NULLABLE_TEXT,
    "request_seq": ("integer", "null"), "session_id": _NULLABLE_TEXT,
    "update_kind": _NULLABLE_TEXT, "message_id": _NULLABLE_TEXT,
    "tool_call_id": _NULLABLE_TEXT, "error_code": ("integer", "null"),
    "stop_reason": _NULLABLE_TEXT, "bad_json": _FLAG, "bad_utf8": _FLAG,
    "not_jsonrpc": _FLAG, "batch": _FLAG, "no_newline": _FLAG,
}  # fmt: skip
_PYTHON: dict[str, type] = {
    "integer": int, "real": float, "text": str, "blob": bytes, "null": type(None),
}  # fmt: skip
_QUOTED_CHARS = 40

JOINED = "?"
Row = TypeVar("Row", bound=Sequence[Any])


def wanted(column: str) -> str:
    """The storage classes ``column`` may hold, in words: ``integer``, ``text or NULL``."""
    names = ["NULL" if name == "null" else name for name in STORAGE[column]]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def quoted(value: object) -> str:
    """``value`` as SQLite quotes it, text and blobs cut to their first 40 characters or bytes."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"X'{value[:_QUOTED_CHARS].hex().upper()}'"
    if isinstance(value, str):
        return "'" + value[:_QUOTED_CHARS].replace("'", "''") + "'"
    return repr(value)


def _types(name: str | None) -> type | tuple[type, ...]:
    if name is None:
        return object
    kinds = {_PYTHON[s] for s in STORAGE[name.removesuffix(JOINED)]}
    if name.endswith(JOINED):
        kinds.add(type(None))
    return tuple(sorted(kinds, key=lambda kind: kind.__name__))


def quoted_sql(column: str) -> str:
    """SQL for the value of ``column`` as ``quoted`` writes it."""
    return (
        f"quote(CASE WHEN typeof({column}) IN ('text', 'blob') AND length({column}) > "
        f"{_QUOTED_CHARS} THEN substr({column}, 1, {_QUOTED_CHARS}) ELSE {column} END)"
    )


class Layout:
    """The frame columns a query selects, in order. ``None`` is a value that is not a frame
    column (a computed one), taken as it is; a name ending in ``JOINED`` is that column of a
    row joined with ``LEFT JOIN``, NULL when there is no such row."""

    __slots__ = ("columns", "types")

    def __init__(self, columns: Iterable[str | None]) -> None:
        self.columns = tuple(columns)
        self.types: tuple[type | tuple[type, ...], ...] = tuple(map(_types, self.columns))

    def problem(self, row: Sequence[Any]) -> tuple[str, Any] | None:
        """The first column of ``row`` whose value it may not hold, and that value (None:
        every value is of its column's type)."""
        if len(row) < len(self.columns):
            raise ValueError(f"a row of {len(row)} values for {len(self.columns)} columns")
        for name, kinds, value in zip(self.columns, self.types, row, strict=False):
            if name is not None and not isinstance(value, kinds):
                return name, value
        return None

    def check(
        self, db: sqlite3.Connection, rows: list[Row], connection_id: int | None
    ) -> list[Row]:
        """``rows`` as they are, once every value is of its column's type; else
        ``UnreadableRecording`` naming the first wrong frame of the connection."""
        types = self.types
        for row in rows:
            if not all(map(isinstance, row, types)):
                raise self._mistyped(db, row, connection_id)
        return rows

    def check_one(self, db: sqlite3.Connection, row: Row, connection_id: int | None) -> Row:
        return self.check(db, [row], connection_id)[0]

    def _mistyped(
        self, db: sqlite3.Connection, row: Sequence[Any], connection_id: int | None
    ) -> UnreadableRecording:
        found = self.problem(row)
        assert found is not None
        column, value = found
        if connection_id is None and "connection_id" in self.columns:
            held = row[self.columns.index("connection_id")]
            connection_id = held if isinstance(held, int) else None
        named = [c.removesuffix(JOINED) for c in self.columns if c is not None]
        error = _first_mistyped(db, connection_id, named)
        if error is not None:
            return error
        seq = row[self.columns.index("seq")] if "seq" in self.columns else None
        return _error(db, connection_id, seq, column.removesuffix(JOINED), quoted(value))


def mistyped_sql(columns: Iterable[str], alias: str = "") -> str:
    """A SQL condition, true for a frame row (``alias.``) holding a wrong value in ``columns``."""
    prefix = f"{alias}." if alias else ""
    tests = []
    for name in columns:
        kinds = ", ".join(f"'{kind}'" for kind in STORAGE[name])
        tests.append(f"typeof({prefix}{name}) NOT IN ({kinds})")
    return "(" + " OR ".join(tests) + ")"


def require_typed(
    db: sqlite3.Connection, connection_id: int | None, columns: Iterable[str]
) -> None:
    """Raise ``UnreadableRecording`` for the first frame of the connection (of every one when
    None) holding a wrong value in ``columns``; one pass over its frames in SQL."""
    error = _first_mistyped(db, connection_id, list(columns))
    if error is not None:
        raise error


def _first_mistyped(
    db: sqlite3.Connection, connection_id: int | None, columns: Sequence[str]
) -> UnreadableRecording | None:
    cases = " ".join(
        f"WHEN {mistyped_sql([name])} THEN '{name}'" for name in columns if name in STORAGE
    )
    if not cases:
        return None
    where = "" if connection_id is None else "connection_id = ? AND "
    row = db.execute(
        f"SELECT id, connection_id, CASE {cases} END AS wrong FROM frame "
        f"WHERE {where}wrong IS NOT NULL LIMIT 1",
        () if connection_id is None else (connection_id,),
    ).fetchone()
    if row is None:
        return None
    frame_id, found_in, column = row
    seq, value = db.execute(
        f"SELECT seq, {quoted_sql(column)} FROM frame WHERE id = ?",
        (frame_id,),
    ).fetchone()
    return _error(db, found_in, seq, column, str(value))


def _error(
    db: sqlite3.Connection, connection_id: object, seq: object, column: str, value: str
) -> UnreadableRecording:
    path = next((str(r[2]) for r in db.execute("PRAGMA database_list") if r[1] == "main"), "")
    where = f"connection {connection_id}" if isinstance(connection_id, int) else "a connection"
    frame = f"frame {seq}" if isinstance(seq, int) else "a frame"
    return UnreadableRecording(
        f"{path}: {where}, {frame}, holds {column} = {value}, not {wanted(column)}: the "
        "database was changed by something other than acp-proxy"
    )
