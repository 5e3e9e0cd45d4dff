"""``import``: load a JSONL export (export.py), or a capture made by another tool, into a
recording database.

Rules:
- The first non-blank line says what the file is (captures.detect): an acp-proxy export is
  imported as below; a capture of another tool (captures.py: a JSONL of raw frames, an
  sacp-conductor trace, a Zed ACP log, an acp-devtools export) becomes one connection whose
  parsed columns, totals and initialize facts are derived from its frames by the recorder's
  own observer (observer.py), never taken from the file. Its ``status`` is ``imported``, its
  ``proxy_version`` names the tool that made the capture, its ``uid`` is a hash of the file's
  bytes (so the same capture imported twice is refused like an export), its label the given
  one unless the capture names its own.
- A file may hold several exports one after the other (a cassette with several episodes,
  docs/testing.md): every line that is an export header starts the next connection. Frame
  lines never hold a top-level ``"format"`` member, so only lines that do are read as headers.
- The import is one transaction, whatever the number of connections: a bad line leaves the
  database as it was.
- A new ``connection`` row is created per export (a new id); every other column, the ``uid``
  included, comes from the export, and every frame gets back its exact bytes and stored columns.
- ``uid`` is unique: importing a connection the database already holds (the same file twice,
  or an export back into its own database) is refused, naming the connection that has it.
- Only columns the schema has are written; an export naming others is refused, and so is a
  value that does not fit its column (import_types.py).
- A refusal is ``ImportRefused``, a ``BadReference``: the file given cannot be used (exit 2).
"""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.errors import BadReference
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import FRAME_COLUMNS, ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import Frame
from acp_proxy.store import captures, import_types
from acp_proxy.store.database import connect, write_transaction
from acp_proxy.store.import_types import Column, frame_problem, problem
from acp_proxy.store.jsonl import frame_of, header_of, is_header
from acp_proxy.store.readers import LOCAL_COLUMNS
from acp_proxy.store.transport_facts import TransportRefused, imported_transport, insert_transport

BATCH = 1000


class ImportRefused(BadReference):
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


def _record(
    number: int, line: bytes, frame_columns: list[str], types: dict[str, Column]
) -> dict[str, Any]:
    where = f"line {number}: "
    record = _row(number, line, frame_of, set(frame_columns), types,
                  unknown=f"{where}unknown frame columns", wrong=where)  # fmt: skip
    meaningless = frame_problem(record)
    if meaningless:
        raise ImportRefused(f"{where}{meaningless}")
    return record


