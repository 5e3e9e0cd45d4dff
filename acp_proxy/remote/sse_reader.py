"""Sans-I/O: Server-Sent Events read from bytes, each event's data as the bytes that were sent.

Rules:
- ``feed(chunk)`` takes any split of the stream and returns the events it completes; an event
  is dispatched by a blank line. Lines end with CRLF, LF or CR (a CR at the end of a chunk
  waits for the next one, which may bring its LF).
- Only ``data`` fields carry anything: one leading space is removed from the value, several
  ``data`` lines join with LF. Comments (``:`` lines, keep-alives) are counted, other fields
  ignored; an event without data is no event.
- ``finish()`` ends the stream: an event not closed by a blank line is dropped, as the
  EventSource standard drops it.
- Never raises on peer bytes; no text decoding (the data is passed on byte for byte).
"""

from __future__ import annotations


class SseReader:
    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._has_data = False
        self.comments = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of every event ``chunk`` completes, in order."""
        buffer = self._buffer
        buffer += chunk
        events: list[bytes] = []
        start = 0
        while True:
            cr = buffer.find(b"\r", start)
            lf = buffer.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 == len(buffer):
                    break  # its LF may come with the next chunk
                end, next_start = cr, cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
            else:
                end, next_start = lf, lf + 1
            self._line(bytes(buffer[start:end]), events)
            start = next_start
        del buffer[:start]
        return events

    def finish(self) -> None:
        """The stream ended: an unterminated event is dropped."""
        self._buffer.clear()
        self._data.clear()
        self._has_data = False

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._has_data:
                events.append(b"\n".join(self._data))
            self._data.clear()
            self._has_data = False
            return
        if line.startswith(b":"):
            self.comments += 1
            return
        name, colon, value = line.partition(b":")
        if name != b"data":
            return
        if colon and value.startswith(b" "):
            value = value[1:]
        self._data.append(value)
        self._has_data = True
