"""How long the listener keeps what its clients leave: kept-alive sockets, slow event-stream
readers, connections whose client went away without DELETE."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

import h11
import httpx
import pytest

from tests.remote.test_replay_server import listen_to
from tests.support.polling import until
from tests.support.remote_peers import Listener, fake_agent

pytestmark = [pytest.mark.timeout(90)]

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
JSON = {"content-type": "application/json"}
# httpx, the SDKs' client, lets an idle pooled connection go after 5 s; hypercorn's own
# default keep-alive is as long: the server must keep it longer.
CLIENT_POOL_S = 5.0


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def _exchange(sock: socket.socket, conn: h11.Connection, request: h11.Request, body: bytes) -> int:
    """One request on a kept-alive socket; the answer's status (0 when the socket closed)."""
    sock.sendall(
        conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
    )
    status = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = sock.recv(65536)
            if not data:
                return 0
            conn.receive_data(data)
            continue
        if isinstance(event, h11.Response):
            status = event.status_code
        if isinstance(event, h11.EndOfMessage):
            conn.start_next_cycle()
            return status


def test_a_kept_alive_socket_outlives_the_clients_pools(tmp_path: Path) -> None:
    """The cause of a failed request under many connections: the listener closed a kept-alive
    socket just as the client sent its next request on it."""
    with (
        fake_agent(tmp_path / "log") as upstream,
        Listener(tmp_path / "r.db", upstream) as listener,
        socket.create_connection(("127.0.0.1", _port(listener.url))) as sock,
    ):
        conn = h11.Connection(h11.CLIENT)
        headers = [("host", "x"), ("content-type", "application/json"),
                   ("content-length", str(len(INITIALIZE)))]  # fmt: skip
        post = h11.Request(method="POST", target="/acp", headers=headers)
        assert _exchange(sock, conn, post, INITIALIZE) == 200
        time.sleep(CLIENT_POOL_S + 1)  # idle past what a client's pool keeps
        assert _exchange(sock, conn, post, INITIALIZE) == 200


def test_replay_listen_keeps_idle_sockets_as_long(tmp_path: Path) -> None:
    for listening in listen_to(tmp_path / "r.sqlite"):
        with socket.create_connection(("127.0.0.1", _port(listening.url))) as sock:
            conn = h11.Connection(h11.CLIENT)
            elsewhere = h11.Request(method="GET", target="/elsewhere", headers=[("host", "x")])
            first = _exchange(sock, conn, elsewhere, b"")
            assert first != 0
            time.sleep(CLIENT_POOL_S + 1)  # idle past what a client's pool keeps
            assert _exchange(sock, conn, elsewhere, b"") == first
        listening.stop()


def test_a_slow_reader_holds_the_upstream_back_and_gets_everything(tmp_path: Path) -> None:
    events, size = 12_000, 1000  # more than the 8 MiB the listener holds for one client
    db = tmp_path / "r.db"
    with (
        fake_agent(tmp_path / "log", "--flood", str(events), str(size)) as upstream,
        Listener(db, upstream) as listener,
    ):
        opened = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        cid = opened.headers["acp-connection-id"]
        body = bytearray()
        with httpx.stream("GET", listener.url, headers={"acp-connection-id": cid},
                          timeout=60) as stream:  # fmt: skip
            for chunk in stream.iter_raw(16384):
                body += chunk
                time.sleep(0.004)  # a reader slower than the upstream, never stopped
        httpx.request("DELETE", listener.url, headers={"acp-connection-id": cid})
    assert body.count(b"\n\ndata: ") + 1 == events
    assert not any("too slowly" in line for line in listener.stderr_lines)
    [(status, error)] = _rows(db, "SELECT status, error FROM connection")
    assert (status, error) == ("closed", None)


def test_a_connection_left_without_delete_is_ended_when_idle(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    log = tmp_path / "log"
    with fake_agent(log) as upstream, Listener(db, upstream, "--idle-timeout", "2") as listener:
        left = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        gone = left.headers["acp-connection-id"]
        kept = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
        cid = kept.headers["acp-connection-id"]
        with httpx.stream("GET", listener.url, timeout=30,
                          headers={"acp-connection-id": cid}) as stream:  # fmt: skip
            assert stream.status_code == 200
            # The left connection is ended while this one's event stream stays open.
            until(lambda: f"DELETE {gone}" in log.read_text(), "the DELETE of the left one")
            time.sleep(2.5)  # past the idle timeout with the stream open
            answer = httpx.request("DELETE", listener.url, headers={"acp-connection-id": cid})
            assert answer.status_code == 202
    said = [line for line in listener.stderr_lines if "idle" in line]
    assert len(said) == 1, listener.stderr_lines
    rows = _rows(db, "SELECT remote_connection_id, status, error FROM connection ORDER BY id")
    assert rows[0][:2] == (gone, "dropped")
    assert "idle for 2 s" in rows[0][2]
    assert rows[1] == (cid, "closed", None)
