"""export and import: JSONL round trips to identical rows and bytes; Markdown and HTML exports."""

from __future__ import annotations

import json
import sqlite3
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from acp_proxy.cli.main import main as cli
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.fixtures_transcript import V2_WALKTHROUGH
from tests.support.helpers import A2C, C2A, ERR, line, write_recording
from tests.support.processes import run_to_end

ODD: list[tuple[Direction, bytes]] = [
    *V1_CONVERSATION,
    (C2A, b"\xff\xfe not utf-8\r\n"),
    (A2C, line({"jsonrpc": "2.0", "id": 1.5, "method": "_x", "params": {"big": 2**70}})),
    (C2A, line({"jsonrpc": "2.0", "id": 2**70, "method": "_y"})),
    (A2C, b'{"jsonrpc":"2.0","method":"_emoji","params":{"t":"\xf0\x9f\x98\x80 \\u2028"}}\r\n'),
    (ERR, b"stderr \x1b[31mred\x1b[0m\n"),
    (A2C, b"[]\n"),
    (A2C, b'{"last line without newline":true}'),
]


def record_with_tail(db_path: Path, exchange: list[tuple[Direction, bytes]]) -> int:
    """Like helpers.write_recording, but unfinished last lines are recorded too."""
    observer = ConnectionObserver()
    splitters = {d: LineSplitter() for d in Direction}
    records = []
    for clock, (direction, data) in enumerate(exchange, start=1):
        for frame in splitters[direction].feed(data):
            records.append(observer.observe(direction, frame, clock * 10**6, clock + 10**18))
    for direction, splitter in splitters.items():
        tail = splitter.finish()
        if tail is not None:
            records.append(observer.observe(direction, tail, 10**9, 10**18))
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["agent", "--x"], "/w", "t", 7, label="odd"))
    writer.append(records, [("c2a", 3, 30), ("a2c", 4, 40), ("stderr", 1, 10)], observer.facts())
    writer.update(status="exited", exit_code=0, ended_ns=10**18 + 5)
    writer.done()  # as a recorder ends: the row no longer names a writing process
    db.close()
    return writer.connection_id


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (result.output, result.exception)
    return result


def rows(db_path: Path, connection_id: int) -> tuple[tuple[object, ...], list[tuple[object, ...]]]:
    db = sqlite3.connect(db_path)
    columns = [r[1] for r in db.execute("PRAGMA table_info(frame)")][2:]
    typed = ", ".join(f"{c}, typeof({c})" for c in columns)
    frames = db.execute(
        f"SELECT {typed} FROM frame WHERE connection_id = ? ORDER BY seq", (connection_id,)
    ).fetchall()
    connection = db.execute("SELECT * FROM connection WHERE id = ?", (connection_id,)).fetchone()
    db.close()
    return connection[1:], frames


def test_jsonl_export_reimports_to_identical_rows_and_bytes(tmp_path: Path) -> None:
    source, target = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    write_recording(target, V1_CONVERSATION)  # the import gets a new id: 2, not 1
    original = record_with_tail(source, ODD)
    exported = tmp_path / "odd.jsonl"
    run("export", "odd", "-o", str(exported), "--db", str(source))
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    assert "imported" in run("import", str(exported), "--db", str(target)).output
    assert rows(target, 2) == rows(source, original)
    db = sqlite3.connect(target)
    raws = db.execute(
        "SELECT raw FROM frame WHERE connection_id = 2 AND direction = 'a2c' ORDER BY seq"
    ).fetchall()
    assert b"".join(r[0] for r in raws) == b"".join(d for direction, d in ODD if direction is A2C)
    lines = [json.loads(x) for x in exported.read_bytes().splitlines()]
    assert lines[0]["format"] == "acp-proxy-jsonl"
    assert "raw_base64" in next(x for x in lines[1:] if x.get("bad_utf8"))
    assert all("raw" in x for x in lines[1:] if not x.get("bad_utf8"))


def test_importing_the_same_connection_twice_is_refused(tmp_path: Path) -> None:
    source, target = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    write_recording(source, V1_CONVERSATION, label="once")
    exported = tmp_path / "once.jsonl"
    run("export", "once", "--format", "jsonl", "-o", str(exported), "--db", str(source))
    run("import", str(exported), "--db", str(target))
    argv = [sys.executable, "-m", "acp_proxy", "import", str(exported), "--db", str(target)]
    done = run_to_end(argv, timeout=30)
    assert done.returncode == 2  # a file this database cannot take: a usage error
    assert "is already in this database (connection 1); nothing imported" in done.stderr
    assert sqlite3.connect(target).execute("SELECT count(*) FROM connection").fetchone() == (1,)
    # ... and so is importing it back into the database it came from.
    run("import", str(exported), "--db", str(source), code=2)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b'{"hello": 1}\n', "not an acp-proxy export nor a capture acp-proxy can import"),
        (b'{"format": "acp-proxy-jsonl", "version": 99, "connection": {}}\n', "version 99"),
    ],
)
def test_import_refuses_what_is_not_an_export(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    argv = [
        sys.executable,
        "-m",
        "acp_proxy",
        "import",
        str(path),
        "--db",
        str(tmp_path / "d.sqlite"),
    ]
    done = run_to_end(argv, timeout=30)
    assert (done.returncode, done.stdout) == (2, "")
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_frame_line_imports_nothing(tmp_path: Path) -> None:
    source, target = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    write_recording(source, V1_CONVERSATION)
    exported = tmp_path / "e.jsonl"
    run("export", "--format", "jsonl", "-o", str(exported), "--db", str(source))
    exported.write_bytes(exported.read_bytes() + b'{"seq": 99}\n')
    run("import", str(exported), "--db", str(target), code=2)
    assert sqlite3.connect(target).execute("SELECT count(*) FROM connection").fetchone() == (0,)


def test_markdown_export_of_the_v2_walkthrough(db_path: Path) -> None:
    write_recording(db_path, V2_WALKTHROUGH, label="walk")
    text = run("export", "walk", "--format", "markdown", "--db", str(db_path)).output
    assert text.startswith("# ACP conversation: connection 1 (walk)\n")
    for expected in [
        "### Turn 1", "**You**\n\nCan you analyze this code for potential issues?",
        "**Tool call** `Analyzing Python code`: completed (other)",
        "> **Notice** (warning, live, not history): MCP server unavailable",
        "**Context compaction** `cmp_001`: completed",
        "Answer: **Allow (allow_once)**, waited 2.0 ms",
        "**Turn ended: end_turn** after 21.0 ms",
        "- [ ] Check for syntax errors (high)",
    ]:  # fmt: skip
        assert expected in text
