"""The tap: how forwarded chunks reach the recorder process, through one pipe.

Rules:
- The forwarding threads call ``PipeTap.put`` with each chunk just before they write it on.
  ``put`` writes a 14-byte header and the chunk to the pipe under a lock (several threads share
  the pipe, and writes larger than PIPE_BUF are not atomic), so the order of messages in the
  pipe is the order of the timeline.
- ``put`` only waits when the pipe is full, i.e. when the recorder process is further behind
  than its own byte bound (see recorder.py): that is the documented backpressure.
- If the recorder process is gone (EPIPE), ``put`` stops sending and forwarding goes on.
- Messages: ``CHUNK`` (direction, monotonic ns, bytes; empty bytes = end of that stream),
  ``UPDATE`` (JSON object of connection columns, e.g. the agent's exit status) and ``CONFIG``
  (JSON: where and what to record; it may come after the first chunks, because forwarding
  starts before the command line has been read).
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

from .acp import Direction

HEADER = struct.Struct("<BBQI")  # kind, direction, monotonic ns, payload length
CHUNK, UPDATE, CONFIG = 1, 2, 3
DIRECTION_CODES = {Direction.CLIENT_TO_AGENT: 0, Direction.AGENT_TO_CLIENT: 1,
                   Direction.AGENT_STDERR: 2}  # fmt: skip
DIRECTIONS_BY_CODE = {code: direction for direction, code in DIRECTION_CODES.items()}


class PipeTap:
    """The forwarding side of the tap (any thread)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._open = True

    def put(self, direction: Direction, mono_ns: int, chunk: bytes) -> None:
        """Send one forwarded chunk (``b""`` marks the end of that direction's stream)."""
        self.put_view(direction, mono_ns, memoryview(chunk))

    def put_view(self, direction: Direction, mono_ns: int, chunk: memoryview) -> None:
        """``put`` for a view into the forwarding thread's buffer (copied into the pipe)."""
        header = HEADER.pack(CHUNK, DIRECTION_CODES[direction], mono_ns, len(chunk))
        self._send(header, chunk)

    def update(self, **columns: Any) -> None:
        """Ask the recorder to set connection columns (agent pid, exit status ...)."""
        self._send_json(UPDATE, columns)

    def configure(self, **settings: Any) -> None:
        """Tell the recorder where and what to record (see recorder_process.py)."""
        self._send_json(CONFIG, settings)

    def _send_json(self, kind: int, value: dict[str, Any]) -> None:
        import orjson  # not needed before the first message of this kind: keep start-up light

        payload = orjson.dumps(value)
        self._send(HEADER.pack(kind, 0, 0, len(payload)), payload)

    def close(self) -> None:
        """No more messages: the recorder finishes once it has read what is in the pipe."""
        with self._lock:
            if self._open:
                self._open = False
                with contextlib.suppress(OSError):
                    os.close(self._fd)

    def _send(self, header: bytes, payload: bytes | memoryview) -> None:
        with self._lock:
            if not self._open:
                return
            try:
                written = os.writev(self._fd, (header, payload))
                total = len(header) + len(payload)
                if written < total:  # a signal interrupted a large write: finish it
                    rest = memoryview(header + bytes(payload))[written:]
                    while rest:
                        rest = rest[os.write(self._fd, rest) :]
            except OSError:
                # The recorder process is gone; it has said why. Forwarding goes on.
                self._open = False
                with contextlib.suppress(OSError):
                    os.close(self._fd)


class TapReader:
    """The recorder side of the tap: yields messages until the pipe is closed.

    Reads whatever the pipe holds (up to ``READ_SIZE``) and cuts messages out of it, so a
    burst of small chunks costs one read, not two per chunk.
    """

    READ_SIZE = 1024 * 1024
    COALESCE_BELOW = 64 * 1024
    COALESCE_SECONDS = 0.002

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def messages(self) -> Iterator[tuple[int, Direction, int, bytes]]:
        """``(kind, direction, mono_ns, payload)`` in pipe order; ends at EOF."""
        buffer = b""
        header_size = HEADER.size
        unpack = HEADER.unpack_from
        while True:
            data = os.read(self._fd, self.READ_SIZE)
            if not data:
                return  # a message cut short by the proxy's death is dropped
            buffer = buffer + data if buffer else data
            start = 0
            while len(buffer) - start >= header_size:
                kind, code, mono_ns, length = unpack(buffer, start)
                end = start + header_size + length
                if end > len(buffer):
                    break
                payload = buffer[start + header_size : end]
                yield kind, DIRECTIONS_BY_CODE.get(code, Direction.AGENT_STDERR), mono_ns, payload
                start = end
            buffer = buffer[start:]
            if len(data) < self.COALESCE_BELOW:
                # A trickle (interactive traffic): let it gather for a moment, so that the
                # forwarding threads do not wake this process for every single chunk.
                time.sleep(self.COALESCE_SECONDS)


def decode_json(payload: bytes) -> dict[str, Any]:
    import orjson

    value = orjson.loads(payload)
    return value if isinstance(value, dict) else {}
