"""Sans-I/O line framing: bytes in, frames out.

Rules:
- A frame is everything up to and including a ``\\n`` byte. Nothing is stripped, decoded or
  normalised: a ``\\r`` before the newline, NUL bytes and invalid UTF-8 stay in ``raw``.
- Concatenating the ``raw`` of every frame, in order, plus the pending tail gives back exactly
  the bytes fed in, whatever the chunking (property-tested).
- ``finish()`` turns a last line without a newline into a frame flagged ``complete=False``;
  feeding after ``finish()`` is local misuse and raises.
- A line that grows past ``GROW_IN_PLACE`` while it waits for its newline is gathered in one
  ``bytearray`` (grown in place) instead of a list of pieces joined at the end, so a 64 MiB line
  is held once, not twice; such a frame's ``raw`` is that ``bytearray``.
- This module knows no process, clock or database.
"""

from __future__ import annotations

from typing import NamedTuple

Raw = bytes | bytearray
GROW_IN_PLACE = 1024 * 1024


class Frame(NamedTuple):
    """One line as it crossed the wire (immutable; a tuple because the recorder makes millions).

    ``offset`` is the position of its first byte in its stream; ``complete`` is False only for a
    final line that ended without a newline.
    """

    raw: Raw
    offset: int
    complete: bool = True


class LineSplitter:
    """Cuts a byte stream into newline-terminated frames, keeping every byte."""

    __slots__ = ("_finished", "_grown", "_pending", "_pending_size", "_stream_offset")

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._grown: bytearray | None = None  # the pending line, once it is large
        self._pending_size = 0
        self._stream_offset = 0  # offset of the first byte not yet emitted in a frame
        self._finished = False

    @property
    def pending_size(self) -> int:
        """Bytes of an unfinished line held back, waiting for its newline."""
        return self._pending_size

    @property
    def offset(self) -> int:
        """Offset of the next frame to be emitted."""
        return self._stream_offset

    def _hold(self, piece: bytes) -> None:
        if self._grown is not None:
            self._grown += piece
        elif self._pending_size + len(piece) >= GROW_IN_PLACE:
            self._grown = bytearray().join([*self._pending, piece])
            self._pending.clear()
        else:
            self._pending.append(piece)
        self._pending_size += len(piece)

    def _take_pending(self, last: bytes) -> Raw:
        raw: Raw
        if self._grown is not None:
            self._grown += last
            raw, self._grown = self._grown, None
        else:
            raw = b"".join([*self._pending, last]) if self._pending else last
            self._pending.clear()
        self._pending_size = 0
        return raw

    def feed(self, chunk: bytes) -> list[Frame]:
        """Take the next chunk of the stream; return the frames it completes."""
        if self._finished:
            raise RuntimeError("LineSplitter.feed() after finish()")
        end = chunk.find(b"\n")
        if end < 0:
            if chunk:
                self._hold(chunk)
            return []
        frames: list[Frame] = []
        start = 0
        if self._pending_size:
            raw = self._take_pending(chunk[: end + 1])
            frames.append(Frame(raw, self._stream_offset))
            self._stream_offset += len(raw)
            start = end + 1
            end = chunk.find(b"\n", start)
        offset = self._stream_offset
        while end >= 0:
            frames.append(Frame(chunk[start : end + 1], offset))
            offset += end + 1 - start
            start = end + 1
            end = chunk.find(b"\n", start)
        self._stream_offset = offset
        if start < len(chunk):
            self._hold(chunk[start:])
        return frames

    def drop(self, size: int) -> int:
        """Forget the unfinished line and the next ``size`` bytes of the stream (not given).

        For a stream with a hole in it: offsets stay stream offsets. Returns how many held
        bytes were forgotten.
        """
        held = self._pending_size
        if held:
            self._pending.clear()
            self._grown = None
            self._pending_size = 0
        self._stream_offset += held + size
        return held

    def finish(self) -> Frame | None:
        """End of stream: return the unterminated last line, if any, flagged incomplete."""
        if self._finished:
            raise RuntimeError("LineSplitter.finish() called twice")
        self._finished = True
        if not self._pending_size:
            return None
        raw = self._take_pending(b"")
        frame = Frame(raw, self._stream_offset, complete=False)
        self._stream_offset += len(raw)
        return frame
