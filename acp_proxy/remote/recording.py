"""The event loop's side of the recording hub (record/hub.py): feeding it without blocking.

Rules:
- Every call goes to the hub at once (non-blocking writes to its pipe); what the pipe does not
  take waits in the hub, and this module registers the pipe with the running loop to send it
  as the recorder reads (``add_writer``), and unregisters it when nothing waits.
- ``message`` is awaited before the message is forwarded (recorded first, then sent on, as
  stdio puts a chunk on the tap before writing it: an answer can never be recorded before the
  message that caused it). It returns at once unless the hub is full; then it waits for room
  at most ``max_wait`` seconds (``--max-recorder-wait``), and past that the message is left
  out of the recording and counted (hub.lost). While it is dropping, later messages that find
  no room are dropped without waiting, until the hub has room again (stdio's rule).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.hub import RecordingHub


class HubFeeder:
    """Feeds one ``RecordingHub`` from the running event loop."""

    def __init__(self, hub: RecordingHub, max_wait: float) -> None:
        self.hub = hub
        self.max_wait = max_wait
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watching = False
        self._room = asyncio.Event()
        self._dropping = False

    def _sent(self) -> None:
        if self.hub.pending and not self._watching:
            loop = self._loop = self._loop or asyncio.get_running_loop()
            loop.add_writer(self.hub.fileno(), self._flush)
            self._watching = True

    def _flush(self) -> None:
        self.hub.flush()
        if self.hub.room:
            self._room.set()
            self._dropping = False
        if not self.hub.pending and self._loop is not None:
            self._loop.remove_writer(self.hub.fileno())
            self._watching = False

    def stop(self) -> None:
        """Unregister from the loop (the hub's ``finish`` sends what is left)."""
        if self._watching and self._loop is not None:
            self._loop.remove_writer(self.hub.fileno())
            self._watching = False

    # --- the hub's calls, each followed by a look at the pipe ---------------------------

    def open(self, transport: str, **settings: Any) -> tuple[int, str]:
        opened = self.hub.open(transport, **settings)
        self._sent()
        return opened

    def exchange(self, key: int, **columns: Any) -> int:
        seq = self.hub.exchange(key, time.monotonic_ns(), **columns)
        self._sent()
        return seq

    def exchange_set(self, key: int, exchange_seq: int, **columns: Any) -> None:
        self.hub.exchange_set(key, exchange_seq, **columns)
        self._sent()

    def update(self, key: int, **columns: Any) -> None:
        self.hub.update(key, **columns)
        self._sent()

    def stderr_line(self, key: int, line: bytes) -> None:
        self.hub.stderr_line(key, time.monotonic_ns(), line)
        self._sent()

    def close(self, key: int, status: str, error: str | None = None) -> None:
        self.hub.close(key, status, error)
        self._sent()

    async def message(
        self, key: int, direction: Direction, raw: bytes, exchange_seq: int, stream: str
    ) -> None:
        """Record one whole message (see the rules for when this waits)."""
        hub = self.hub
        if hub.message(key, direction, time.monotonic_ns(), raw, exchange_seq, stream):
            self._sent()
            return
        if not self._dropping:
            self._room.clear()
            try:
                await asyncio.wait_for(self._room.wait(), self.max_wait)
            except TimeoutError:
                self._dropping = True
            else:
                if hub.message(key, direction, time.monotonic_ns(), raw, exchange_seq, stream):
                    self._sent()
                    return
        hub.lost(key, direction, len(raw), self.max_wait)
        self._sent()

    def lost(self, key: int, direction: Direction, size: int, reason: str) -> None:
        """A message left out of the recording for ``reason`` (counted, said once per reason)."""
        self.hub.lost(key, direction, size, 0, reason)
        self._sent()

    async def messages(
        self, key: int, direction: Direction, raws: list[bytes], exchange_seq: int, stream: str
    ) -> None:
        """Record the messages one read gave, in order (one write to the hub's pipe)."""
        hub = self.hub
        if hub.messages(key, direction, time.monotonic_ns(), raws, exchange_seq, stream):
            self._sent()
            return
        for raw in raws:
            await self.message(key, direction, raw, exchange_seq, stream)


def wall_ns() -> int:
    return time.time_ns()
