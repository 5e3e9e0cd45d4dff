"""The recording database: schema, migrations, the writer. SQL lives in store/ and only there.

Rules:
- One SQLite file holds many connections. WAL mode, ``synchronous=NORMAL``: a crash of the
  proxy loses at most the batch being written, never a committed one, and readers (``tail``,
  Datasette) never block the writer.
- The file is created with mode 0600 (recordings hold secrets) and every folder created on the
  way to it with 0700. A symbolic link whose target is missing is refused, never followed into
  a file created with the default mode.
- The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[n]`` takes a database from
  version n to n+1. Views are dropped and re-created by the last migration step so they always
  match the code. A database newer than this code is refused, never modified.
- Several proxies may append to one file at once: each uses its own connection, short
  ``BEGIN IMMEDIATE`` transactions and a busy timeout. A write lock still held by another
  writer when the timeout ends raises ``RecordingBusy``: the caller waits and retries; it is
  never a reason to stop recording.
- A frame longer than the database takes (``SQLITE_LIMIT_LENGTH``) keeps its row with an empty
  ``raw`` (``length(raw) < size`` says the bytes are missing); ``append`` returns those frames
  so that the recorder counts them as lost.
- A recorder's connection does not checkpoint the WAL on commit (copying every page into the
  main file as frames stream in halved large-frame throughput); the recorder checkpoints when
  it is idle, when the WAL passes a size, and when its connection is done (``checkpoint``).
- Full-text search (format 5) is an FTS5 index over the ``frame_text`` view, its external
  content; ``search_progress`` says, per connection, up to which ``seq`` frames are indexed.
  A writer indexes its connection's frames either in the transaction that inserts them
  (``index=True``) or when told to (``index_pending``: the recorder does it when the traffic
  pauses and once the client is done). Indexing never costs a frame: a failure rolls back the
  index part alone, stops this writer's indexing and is left to ``search``'s catch-up.
- Failures become ``RecordingError`` (one root: ``AcpProxyError``); callers decide what to say.
  Opened read-only, a file that is not a recording database (empty, another program's SQLite,
  not SQLite, damaged) is ``UnreadableRecording``: a REF that cannot be used.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.errors import RecordingBusy, RecordingError, UnknownRecording, UnreadableRecording
from acp_proxy.protocol.observer import FRAME_COLUMNS, ConnectionFacts, FrameRecord

SCHEMA_VERSION = 8
LARGE_FRAME_BYTES = 1024 * 1024
BUSY_TIMEOUT_MS = 10_000
# Room a frame's row needs besides ``raw`` (its other columns), below the length limit.
ROW_OVERHEAD_BYTES = 64 * 1024
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (extended codes keep these in the low byte)

_SCHEMA_V1 = """
CREATE TABLE connection (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,
    label TEXT,
    status TEXT NOT NULL,
    started_ns INTEGER NOT NULL,
    ended_ns INTEGER,
    argv TEXT NOT NULL,
    cwd TEXT NOT NULL,
    proxy_version TEXT NOT NULL,
    proxy_pid INTEGER NOT NULL,
    agent_pid INTEGER,
    exit_code INTEGER,
    exit_signal INTEGER,
    error TEXT,
    protocol_version INTEGER,
    client_info TEXT,
    agent_info TEXT,
    frames_c2a INTEGER NOT NULL DEFAULT 0,
    frames_a2c INTEGER NOT NULL DEFAULT 0,
    lines_stderr INTEGER NOT NULL DEFAULT 0,
    bytes_c2a INTEGER NOT NULL DEFAULT 0,
    bytes_a2c INTEGER NOT NULL DEFAULT 0,
    bytes_stderr INTEGER NOT NULL DEFAULT 0,
    frames_lost INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE frame (
    id INTEGER PRIMARY KEY,
    connection_id INTEGER NOT NULL REFERENCES connection(id),
    seq INTEGER NOT NULL,
    direction TEXT NOT NULL,
    mono_ns INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    size INTEGER NOT NULL,
    raw BLOB NOT NULL,
    kind TEXT NOT NULL,
    rpc_id,
    method TEXT,
    request_seq INTEGER,
    session_id TEXT,
    update_kind TEXT,
    message_id TEXT,
    tool_call_id TEXT,
    error_code INTEGER,
    stop_reason TEXT,
    bad_json INTEGER NOT NULL DEFAULT 0,
    bad_utf8 INTEGER NOT NULL DEFAULT 0,
    not_jsonrpc INTEGER NOT NULL DEFAULT 0,
    batch INTEGER NOT NULL DEFAULT 0,
    no_newline INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX frame_by_connection_seq ON frame(connection_id, seq);
CREATE INDEX frame_by_session ON frame(session_id, connection_id, seq)
    WHERE session_id IS NOT NULL;
"""

# Views: dropped and re-created whenever the schema is migrated (see module rules).
_VIEWS = """
DROP VIEW IF EXISTS frames;
CREATE VIEW frames AS
SELECT f.connection_id, f.seq, f.direction,
       strftime('%Y-%m-%dT%H:%M:%f', f.wall_ns / 1e9, 'unixepoch') || 'Z' AS time_utc,
       (f.mono_ns - first.mono_ns) / 1e6 AS elapsed_ms,
       f.kind, f.rpc_id, f.method, f.session_id, f.update_kind, f.message_id, f.tool_call_id,
       f.error_code, f.stop_reason, f.size,
       CASE WHEN f.bad_utf8 = 0 THEN CAST(f.raw AS TEXT) END AS text,
       f.bad_json, f.bad_utf8, f.not_jsonrpc, f.batch, f.no_newline
FROM frame f
JOIN frame first ON first.connection_id = f.connection_id AND first.seq = 1;

DROP VIEW IF EXISTS rpc_calls;
CREATE VIEW rpc_calls AS
SELECT req.connection_id, req.seq AS request_seq, resp.seq AS response_seq,
       CASE req.direction WHEN 'c2a' THEN 'client' ELSE 'agent' END AS caller,
       req.rpc_id, req.method, req.session_id,
       resp.kind AS outcome, resp.error_code, resp.stop_reason,
       (resp.mono_ns - req.mono_ns) / 1e6 AS latency_ms
FROM frame req
LEFT JOIN frame resp
  ON resp.connection_id = req.connection_id AND resp.request_seq = req.seq
WHERE req.kind = 'request';

DROP VIEW IF EXISTS sessions;
CREATE VIEW sessions AS
SELECT f.session_id, f.connection_id, c.label, c.protocol_version,
       min(f.seq) AS first_seq, max(f.seq) AS last_seq,
       strftime('%Y-%m-%dT%H:%M:%f', min(f.wall_ns) / 1e9, 'unixepoch') || 'Z' AS first_seen_utc,
       (max(f.mono_ns) - min(f.mono_ns)) / 1e6 AS duration_ms,
       count(*) AS frames,
       sum(f.method = 'session/prompt' AND f.kind = 'request') AS prompts,
       sum(f.method = 'session/update') AS updates,
       (SELECT m.method FROM frame m
         WHERE m.connection_id = f.connection_id AND m.session_id = f.session_id
           AND m.method IN ('session/new', 'session/load', 'session/resume', 'session/fork')
         ORDER BY m.seq LIMIT 1) AS opened_by
FROM frame f
JOIN connection c ON c.id = f.connection_id
WHERE f.session_id IS NOT NULL
GROUP BY f.connection_id, f.session_id;

DROP VIEW IF EXISTS frame_text;
CREATE VIEW frame_text AS
SELECT f.id, f.connection_id, f.seq,
       CASE WHEN f.bad_utf8 THEN NULL
            WHEN json_valid(CAST(f.raw AS TEXT)) THEN
              (SELECT group_concat(j.value, ' ') FROM json_tree(CAST(f.raw AS TEXT)) AS j
                WHERE j.type IN ('text', 'integer', 'real') AND j.fullkey <> '$.jsonrpc'
                  AND NOT (j.type = 'text' AND length(j.value) > 256
                           AND instr(j.value, ' ') = 0))
            ELSE CAST(f.raw AS TEXT) END AS text
FROM frame f;

DROP VIEW IF EXISTS prompt_turns;
CREATE VIEW prompt_turns AS
WITH turn AS (
    SELECT p.connection_id, p.seq AS prompt_seq, p.session_id, p.mono_ns AS prompt_ns,
           c.protocol_version,
           r.seq AS response_seq, r.mono_ns AS response_ns, r.kind AS response_kind,
           r.stop_reason AS response_stop_reason, r.message_id AS response_message_id,
           (SELECT i.seq FROM frame i
             WHERE i.connection_id = p.connection_id AND i.session_id = p.session_id
               AND i.seq > p.seq AND i.update_kind = 'state_update'
               AND json_extract(CAST(i.raw AS TEXT), '$.params.update.state') = 'idle'
             ORDER BY i.seq LIMIT 1) AS idle_seq
    FROM frame p
    JOIN connection c ON c.id = p.connection_id
    LEFT JOIN frame r ON r.connection_id = p.connection_id AND r.request_seq = p.seq
    WHERE p.kind = 'request' AND p.method = 'session/prompt' AND p.direction = 'c2a'
)
SELECT t.connection_id, t.session_id, t.prompt_seq, t.protocol_version,
       t.response_seq, t.response_message_id AS message_id,
       CASE WHEN t.protocol_version >= 2 THEN t.idle_seq ELSE t.response_seq END AS end_seq,
       CASE WHEN t.protocol_version >= 2 THEN idle.stop_reason
            ELSE t.response_stop_reason END AS stop_reason,
       CASE WHEN t.response_kind = 'error' THEN 'error'
            WHEN t.protocol_version >= 2 AND t.idle_seq IS NULL THEN 'unfinished'
            WHEN t.protocol_version < 2 AND t.response_seq IS NULL THEN 'unfinished'
            ELSE 'finished' END AS status,
       (t.response_ns - t.prompt_ns) / 1e6 AS response_ms,
       (CASE WHEN t.protocol_version >= 2 THEN idle.mono_ns ELSE t.response_ns END
        - t.prompt_ns) / 1e6 AS duration_ms
FROM turn t
LEFT JOIN frame idle ON idle.connection_id = t.connection_id AND idle.seq = t.idle_seq;
"""

# Format 2: findings of the spec rules, from ``record --check`` (live) or stored by ``check``.
_SCHEMA_V2 = """
CREATE TABLE finding (
    id INTEGER PRIMARY KEY,
    connection_id INTEGER NOT NULL REFERENCES connection(id),
    seq INTEGER,
    direction TEXT,
    rule TEXT NOT NULL,
    severity TEXT NOT NULL,
    message TEXT NOT NULL,
    found_ns INTEGER NOT NULL,
    origin TEXT NOT NULL DEFAULT 'live'
);
CREATE INDEX finding_by_connection ON finding(connection_id, seq);
CREATE INDEX finding_by_rule ON finding(rule, severity);
"""

# Format 3: ``raw`` becomes the last column of ``frame``. A large frame is inserted as
# ``zeroblob(size)`` and then written through an incremental blob; SQLite can only keep a
# zeroblob unexpanded when it is the last field of the row, so in the middle it allocated the
# whole frame (twice) and wrote its pages twice. SQLite cannot move a column: the table is
# rebuilt (views first dropped; the last step re-creates them). Keep ``raw`` last (tested).
_FRAME_V3_COLUMNS = """id, connection_id, seq, direction, mono_ns, wall_ns, offset, size, kind,
    rpc_id, method, request_seq, session_id, update_kind, message_id, tool_call_id, error_code,
    stop_reason, bad_json, bad_utf8, not_jsonrpc, batch, no_newline, raw"""
_SCHEMA_V3 = f"""
DROP VIEW IF EXISTS frames;
DROP VIEW IF EXISTS rpc_calls;
DROP VIEW IF EXISTS sessions;
DROP VIEW IF EXISTS prompt_turns;
DROP VIEW IF EXISTS frame_text;
CREATE TABLE frame_v3 (
    id INTEGER PRIMARY KEY,
    connection_id INTEGER NOT NULL REFERENCES connection(id),
    seq INTEGER NOT NULL,
    direction TEXT NOT NULL,
    mono_ns INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    size INTEGER NOT NULL,
    kind TEXT NOT NULL,
    rpc_id,
    method TEXT,
    request_seq INTEGER,
    session_id TEXT,
    update_kind TEXT,
    message_id TEXT,
    tool_call_id TEXT,
    error_code INTEGER,
    stop_reason TEXT,
    bad_json INTEGER NOT NULL DEFAULT 0,
    bad_utf8 INTEGER NOT NULL DEFAULT 0,
    not_jsonrpc INTEGER NOT NULL DEFAULT 0,
    batch INTEGER NOT NULL DEFAULT 0,
    no_newline INTEGER NOT NULL DEFAULT 0,
    raw BLOB NOT NULL
);
INSERT INTO frame_v3 ({_FRAME_V3_COLUMNS}) SELECT {_FRAME_V3_COLUMNS} FROM frame;
DROP TABLE frame;
ALTER TABLE frame_v3 RENAME TO frame;
CREATE UNIQUE INDEX frame_by_connection_seq ON frame(connection_id, seq);
CREATE INDEX frame_by_session ON frame(session_id, connection_id, seq)
    WHERE session_id IS NOT NULL;
"""

# Format 4: what ``record --otlp`` could not export (docs/otel.md), per connection.
_SCHEMA_V4 = """
ALTER TABLE connection ADD COLUMN otlp_frames_dropped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE connection ADD COLUMN otlp_spans_dropped INTEGER NOT NULL DEFAULT 0;
"""

# Format 5: full-text search. ``frame_search`` indexes the words of ``frame_text`` (a view, so
# the index's external content): the string and number values of a JSON frame (but its
# "jsonrpc" member), decoded (JSON escapes undone), leaving out long unbroken strings (base64
# data, hashes); the whole line of anything else; nothing of a frame that is not UTF-8. Older
# frames are indexed on first use. The view itself is made with the other views; a change to
# it must come with a migration that rebuilds the index (``INSERT INTO frame_search
# (frame_search) VALUES ('rebuild')``), or snippets would no longer match what was indexed.
_SCHEMA_V5 = """
CREATE VIRTUAL TABLE frame_search USING fts5(
    text, content='frame_text', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TABLE search_progress (
    connection_id INTEGER PRIMARY KEY REFERENCES connection(id),
    indexed_seq INTEGER NOT NULL
);
"""

# Format 6: ``bytes_lost`` beside ``frames_lost``: the bytes of the frames not recorded.
_SCHEMA_V6 = """
ALTER TABLE connection ADD COLUMN bytes_lost INTEGER NOT NULL DEFAULT 0;
"""

# Format 7: the client's command line, as the proxy found it (its parent process), so that a
# client sending no ``clientInfo`` can still be named.
_SCHEMA_V7 = """
ALTER TABLE connection ADD COLUMN client_argv TEXT;
"""

# Format 8: remote connections (Streamable HTTP and WebSocket, ``record --listen``). The
# connection says how it was carried; ``http_exchange`` keeps one row per HTTP request (or
# WebSocket upgrade) with its method, status and ACP headers; ``frame_transport`` says, per
# frame of a remote connection, in which exchange and on which stream it crossed. Frames
# themselves stay exactly what they are for stdio (one JSON-RPC message each).
_SCHEMA_V8 = """
ALTER TABLE connection ADD COLUMN transport TEXT NOT NULL DEFAULT 'stdio';
ALTER TABLE connection ADD COLUMN remote_url TEXT;
ALTER TABLE connection ADD COLUMN listen_url TEXT;
ALTER TABLE connection ADD COLUMN client_address TEXT;
ALTER TABLE connection ADD COLUMN remote_connection_id TEXT;
CREATE TABLE http_exchange (
    id INTEGER PRIMARY KEY,
    connection_id INTEGER NOT NULL REFERENCES connection(id),
    seq INTEGER NOT NULL,
    method TEXT NOT NULL,
    target TEXT NOT NULL,
    http_version TEXT,
    stream TEXT NOT NULL,
    acp_connection_id TEXT,
    acp_session_id TEXT,
    status INTEGER,
    request_headers TEXT,
    response_headers TEXT,
    body TEXT,
    started_ns INTEGER NOT NULL,
    answered_ns INTEGER,
    ended_ns INTEGER,
    error TEXT
);
CREATE UNIQUE INDEX http_exchange_by_connection_seq ON http_exchange(connection_id, seq);
CREATE TABLE frame_transport (
    connection_id INTEGER NOT NULL REFERENCES connection(id),
    seq INTEGER NOT NULL,
    exchange_seq INTEGER NOT NULL,
    stream TEXT NOT NULL,
    PRIMARY KEY (connection_id, seq)
) WITHOUT ROWID;
"""

MIGRATIONS: dict[int, str] = {
    0: _SCHEMA_V1,
    1: _SCHEMA_V2,
    2: _SCHEMA_V3,
    3: _SCHEMA_V4,
    4: _SCHEMA_V5,
    5: _SCHEMA_V6,
    6: _SCHEMA_V7,
    7: _SCHEMA_V8,
}


def _now_ns() -> int:
    return time.time_ns()


def create_private_folder(path: Path) -> None:
    """Create ``path`` and every missing folder above it, each readable by the owner only."""
    missing: list[Path] = []
    folder = path
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile
            continue
        os.chmod(folder, 0o700)  # mkdir's mode passes through the umask


def create_private_file(path: Path) -> None:
    """Create ``path`` (and missing folders) readable by the owner only, if it is missing.

    A dangling symbolic link is refused: following it would create its target with whatever
    mode SQLite picks, somewhere the user did not name.
    """
    if path.is_symlink() and not path.exists():
        raise RecordingError(f"{path} is a symbolic link to a missing file; not creating it")
    create_private_folder(path.parent)
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)


def is_busy(error: sqlite3.Error) -> bool:
    """Whether ``error`` says another connection holds the lock (worth waiting for)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(error) or "busy" in str(error)


def connect(
    path: Path, *, create: bool = True, readonly: bool = False, recorder: bool = False
) -> sqlite3.Connection:
    """Open a recording database, creating and migrating it as needed.

    ``recorder=True`` leaves WAL checkpoints to the caller (see ``checkpoint``).
    """
    try:
        if create and not readonly:
            create_private_file(path)
        elif not path.exists():
            raise UnknownRecording(f"no recording database at {path}")
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        db = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
            check_same_thread=False,
        )  # fmt: skip
        try:
            if not readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                if recorder:
                    db.execute("PRAGMA wal_autocheckpoint=0")
            _migrate(db, path, readonly=readonly)
        except BaseException:
            db.close()  # a caller that retries (busy) must not pile up open connections
            raise
    except (sqlite3.Error, OSError) as error:
        if readonly:
            raise UnreadableRecording(
                f"{path} is not a readable recording database: {error}"
            ) from None
        if isinstance(error, sqlite3.Error) and is_busy(error):
            raise RecordingBusy(f"cannot open recording database {path}: {error}") from error
        raise RecordingError(f"cannot open recording database {path}: {error}") from error
    return db


def _migrate(db: sqlite3.Connection, path: Path, *, readonly: bool) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RecordingError(
            f"{path} uses recording format {version}; this acp-proxy reads up to "
            f"{SCHEMA_VERSION}: upgrade acp-proxy"
        )
    if readonly and version == 0:  # an empty file, or SQLite written by something else
        raise UnreadableRecording(f"{path} is not an acp-proxy recording database")
    if version == SCHEMA_VERSION or readonly:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        # Another proxy may have migrated while we waited for the write lock.
        version = db.execute("PRAGMA user_version").fetchone()[0]
        while version < SCHEMA_VERSION:
            for statement in _statements(MIGRATIONS[version]):
                db.execute(statement)
            version += 1
        for statement in _statements(_VIEWS):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a script of simple statements (no triggers) at top-level semicolons."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]


# (seq, direction, rule, severity, message) of one rule finding.
StoredFinding = tuple[int | None, str | None, str, str, str]


@dataclass(frozen=True, slots=True)
class NewConnection:
    """What is known about a connection when the proxy starts it."""

    argv: Sequence[str]
    cwd: str
    proxy_version: str
    proxy_pid: int
    label: str | None = None
    started_ns: int | None = None
    uid: str | None = None  # chosen by the proxy: it finds the row again (``update_by_uid``), and
    # ``record --otlp`` names the trace after it from the start
    client_argv: Sequence[str] | None = None  # the client's command line, when it is known
    # How the connection was carried: ``stdio``, or ``http`` / ``websocket`` (remote; the
    # other fields are then the upstream's URL, where the proxy listened, the client's address).
    transport: str = "stdio"
    remote_url: str | None = None
    listen_url: str | None = None
    client_address: str | None = None


def new_uid() -> str:
    """A fresh connection uid: random 128 bits in hex."""
    return uuid.uuid4().hex


_UPDATABLE = frozenset({
    "agent_pid", "status", "ended_ns", "exit_code", "exit_signal", "error", "frames_lost",
    "bytes_lost", "otlp_frames_dropped", "otlp_spans_dropped", "remote_connection_id",
})  # fmt: skip


def _raise_for(error: sqlite3.Error, doing: str) -> RecordingError:
    kind = RecordingBusy if is_busy(error) else RecordingError
    return kind(f"cannot {doing}: {error}")


class RecordingWriter:
    """Appends one connection's frames. Used from a single thread.

    ``index``: index each batch in the transaction that writes it (else see ``index_pending``);
    ``index_error`` says why indexing stopped, if it had to.
    """

    def __init__(self, db: sqlite3.Connection, connection_id: int, *, index: bool = True) -> None:
        self._db = db
        self.connection_id = connection_id
        self._index = index
        self._unindexed = 0  # frames written since the last index_pending, when not ``index``
        self.index_error: str | None = None
        self._last_totals: dict[str, tuple[int, int]] = {}
        self._wal_path = db.execute("PRAGMA database_list").fetchone()[2] + "-wal"
        columns = ", ".join(FRAME_COLUMNS)
        marks = ", ".join("?" for _ in FRAME_COLUMNS)
        # The connection id is an integer we own, so it can be part of the statement text.
        self._insert = (
            f"INSERT INTO frame (connection_id, {columns}) VALUES ({int(connection_id)}, {marks})"
        )
        # Large frames: the row gets a zero-filled blob of the right size, then the bytes are
        # written into it in place (binding them would make SQLite copy them all first).
        raw_index = FRAME_COLUMNS.index("raw")
        self._raw_index = raw_index
        large_marks = ", ".join(
            "zeroblob(?)" if i == raw_index else "?" for i in range(len(FRAME_COLUMNS))
        )
        self._insert_large = (
            f"INSERT INTO frame (connection_id, {columns}) "
            f"VALUES ({int(connection_id)}, {large_marks})"
        )
        self.max_raw_bytes = max(0, db.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) - ROW_OVERHEAD_BYTES)
        # Frames from this size on take the row-by-row path (large, or too long to store).
        self._row_path_bytes = min(LARGE_FRAME_BYTES, self.max_raw_bytes + 1)

    @classmethod
    def start(
        cls, db: sqlite3.Connection, new: NewConnection, *, index: bool = True
    ) -> RecordingWriter:
        try:
            with write_transaction(db):
                cursor = db.execute(
                    "INSERT INTO connection (uid, label, status, started_ns, argv, cwd, "
                    "proxy_version, proxy_pid, client_argv, transport, remote_url, listen_url, "
                    "client_address) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        new.uid or new_uid(), new.label, new.started_ns or _now_ns(),
                        orjson.dumps(list(new.argv)).decode(), new.cwd, new.proxy_version,
                        new.proxy_pid,
                        None if new.client_argv is None
                        else orjson.dumps(list(new.client_argv)).decode(),
                        new.transport, new.remote_url, new.listen_url, new.client_address,
                    ),
                )  # fmt: skip
        except sqlite3.Error as error:
            raise _raise_for(error, "start a recording") from error
        assert cursor.lastrowid is not None
        return cls(db, cursor.lastrowid, index=index)

    def append(
        self,
        records: Sequence[FrameRecord],
        counts: Iterable[tuple[str, int, int]] = (),
        facts: ConnectionFacts | None = None,
        findings: Sequence[StoredFinding] = (),
        lost: tuple[int, int] | None = None,
    ) -> list[FrameRecord]:
        """Write a batch of frames and the connection's running totals in one transaction.

        ``counts`` holds ``(direction, frames, bytes)`` totals so far for each direction;
        ``findings`` are rule findings about these frames (``record --check``); ``lost`` the
        ``(frames_lost, bytes_lost)`` totals so far. Returns the frames whose bytes were too
        long to store (their rows hold an empty ``raw``). Raises ``RecordingBusy`` when the
        write lock could not be had: nothing was written, the same call may be retried.
        """
        too_long: list[FrameRecord] = []
        totals = {direction: (frames, size) for direction, frames, size in counts}
        try:
            with write_transaction(self._db):
                if records:
                    too_long = self._insert_records(records)
                    if self._index:
                        self._index_frames()
                    else:
                        self._unindexed += len(records)
                if findings:
                    now = _now_ns()
                    self._db.executemany(
                        "INSERT INTO finding (connection_id, seq, direction, rule, severity, "
                        "message, found_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(self.connection_id, *finding, now) for finding in findings],
                    )
                if totals and totals != self._last_totals:
                    assignments = ", ".join(
                        f"{column} = ?"
                        for direction in totals
                        for column in _COUNT_COLUMNS[direction]
                    )
                    values = [value for pair in totals.values() for value in pair]
                    self._db.execute(
                        f"UPDATE connection SET {assignments} WHERE id = ?",
                        (*values, self.connection_id),
                    )
                if lost is not None:
                    self._db.execute(
                        "UPDATE connection SET frames_lost = ?, bytes_lost = ? WHERE id = ?",
                        (*lost, self.connection_id),
                    )
                if facts is not None:
                    self._db.execute(
                        "UPDATE connection SET protocol_version = ?, client_info = ?, "
                        "agent_info = ? WHERE id = ?",
                        (facts.protocol_version, _json_or_none(facts.client_info),
                         _json_or_none(facts.agent_info), self.connection_id),
                    )  # fmt: skip
        except sqlite3.Error as error:
            raise _raise_for(error, "write to the recording") from error
        if totals:
            self._last_totals = totals
        return too_long

    def _insert_records(self, records: Sequence[FrameRecord]) -> list[FrameRecord]:
        raw_index = self._raw_index
        start = 0
        too_long: list[FrameRecord] = []
        row_path_bytes = self._row_path_bytes
        for index, record in enumerate(records):
            raw = record.raw
            if len(raw) >= row_path_bytes:
                self._insert_small(records[start:index])
                start = index + 1
                row = list(record)
                if len(raw) > self.max_raw_bytes:
                    too_long.append(record)
                    row[raw_index] = 0
                    self._db.execute(self._insert_large, row)
                    continue
                row[raw_index] = len(raw)
                cursor = self._db.execute(self._insert_large, row)
                assert cursor.lastrowid is not None
                with self._db.blobopen("frame", "raw", cursor.lastrowid) as blob:
                    blob.write(raw)
        self._insert_small(records[start:])
        return too_long

    def _index_frames(self, limit: int | None = None) -> int:
        """Index this connection's frames not yet indexed; on failure, stop indexing them."""
        self._db.execute("SAVEPOINT search_index")
        try:
            return index_frames(self._db, self.connection_id, limit)
        except sqlite3.Error as error:
            self._db.execute("ROLLBACK TO search_index")
            self._index = False
            self.index_error = str(error)
            return 0
        finally:
            self._db.execute("RELEASE search_index")

    def index_pending(self, limit: int | None = None) -> int:
        """Index up to ``limit`` of this connection's frames not indexed yet, in a transaction
        of its own; how many it took (0 once indexing failed: see ``index_error``)."""
        if self.index_error is not None or not self._unindexed:
            return 0
        try:
            with write_transaction(self._db):
                taken = self._index_frames(limit)
        except sqlite3.Error as error:
            self.index_error = str(error)
            return 0
        # Nothing taken: someone else (``search``) indexed them first.
        self._unindexed = max(self._unindexed - taken, 0) if taken else 0
        return taken

    def _insert_small(self, records: Sequence[FrameRecord]) -> None:
        if records:
            # Plain tuples: the sqlite3 module binds a tuple subclass through the generic
            # sequence protocol, about a third slower per row.
            self._db.executemany(self._insert, map(tuple, records))

    def wal_size(self) -> int:
        """Bytes in the write-ahead log not yet known to be checkpointed (0 if unknown)."""
        try:
            return os.path.getsize(self._wal_path)
        except OSError:
            return 0

    def checkpoint(self) -> None:
        """Copy what the WAL holds into the main file, without waiting for readers or writers."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as error:
            raise _raise_for(error, "checkpoint the recording") from error

    def update(self, **fields: Any) -> None:
        """Set columns of this connection's row (agent pid, exit status, lost frames ...)."""
        _update(self._db, "id", self.connection_id, fields)


