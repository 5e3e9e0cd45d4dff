"""The recording hub: many connections through one recorder process, whole messages."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.hub import MAX_PENDING_BYTES, RecordingHub
from acp_proxy.stderr import report
from acp_proxy.store.remote import exchanges, frame_transports

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
INIT_ANSWER = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
PRETTY = b'{\n  "jsonrpc": "2.0",\n  "method": "session/cancel",\n  "params": {"sessionId": "s"}\n}'


def test_each_connection_is_one_recording_with_its_exchanges(tmp_path: Path) -> None:
    db_path = tmp_path / "r.db"
    said: list[str] = []
    hub = RecordingHub.start(db_path, said.append)
    first, uid = hub.open(
        "http",
        remote_url="http://up/acp",
        listen_url="http://127.0.0.1:1/acp",
        client_address="127.0.0.1:5",
    )
    second, _ = hub.open("websocket", remote_url="ws://up/acp")
    now = time.monotonic_ns()
    post = hub.exchange(
        first,
        now,
        method="POST",
        target="/acp",
        stream="post",
        http_version="1.1",
        request_headers=[["content-type", "application/json"]],
    )
    assert hub.message(first, C2A, now, INIT, post, "post")
    upgrade = hub.exchange(second, now, method="GET", target="/acp", stream="websocket")
    assert hub.message(second, C2A, now + 1, INIT, upgrade, "websocket")
    assert hub.message(first, A2C, now + 2, INIT_ANSWER, post, "post_answer")
    hub.exchange_set(first, post, status=200, response_headers=[["acp-connection-id", "abc"]])
    hub.update(first, remote_connection_id="abc")
    cancel = hub.exchange(first, now + 3, method="POST", target="/acp", stream="post")
    assert hub.message(first, C2A, now + 3, PRETTY, cancel, "post")
    hub.close(first, "closed")
    hub.lost(second, A2C, 10, 1.0)
    hub.close(second, "dropped", error="the client went away")
    assert hub.finish(10) == "incomplete"
    db = sqlite3.connect(db_path)
    rows = db.execute(
        "SELECT id, uid, transport, remote_url, listen_url, client_address, "
        "remote_connection_id, status, frames_c2a, frames_a2c, frames_lost, error "
        "FROM connection ORDER BY id"
    ).fetchall()
    assert rows[0][1:] == (
        uid,
        "http",
        "http://up/acp",
        "http://127.0.0.1:1/acp",
        "127.0.0.1:5",
        "abc",
        "closed",
        2,
        1,
        0,
        None,
    )
    assert rows[1][2] == "websocket"
    assert rows[1][7] == "incomplete"
    assert rows[1][10] == 1
    assert "the client went away" in rows[1][11]
    assert "fell behind" in rows[1][11]
    frames = db.execute(
        "SELECT seq, direction, raw, kind, method, offset, no_newline FROM frame "
        "WHERE connection_id = ? ORDER BY seq",
        (rows[0][0],),
    ).fetchall()
    assert [f[2] for f in frames] == [INIT, INIT_ANSWER, PRETTY]  # whole messages, unchanged
    assert [f[3] for f in frames] == ["request", "response", "notification"]
    assert [f[5] for f in frames] == [0, 0, len(INIT)]
    assert {f[6] for f in frames} == {0}
    assert frame_transports(db, rows[0][0]) == {
        1: (1, "post"),
        2: (1, "post_answer"),
        3: (2, "post"),
    }
    made = exchanges(db, rows[0][0])
    assert [(e["seq"], e["method"], e["status"]) for e in made] == [
        (1, "POST", 200),
        (2, "POST", None),
    ]
    assert made[0]["request_headers"] == [["content-type", "application/json"]]
    assert made[0]["response_headers"] == [["acp-connection-id", "abc"]]
    assert said == [
        "the recorder fell behind (forwarding waits at most 1s for it): messages "
        "are left out of the recording and counted",
        "some recordings are incomplete: frames were lost, their count and why are "
        "in the database (acp-proxy ls)",
    ]


def test_a_full_pipe_keeps_messages_in_order_until_the_bound(tmp_path: Path) -> None:
    db_path = tmp_path / "r.db"
    hub = RecordingHub.start(db_path, lambda _: None)
    key, _ = hub.open("http", remote_url="http://up/acp")
    ex = hub.exchange(
        key, time.monotonic_ns(), method="GET", target="/acp", stream="connection_sse"
    )
    body = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d}}'
    sent = 0
    while hub.message(
        key, A2C, time.monotonic_ns(), body % sent + b" " * 60_000, ex, "connection_sse"
    ):
        sent += 1
        if sent > 10 * MAX_PENDING_BYTES // 60_000:
            break
    assert not hub.room  # the recorder could not keep up with a writer that never yields
    hub.close(key, "closed")
    assert hub.finish(60) == "recorded"
    db = sqlite3.connect(db_path)
    raws = [r[0] for r in db.execute("SELECT raw FROM frame ORDER BY seq")]
    assert len(raws) == sent
    assert all(raw.startswith(body % n) for n, raw in enumerate(raws))


def test_an_unwritable_database_is_said_and_forwarding_goes_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "folder").mkdir()
    hub = RecordingHub.start(tmp_path / "folder", report)
    key, _ = hub.open("http", remote_url="http://up/acp")
    assert hub.message(key, C2A, time.monotonic_ns(), INIT, 1, "post")
    hub.close(key, "closed")
    assert hub.finish(10) == "failed"
    said = capfd.readouterr().err.splitlines()
    assert len([s for s in said if "cannot open recording database" in s]) == 1, said
