"""Every reader on remote recordings: ls, show, export and import, bundles and their redaction.

The recordings are written straight into a database (tests/support/remote_recordings.py) as
``record --listen`` stores them: whole messages, HTTP exchanges, the stream of each frame.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.processes import run_to_end
from tests.support.remote_recordings import exchange, http_exchanges, http_frames, write_remote

TOKEN = "sk-live-abcdefghijklmnopqrstuvwxyz0123456789"
SECRET_QUERY = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"


@pytest.fixture
def remote_db(tmp_path: Path) -> Path:
    db = tmp_path / "remote.sqlite"
    rows = http_exchanges()
    rows[0] = {**rows[0], "target": f"/acp?token={SECRET_QUERY}",
               "request_headers": [["authorization", f"Bearer {TOKEN}"],
                                   ["content-type", "application/json"],
                                   ["x-trace", f"carries {TOKEN}"]]}  # fmt: skip
    write_remote(db, "http", rows, http_frames(), label="remote")
    return db


def transport_rows(db: Path, connection_id: int) -> tuple[list[Any], list[Any]]:
    con = sqlite3.connect(db)
    try:
        exchanges = con.execute(
            "SELECT seq, method, target, http_version, stream, acp_connection_id, acp_session_id,"
            " status, request_headers, response_headers, body, started_ns, answered_ns,"
            " ended_ns, error FROM http_exchange WHERE connection_id = ? ORDER BY seq",
            (connection_id,),
        ).fetchall()
        frames = con.execute(
            "SELECT seq, exchange_seq, stream FROM frame_transport WHERE connection_id = ?"
            " ORDER BY seq", (connection_id,),
        ).fetchall()  # fmt: skip
    finally:
        con.close()
    return exchanges, frames


def test_ls_says_how_a_connection_was_carried(remote_db: Path) -> None:
    shown = run(remote_db, "ls", "--no-pager").output
    assert "http://127.0.0.1:1/acp <- unnamed  v1  http from 127.0.0.1:3  7 frames" in shown
    listed = json.loads(run(remote_db, "ls", "--json").output.splitlines()[0])
    assert (listed["transport"], listed["remote_url"], listed["client_address"]) == (
        "http", "http://127.0.0.1:1/acp", "127.0.0.1:3",
    )  # fmt: skip


def test_show_reads_whole_messages(remote_db: Path) -> None:
    shown = run(remote_db, "show", "--no-pager", "remote").output
    assert "a2c notification session/update agent_message_chunk hello" in shown
    assert shown.count("\n") == 7


def test_an_export_carries_the_transport_and_imports_back_exactly(
    remote_db: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "remote.jsonl"
    exported.write_bytes(run(remote_db, "export", "--format", "jsonl", "remote").stdout_bytes)
    header = json.loads(exported.read_bytes().splitlines()[0])
    assert [e["seq"] for e in header["transport"]["exchanges"]] == [1, 2, 3, 4, 5]
    assert header["transport"]["frames"][0] == [1, 1, "post"]
    again = tmp_path / "again.sqlite"
    run(again, "import", str(exported))
    assert transport_rows(again, 1) == transport_rows(remote_db, 1)


@pytest.mark.parametrize(
    ("transport", "says"),
    [
        ({"exchanges": [{"seq": "1"}]}, "exchange 1: method is missing"),
        ({"exchanges": [{"seq": 1, "method": "POST", "target": "/", "stream": "post",
                         "started_ns": 1, "request_headers": [["a", 1]]}]},
         "exchange 1: request_headers has the wrong type"),
        ({"frames": [[1, "x", "post"]]}, "is not [seq, exchange, stream]"),
        ({"exchanges": [], "frames": [], "more": 1}, '"transport" must be'),
    ],
)  # fmt: skip
def test_a_crafted_transport_is_refused_whole(
    remote_db: Path, tmp_path: Path, transport: dict[str, Any], says: str,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    lines = run(remote_db, "export", "--format", "jsonl", "remote").stdout_bytes.splitlines()
    header = json.loads(lines[0])
    header["transport"] = transport
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_bytes(b"\n".join([json.dumps(header).encode(), *lines[1:]]) + b"\n")
    capfd.readouterr()
    run(tmp_path / "new.sqlite", "import", str(crafted), code=2)
    assert says in capfd.readouterr().err
    assert not (tmp_path / "new.sqlite").exists() or transport_rows(tmp_path / "new.sqlite", 1) == (
        [], [],
    )  # fmt: skip


def test_a_bundle_redacts_the_transport_headers(remote_db: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "report.acpbundle"
    run(remote_db, "bundle", "-o", str(bundle), "remote")
    with zipfile.ZipFile(bundle) as archive:
        everything = b"".join(archive.read(name) for name in archive.namelist())
        frames = archive.read("frames.jsonl")
    assert TOKEN.encode() not in everything
    assert SECRET_QUERY.encode() not in everything
    exchanges = json.loads(frames.splitlines()[0])["transport"]["exchanges"]
    headers = dict(map(tuple, exchanges[0]["request_headers"]))
    assert headers["authorization"].startswith("[redacted:header:")
    assert headers["content-type"] == "application/json"
    assert "[redacted:" in headers["x-trace"]
    assert "[redacted:" in exchanges[0]["target"]
    assert [e["stream"] for e in exchanges] == [e["stream"] for e in http_exchanges()]


def test_a_websocket_recording_lists_as_such(tmp_path: Path) -> None:
    db = tmp_path / "ws.sqlite"
    write_remote(db, "websocket", [exchange(1, "GET", "websocket", 101)], [])
    assert "websocket from 127.0.0.1:3  0 frames" in run(db, "ls", "--no-pager").output


def test_a_remote_recording_replays_to_a_stdio_client_one_line_per_message(
    remote_db: Path,
) -> None:
    import sys

    from tests.support.remote_recordings import DONE, INIT, INIT_OK, NEW, NEW_OK, PROMPT, UPDATE

    done = run_to_end(
        [sys.executable, "-m", "acp_proxy", "replay", "--db", str(remote_db), "remote"],
        text=False,
        input=INIT + NEW + PROMPT,
        timeout=30,
    )
    assert done.stdout == INIT_OK + NEW_OK + UPDATE + DONE, done.stderr
    assert done.returncode == 0, done.stderr