def _update(db: sqlite3.Connection, key: str, value: object, fields: dict[str, Any]) -> None:
    unknown = set(fields) - _UPDATABLE
    if unknown:
        raise ValueError(f"not connection columns: {sorted(unknown)}")
    if not fields:
        return
    assignments = ", ".join(f"{name} = ?" for name in fields)
    try:
        with write_transaction(db):
            db.execute(
                f"UPDATE connection SET {assignments} WHERE {key} = ?", (*fields.values(), value)
            )
    except sqlite3.Error as error:
        raise _raise_for(error, "update the recording") from error


def connection_id_of_uid(path: Path, uid: str) -> int | None:
    """The id of the connection ``uid`` in ``path``, or None."""
    db = connect(path, create=False, readonly=True)
    try:
        row = db.execute("SELECT id FROM connection WHERE uid = ?", (uid,)).fetchone()
    except sqlite3.Error as error:
        raise _raise_for(error, "read the recording") from error
    finally:
        db.close()
    return None if row is None else int(row[0])


def update_by_uid(path: Path, uid: str, **fields: Any) -> bool:
    """Set columns of the connection ``uid`` in ``path`` from outside its recorder.

    For the proxy, when its recorder process ended early and cannot say how the recording
    ended itself. Returns False if there is no such row (the recorder never wrote it).
    """
    db = connect(path)
    try:
        if db.execute("SELECT 1 FROM connection WHERE uid = ?", (uid,)).fetchone() is None:
            return False
        _update(db, "uid", uid, fields)
    except sqlite3.Error as error:
        raise _raise_for(error, "update the recording") from error
    finally:
        db.close()
    return True


