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
        if not chunk:
            return []
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the LF of a CRLF split between chunks
        self._after_cr = False
        data = bytes(self._partial) + chunk if self._partial else chunk
        if b"\r" in data:
            # A CR at the very end ends its line now; an LF opening the next chunk is its pair.
            self._after_cr = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        rest = lines.pop()
        if len(rest) > self._max_line:
            raise SseTooLong(f"an event stream line is longer than {self._max_line}")
        self._partial = bytearray(rest)
        events: list[SseEvent] = []
        line_event = self._line
        limit = self._max_line
        for line in lines:
            if len(line) > limit:
                raise SseTooLong(f"an event stream line is longer than {limit}")
            if line[:6] == b"data: ":  # what every event is made of: the fast path
                self._data.append(line[6:])
                continue
            event = line_event(line)
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