def _row(
    number: int, line: bytes, parse: Callable[[bytes], dict[str, Any]], columns: set[str],
    types: dict[str, Column], *, unknown: str, wrong: str, first_bare: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Line ``number`` read by ``parse``, refused when it has a column not in ``columns`` or a
    value of the wrong type (``unknown`` and ``wrong`` begin those messages; ``first_bare``:
    a first line that cannot be read is refused without its number)."""
    try:
        row = parse(line)
    except ValueError as error:
        where = "" if first_bare and number == 1 else f"line {number}: "
        raise ImportRefused(f"{where}{error}") from error
    extra = set(row) - columns
    if extra:
        raise ImportRefused(f"{unknown} {sorted(extra)}")
    mistyped = problem(types, row)
    if mistyped:
        raise ImportRefused(f"{wrong}{mistyped}")
    return row


def import_jsonl(
    db_path: Path,
    lines: Iterable[bytes],
    progress: Callable[[int], None] = lambda n: None,
    label: str | None = None,
) -> list[int]:
    """Import every export in ``lines``, or the capture they hold (``label``: its label unless
    it names one); returns the new connection ids, in file order."""
    source = iter(lines)
    skipped: list[bytes] = []
    first = None
    for line in source:
        if line.strip():
            first = line
            break
        skipped.append(line)
    if first is None:
        raise ImportRefused("the file is empty")
    rest = itertools.chain([first], source)
    fmt = captures.detect(first)
    db = connect(db_path)
    try:
        if fmt == "export" or (fmt is None and is_header(first)):
            return _import(db, rest, progress)
        return [_import_capture(db, fmt, [*skipped, *rest] if fmt is None else rest, label,
                                progress)]  # fmt: skip
    finally:
        db.close()


def _header(
    number: int, line: bytes, columns: set[str], types: dict[str, Column]
) -> dict[str, Any]:
    return _row(number, line, header_of, columns, types, first_bare=True,
                unknown="unknown connection columns in the export:",
                wrong=f"line {number}: the connection's ")  # fmt: skip


class _Batches:
    """Rows inserted ``BATCH`` at a time with one statement; ``progress`` hears of each batch."""

    def __init__(
        self, db: sqlite3.Connection, statement: str, progress: Callable[[int], None]
    ) -> None:
        self._db, self._statement, self._progress = db, statement, progress
        self._rows: list[list[Any]] = []

    def add(self, row: list[Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= BATCH:
            self.flush()

    def flush(self) -> None:
        self._db.executemany(self._statement, self._rows)
        self._progress(len(self._rows))
        self._rows = []


def _transport(number: int, line: bytes) -> tuple[list[dict[str, Any]], list[tuple[int, int, str]]]:
    """A header line's remote transport facts, checked (none for a stdio connection)."""
    value = orjson.loads(line).get("transport")
    if value is None:
        return [], []
    try:
        return imported_transport(value)
    except TransportRefused as error:
        raise ImportRefused(f"line {number}: {error}") from error


def _import(db: sqlite3.Connection, lines: Any, progress: Callable[[int], None]) -> list[int]:
    first = next(lines, None)
    if first is None:
        raise ImportRefused("the file is empty")
    connection_columns = set(_columns(db, "connection")) - {"id"}
    frame_columns = [c for c in _columns(db, "frame") if c not in ("id", "connection_id")]
    connection_types = import_types.columns(db, "connection")
    frame_types = import_types.columns(db, "frame")
    connection = _header(1, first, connection_columns, connection_types)
    carried = _transport(1, first)
    rows = _Batches(db, _insert("frame", ["connection_id", *frame_columns]), progress)
    ids: list[int] = []
    try:
        with write_transaction(db):
            ids.append(_start(db, connection))
            insert_transport(db, ids[-1], *carried)
            for number, line in enumerate(lines, start=2):
                if not line.strip():
                    continue
                if is_header(line):  # the next episode: its frames go to a connection of its own
                    rows.flush()
                    header = _header(number, line, connection_columns, connection_types)
                    carried = _transport(number, line)
                    ids.append(_start(db, header))
                    insert_transport(db, ids[-1], *carried)
                    continue
                record = _record(number, line, frame_columns, frame_types)
                rows.add([ids[-1], *(record.get(c) for c in frame_columns)])
            rows.flush()
    except sqlite3.Error as error:
        raise ImportRefused(f"cannot import: {error}") from error
    return ids


class _Hashed:
    """The lines of a file, hashed as they are read (the capture's uid)."""

    def __init__(self, lines: Iterable[bytes]) -> None:
        self._lines, self.digest = lines, hashlib.sha256()

    def __iter__(self) -> Iterator[bytes]:
        for line in self._lines:
            self.digest.update(line)
            yield line


def _capture(fmt: str | None, lines: _Hashed) -> captures.Capture:
    document = None
    if fmt is None:  # a whole JSON document (a pretty-printed array or object)
        data = b"".join(lines)
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise ImportRefused(_not_a_capture(f"it is not JSON ({error})")) from error
        fmt = captures.detect(b"", document)
        if fmt is None:
            raise ImportRefused(_not_a_capture("its JSON is none of them"))
    return captures.read(fmt, lines, document)


def _not_a_capture(why: str) -> str:
    return (
        "not an acp-proxy export nor a capture acp-proxy can import (a JSONL of raw frames, an "
        f"sacp-conductor trace, a Zed ACP log, an acp-devtools export): {why}"
    )


def _import_capture(
    db: sqlite3.Connection, fmt: str | None, lines: Iterable[bytes], label: str | None,
    progress: Callable[[int], None],
) -> int:  # fmt: skip
    hashed = _Hashed(lines)
    rows = _Batches(db, _insert("frame", ["connection_id", *FRAME_COLUMNS]), progress)
    name = fmt
    try:
        with write_transaction(db):
            capture = _capture(fmt, hashed)
            name = capture.fmt
            now = time.time_ns()
            row = {
                "uid": uuid.uuid4().hex, "label": capture.label or label, "status": "imported",
                "started_ns": capture.started_ns or now,
                "argv": orjson.dumps(capture.argv).decode(),
                "cwd": "", "proxy_version": capture.tool, "proxy_pid": 0,
            }  # fmt: skip
            connection_id = _start(db, row)
            observer = ConnectionObserver()
            offsets = dict.fromkeys(Direction, 0)
            totals = {d.value: [0, 0] for d in Direction}
            clock = _Clock(capture.started_ns or now)
            last_wall = row["started_ns"]
            for captured in capture.frames:
                mono, wall = clock.times(captured.mono_ns, captured.wall_ns)
                last_wall = wall
                complete = captured.raw.endswith(b"\n")
                frame = Frame(captured.raw, offsets[captured.direction], complete)
                offsets[captured.direction] += len(captured.raw)
                record: FrameRecord = observer.observe(captured.direction, frame, mono, wall)
                totals[record.direction][0] += 1
                totals[record.direction][1] += record.size
                rows.add([connection_id, *record])
            rows.flush()
            uid = f"{capture.fmt}-{hashed.digest.hexdigest()[:32]}"
            _refuse_if_held(db, uid)
            facts = observer.facts()
            db.execute(
                "UPDATE connection SET uid = ?, ended_ns = ?, protocol_version = ?, "
                "client_info = ?, agent_info = ?, frames_c2a = ?, bytes_c2a = ?, frames_a2c = ?, "
                "bytes_a2c = ?, lines_stderr = ?, bytes_stderr = ? WHERE id = ?",
                (uid, capture.ended_ns or last_wall, facts.protocol_version,
                 _json(facts.client_info), _json(facts.agent_info), *totals["c2a"], *totals["a2c"],
                 *totals["stderr"], connection_id),
            )  # fmt: skip
    except captures.CaptureError as error:
        raise ImportRefused(f"cannot import this {capture_name(name)}: {error}") from error
    except sqlite3.Error as error:
        raise ImportRefused(f"cannot import: {error}") from error
    return connection_id


def capture_name(fmt: str | None) -> str:
    return {
        "frames": "JSONL of raw frames", "sacp-trace": "sacp-conductor trace",
        "zed-log": "Zed ACP log", "acp-devtools": "acp-devtools export",
    }.get(fmt or "", "capture")  # fmt: skip


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


class _Clock:
    """Both clocks of each frame from what the capture has (see captures.py's rules)."""

    def __init__(self, started_ns: int) -> None:
        self._started = started_ns
        self._first_mono: int | None = None
        self._first_wall: int | None = None
        self._last = (0, started_ns)

    def times(self, mono: int | None, wall: int | None) -> tuple[int, int]:
        if mono is None and wall is None:
            return self._last
        if mono is not None and self._first_mono is None:
            self._first_mono = mono
        if wall is not None and self._first_wall is None:
            self._first_wall = wall
        if mono is None:
            assert wall is not None
            assert self._first_wall is not None
            mono = wall - self._first_wall
        if wall is None:
            assert self._first_mono is not None
            wall = self._started + mono - self._first_mono
        self._last = (mono, wall)
        return self._last


def _start(db: sqlite3.Connection, connection: dict[str, Any]) -> int:
    _refuse_if_held(db, connection["uid"])
    # An import is written by no recorder: a process id from elsewhere would make it look live.
    names = [n for n in connection if n not in LOCAL_COLUMNS]
    cursor = db.execute(_insert("connection", names), [connection[n] for n in names])
    assert cursor.lastrowid is not None
    return cursor.lastrowid
