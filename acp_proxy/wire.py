"""Sans-I/O line framing: bytes in, frames out.

Rules:
- A frame is everything up to and including a ``\\n`` byte. Nothing is stripped, decoded or
  normalised: a ``\\r`` before the newline, NUL bytes and invalid UTF-8 stay in ``raw``.
- Concatenating the ``raw`` of every frame, in order, plus the pending tail gives back exactly
  the bytes fed in, whatever the chunking (property-tested).
- ``finish()`` turns a last line without a newline into a frame flagged ``complete=False``;
  feeding after ``finish()`` is local misuse and raises.
- This module knows no process, clock or database.
"""

from __future__ import annotations

from typing import NamedTuple


class Frame(NamedTuple):
    """One line as it crossed the wire (immutable; a tuple because the recorder makes millions).

    ``offset`` is the position of its first byte in its stream; ``complete`` is False only for a
    final line that ended without a newline.
    """

    raw: bytes
    offset: int
    complete: bool = True


class LineSplitter:
    """Cuts a byte stream into newline-terminated frames, keeping every byte."""

    __slots__ = ("_finished", "_pending", "_pending_size", "_stream_offset")

    def __init__(self) -> None:
        self._pending: list[bytes] = []
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

    def feed(self, chunk: bytes) -> list[Frame]:
        """Take the next chunk of the stream; return the frames it completes."""
        if self._finished:
            raise RuntimeError("LineSplitter.feed() after finish()")
        end = chunk.find(b"\n")
        if end < 0:
            if chunk:
                self._pending.append(chunk)
                self._pending_size += len(chunk)
            return []
        frames: list[Frame] = []
        start = 0
        if self._pending:
            self._pending.append(chunk[: end + 1])
            raw = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
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
            tail = chunk[start:]
            self._pending.append(tail)
            self._pending_size = len(tail)
        return frames

    def finish(self) -> Frame | None:
        """End of stream: return the unterminated last line, if any, flagged incomplete."""
        if self._finished:
            raise RuntimeError("LineSplitter.finish() called twice")
        self._finished = True
        if not self._pending:
            return None
        raw = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        frame = Frame(raw, self._stream_offset, complete=False)
        self._stream_offset += len(raw)
        return frame
