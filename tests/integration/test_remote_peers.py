"""Both official SDKs' remote examples through ``record --listen``, compared on both sides.

The servers: the Python SDK's ``examples/http_server.py`` (its ASGI app on hypercorn) and the
TypeScript SDK's ``dist/examples/http-server.js`` (node:http and ``ws``). The clients: the
Python SDK's ``http_client.py`` (Streamable HTTP) and ``ws_client.py``, the TypeScript SDK's
``http-client.js`` and ``ws-client.js``. Every client runs against every server (the cross
pairs too), through a TCP tap, the proxy, and a second TCP tap: what crossed each tap is read
back (h11, wsproto) and compared, message by message and byte for byte, with the other side
and with the recording.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.remote_peers import (
    Listener,
    python_client,
    python_server,
    run_client,
    ts_client,
    ts_server,
)
from tests.support.tcp_tap import Exchange, TcpTap, http_exchanges, websocket_messages

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]

# The TypeScript HTTP client fails its own last line now and then, against either server, with
# or without the proxy (remote_peers.TS_TEARDOWN_FAILURE), after the conversation is complete.
TS_HTTP = "ts-http"

CLIENTS = {
    "py-http": ("python", "http_client.py", "http", "stop reason: end_turn"),
    "py-ws": ("python", "ws_client.py", "websocket", "stop reason: end_turn"),
    "ts-http": ("ts", "http-client.js", "http", "Done: end_turn"),
    "ts-ws": ("ts", "ws-client.js", "websocket", "Done: end_turn"),
}


@contextlib.contextmanager
def _server(kind: str, python_examples: Path, node: str, ts_sdk: Path) -> Iterator[str]:
    manager = python_server(python_examples) if kind == "python" else ts_server(node, ts_sdk)
    with manager as url:
        yield url


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def _client(
    client: str, url: str, python_examples: Path, node: str, ts_sdk: Path
) -> tuple[list[str], dict[str, str], str, str]:
    sdk, name, transport, done = CLIENTS[client]
    if transport == "websocket":
        url = "ws" + url[len("http") :]
    argv, extra = (
        python_client(python_examples, name, url) if sdk == "python"
        else ts_client(node, ts_sdk, name, url)
    )  # fmt: skip
    return argv, extra, transport, done


def _recorded(db: Path) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        connections = [dict(r) for r in conn.execute("SELECT * FROM connection ORDER BY id")]
        frames = [
            tuple(r) for r in conn.execute(
                "SELECT f.connection_id, f.seq, f.direction, f.raw, f.method, f.kind, "
                "t.stream, e.method, e.stream, e.request_headers FROM frame f "
                "JOIN frame_transport t USING (connection_id, seq) "
                "JOIN http_exchange e ON e.connection_id = t.connection_id "
                "AND e.seq = t.exchange_seq ORDER BY f.connection_id, f.seq"
            )
        ]  # fmt: skip
    return connections, frames


def _sse_data(body: bytes) -> list[bytes]:
    from acp_proxy.protocol.sse import SseReader

    return [event.data for event in SseReader().feed(body)]


@pytest.mark.parametrize("server", ["python", "ts"])
@pytest.mark.parametrize("client", list(CLIENTS))
def test_example_pairs_through_the_proxy_byte_for_byte(
    server: str, client: str, tmp_path: Path, python_examples: Path, node: str, ts_sdk: Path
) -> None:
    db = tmp_path / "remote.db"
    with _server(server, python_examples, node, ts_sdk) as upstream_url:
        upstream_tap = TcpTap(_port(upstream_url))
        try:
            upstream = f"http://127.0.0.1:{upstream_tap.port}/acp"
            with Listener(db, upstream) as listener:
                client_tap = TcpTap(_port(listener.url))
                try:
                    argv, extra, transport, done = _client(
                        client, f"http://127.0.0.1:{client_tap.port}/acp",
                        python_examples, node, ts_sdk,
                    )  # fmt: skip
                    output = run_client(argv, extra, teardown_may_fail=client == TS_HTTP)
                finally:
                    client_tap.close()
            assert listener.process.returncode == 0, listener.stderr_lines
            assert listener.stdout == b""
        finally:
            upstream_tap.close()
    assert done in output
    connections, frames = _recorded(db)
    assert len(connections) == 1, connections
    [connection] = connections
    assert connection["transport"] == transport
    assert connection["remote_url"] == upstream
    assert connection["remote_connection_id"]
    assert connection["frames_lost"] == 0
    methods = [f[4] for f in frames if f[5] == "request"]
    assert methods == ["initialize", "session/new", "session/prompt"]
    assert any(f[5] == "notification" and f[4] == "session/update" for f in frames)
    for frame in frames:  # the TypeScript clients send a bearer token: never recorded
        for name, value in json.loads(frame[9] or "[]"):
            if name == "authorization":
                assert value is None
    recorded_c2a = Counter(f[3] for f in frames if f[2] == "c2a")
    recorded_a2c = Counter(f[3] for f in frames if f[2] == "a2c")
    if transport == "http":
        _compare_http(client_tap, upstream_tap, recorded_c2a, recorded_a2c)
    else:
        _compare_websocket(client_tap, upstream_tap, recorded_c2a, recorded_a2c)


def _all_exchanges(tap: TcpTap) -> list[Exchange]:
    return [exchange for stream in tap.streams for exchange in http_exchanges(stream)]


def _acp_headers(exchange: Exchange) -> list[tuple[bytes, bytes]]:
    return [(n.lower(), v) for n, v in exchange.request_headers if n.lower().startswith(b"acp-")]


def _compare_http(
    client_tap: TcpTap, upstream_tap: TcpTap, recorded_c2a: Counter[bytes],
    recorded_a2c: Counter[bytes],
) -> None:  # fmt: skip
    near, far = _all_exchanges(client_tap), _all_exchanges(upstream_tap)
    assert len(near) == len(far)
    # Each request's body, and each answer's status and body (event streams de-chunked, as
    # far as they went), the same on both sides.
    assert Counter(e.request_body for e in near) == Counter(e.request_body for e in far)
    assert Counter((e.method, e.status, e.response_body) for e in near if e.method != b"GET") == (
        Counter((e.method, e.status, e.response_body) for e in far if e.method != b"GET")
    )
    # An event stream is cut where the client stopped reading it: what the client got is what
    # the upstream sent, up to there.
    for stream in (e for e in near if e.method == b"GET"):
        [twin] = [e for e in far if e.method == b"GET" and _acp_headers(e) == _acp_headers(stream)]
        assert stream.status == twin.status
        assert twin.response_body.startswith(stream.response_body)
        assert _sse_data(stream.response_body)  # the client got the events it waited for
    # Every end-to-end header the client sent reached the upstream, and back.
    for side_a, side_b in ((near, far), (far, near)):
        for exchange in side_a:
            assert any(
                _acp_headers(other) == _acp_headers(exchange)
                and other.request_body == exchange.request_body
                for other in side_b
            )
    for exchange in far:
        given = [v for n, v in exchange.response_headers if n.lower() == b"acp-connection-id"]
        if given:
            assert any(
                [v for n, v in e.response_headers if n.lower() == b"acp-connection-id"] == given
                for e in near
            )
    posted = Counter(e.request_body for e in far if e.method == b"POST" and e.request_body)
    assert recorded_c2a == posted
    answers = [e.response_body for e in far if e.method == b"POST" and e.status == 200]
    events = [d for e in far if e.method == b"GET" for d in _sse_data(e.response_body)]
    assert recorded_a2c == Counter([*answers, *events])


def _compare_websocket(
    client_tap: TcpTap, upstream_tap: TcpTap, recorded_c2a: Counter[bytes],
    recorded_a2c: Counter[bytes],
) -> None:  # fmt: skip
    [near_stream] = client_tap.streams
    [far_stream] = upstream_tap.streams
    near_up, near_down = websocket_messages(near_stream)
    far_up, far_down = websocket_messages(far_stream)
    assert near_up == far_up
    assert near_down == far_down
    assert all(isinstance(m, str) for m in [*near_up, *near_down])
    assert recorded_c2a == Counter(str(m).encode() for m in far_up)
    assert recorded_a2c == Counter(str(m).encode() for m in far_down)


def test_h2c_through_the_proxy(tmp_path: Path, python_examples: Path) -> None:
    """The Python SDK's HTTP client over cleartext HTTP/2 (prior knowledge), to its server."""
    import httpx
    from acp import connect_to_agent, text_block
    from acp.http import create_http_stream

    namespace: dict[str, Any] = {}
    exec(compile((python_examples / "http_client.py").read_text(), "http_client.py", "exec"),
         namespace)  # fmt: skip
    example_client = namespace["ExampleClient"]
    db = tmp_path / "remote.db"

    async def converse(url: str) -> str:
        client = httpx.AsyncClient(http1=False, http2=True, timeout=httpx.Timeout(None))
        transport = create_http_stream(url, client=client)
        conn = connect_to_agent(example_client(), transport)
        try:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=".", mcp_servers=[])
            result = await conn.prompt(session_id=session.session_id,
                                       prompt=[text_block("hello over h2c")])  # fmt: skip
            return str(result.stop_reason)
        finally:
            await conn.close()
            await transport.close()
            await client.aclose()

    with python_server(python_examples) as upstream, Listener(db, upstream) as listener:
        assert asyncio.run(converse(listener.url)) == "end_turn"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        versions = {v for (v,) in conn.execute("SELECT DISTINCT http_version FROM http_exchange")}
        updates = conn.execute(
            "SELECT raw FROM frame WHERE method = 'session/update'"
        ).fetchall()  # fmt: skip
        status = conn.execute("SELECT status FROM connection").fetchall()
    assert versions == {"2"}
    assert b"echo: hello over h2c" in updates[0][0]
    assert status == [("closed",)]
