"""Sans-I/O: server-sent events cut out of a byte stream, every byte kept for forwarding.

Rules:
- ``SseReader.feed(chunk)`` takes the bytes of an ``text/event-stream`` body as they arrive
  (any chunking) and returns the events completed by them; the caller forwards the chunk
  itself unchanged. An event's ``data`` is its ``data:`` lines joined with ``\\n`` (one space
  after the colon dropped), as the HTML standard says, encoded as it came (UTF-8 bytes: no
  decoding, so a JSON-RPC message is exactly the bytes the agent put in it).
- Lines end with CRLF, LF or CR. A line starting with ``:`` is a comment (keepalives): counted
  in ``comments``, never an event. Fields other than ``data``, ``event`` and ``id`` are
  ignored; an event with no ``data`` line is not dispatched.
- A line longer than ``max_line`` bytes raises ``SseTooLong`` (bounded memory per stream).
"""

from __future__ import annotations

from typing import NamedTuple

MAX_LINE_BYTES = 64 * 1024 * 1024


class SseTooLong(ValueError):
    """A line of the event stream is longer than the reader keeps."""


class SseEvent(NamedTuple):
    data: bytes
    event: bytes | None = None
    id: bytes | None = None


class SseReader:
    """Cuts one event stream into events."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._max_line = max_line
        self._partial = bytearray()
        self._after_cr = False
        self._data: list[bytes] = []
        self._event: bytes | None = None
        self._id: bytes | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SseEvent]:
        events: list[SseEvent] = []
        if not chunk:
            return events
        start = 0
        if self._after_cr and chunk[:1] == b"\n":
            start = 1  # the LF of a CRLF split between chunks
        self._after_cr = False
        length = len(chunk)
        while start < length:
            cr = chunk.find(b"\r", start)
            lf = chunk.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                self._partial += chunk[start:]
                if len(self._partial) > self._max_line:
                    raise SseTooLong(f"an event stream line is longer than {self._max_line}")
                break
            end = min(ends)
            if self._partial:
                self._partial += chunk[start:end]
                line = bytes(self._partial)
                self._partial.clear()
            else:
                line = chunk[start:end]
            if len(line) > self._max_line:
                raise SseTooLong(f"an event stream line is longer than {self._max_line}")
            if chunk[end : end + 1] == b"\r":
                if end + 1 < length:
                    start = end + 2 if chunk[end + 1 : end + 2] == b"\n" else end + 1
                else:
                    self._after_cr = True
                    start = end + 1
            else:
                start = end + 1
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            if not self._data:
                self._event = None
                return None
            event = SseEvent(b"\n".join(self._data), self._event, self._id)
            self._data = []
            self._event = None
            return event
        if line[:1] == b":":
            self.comments += 1
            return None
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value
        elif name == b"id":
            self._id = value
        return None
