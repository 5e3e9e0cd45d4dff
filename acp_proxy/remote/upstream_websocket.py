"""The WebSocket to the upstream, read a whole network read at a time.

Rules:
- ``BatchedConnection`` is websockets' own client connection (its handshake, redirects, TLS,
  close handshake, answers to pings, size limit, sending), given to ``connect`` as its
  ``create_connection``; only the delivery of the upstream's messages differs. websockets
  queues each message on its own and hands them out one ``recv`` at a time; here the messages
  one network read completes are handed out together, as one batch, in order, by ``batches``,
  so that the proxy records and forwards a read's messages in one go.
- A message is ``str`` (text, decoded as UTF-8: text that is not UTF-8 fails the connection
  with 1007, as websockets' ``recv`` does, and nothing after it is handed out) or ``bytes``
  (binary); a fragmented message is joined from its frames, and handed out once its last
  frame has come. Each batch also gives every message's bytes as they crossed (the payload,
  for the recording).
- Back-pressure: past ``QUEUED_BYTES`` of messages not yet taken, the connection stops reading
  from the socket (TCP holds the upstream back) until the taker is down to a quarter of that.
- ``batches`` ends once the connection is closed (``close_code`` and ``close_reason`` say how);
  after the messages before a text message that is not UTF-8, it raises ``InvalidText``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.frames import DATA_OPCODES, CloseCode, Frame, Opcode
from websockets.http11 import Response

QUEUED_BYTES = 1024 * 1024

Batch = tuple[list[str | bytes], list[bytes]]


class InvalidText(Exception):
    """The upstream sent a text message that is not UTF-8 (the connection was failed, 1007)."""


class BatchedConnection(ClientConnection):
    """websockets' client connection whose messages come out a network read at a time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._batches: deque[tuple[list[str | bytes], list[bytes], int]] = deque()
        self._messages: list[str | bytes] = []
        self._raws: list[bytes] = []
        self._size = 0  # bytes of the read so far
        self._fragments: list[bytes] = []
        self._fragmented_text = False
        self._queued = 0
        self._reading_paused = False
        self._wake: asyncio.Future[None] | None = None
        self._lost = False
        self._failed: str | None = None  # why the connection was failed, if it was

    # --- what websockets calls ---------------------------------------------------------

    def process_event(self, event: Frame | Response) -> None:  # type: ignore[override]
        if (
            self.response is None
            or not isinstance(event, Frame)
            or event.opcode not in DATA_OPCODES
        ):
            super().process_event(event)
            return
        if self._failed is not None:  # what came after text that was not UTF-8 is not handed out
            return
        if event.opcode is Opcode.CONT or not event.fin:
            if event.opcode is not Opcode.CONT:
                self._fragmented_text = event.opcode is Opcode.TEXT
            self._fragments.append(bytes(event.data))
            if not event.fin:
                return
            raw = b"".join(self._fragments)
            self._fragments = []
            text = self._fragmented_text
        else:
            raw = bytes(event.data)
            text = event.opcode is Opcode.TEXT
        if text:
            try:
                message: str | bytes = raw.decode()
            except UnicodeDecodeError as error:
                self._failed = f"{error.reason} at position {error.start}"
                self.protocol.fail(
                    CloseCode.INVALID_DATA, f"{error.reason} at position {error.start}"
                )
                self.send_data()
                return
        else:
            message = raw
        self._messages.append(message)
        self._raws.append(raw)
        self._size += len(raw)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._messages:
            return
        self._batches.append((self._messages, self._raws, self._size))
        self._queued += self._size
        self._messages, self._raws, self._size = [], [], 0
        if self._queued > QUEUED_BYTES and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake_taker()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._lost = True
        self._wake_taker()

    def _wake_taker(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    # --- what the proxy calls ----------------------------------------------------------

    async def batches(self) -> AsyncIterator[Batch]:
        """Each network read's messages, in order, until the connection is closed."""
        while True:
            while self._batches:
                messages, raws, size = self._batches.popleft()
                self._queued -= size
                if self._reading_paused and self._queued <= QUEUED_BYTES // 4 and not self._lost:
                    self._reading_paused = False
                    self.transport.resume_reading()
                yield messages, raws
            if self._failed is not None:
                raise InvalidText(f"a text message that is not UTF-8 ({self._failed})")
            if self._lost:
                return
            self._wake = self.loop.create_future()
            try:
                await self._wake
            finally:
                self._wake = None
