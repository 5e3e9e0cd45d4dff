"""``replay --listen`` over the wire: the transport's rules and the replay's bytes.

A recording (handshake, a prompt with an update, an agent request and its answer) is served by
``acp-proxy replay --listen 127.0.0.1:0`` in a child process; the tests speak Streamable HTTP
to it with httpx (HTTP/1.1 and cleartext HTTP/2 with prior knowledge) and WebSocket with
``websockets``, and check the statuses, where each message arrives, that every agent frame is
the recorded bytes (the client's ids aside), and the replay's account on stderr.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.support.helpers import A2C, C2A, line, write_recording
from tests.support.processes import started

pytestmark = pytest.mark.timeout(60)
SESSION = "sess_1"
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
NEW = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "session/new",
    "params": {"cwd": "/w", "mcpServers": []},
}
PROMPT = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
          "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "hi"}]}}  # fmt: skip
ASK = {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
       "params": {"sessionId": SESSION, "toolCall": {"toolCallId": "t1"},
                  "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]}}  # fmt: skip
ALLOWED = {"jsonrpc": "2.0", "id": 0,
           "result": {"outcome": {"outcome": "selected", "optionId": "ok"}}}  # fmt: skip
UPDATE = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION,
          "update": {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": "hello ✓"}}}}  # fmt: skip
AGENT = [
    {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}}},
    {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SESSION}},
    UPDATE,
    ASK,
    {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}},
]
EXCHANGE = [
    (C2A, line(INITIALIZE)), (A2C, line(AGENT[0])), (C2A, line(NEW)), (A2C, line(AGENT[1])),
    (C2A, line(PROMPT)), (A2C, line(UPDATE)), (A2C, line(ASK)), (C2A, line(ALLOWED)),
    (A2C, line(AGENT[4])),
]  # fmt: skip
JSON = {"Content-Type": "application/json"}
SSE = {"Accept": "text/event-stream"}


class Listening:
    def __init__(self, process: subprocess.Popen[bytes], url: str) -> None:
        self.process, self.url = process, url

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.stderr is not None
        said = self.process.stderr.read().decode()
        return self.process.wait(15), said


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[Listening]:
    yield from listen_to(tmp_path / "r.sqlite")


def listen_to(db: Path, *options: str) -> Iterator[Listening]:
    write_recording(db, EXCHANGE, label="served")
    argv = [sys.executable, "-m", "acp_proxy", "replay", "--db", str(db), *options]
    argv += ["--listen", "127.0.0.1:0", "--timeout", "10", "served"]
    quiet = subprocess.DEVNULL
    with started(argv, stdin=quiet, stdout=quiet, stderr=subprocess.PIPE) as process:
        try:
            assert process.stderr is not None
            said = process.stderr.readline().decode()
            assert said.startswith("acp-proxy: listening on http://127.0.0.1:"), said
            yield Listening(process, said.split("listening on ", 1)[1].strip())
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def body(message: dict[str, Any]) -> bytes:
    return line(message).rstrip(b"\n")


async def events(response: httpx.Response, into: list[bytes], wanted: int) -> None:
    buffer = b""
    async for chunk in response.aiter_bytes():
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            if event.startswith(b"data: "):
                into.append(event[len(b"data: ") :])
        if len(into) >= wanted:
            return


class H2EventStream:
    """An event stream read over cleartext HTTP/2 (prior knowledge) with python-hyper's ``h2``.

    httpx's HTTP/2 client sometimes leaves a long-lived stream's last DATA frame unread (curl
    and ``h2`` itself receive it every time), so the event stream of the h2c test is read with
    ``h2`` directly, in a thread, while the POSTs go through httpx over HTTP/2.
    """

    def __init__(self, url: str, headers: dict[str, str], into: list[bytes]) -> None:
        import socket
        import threading
        from urllib.parse import urlsplit

        import h2.config
        import h2.connection

        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        request = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", parts.path),
            (":authority", parts.netloc),
        ] + [(k.lower(), v) for k, v in headers.items()]
        self.h2.send_headers(1, request, end_stream=True)  # fmt: skip
        self.sock.sendall(self.h2.data_to_send())
        self.into, self.status = into, 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        import h2.events

        buffer = b""
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    self.status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    self.h2.acknowledge_received_data(event.flow_controlled_length, 1)
                    buffer += event.data
                    while b"\n\n" in buffer:
                        chunk, buffer = buffer.split(b"\n\n", 1)
                        if chunk.startswith(b"data: "):
                            self.into.append(chunk[len(b"data: ") :])
                elif isinstance(event, h2.events.StreamEnded):
                    return
            self.sock.sendall(self.h2.data_to_send())

    def close(self) -> None:
        import socket

        self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(10)
        self.sock.close()


async def conversation(url: str, http2: bool) -> tuple[list[bytes], dict[str, Any]]:
    seen: dict[str, Any] = {}
    received: list[bytes] = []
    async with httpx.AsyncClient(http1=not http2, http2=http2, timeout=10) as client:
        answer = await client.post(url, content=body(INITIALIZE), headers=JSON)
        seen["version"] = answer.http_version
        seen["initialize"] = (answer.status_code, answer.content)
        connection = answer.headers["acp-connection-id"]
        ids = {"Acp-Connection-Id": connection}
        async with anyio.create_task_group() as tasks:
            if http2:
                reader = H2EventStream(url, {**SSE, **ids}, received)
            else:
                stream = await client.send(
                    client.build_request("GET", url, headers={**SSE, **ids}), stream=True
                )
                tasks.start_soon(events, stream, received, 4)

            async def until(count: int) -> None:
                while len(received) < count:
                    await anyio.sleep(0.01)

            assert (
                await client.post(url, content=body(NEW), headers={**JSON, **ids})
            ).status_code == 202
            bare = await client.post(url, content=body(PROMPT), headers={**JSON, **ids})
            seen["prompt without session"] = bare.status_code
            scoped = {**JSON, **ids, "Acp-Session-Id": SESSION}
            seen["prompt"] = (
                await client.post(url, content=body(PROMPT), headers=scoped)
            ).status_code
            await until(3)
            seen["answer"] = (
                await client.post(url, content=body(ALLOWED), headers=scoped)
            ).status_code
            await until(4)
            if http2:
                seen["stream"] = reader.status
                reader.close()
            else:
                seen["stream"] = stream.status_code
                await stream.aclose()
        seen["delete"] = (await client.delete(url, headers=ids)).status_code
        seen["after"] = (
            await client.post(url, content=body(NEW), headers={**JSON, **ids})
        ).status_code
    return received, seen


@pytest.mark.parametrize("http2", [False, True], ids=["http1.1", "h2c"])
def test_a_conversation_over_streamable_http(listening: Listening, http2: bool) -> None:
    received, seen = anyio.run(conversation, listening.url, http2)
    assert seen["version"] == ("HTTP/2" if http2 else "HTTP/1.1")
    assert seen["initialize"] == (200, body(AGENT[0]))
    assert seen["stream"] == 200
    assert seen["prompt without session"] == 400
    assert (seen["prompt"], seen["answer"], seen["delete"], seen["after"]) == (202, 202, 202, 404)
    assert received == [body(AGENT[1]), body(UPDATE), body(ASK), body(AGENT[4])]
    status, said = listening.stop()
    assert "remote connection 1 (Streamable HTTP)" in said
    assert "matched 4 of 4 client messages" in said, said
    assert "No divergence." in said
    assert status == 0


def test_a_conversation_over_websocket(listening: Listening) -> None:
    from websockets.asyncio.client import connect

    async def talk() -> tuple[list[bytes], str | None]:
        received: list[bytes] = []
        url = "ws" + listening.url[len("http") :]
        async with connect(url, compression=None) as socket:
            connection_id = socket.response.headers.get("Acp-Connection-Id")
            for message in (INITIALIZE, NEW, PROMPT):
                await socket.send(body(message).decode())
            while len(received) < 4:
                received.append((await socket.recv()).encode())
            await socket.send(body(ALLOWED).decode())
            received.append((await socket.recv()).encode())
            await socket.wait_closed()
        return received, connection_id

    received, connection_id = anyio.run(talk)
    assert connection_id
    assert received == [body(message) for message in [*AGENT[:2], UPDATE, ASK, AGENT[4]]]
    status, said = listening.stop()
    assert "remote connection 1 (WebSocket)" in said
    assert "No divergence." in said
    assert status == 0


def test_what_the_transport_refuses(listening: Listening) -> None:
    url = listening.url
    with httpx.Client(timeout=10) as client:
        assert client.post(url, content=body(INITIALIZE)).status_code == 415
        assert client.post(url, content=b"[1, 2]", headers=JSON).status_code == 501
        assert client.post(url, content=b"{not json", headers=JSON).status_code == 400
        assert client.post(url, content=body(NEW), headers=JSON).status_code == 400
        unknown = {**JSON, "Acp-Connection-Id": "nope"}
        assert client.post(url, content=body(NEW), headers=unknown).status_code == 404
        assert client.get(url, headers={"Acp-Connection-Id": "nope"}).status_code == 406
        assert client.get(url, headers={**SSE, "Acp-Connection-Id": "nope"}).status_code == 404
        assert client.delete(url).status_code == 400
        refused = client.put(url, content=b"{}", headers=JSON)
        assert refused.status_code == 405
        assert json.loads(refused.content) == {"error": "method not allowed"}
    status, said = listening.stop()
    assert status == 1, said  # no connection was served: nothing matched the recording


def test_recorded_refusals_and_a_connection_left_open(tmp_path: Path) -> None:
    """With --record: a refusal on a served connection is an exchange with its status (the
    refused body is no frame), and a connection the client never ended is ``dropped`` when
    the listener stops."""
    import sqlite3

    db = tmp_path / "r.sqlite"
    served = listen_to(db, "--record")
    listening = next(served)
    with httpx.Client(timeout=10) as client:
        opened = client.post(listening.url, content=body(INITIALIZE), headers=JSON)
        assert opened.status_code == 200
        on_it = {**JSON, "Acp-Connection-Id": opened.headers["acp-connection-id"]}
        assert client.post(listening.url, content=body(PROMPT), headers=on_it).status_code == 400
        assert client.post(listening.url, content=body(NEW), headers=JSON).status_code == 400
    status, said = listening.stop()
    served.close()
    assert status == 1, said  # stopped before the conversation was over
    con = sqlite3.connect(db)
    try:
        row = con.execute(
            "SELECT transport, status, error, exit_code, remote_connection_id FROM connection "
            "WHERE id = 2"
        ).fetchone()
        where = con.execute(
            "SELECT listen_url, client_address, remote_url FROM connection WHERE id = 2"
        ).fetchone()
        exchanges = con.execute(
            "SELECT seq, method, stream, status, acp_connection_id FROM http_exchange "
            "WHERE connection_id = 2 ORDER BY seq"
        ).fetchall()
        frames = con.execute(
            "SELECT f.direction, f.raw, t.exchange_seq, t.stream FROM frame f JOIN "
            "frame_transport t ON t.connection_id = f.connection_id AND t.seq = f.seq "
            "WHERE f.connection_id = 2 ORDER BY f.seq"
        ).fetchall()
        assert con.execute("SELECT count(*) FROM connection").fetchone()[0] == 2
        summaries = con.execute(
            "SELECT f.raw, f.kind, t.stream FROM frame f LEFT JOIN frame_transport t "
            "ON t.connection_id = f.connection_id AND t.seq = f.seq "
            "WHERE f.connection_id = 2 AND f.direction = 'stderr'"
        ).fetchall()
        lines_stderr = con.execute("SELECT lines_stderr FROM connection WHERE id = 2").fetchone()
    finally:
        con.close()
    # The replay's summary, as said on stderr, is the connection's one stderr line.
    ((summary, kind, stream),) = summaries
    assert (kind, stream, lines_stderr) == ("stderr", None, (1,))
    text = summary.decode()
    assert text.startswith("acp-proxy: replay of connection 1 (served), remote connection 1")
    assert text.endswith(".\n")
    assert text.count("\n") == 1
    assert text.rstrip("\n") in said
    connection_id = opened.headers["acp-connection-id"]
    assert row == ("http", "dropped", "the listener stopped with the connection open", 1,
                   connection_id)  # fmt: skip
    assert (where[0], where[2]) == (listening.url, None)
    assert where[1].startswith("127.0.0.1:")
    assert exchanges == [(1, "POST", "post", 200, None), (2, "POST", "post", 400, connection_id)]
    assert frames == [
        ("c2a", body(INITIALIZE), 1, "post"), ("a2c", body(AGENT[0]), 1, "post_answer"),
    ]  # fmt: skip
