"""A TCP relay that keeps every byte of every connection, and readers for what it kept.

The remote tests put one in front of the proxy (client side) and one behind it (upstream
side), so that what crossed can be compared byte for byte on both sides of the proxy:
HTTP/1.1 exchanges are read back with h11 (bodies de-chunked), WebSocket messages with wsproto
(permessage-deflate undone as negotiated).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

import h11
from wsproto.connection import Connection, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, TextMessage
from wsproto.extensions import PerMessageDeflate


@dataclass
class Stream:
    """The bytes of one TCP connection, each direction apart."""

    up: bytearray = field(default_factory=bytearray)  # towards the server
    down: bytearray = field(default_factory=bytearray)  # towards the client


class TcpTap:
    """Listens on a free loopback port and relays each connection to ``target_port``."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.streams: list[Stream] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self._target))
            except OSError:
                client.close()
                continue
            stream = Stream()
            with self._lock:
                self.streams.append(stream)
                self._sockets += [client, server]
            for source, sink, kept in ((client, server, stream.up), (server, client, stream.down)):
                thread = threading.Thread(target=self._pump, args=(source, sink, kept), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _pump(self, source: socket.socket, sink: socket.socket, kept: bytearray) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            with self._lock:
                kept += data
            try:
                sink.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self._threads:
            thread.join(5)


@dataclass
class Exchange:
    method: bytes
    target: bytes
    request_headers: list[tuple[bytes, bytes]]
    request_body: bytes
    status: int | None = None
    response_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    response_body: bytes = b""


def http_exchanges(stream: Stream) -> list[Exchange]:
    """The HTTP/1.1 exchanges of one connection (an answer cut short keeps what came)."""
    server = h11.Connection(h11.SERVER)
    server.receive_data(bytes(stream.up))
    server.receive_data(b"")
    exchanges: list[Exchange] = []
    while True:
        exchange = _next_request(server)
        if exchange is None:
            break
        exchanges.append(exchange)
        if server.our_state is not h11.SEND_RESPONSE:
            break
        server.send(h11.Response(status_code=204, headers=[]))
        server.send(h11.EndOfMessage())
        try:
            server.start_next_cycle()
        except h11.LocalProtocolError:
            break
    reader = h11.Connection(h11.CLIENT)
    reader.receive_data(bytes(stream.down))
    reader.receive_data(b"")
    for exchange in exchanges:
        reader.send(h11.Request(method=exchange.method, target=exchange.target,
                                headers=exchange.request_headers))  # fmt: skip
        if exchange.request_body:
            reader.send(h11.Data(data=exchange.request_body))
        reader.send(h11.EndOfMessage())
        if not _read_response(reader, exchange):
            break
        try:
            reader.start_next_cycle()
        except h11.LocalProtocolError:
            break
    return exchanges


def _next_request(server: h11.Connection) -> Exchange | None:
    exchange: Exchange | None = None
    body = bytearray()
    while True:
        try:
            event = server.next_event()
        except h11.RemoteProtocolError:
            return None
        if event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
            return None
        if isinstance(event, h11.Request):
            exchange = Exchange(event.method, event.target, list(event.headers.raw_items()), b"")
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage) and exchange is not None:
            exchange.request_body = bytes(body)
            return exchange


def _read_response(reader: h11.Connection, exchange: Exchange) -> bool:
    body = bytearray()
    while True:
        try:
            event = reader.next_event()
        except h11.RemoteProtocolError:
            exchange.response_body = bytes(body)
            return False
        if isinstance(event, h11.InformationalResponse):
            exchange.status = event.status_code
            exchange.response_headers = list(event.headers.raw_items())
            return False
        if isinstance(event, h11.Response):
            exchange.status = event.status_code
            exchange.response_headers = list(event.headers.raw_items())
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            exchange.response_body = bytes(body)
            return True
        elif event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
            exchange.response_body = bytes(body)
            return False


def websocket_messages(stream: Stream) -> tuple[list[str | bytes], list[str | bytes]]:
    """The messages of one WebSocket connection: (client to server, server to client)."""
    up, down = bytes(stream.up), bytes(stream.down)
    request_end = up.index(b"\r\n\r\n") + 4
    answer_end = down.index(b"\r\n\r\n") + 4
    answer_head = down[:answer_end].decode("latin-1").lower()
    accepted = ""
    for line in answer_head.split("\r\n"):
        if line.startswith("sec-websocket-extensions:"):
            accepted = line.split(":", 1)[1].strip()

    def extensions() -> list[PerMessageDeflate]:
        if "permessage-deflate" not in accepted:
            return []
        deflate = PerMessageDeflate()
        deflate.finalize(accepted)
        return [deflate]

    return (
        _messages(Connection(ConnectionType.SERVER, extensions()), up[request_end:]),
        _messages(Connection(ConnectionType.CLIENT, extensions()), down[answer_end:]),
    )


def _messages(connection: Connection, data: bytes) -> list[str | bytes]:
    connection.receive_data(data)
    messages: list[str | bytes] = []
    text: list[str] = []
    binary = bytearray()
    for event in connection.events():
        if isinstance(event, TextMessage):
            text.append(event.data)
            if event.message_finished:
                messages.append("".join(text))
                text = []
        elif isinstance(event, BytesMessage):
            binary += event.data
            if event.message_finished:
                messages.append(bytes(binary))
                binary = bytearray()
        elif isinstance(event, CloseConnection):
            break
    return messages
