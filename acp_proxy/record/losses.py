"""Holes in a recorded stream: bytes that crossed but will not be recorded, and their frames.

Rules:
- Whoever cannot keep a chunk (the tap when the recorder is too far behind, the queue when
  its spill file cannot be written) turns it into a ``Lost`` in the chunk's place: its size,
  how many newlines it held, whether its last byte was one, and why. Consecutive holes of one
  direction merge. A hole never travels as bytes, so it costs nothing to carry.
- The recorder (``Holes``) turns holes into exact counts: a frame is lost when any of its
  bytes is; the frame a hole starts in and every frame it ends are counted once each, and the
  bytes of a lost frame before and after the hole are lost with it (never glued to other
  bytes into a frame that did not cross).
- Sans-I/O: plain values and arithmetic. Light to import (no ``dataclasses``): the tap uses it
  in ``record``'s start-up.
"""

from __future__ import annotations

from typing import NamedTuple


class Lost(NamedTuple):
    """A hole in one direction's stream (in a chunk's place in the timeline)."""

    size: int
    newlines: int
    ends_line: bool  # the hole's last byte is a newline: the frame after it is whole
    reason: str

    @classmethod
    def of(cls, chunk: bytes | memoryview, reason: str) -> Lost:
        data = bytes(chunk)
        return cls(len(data), data.count(b"\n"), data.endswith(b"\n"), reason)

    def then(self, later: Lost) -> Lost:
        """This hole followed at once by ``later`` (same direction)."""
        if not later.size:
            return self
        return Lost(
            self.size + later.size, self.newlines + later.newlines, later.ends_line, self.reason
        )


class Holes:
    """The lost frames and bytes of one direction's stream, hole by hole (the recorder's)."""

    __slots__ = ("bytes", "frames", "inside")

    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0
        self.inside = False  # the next bytes belong to a frame already counted as lost

    def hole(self, lost: Lost, held: int) -> None:
        """A hole after ``held`` bytes of an unfinished frame (which is lost with it)."""
        if not lost.size:
            return
        self.frames += lost.newlines + (0 if lost.ends_line else 1) - (1 if self.inside else 0)
        self.bytes += held + lost.size
        self.inside = not lost.ends_line

    def rest_of_frame(self, chunk: bytes) -> int:
        """How much of ``chunk`` (after a hole) still belongs to the lost frame; counted."""
        if not self.inside:
            return 0
        end = chunk.find(b"\n")
        taken = len(chunk) if end < 0 else end + 1
        self.inside = end < 0
        self.bytes += taken
        return taken

    def unrecorded(self, frames: int, size: int) -> None:
        """Whole frames that were framed but could not be stored."""
        self.frames += frames
        self.bytes += size
