"""Writing WebSocket messages to the listener's client: the messages ready together, one write.

Rules:
- ASGI's ``websocket.send`` carries one message, and hypercorn writes each one to the socket
  by itself (a system call and several layers of its own per message). ``MessageWriter.send``
  takes the messages that are ready together (what the upstream's reads gave while the
  client's previous write was going out) and, when the listener's server is hypercorn, hands
  their frames to the WebSocket's stream as one write: each message still its own frame,
  built in order by that stream's own wsproto connection (so permessage-deflate, when the
  client negotiated it, applies as it would to a single send).
- It never waits for more messages: it writes what it is given, at once.
- When the server is not hypercorn, or its stream lacks what this uses, or the WebSocket is
  not open, the messages go as plain ASGI sends, one each: the same frames, more writes. A
  closed stream takes nothing, as hypercorn's own send does once the client has gone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]
# The attributes of hypercorn's WebSocket stream the joined write uses.
_STREAM_PARTS = ("connection", "send", "stream_id", "state", "closed")


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
    """Sends WebSocket messages (``str`` text, ``bytes`` binary) to one client, in order."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._stream = _hypercorn_stream(send)
        if self._stream is not None:
            from hypercorn.protocol.events import Data
            from hypercorn.protocol.ws_stream import ASGIWebsocketState
            from wsproto.events import BytesMessage, TextMessage
            from wsproto.utilities import LocalProtocolError

            self._data = Data
            self._connected = ASGIWebsocketState.CONNECTED
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
        frame = stream.connection.send
        text, binary = self._text, self._binary
        try:
            data = b"".join([
                frame(text(data=message) if isinstance(message, str) else binary(data=message))
                for message in messages
            ])  # fmt: skip
        except self._refused:  # the connection is closing: hypercorn drops a send then too
            return
        await stream.send(self._data(stream_id=stream.stream_id, data=data))
