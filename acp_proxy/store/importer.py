"""``import``: load a JSONL export (export.py) into a recording database.

Rules:
- A file may hold several exports one after the other (a cassette with several episodes,
  docs/testing.md): every line that is an export header starts the next connection. Frame
  lines never hold a top-level ``"format"`` member, so only lines that do are read as headers.
- The import is one transaction, whatever the number of connections: a bad line leaves the
  database as it was.
- A new ``connection`` row is created per export (a new id); every other column, the ``uid``
  included, comes from the export, and every frame gets back its exact bytes and stored columns.
- ``uid`` is unique: importing a connection the database already holds (the same file twice,
  or an export back into its own database) is refused, naming the connection that has it.
- Only columns the schema has are written; an export naming others is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from acp_proxy.errors import AcpProxyError
from acp_proxy.inspect.export import frame_of, header_of
from acp_proxy.store.database import connect
from acp_proxy.testing.cassette_episodes import is_header

BATCH = 1000


class ImportRefused(AcpProxyError):
    """The file is not an export this database can take."""


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def _insert(table: str, names: list[str]) -> str:
    marks = ", ".join("?" for _ in names)
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})"


def _refuse_if_held(db: sqlite3.Connection, uid: str) -> None:
    held = db.execute("SELECT id FROM connection WHERE uid = ?", (uid,)).fetchone()
    if held is not None:
        raise ImportRefused(
            f"connection {uid} is already in this database (connection {held[0]}); nothing imported"
        )


def _record(number: int, line: bytes, frame_columns: list[str]) -> dict[str, Any]:
    try:
        record = frame_of(line)
    except ValueError as error:
        raise ImportRefused(f"line {number}: {error}") from error
    extra = set(record) - set(frame_columns)
    if extra:
        raise ImportRefused(f"line {number}: unknown frame columns {sorted(extra)}")
    return record


def import_jsonl(
    db_path: Path, lines: Iterable[bytes], progress: Callable[[int], None] = lambda n: None
) -> list[int]:
    """Import every export in ``lines``; returns the new connection ids, in file order."""
    db = connect(db_path)
    try:
        return _import(db, iter(lines), progress)
    finally:
        db.close()


def _header(number: int, line: bytes, columns: set[str]) -> dict[str, Any]:
    try:
        connection = header_of(line)
    except ValueError as error:
        raise ImportRefused(str(error) if number == 1 else f"line {number}: {error}") from error
    unknown = set(connection) - columns
    if unknown:
        raise ImportRefused(f"unknown connection columns in the export: {sorted(unknown)}")
    return connection


def _import(db: sqlite3.Connection, lines: Any, progress: Callable[[int], None]) -> list[int]:
    first = next(lines, None)
    if first is None:
        raise ImportRefused("the file is empty")
    connection_columns = set(_columns(db, "connection")) - {"id"}
    frame_columns = [c for c in _columns(db, "frame") if c not in ("id", "connection_id")]
    connection = _header(1, first, connection_columns)
    statement = _insert("frame", ["connection_id", *frame_columns])
    ids: list[int] = []
    db.execute("BEGIN IMMEDIATE")
    try:
        ids.append(_start(db, connection))
        batch: list[list[Any]] = []
        for number, line in enumerate(lines, start=2):
            if not line.strip():
                continue
            if is_header(line):  # the next episode: its frames go to a connection of its own
                db.executemany(statement, batch)
                progress(len(batch))
                batch = []
                ids.append(_start(db, _header(number, line, connection_columns)))
                continue
            record = _record(number, line, frame_columns)
            batch.append([ids[-1], *(record.get(c) for c in frame_columns)])
            if len(batch) >= BATCH:
                db.executemany(statement, batch)
                progress(len(batch))
                batch = []
        db.executemany(statement, batch)
        progress(len(batch))
        db.execute("COMMIT")
    except sqlite3.Error as error:
        db.execute("ROLLBACK")
        raise ImportRefused(f"cannot import: {error}") from error
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return ids


def _start(db: sqlite3.Connection, connection: dict[str, Any]) -> int:
    _refuse_if_held(db, connection["uid"])
    names = list(connection)
    cursor = db.execute(_insert("connection", names), [connection[n] for n in names])
    assert cursor.lastrowid is not None
    return cursor.lastrowid
