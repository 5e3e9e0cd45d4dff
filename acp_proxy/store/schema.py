"""The recording format: the SQL of every format step, the views, and the migration to the newest.

Rules:
- The format number lives in ``PRAGMA user_version``; ``MIGRATIONS[n]`` takes a database from
  format n to n+1 and ``SCHEMA_VERSION`` is their count. Steps are append-only: a released step
  is never edited, a change is a new step.
- To add a format: write its SQL as the next ``_SCHEMA_Vn`` constant above ``MIGRATIONS``, with
  a comment saying what it adds and why, append it to ``MIGRATIONS``, and describe it in
  docs/recording-format.md (the contract). Nothing else changes: ``SCHEMA_VERSION`` follows.
- Views are dropped and re-created by every migration so they always match the code; a step
  that changes a table the views read drops them first.
- A database newer than this code is refused, never modified; one opened read-only is never
  migrated (a format-0 file opened read-only is not a recording).
- Several proxies may open one file at once: the migration runs in ``BEGIN IMMEDIATE`` and
  reads the format again under the lock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from acp_proxy.errors import RecordingError, UnreadableRecording

# The frame table of format 1, and its indexes (format 3 rebuilds the table with ``raw`` last).
_FRAME_TABLE_V1 = """(
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
)"""
_FRAME_INDEXES = """CREATE UNIQUE INDEX frame_by_connection_seq ON frame(connection_id, seq);
CREATE INDEX frame_by_session ON frame(session_id, connection_id, seq)
    WHERE session_id IS NOT NULL;
"""

# Format 1's connection columns after the id; format 9 rebuilds the table with them and
# every later column.
_CONNECTION_V1_COLUMNS = """    uid TEXT NOT NULL UNIQUE,
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
    frames_lost INTEGER NOT NULL DEFAULT 0"""

_SCHEMA_V1 = f"""
CREATE TABLE connection (
    id INTEGER PRIMARY KEY,
{_CONNECTION_V1_COLUMNS}
);
CREATE TABLE frame {_FRAME_TABLE_V1};
{_FRAME_INDEXES}"""

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
_FRAME_TABLE_V3 = _FRAME_TABLE_V1.replace("\n    raw BLOB NOT NULL,", "").replace(
    "DEFAULT 0\n)", "DEFAULT 0,\n    raw BLOB NOT NULL\n)"
)
_SCHEMA_V3 = f"""
DROP VIEW IF EXISTS frames;
DROP VIEW IF EXISTS rpc_calls;
DROP VIEW IF EXISTS sessions;
DROP VIEW IF EXISTS prompt_turns;
DROP VIEW IF EXISTS frame_text;
CREATE TABLE frame_v3 {_FRAME_TABLE_V3};
INSERT INTO frame_v3 ({_FRAME_V3_COLUMNS}) SELECT {_FRAME_V3_COLUMNS} FROM frame;
DROP TABLE frame;
ALTER TABLE frame_v3 RENAME TO frame;
{_FRAME_INDEXES}"""

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

# One step per format, in order: the step at index n takes format n to n+1. Append only.
# Format 8: remote connections (Streamable HTTP and WebSocket, ``record --listen``). The
# connection says how it was carried; ``http_exchange`` keeps one row per HTTP request (or
# WebSocket upgrade) with its method, status and ACP headers; ``frame_transport`` says, per
# frame of a remote connection, in which exchange and on which stream it crossed. Frames
# themselves stay what they are for stdio (one JSON-RPC message each), so every reader works.
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

# Format 9: connection ids are never reused (``AUTOINCREMENT``), so frames still being written
# for a deleted connection can never join a later one, and ``recorder_pid`` names the process
# that writes a connection's frames while it does (null once it is done): liveness is read
# from the recorder as well as from the proxy (store/tidy.py). SQLite cannot add AUTOINCREMENT
# to a table: ``connection`` is rebuilt, every row and id kept (views dropped first; the last
# step re-creates them), and the sequence starts above every id any row still names (frames
# a deleted connection left behind must not join the next one). Frame ids are left as they
# are (rebuilding ``frame`` would copy the whole file); nothing else refers to a deleted
# frame's id (``delete`` takes its words out of the search index).
_CONNECTION_V8_COLUMNS = """id, uid, label, status, started_ns, ended_ns, argv, cwd,
    proxy_version, proxy_pid, agent_pid, exit_code, exit_signal, error, protocol_version,
    client_info, agent_info, frames_c2a, frames_a2c, lines_stderr, bytes_c2a, bytes_a2c,
    bytes_stderr, frames_lost, otlp_frames_dropped, otlp_spans_dropped, bytes_lost,
    client_argv, transport, remote_url, listen_url, client_address, remote_connection_id"""
_SCHEMA_V9 = f"""
DROP VIEW IF EXISTS frames;
DROP VIEW IF EXISTS rpc_calls;
DROP VIEW IF EXISTS sessions;
DROP VIEW IF EXISTS prompt_turns;
DROP VIEW IF EXISTS frame_text;
CREATE TABLE connection_v9 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
{_CONNECTION_V1_COLUMNS},
    otlp_frames_dropped INTEGER NOT NULL DEFAULT 0,
    otlp_spans_dropped INTEGER NOT NULL DEFAULT 0,
    bytes_lost INTEGER NOT NULL DEFAULT 0,
    client_argv TEXT,
    transport TEXT NOT NULL DEFAULT 'stdio',
    remote_url TEXT,
    listen_url TEXT,
    client_address TEXT,
    remote_connection_id TEXT,
    recorder_pid INTEGER
);
INSERT INTO connection_v9 ({_CONNECTION_V8_COLUMNS})
    SELECT {_CONNECTION_V8_COLUMNS} FROM connection;
DROP TABLE connection;
ALTER TABLE connection_v9 RENAME TO connection;
INSERT INTO sqlite_sequence (name, seq) SELECT 'connection', 0
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'connection');
UPDATE sqlite_sequence SET seq = max(seq,
    (SELECT coalesce(max(connection_id), 0) FROM frame),
    (SELECT coalesce(max(connection_id), 0) FROM finding),
    (SELECT coalesce(max(connection_id), 0) FROM search_progress),
    (SELECT coalesce(max(connection_id), 0) FROM http_exchange))
    WHERE name = 'connection';
"""

# Format 10: an answer is found from its request by an index (``frame_by_request``), not by
# walking the frames after the request: the inspector's latency per row, its performance view
# and session info, and every request/answer join (``calls``, ``rpc_calls``) look answers up
# this way. Partial: only answers have a ``request_seq``, so the recorder pays for it on
# answers alone.
_SCHEMA_V10 = """
CREATE INDEX IF NOT EXISTS frame_by_request ON frame(connection_id, request_seq)
    WHERE request_seq IS NOT NULL;
"""

MIGRATIONS: tuple[str, ...] = (
    _SCHEMA_V1,
    _SCHEMA_V2,
    _SCHEMA_V3,
    _SCHEMA_V4,
    _SCHEMA_V5,
    _SCHEMA_V6,
    _SCHEMA_V7,
    _SCHEMA_V8,
    _SCHEMA_V9,
    _SCHEMA_V10,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, path: Path, *, readonly: bool) -> None:
    """Bring ``db`` (the file at ``path``) to ``SCHEMA_VERSION``, or refuse it."""
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
            for statement in statements(MIGRATIONS[version]):
                db.execute(statement)
            version += 1
        for statement in statements(_VIEWS):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def statements(script: str) -> list[str]:
    """Split a script of simple statements (no triggers) at top-level semicolons."""
    found, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            found.append(current.strip())
            current = ""
    return [s for s in found if s]
