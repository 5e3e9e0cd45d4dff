"""Writing WebSocket messages to the listener's client: the messages ready together, one write.

Rules:
- ASGI's ``websocket.send`` carries one message, and hypercorn writes each one to the socket
  by itself (a system call and several layers of its own per message). ``MessageWriter.send``
  takes the messages that are ready together (what the upstream's reads gave while the
  client's previous write was going out) and, when the listener's server is hypercorn, hands
  their frames to the WebSocket's stream as one write, each message its own frame, in order.
- Frames: when the client offered no extension in its handshake, nothing can have been
  negotiated, and a message's frame is RFC 6455's base frame (FIN, the text or binary opcode,
  the payload length in its shortest form, no mask from a server, the payload as it is); it is
  built here, the connection's state still the stream's wsproto connection's (only an open one
  sends). When the client offered extensions (permessage-deflate), each frame is built by that
  wsproto connection, as hypercorn builds a single send's.
- It never waits for more messages: it writes what it is given, at once.
- When the server is not hypercorn, or its stream lacks what this uses, or the WebSocket is
  not open, the messages go as plain ASGI sends, one each: the same frames, more writes. A
  stream whose client has gone, or that is closing, takes nothing, as hypercorn's own send.
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]
# The attributes of hypercorn's WebSocket stream the joined write uses.
_STREAM_PARTS = ("connection", "send", "stream_id", "state", "closed")
_TEXT, _BINARY = 0x81, 0x82  # FIN and the opcode: a whole message in one frame
_MEDIUM = struct.Struct("!BBH").pack  # payloads of 126 to 65,535 bytes
_LONG = struct.Struct("!BBQ").pack  # longer payloads


def base_frame(first: int, payload: bytes) -> bytes:
    """A server's unmasked frame of one whole message (RFC 6455, 5.2)."""
    size = len(payload)
    if size < 126:
        return bytes((first, size)) + payload
    if size < 65536:
        return _MEDIUM(first, 126, size) + payload
    return _LONG(first, 127, size) + payload


def _hypercorn_stream(send: Send) -> Any:
    """The hypercorn WebSocket stream behind an ASGI ``send``, or None."""
    try:
        from hypercorn.protocol.ws_stream import WSStream
    except ImportError:  # pragma: no cover - the remote extra is there whenever this runs
        return None
    stream = getattr(send, "__self__", None)
    if isinstance(stream, WSStream) and all(hasattr(stream, part) for part in _STREAM_PARTS):
        return stream
    return None


class MessageWriter:
    """Sends WebSocket messages (``str`` text, ``bytes`` binary) to one client, in order.

    ``extensions_offered``: whether the client's handshake had a ``Sec-WebSocket-Extensions``
    header (then frames are left to wsproto).
    """

    def __init__(self, send: Send, extensions_offered: bool = True) -> None:
        self._send = send
        self._stream = _hypercorn_stream(send)
        self._plain = not extensions_offered
        if self._stream is not None:
            from hypercorn.protocol.events import Data
            from hypercorn.protocol.ws_stream import ASGIWebsocketState
            from wsproto.connection import ConnectionState
            from wsproto.events import BytesMessage, TextMessage
            from wsproto.utilities import LocalProtocolError

            self._data = Data
            self._connected = ASGIWebsocketState.CONNECTED
            self._open = ConnectionState.OPEN
            self._text = TextMessage
            self._binary = BytesMessage
            self._refused = LocalProtocolError

    @property
    def joins(self) -> bool:
        """Whether messages given together go out in one write."""
        return self._stream is not None

    async def send(self, messages: list[str | bytes]) -> None:
        stream = self._stream
        if stream is None or stream.closed or stream.state != self._connected:
            if stream is not None and stream.closed:
                return
            for message in messages:
                if isinstance(message, str):
                    await self._send({"type": "websocket.send", "text": message})
                else:
                    await self._send({"type": "websocket.send", "bytes": message})
            return
        connection = stream.connection
        if self._plain:
            if connection.state != self._open:  # closing: wsproto would refuse it too
                return
            data = b"".join([
                base_frame(_TEXT, message.encode()) if isinstance(message, str)
                else base_frame(_BINARY, message)
                for message in messages
            ])  # fmt: skip
        else:
            frame, text, binary = connection.send, self._text, self._binary
            try:
                data = b"".join([
                    frame(text(data=message) if isinstance(message, str)
                          else binary(data=message))
                    for message in messages
                ])  # fmt: skip
            except self._refused:  # the connection is closing: hypercorn drops a send then
                return
        await stream.send(self._data(stream_id=stream.stream_id, data=data))
