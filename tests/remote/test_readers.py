"""Every reader on remote recordings: ls, show, export and import, bundles and their redaction.

The recordings are written straight into a database (tests/support/remote_recordings.py) as
``record --listen`` stores them: whole messages, HTTP exchanges, the stream of each frame.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.helpers import A2C, C2A
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
    assert "a2c sess-sse#4     notification session/update agent_message_chunk hello" in shown
    assert shown.count("\n") == 7


def after_time(line: str) -> str:
    """A frame line without its seq and time."""
    return line.split(None, 2)[2]


# Per frame of http_frames(): the stream that carried it, the exchange, the status where it
# tells something (a POST's; an event stream's 200 goes without saying).
CARRIED = [
    "c2a post#1 200     request      initialize",
    "a2c answer#1 200   response     initialize",
    "c2a post#3 202     request      session/new",
    "a2c conn-sse#2     response     session/new",
    "c2a post#5 202     request      session/prompt",
    "a2c sess-sse#4     notification session/update",
    "a2c sess-sse#4     response     session/prompt",
]


def test_show_and_tail_say_which_stream_carried_each_frame(remote_db: Path) -> None:
    lines = run(remote_db, "show", "--no-pager", "remote").output.splitlines()
    assert [after_time(line)[: len(want)] for line, want in zip(lines, CARRIED, strict=True)] == (
        CARRIED
    )
    tailed = run(remote_db, "tail", "-n", "2", "remote").output.splitlines()
    assert tailed == lines[-2:]
    records = [json.loads(x) for x in run(remote_db, "show", "--format", "json").output.split()]
    carried = [(r["stream"], r["exchange"], r["http_method"], r["http_status"]) for r in records]
    assert carried == [
        ("post", 1, "POST", 200), ("post_answer", 1, "POST", 200), ("post", 3, "POST", 202),
        ("connection_sse", 2, "GET", 200), ("post", 5, "POST", 202),
        ("session_sse", 4, "GET", 200), ("session_sse", 4, "GET", 200),
    ]  # fmt: skip


def test_a_websocket_frame_and_a_refused_stream_say_so(tmp_path: Path) -> None:
    db = tmp_path / "ws.sqlite"
    from tests.support.remote_recordings import INIT, INIT_OK

    frames = [(C2A, INIT.rstrip(), 1, "websocket"), (A2C, INIT_OK.rstrip(), 1, "websocket")]
    write_remote(db, "websocket", [exchange(1, "GET", "websocket", 101)], frames)
    lines = run(db, "show", "--no-pager").output.splitlines()
    assert [after_time(line)[:28] for line in lines] == [
        "c2a ws#1           request  ", "a2c ws#1           response ",
    ]  # fmt: skip
    db2 = tmp_path / "odd.sqlite"  # an event stream answered 207: the status is worth saying
    write_remote(db2, "http", [exchange(1, "GET", "session_sse", 207)],
                 [(A2C, INIT_OK.rstrip(), 1, "session_sse")])  # fmt: skip
    assert "a2c sess-sse#1 207 response" in run(db2, "show", "--no-pager").output


def test_a_stdio_recording_shows_as_before(tmp_path: Path) -> None:
    from tests.support.helpers import write_recording
    from tests.support.remote_recordings import INIT, INIT_OK

    db = tmp_path / "stdio.sqlite"
    write_recording(db, [(C2A, INIT), (A2C, INIT_OK)])
    lines = run(db, "show", "--no-pager").output.splitlines()
    assert [after_time(line) for line in lines] == [
        'c2a request      initialize [0] {"protocolVersion":1}',
        'a2c response     initialize [0] 1.0 ms {"protocolVersion":1}',
    ]
    records = [json.loads(x) for x in run(db, "show", "--format", "json").output.split()]
    assert all(not {"stream", "exchange", "http_status"} & set(r) for r in records)


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


def _follow_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: Any
) -> tuple[list[Any], list[list[int]]]:
    """``tail -f``'s follow on a live http connection whose frame 2 is committed and its
    stream not yet; each look (a ``time.sleep``) calls ``step(looks, facts, writer, cid)``.
    The frames shown, and which were shown at each look."""
    from acp_proxy.cli import inspect as tail_cli
    from acp_proxy.protocol.observer import ConnectionObserver
    from acp_proxy.protocol.wire import Frame
    from acp_proxy.store import readers
    from acp_proxy.store.database import connect
    from acp_proxy.store.remote import RemoteFactsWriter
    from acp_proxy.store.writer import NewConnection, RecordingWriter
    from tests.support.remote_recordings import INIT, INIT_OK

    db_path = tmp_path / "live.sqlite"
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection([], "/", "test", 1, transport="http"))
    cid, observer = writer.connection_id, ConnectionObserver()
    frames = [observer.observe(d, Frame(raw.rstrip(), 0), n, n) for n, (d, raw) in
              enumerate([(C2A, INIT), (A2C, INIT_OK)], start=1)]  # fmt: skip
    facts = RemoteFactsWriter(db)
    facts.write([(cid, exchange(1, "POST", "post", 200))], [], [(cid, 1, 1, "post")])
    writer.append(frames)
    shown: list[Any] = []
    looks: list[list[int]] = []

    def look(_: float) -> None:
        looks.append([f.seq for f in shown])
        step(looks, facts, writer, cid)

    monkeypatch.setattr(time, "sleep", look)  # tail's looks (nothing else sleeps meanwhile)
    reading = readers.open_for_reading(db_path)
    try:
        tail_cli._follow(reading, cid, readers.FrameFilter(), shown.append, 0, 0.01)
    finally:
        reading.close()
        db.close()
    return shown, looks


def test_tail_follows_a_live_remote_frame_with_its_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder commits a frame's stream just after the frame: ``tail -f`` shows the
    frame once its stream is there, not before."""

    def step(looks: list[list[int]], facts: Any, writer: Any, cid: int) -> None:
        if len(looks) == 1:
            facts.write([], [], [(cid, 2, 1, "post_answer")])
        elif len(looks) == 2:
            writer.update(status="closed")

    shown, looks = _follow_live(tmp_path, monkeypatch, step)
    assert looks[0] == [1]  # frame 2 waited for its stream
    assert [(f.seq, f.carrier and f.carrier.stream) for f in shown] == [
        (1, "post"), (2, "post_answer"),
    ]  # fmt: skip


def test_tail_waits_for_a_stream_that_never_comes_only_so_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_proxy.cli.inspect import CARRIER_POLLS

    def step(looks: list[list[int]], facts: Any, writer: Any, cid: int) -> None:
        if len(looks) == CARRIER_POLLS + 1:
            writer.update(status="closed")

    shown, looks = _follow_live(tmp_path, monkeypatch, step)
    assert looks[CARRIER_POLLS - 1] == [1]
    assert looks[CARRIER_POLLS] == [1, 2]  # shown without it, the connection still running
    assert shown[1].carrier is None
