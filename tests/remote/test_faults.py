"""Faults and bad input at the listener: nothing crashes it, nothing is lost silently."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.support.polling import until
from tests.support.remote_peers import (
    Listener,
    fake_agent,
    free_port,
    python_server,
)

pytestmark = [pytest.mark.timeout(90)]

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
JSON = {"content-type": "application/json"}


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


def test_an_unreachable_upstream_gets_a_502_said_once(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Listener(db, f"http://127.0.0.1:{free_port()}/acp") as listener:
        answers = [httpx.post(listener.url, content=INITIALIZE, headers=JSON) for _ in range(3)]
        from websockets.sync.client import connect

        with pytest.raises(Exception, match="502"):
            connect(listener.ws_url, open_timeout=10)
    for answer in answers:
        assert answer.status_code == 502
        assert answer.content.count(b"\n") == 0
        body = orjson.loads(answer.content)
        assert body["jsonrpc"] == "2.0"
        assert body["id"] == 0
        assert body["error"]["code"] == -32000
        assert "unreachable" in body["error"]["message"]
    said = [line for line in listener.stderr_lines if "unreachable" in line]
    assert len(said) == 1, listener.stderr_lines
    assert listener.process.returncode == 0
    rows = _rows(db, "SELECT status, error FROM connection")
    assert len(rows) == 4
    assert {r[0] for r in rows} == {"closed"}
    statuses = _rows(db, "SELECT status, error FROM http_exchange")
    assert {s for s, _ in statuses} == {502}
    assert all(e.startswith("upstream unreachable") for _, e in statuses)


def test_unknown_ids_bad_json_and_oversized_bodies_pass_or_are_refused(
    tmp_path: Path, python_examples: Path
) -> None:
    db = tmp_path / "r.db"
    with python_server(python_examples) as upstream, Listener(db, upstream) as listener:
        unknown = httpx.post(listener.url, content=b'{"jsonrpc":"2.0","method":"x"}',
                             headers={**JSON, "acp-connection-id": "nobody"})  # fmt: skip
        garbage = httpx.post(listener.url, content=b"\xff not json {", headers=JSON)
        huge = httpx.post(listener.url, content=b" " * (16 * 1024 * 1024 + 1), headers=JSON)
        elsewhere = httpx.get(listener.url.replace("/acp", "/other"))
        still = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        direct = httpx.post(upstream, content=b"\xff not json {", headers=JSON)
    assert unknown.status_code == 404  # the upstream's answers, passed through
    assert (garbage.status_code, garbage.content) == (direct.status_code, direct.content)
    assert huge.status_code == 413
    assert orjson.loads(huge.content)["error"]["code"] == -32000
    assert elsewhere.status_code == 404
    assert still.status_code == 200
    assert still.headers["acp-connection-id"]
    rows = _rows(db, "SELECT remote_connection_id, status, error FROM connection ORDER BY id")
    assert rows[0] == ("nobody", "closed",
                       "the upstream does not know this Acp-Connection-Id (404)")  # fmt: skip
    assert rows[1][1] == "closed"
    frames = _rows(db, "SELECT connection_id, kind, bad_utf8, raw FROM frame ORDER BY id")
    assert (2, "unparseable", 1, b"\xff not json {") in frames
    exchanges = _rows(db, "SELECT connection_id, status, body, error FROM http_exchange")
    assert (1, 404, unknown.text, None) in exchanges  # the upstream's error body, kept
    assert any(e[1] == 413 and "not forwarded" in e[3] for e in exchanges)
    assert rows[-1][0] == still.headers["acp-connection-id"]


def test_a_client_gone_mid_stream_ends_its_exchange(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with (
        fake_agent(tmp_path / "log", "--flood", "1000000", "100") as upstream,
        Listener(db, upstream) as listener,
    ):
        opened = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        cid = opened.headers["acp-connection-id"]
        with httpx.stream(
            "GET",
            listener.url,
            headers={"acp-connection-id": cid, "accept": "text/event-stream"},
        ) as got:
            assert got.status_code == 200
            first = next(got.iter_raw())
        assert first.startswith(b"data: ")
        # The client has gone; the listener still serves others.
        assert httpx.post(listener.url, content=INITIALIZE, headers=JSON).status_code == 200
    assert listener.process.returncode == 0
    assert not [line for line in listener.stderr_lines if "listening on" not in line]
    errors = _rows(db, "SELECT error FROM http_exchange WHERE stream = 'connection_sse'")
    assert errors == [("the client went away",)]
    events = _rows(db, "SELECT count(*) FROM frame WHERE method = 'session/update'")[0][0]
    assert events >= 1


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _peak_until_ended_slow(listener: Listener, before: int) -> int:
    """The listener's peak resident memory (KiB) until it says it ended a slow client (at
    most a minute)."""
    deadline = time.monotonic() + 60
    peak = before
    while time.monotonic() < deadline:
        peak = max(peak, _rss_kib(listener.process.pid))
        if any("too slowly" in line for line in listener.stderr_lines):
            break
        time.sleep(0.05)
    return peak


def test_a_slow_reader_is_ended_with_bounded_memory(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    log = tmp_path / "log"
    with (
        fake_agent(log, "--flood", "200000", "1000") as upstream,
        Listener(db, upstream, "--client-stall", "1") as listener,
    ):
        opened = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        cid = opened.headers["acp-connection-id"]
        before = _rss_kib(listener.process.pid)
        slow = socket.create_connection(("127.0.0.1", int(listener.url.rsplit(":", 1)[1][:-4])))
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(f"GET /acp HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n"
                     f"acp-connection-id: {cid}\r\n\r\n".encode())  # fmt: skip
        peak = _peak_until_ended_slow(listener, before)
        slow.close()
    status, error = _rows(db, "SELECT status, error FROM connection")[0]
    assert status == "dropped"
    assert "too slowly" in error
    assert _rows(db, "SELECT error FROM http_exchange WHERE stream = 'connection_sse'")[0][0]
    # The proxy held at most its bound (8 MiB) and the chunks in flight, not the stream (200 MB).
    assert peak - before < 64 * 1024, (before, peak)
    assert f"DELETE {cid}" in log.read_text()  # the upstream was told the connection is over


def test_a_slow_websocket_reader_holds_the_upstream_back_then_is_ended(tmp_path: Path) -> None:
    """A WebSocket client that takes nothing while the upstream streams 100 MB: the proxy
    holds at most its bounds (it stops reading the upstream), then ends it after the stall."""
    from websockets.sync.client import connect

    db = tmp_path / "r.db"
    params = '{"count":100000,"size":1000}'
    request = f'{{"jsonrpc":"2.0","id":1,"method":"bench/stream","params":{params}}}'
    with (
        fake_agent(tmp_path / "log") as upstream,
        Listener(db, upstream, "--client-stall", "1") as listener,
    ):
        before = _rss_kib(listener.process.pid)
        with connect(
            listener.ws_url, compression=None, max_size=None, max_queue=1, close_timeout=0.5
        ) as ws:
            ws.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            ws.send(request)
            peak = _peak_until_ended_slow(listener, before)
    status, error = _rows(db, "SELECT status, error FROM connection")[0]
    assert status == "dropped"
    assert "read the WebSocket too slowly" in error
    assert peak - before < 64 * 1024, (before, peak)
    [(frames,)] = _rows(db, "SELECT frames_a2c FROM connection")
    assert 0 < frames < 100_000


def test_a_flood_of_connections(tmp_path: Path, python_examples: Path) -> None:
    db = tmp_path / "r.db"
    count = 100
    with python_server(python_examples) as upstream, Listener(db, upstream) as listener:

        async def flood() -> list[int]:
            import asyncio

            limits = httpx.Limits(max_connections=None)
            async with httpx.AsyncClient(limits=limits, timeout=60) as client:
                answers = await asyncio.gather(
                    *[client.post(listener.url, content=INITIALIZE, headers=JSON)
                      for _ in range(count)],
                    *[client.post(listener.url, content=b"[", headers=JSON)
                      for _ in range(count // 4)],
                )  # fmt: skip
            return [answer.status_code for answer in answers]

        import asyncio

        statuses = asyncio.run(flood())
        # The recorder runs beside forwarding, never ahead of it: its file may come after the
        # last answer.
        until(db.exists, "the recording's file")
    assert statuses.count(200) == count
    assert statuses.count(400) == count // 4
    assert listener.process.returncode == 0
    rows = _rows(db, "SELECT count(*), sum(frames_c2a), sum(frames_a2c), sum(frames_lost) "
                     "FROM connection")  # fmt: skip
    assert rows == [(count + count // 4, count + count // 4, count, 0)]


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(word) for word in text.split()]


def test_a_stopped_recorder_costs_frames_counted_never_forwarding(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    events = 40_000
    with (
        fake_agent(tmp_path / "log", "--flood", str(events), str(1000)) as upstream,
        Listener(db, upstream, "--max-recorder-wait", "0.2") as listener,
    ):
        [recorder] = _children(listener.process.pid)
        opened = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        cid = opened.headers["acp-connection-id"]
        os.kill(recorder, 19)  # SIGSTOP
        try:
            body = bytearray()
            with httpx.stream("GET", listener.url, headers={"acp-connection-id": cid},
                                  timeout=60) as stream:  # fmt: skip
                for chunk in stream.iter_raw():
                    body += chunk
            got = body.count(b"\n\ndata: ") + 1
        finally:
            os.kill(recorder, 18)  # SIGCONT
    assert got == events  # forwarding lost nothing
    said = [line for line in listener.stderr_lines if "fell behind" in line]
    assert len(said) == 1, listener.stderr_lines
    [(status, error, a2c, lost)] = _rows(
        db, "SELECT status, error, frames_a2c, frames_lost FROM connection"
    )
    assert status == "incomplete"
    assert "fell behind" in error
    assert lost > 0
    assert a2c - 1 + lost == events  # every event recorded or counted (a2c has the answer too)