_COUNT_COLUMNS = {
    "c2a": ("frames_c2a", "bytes_c2a"),
    "a2c": ("frames_a2c", "bytes_a2c"),
    "stderr": ("lines_stderr", "bytes_stderr"),
}


def _json_or_none(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return None


class write_transaction:  # used like a function: with write_transaction(db):
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if kind is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")


def index_frames(db: sqlite3.Connection, connection_id: int, limit: int | None = None) -> int:
    """Add to the search index the next frames of a connection (at most ``limit``).

    Runs inside the caller's transaction, which must be a write transaction: the progress it
    reads and moves is then the one every other writer sees. Returns how many frames it took.
    """
    row = db.execute(
        "SELECT indexed_seq FROM search_progress WHERE connection_id = ?", (connection_id,)
    ).fetchone()
    after = 0 if row is None else int(row[0])
    last = db.execute(
        "SELECT max(seq), count(*) FROM (SELECT seq FROM frame WHERE connection_id = ? "
        "AND seq > ? ORDER BY seq LIMIT ?)",
        (connection_id, after, -1 if limit is None else limit),
    ).fetchone()
    if last[0] is None:
        return 0
    db.execute(
        "INSERT INTO frame_search (rowid, text) SELECT id, text FROM frame_text "
        "WHERE connection_id = ? AND seq > ? AND seq <= ?",
        (connection_id, after, last[0]),
    )
    db.execute(
        "INSERT INTO search_progress (connection_id, indexed_seq) VALUES (?, ?) "
        "ON CONFLICT (connection_id) DO UPDATE SET indexed_seq = excluded.indexed_seq",
        (connection_id, last[0]),
    )
    return int(last[1])


@dataclass(frozen=True, slots=True)
class ConnectionSummary:
    """A short account of one recorded connection, for ``demo`` and friends."""

    connection_id: int
    label: str | None
    status: str
    exit_code: int | None
    exit_signal: int | None
    protocol_version: int | None
    client_info: Any
    agent_info: Any
    duration_ms: float | None
    frames: dict[str, int]
    calls: list[tuple[str, str, str | None, float | None]]  # caller, method, outcome, ms
    updates: list[tuple[str, int]]
    prompt_turns: list[tuple[str | None, str | None, float | None]]  # session, stop, ms
    argv: list[str] = field(default_factory=list)  # the agent's command line
    error: str | None = None  # why the agent did not start
    client_argv: list[str] | None = None  # the client's command line, when known


def summarize(db: sqlite3.Connection, connection_id: int) -> ConnectionSummary:
    """Read the summary of one connection (see ``ConnectionSummary``)."""
    row = db.execute(
        "SELECT label, status, exit_code, exit_signal, protocol_version, client_info, "
        "agent_info, (ended_ns - started_ns) / 1e6, frames_c2a, frames_a2c, lines_stderr, "
        "argv, error, client_argv FROM connection WHERE id = ?",
        (connection_id,),
    ).fetchone()
    if row is None:
        raise UnknownRecording(f"no connection {connection_id}")
    calls = db.execute(
        "SELECT caller, method, coalesce(stop_reason, outcome), latency_ms FROM rpc_calls "
        "WHERE connection_id = ? ORDER BY request_seq",
        (connection_id,),
    ).fetchall()
    updates = db.execute(
        "SELECT update_kind, count(*) FROM frame WHERE connection_id = ? "
        "AND update_kind IS NOT NULL GROUP BY update_kind ORDER BY min(seq)",
        (connection_id,),
    ).fetchall()
    turns = db.execute(
        "SELECT session_id, stop_reason, duration_ms FROM prompt_turns "
        "WHERE connection_id = ? ORDER BY prompt_seq",
        (connection_id,),
    ).fetchall()
    return ConnectionSummary(
        connection_id=connection_id, label=row[0], status=row[1], exit_code=row[2],
        exit_signal=row[3], protocol_version=row[4], client_info=_loads(row[5]),
        agent_info=_loads(row[6]), duration_ms=row[7],
        frames={"c2a": row[8], "a2c": row[9], "stderr": row[10]},
        calls=[tuple(c) for c in calls], updates=[tuple(u) for u in updates],
        prompt_turns=[tuple(t) for t in turns], argv=_loads(row[11]) or [], error=row[12],
        client_argv=_loads(row[13]),
    )  # fmt: skip


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)
