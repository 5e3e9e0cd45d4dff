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

import re
from typing import NamedTuple

MAX_LINE_BYTES = 64 * 1024 * 1024
# An event made of one ``data: `` line and the blank line after it.
_PLAIN_EVENT = re.compile(rb"data: ([^\n]*)\n\n")
_PLAIN_OVERHEAD = len(b"data: \n\n")


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
        """The events ``chunk`` completes."""
        last_id = self._id
        plain, events = self._feed(chunk)
        if not plain:
            return events
        return [SseEvent(data, None, last_id) for data in plain] + events

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """The ``data`` of the events ``chunk`` completes (what a recorder keeps of them)."""
        plain, events = self._feed(chunk)
        if not events:
            return plain
        return plain + [event.data for event in events]

    def _feed(self, chunk: bytes) -> tuple[list[bytes], list[SseEvent]]:
        """(the data of the plain events first in the chunk, the events after them)."""
        if not chunk:
            return [], []
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the LF of a CRLF split between chunks
        self._after_cr = False
        data = bytes(self._partial) + chunk if self._partial else chunk
        if b"\r" in data:
            # A CR at the very end ends its line now; an LF opening the next chunk is its pair.
            self._after_cr = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        plain: list[bytes] = []
        if not self._data and self._event is None:
            plain, data = self._plain_events(data)
        lines = data.split(b"\n")
        rest = lines.pop()
        if len(rest) > self._max_line:
            raise SseTooLong(f"an event stream line is longer than {self._max_line}")
        self._partial = bytearray(rest)
        events: list[SseEvent] = []
        line_event = self._line
        limit = self._max_line
        data_lines = self._data
        for line in lines:
            if len(line) > limit:
                raise SseTooLong(f"an event stream line is longer than {limit}")
            # What every event is made of, a ``data: `` line and a blank line: the fast path.
            if line[:6] == b"data: ":
                data_lines.append(line[6:])
                continue
            if not line and data_lines:
                events.append(SseEvent(b"\n".join(data_lines), self._event, self._id))
                data_lines.clear()
                self._event = None
                continue
            event = line_event(line)
            if event is not None:
                events.append(event)
        return plain, events

    def _plain_events(self, data: bytes) -> tuple[list[bytes], bytes]:
        """The data of the events at the start of ``data`` if they are all plain (one
        ``data: `` line and a blank line each), and what follows them; else nothing, ``data``.

        One regular-expression scan instead of a loop over lines: the matches tile the
        region exactly when their lengths add up to it (they never overlap), so any other
        line in it (a comment, a field, a second data line, a blank line too many) makes the
        whole region go the line-by-line way.
        """
        end = data.rfind(b"\n\n") + 2
        if end < _PLAIN_OVERHEAD:
            return [], data
        plain = _PLAIN_EVENT.findall(data, 0, end)
        if not plain or sum(map(len, plain)) + _PLAIN_OVERHEAD * len(plain) != end:
            return [], data
        if len(max(plain, key=len)) + len(b"data: ") > self._max_line:
            raise SseTooLong(f"an event stream line is longer than {self._max_line}")
        return plain, data[end:]

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            if not self._data:
                self._event = None
                return None
            event = SseEvent(b"\n".join(self._data), self._event, self._id)
            self._data.clear()
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
