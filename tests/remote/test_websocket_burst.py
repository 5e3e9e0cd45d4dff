"""WebSocket messages that arrive together: forwarded in order and unchanged, each recorded.

The upstream here writes a whole burst of frames with one ``sendall`` (so the listener reads
many messages at once), which no SDK server does on purpose; the client is websockets, with
and without permessage-deflate towards the listener.
"""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol
from websockets.sync.client import connect

from tests.support.remote_peers import Listener

pytestmark = [pytest.mark.timeout(90)]

# Sizes around the frame header's length boundaries (125/126, 65535/65536), text with
# characters of several UTF-8 lengths, one binary message: each must cross unchanged.
BURST: list[str | bytes] = [
    *(f'{{"jsonrpc":"2.0","method":"session/update","params":{{"n":{n}}}}}' for n in range(200)),
    "x" * 125, "y" * 126, "z" * 65_535, "w" * 65_536, "é€😀" * 1000, b"\x00\xff binary",
    *(f'{{"jsonrpc":"2.0","method":"session/update","params":{{"m":{n}}}}}' for n in range(200)),
]  # fmt: skip


# A fragmented text message (three frames) in the middle of the burst, as the upstream sends it.
FRAGMENTS = [b'{"jsonrpc":"2.0","method":"session/update",', b'"params":{"frag', b'ment":true}}']


def _send_burst(protocol: ServerProtocol, invalid: bool) -> None:
    for n, message in enumerate(BURST):
        if n == len(BURST) // 2:
            protocol.send_text(FRAGMENTS[0], fin=False)
            protocol.send_continuation(FRAGMENTS[1], fin=False)
            protocol.send_continuation(FRAGMENTS[2], fin=True)
        if isinstance(message, str):
            protocol.send_text(message.encode())
        else:
            protocol.send_binary(message)
        if invalid and n == 10:
            protocol.send_text(b'{"text":"\xff\xfe not UTF-8"}')


@contextlib.contextmanager
def burst_upstream(invalid: bool = False) -> Iterator[str]:
    """An upstream that answers the client's first message with ``BURST`` (a fragmented
    message in its middle; with ``invalid``, a text message that is not UTF-8 after its
    eleventh), every frame of it in one write, then echoes the close."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        with contextlib.suppress(OSError):
            sock, _ = server.accept()
            with sock:
                protocol = ServerProtocol()
                while True:
                    protocol.receive_data(sock.recv(65536))
                    requests = [e for e in protocol.events_received() if isinstance(e, Request)]
                    if requests:
                        break
                protocol.send_response(protocol.accept(requests[0]))
                sock.sendall(b"".join(protocol.data_to_send()))
                first = True
                while True:
                    data = sock.recv(65536)
                    if not data:
                        return
                    protocol.receive_data(data)
                    for event in protocol.events_received():
                        if isinstance(event, Frame) and event.opcode is Opcode.TEXT and first:
                            first = False
                            _send_burst(protocol, invalid)
                    sock.sendall(b"".join(protocol.data_to_send()))
                    if protocol.close_rcvd is not None:
                        return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        server.close()
        thread.join(10)


def _frames(db: Path) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT direction, raw FROM frame ORDER BY seq").fetchall()


@pytest.mark.parametrize("compression", [None, "deflate"])
def test_a_burst_read_at_once_comes_out_in_order_unchanged_each_recorded(
    tmp_path: Path, compression: str | None
) -> None:
    db = tmp_path / "r.db"
    hello = '{"jsonrpc":"2.0","id":1,"method":"bench/burst"}'
    with (
        burst_upstream() as upstream,
        Listener(db, upstream) as listener,
        connect(listener.ws_url, compression=compression, max_size=None) as ws,
    ):
        ws.send(hello)
        got = [ws.recv() for _ in range(len(BURST) + 1)]
    fragmented = b"".join(FRAGMENTS)
    expected = [*BURST[: len(BURST) // 2], fragmented.decode(), *BURST[len(BURST) // 2 :]]
    assert got == expected
    frames = _frames(db)
    assert frames[0] == ("c2a", hello.encode())
    recorded = [raw for direction, raw in frames[1:] if direction == "a2c"]
    assert recorded == [m.encode() if isinstance(m, str) else m for m in expected]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT frames_lost, status FROM connection").fetchall() == [
            (0, "closed")
        ]


def test_text_that_is_not_utf8_ends_the_websocket_as_websockets_would(tmp_path: Path) -> None:
    """The messages before it are forwarded and recorded; it is neither; the upstream is told
    1007 (invalid data) and the client gets the upstream's close."""
    from websockets.exceptions import ConnectionClosed

    db = tmp_path / "r.db"
    got: list[str | bytes] = []
    with (
        burst_upstream(invalid=True) as upstream,
        Listener(db, upstream) as listener,
        connect(listener.ws_url, compression=None, max_size=None) as ws,
    ):
        ws.send('{"jsonrpc":"2.0","id":1,"method":"bench/burst"}')
        closed: ConnectionClosed | None = None
        while closed is None:
            try:
                got.append(ws.recv())
            except ConnectionClosed as error:
                closed = error
    assert got == BURST[:11]
    assert closed.rcvd is not None
    assert closed.rcvd.code == 1007
    recorded = [raw for direction, raw in _frames(db) if direction == "a2c"]
    assert recorded == [m.encode() if isinstance(m, str) else m for m in BURST[:11]]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        [(status, error)] = conn.execute("SELECT status, error FROM connection").fetchall()
    assert status == "dropped"
    assert error.startswith("the upstream sent a text message that is not UTF-8 (invalid start")
    assert error.endswith("the proxy ended the WebSocket (1007), what came before it forwarded")
