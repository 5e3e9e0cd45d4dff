"""store/ (schema.py, database.py, writer.py): schema, migrations, permissions, views,
references and concurrent writers."""

from __future__ import annotations

import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from acp_proxy.errors import RecordingBusy, RecordingError, UnknownRecording
from acp_proxy.record.recorder import retry_while_busy
from acp_proxy.store import ui_reads
from acp_proxy.store.database import connect
from acp_proxy.store.refs import resolve_ref
from acp_proxy.store.schema import _VIEWS, MIGRATIONS, SCHEMA_VERSION, statements
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import observe_all, write_recording


def test_new_database_is_private(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "rec.sqlite"
    write_recording(path, V1_CONVERSATION)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for sidecar in path.parent.glob("rec.sqlite-*"):
        assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600


def test_raw_bytes_and_types_survive(db_path: Path) -> None:
    connection_id = write_recording(db_path, V1_CONVERSATION)
    db = sqlite3.connect(db_path)
    rows = db.execute(
        "SELECT raw, rpc_id, typeof(rpc_id) FROM frame WHERE connection_id = ? ORDER BY seq",
        (connection_id,),
    ).fetchall()
    assert [r[0] for r in rows] == [data for _, data in V1_CONVERSATION]
    types = {(r[1], r[2]) for r in rows if r[1] is not None}
    assert (0, "integer") in types
    assert ("3", "text") in types
    # 1 and "1" stay different values in SQL too.
    assert db.execute("SELECT count(*) FROM frame WHERE rpc_id = 3").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM frame WHERE rpc_id = '3'").fetchone()[0] == 2


def test_connection_facts(db_path: Path) -> None:
    connection_id = write_recording(db_path, V2_CONVERSATION, label="v2-demo")
    db = sqlite3.connect(db_path)
    row = db.execute(
        "SELECT protocol_version, json_extract(client_info, '$.name'), "
        "json_extract(agent_info, '$.name'), label, status FROM connection WHERE id = ?",
        (connection_id,),
    ).fetchone()
    assert row == (2, "editor", "agent-v2", "v2-demo", "running")


def test_views(db_path: Path) -> None:
    v1 = write_recording(db_path, V1_CONVERSATION)
    v2 = write_recording(db_path, V2_CONVERSATION)
    db = sqlite3.connect(db_path)
    calls = db.execute(
        "SELECT caller, method, outcome, latency_ms FROM rpc_calls WHERE connection_id = ? "
        "ORDER BY request_seq",
        (v1,),
    ).fetchall()
    assert calls == [
        ("client", "initialize", "response", 1.0),
        ("client", "session/new", "response", 1.0),
        ("client", "session/prompt", "response", 8.0),
        ("agent", "session/request_permission", "response", 1.0),
        ("client", "session/set_mode", "error", 1.0),
    ]
    turns = db.execute(
        "SELECT connection_id, session_id, stop_reason, status, duration_ms, message_id "
        "FROM prompt_turns ORDER BY connection_id"
    ).fetchall()
    assert turns == [
        (v1, "sess_1", "end_turn", "finished", 8.0, None),
        (v2, "s2", "end_turn", "finished", 6.0, "msg_u1"),
    ]
    sessions = db.execute(
        "SELECT connection_id, session_id, prompts, opened_by, protocol_version FROM sessions "
        "ORDER BY connection_id"
    ).fetchall()
    assert sessions == [(v1, "sess_1", 1, "session/new", 1), (v2, "s2", 1, "session/new", 2)]
    frames = db.execute(
        "SELECT seq, time_utc, elapsed_ms, text FROM frames WHERE connection_id = ? AND seq <= 2",
        (v1,),
    ).fetchall()
    assert frames[1][2] == 1.0
    assert frames[0][1].startswith("2001-09-09T01:46:40.")
    assert frames[0][3] == V1_CONVERSATION[0][1].decode()


def test_unfinished_turns(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION[:8])
    write_recording(db_path, V2_CONVERSATION[:-1])
    db = sqlite3.connect(db_path)
    statuses = db.execute("SELECT status FROM prompt_turns ORDER BY connection_id").fetchall()
    assert statuses == [("unfinished",), ("unfinished",)]


def test_migrates_an_empty_database_and_refuses_a_newer_one(db_path: Path) -> None:
    sqlite3.connect(db_path).close()
    db = connect(db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(RecordingError, match="upgrade acp-proxy"):
        connect(db_path)


def _format_2_database(path: Path) -> None:
    """A database as acp-proxy wrote it before format 3 (``raw`` in the middle of ``frame``)."""
    db = sqlite3.connect(path, isolation_level=None)
    for version in (0, 1):
        db.executescript(MIGRATIONS[version])
    db.executescript(_VIEWS)
    db.execute("PRAGMA user_version = 2")
    db.close()


def test_raw_is_the_last_column_of_frame(db_path: Path) -> None:
    # A large frame is written as zeroblob(size) plus an incremental blob; SQLite keeps a
    # zeroblob unexpanded only in the last column (elsewhere: the frame allocated twice).
    connect(db_path).close()
    columns = [row[1] for row in sqlite3.connect(db_path).execute("PRAGMA table_info(frame)")]
    assert columns[-1] == "raw"


def test_format_2_is_rebuilt_with_every_frame_kept(tmp_path: Path) -> None:
    old, new = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    _format_2_database(old)
    old_id = write_recording(old, V1_CONVERSATION)  # written by this code into the old layout
    write_recording(new, V1_CONVERSATION)
    db = sqlite3.connect(old)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    columns = [row[1] for row in db.execute("PRAGMA table_info(frame)")]
    assert columns[-1] == "raw"
    query = "SELECT * FROM frames WHERE connection_id = ? ORDER BY seq"
    assert db.execute(query, (old_id,)).fetchall()
    indexes = {row[1] for row in db.execute("PRAGMA index_list(frame)")}
    assert indexes == {"frame_by_connection_seq", "frame_by_session", "frame_by_request"}
    fresh = sqlite3.connect(new)
    rows = "SELECT id, seq, raw, kind, rpc_id, method, session_id FROM frame ORDER BY id"
    assert db.execute(rows).fetchall() == fresh.execute(rows).fetchall()
    schema = "SELECT type, name, sql FROM sqlite_schema ORDER BY name"
    assert db.execute(schema).fetchall() == fresh.execute(schema).fetchall()


def test_format_2_frames_survive_the_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _format_2_database(path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(
        "INSERT INTO connection (id, uid, status, started_ns, argv, cwd, proxy_version, "
        "proxy_pid) VALUES (4, 'u', 'exited', 1, '[]', '/', 'old', 1)"
    )
    db.execute(
        "INSERT INTO frame (id, connection_id, seq, direction, mono_ns, wall_ns, offset, size, "
        "raw, kind, rpc_id) VALUES (17, 4, 1, 'c2a', 5, 6, 0, 3, X'7b7d0a', 'invalid', '1')"
    )
    db.close()
    connect(path).close()
    row = (
        sqlite3.connect(path)
        .execute("SELECT id, connection_id, seq, raw, rpc_id, typeof(rpc_id), bad_json FROM frame")
        .fetchone()
    )
    assert row == (17, 4, 1, b"{}\n", "1", "text", 0)


def test_unwritable_location_is_a_recording_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RecordingError):
        connect(blocker / "rec.sqlite")


def test_missing_database_for_reading(tmp_path: Path) -> None:
    with pytest.raises(UnknownRecording):
        connect(tmp_path / "none.sqlite", create=False)


def test_resolve_ref(db_path: Path) -> None:
    first = write_recording(db_path, V1_CONVERSATION, label="bug-123")
    second = write_recording(db_path, V2_CONVERSATION)
    db = connect(db_path)
    assert resolve_ref(db, "last") == second
    assert resolve_ref(db, None) == second
    assert resolve_ref(db, str(first)) == first
    assert resolve_ref(db, "bug-123") == first
    assert resolve_ref(db, "sess_1") == first
    assert resolve_ref(db, "s2") == second
    uid = db.execute("SELECT uid FROM connection WHERE id = ?", (first,)).fetchone()[0]
    assert resolve_ref(db, uid) == first
    with pytest.raises(UnknownRecording, match="no recording matches"):
        resolve_ref(db, "nothing-like-this")


def test_empty_database_has_no_last(db_path: Path) -> None:
    with pytest.raises(UnknownRecording, match="no recordings yet"):
        resolve_ref(connect(db_path), "last")


def test_proxies_creating_one_database_at_once(tmp_path: Path) -> None:
    """Eight connections opening one new file at the same moment, again and again: each gets
    the database (none is refused as another program's file, none is told it is busy before
    the busy timeout), and the file is one recording database."""

    def open_it(path: Path, barrier: threading.Barrier, failures: list[BaseException]) -> None:
        try:
            barrier.wait(timeout=30)
            connect(path).close()
        except BaseException as error:  # reported by the assertion below
            barrier.abort()
            failures.append(error)

    for round_number in range(60):
        path = tmp_path / f"new-{round_number}.sqlite"
        barrier = threading.Barrier(8)
        failures: list[BaseException] = []
        threads = [
            threading.Thread(target=open_it, args=(path, barrier, failures), daemon=True)
            for _ in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=40)
        assert failures == [], f"round {round_number}"
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.close()


def _ignore(_: RecordingBusy) -> None:
    pass


def test_eight_writers_at_once(db_path: Path) -> None:
    """Eight writers on one database, each retrying what the store refused as busy, as the
    recorder does: every frame is written once (a busy refusal wrote nothing)."""
    _, records = observe_all(V1_CONVERSATION * 50)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            db = connect(db_path)
            barrier.wait(timeout=30)
            writer = retry_while_busy(
                lambda: RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1)), _ignore
            )
            for start in range(0, len(records), 20):
                batch = records[start : start + 20]
                retry_while_busy(lambda: writer.append(batch), _ignore)  # noqa: B023
            db.close()
        except BaseException as error:  # reported by the assertion below
            barrier.abort()  # the others stop waiting for this one
            errors.append(error)

    threads = [threading.Thread(target=write, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=40)
    assert not any(thread.is_alive() for thread in threads), "a writer never finished"
    assert [e for e in errors if not isinstance(e, threading.BrokenBarrierError)] == []
    assert errors == []
    db = sqlite3.connect(db_path)
    counts = db.execute("SELECT count(*) FROM frame GROUP BY connection_id").fetchall()
    assert counts == [(len(records),)] * 8


def test_format_10_finds_answers_by_their_request(tmp_path: Path) -> None:
    # A format 9 database: opened for writing it gets the answers' index; read as it is (the
    # inspector opens read-only), answers are still found, by walking from the request.
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old, isolation_level=None)
    for version in range(9):
        for statement in statements(MIGRATIONS[version]):
            db.execute(statement)
    db.executescript(_VIEWS)
    db.execute("PRAGMA user_version = 9")
    db.close()
    cid = write_recording(old, V1_CONVERSATION)  # migrates: written by this code
    reader = sqlite3.connect(f"file:{old}?mode=ro", uri=True)
    assert ui_reads.has_answer_index(reader)
    plan = reader.execute(
        "EXPLAIN QUERY PLAN SELECT resp.seq FROM frame req LEFT JOIN frame resp "
        "ON resp.connection_id = req.connection_id AND resp.request_seq = req.seq "
        "WHERE req.connection_id = ? AND req.kind = 'request'",
        (cid,),
    ).fetchall()
    assert any("frame_by_request" in str(step) for step in plan), plan
    frames = reader.execute(
        "SELECT seq, kind, request_seq FROM frame WHERE connection_id = ?", (cid,)
    ).fetchall()
    answered = {request: seq for seq, _, request in frames if request is not None}
    requests = [seq for seq, kind, _ in frames if kind == "request"]
    assert answered  # the conversation has answers to look up
    indexed = [ui_reads.answer_of(reader, cid, seq) for seq in requests]
    assert [a["seq"] if a else None for a in indexed] == [answered.get(s) for s in requests]
    walked = sqlite3.connect(":memory:")
    reader.backup(walked)
    walked.execute("DROP INDEX frame_by_request")
    assert not ui_reads.has_answer_index(walked)
    assert [ui_reads.answer_of(walked, cid, seq) for seq in requests] == indexed
