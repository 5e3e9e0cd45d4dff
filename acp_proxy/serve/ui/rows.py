"""Sans-I/O row index of a timeline: frames in order, a run of chunks for one message as one row.

Rules:
- A row is one frame, or a run: consecutive frames (in the filtered order) that are chunk
  updates (``*_chunk``) of the same direction, session, update kind and message id. A run
  grows while its message streams in.
- The index is built by ``feed``-ing frames in ``seq`` order, in as many steps as the caller
  likes (a million-frame recording is indexed page by page, never read whole); rows already
  indexed never move, only the last row can still grow.
- Arrays of machine integers, not lists of objects: three 8-byte numbers per row. (Grouping
  the runs in SQL with window functions was measured slower than this loop:
  docs/performance.md, "The web inspector".)
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

Key = str
_ABSENT = "\x1e"


def chunk_key(direction: str, session_id: Any, update_kind: Any, message_id: Any) -> Key | None:
    """What frames of one run share; None for a frame that is never part of a run.

    The fields joined by ``\x1f``, an absent session or message id as ``\x1e``.
    """
    if not isinstance(update_kind, str) or not update_kind.endswith("_chunk"):
        return None
    session = _ABSENT if session_id is None else str(session_id)
    message = _ABSENT if message_id is None else str(message_id)
    return "\x1f".join((direction, session, update_kind, message))


class RowIndex:
    """The rows of one connection's timeline under one filter."""

    __slots__ = ("_key", "counts", "ends", "scanned_seq", "starts")

    def __init__(self) -> None:
        self.starts = array("q")
        self.ends = array("q")
        self.counts = array("q")
        self.scanned_seq = 0  # the last seq fed
        self._key: Key | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def feed(self, frames: Iterable[tuple[Any, ...]]) -> int:
        """Add frames ``(seq, direction, session_id, update_kind, message_id)`` in seq order.

        Returns how many were fed.
        """
        fed = 0
        starts, ends, counts = self.starts, self.ends, self.counts
        last = self._key
        for seq, direction, session_id, update_kind, message_id in frames:
            fed += 1
            key = chunk_key(direction, session_id, update_kind, message_id)
            if key is not None and key == last and starts:
                ends[-1] = seq
                counts[-1] += 1
            else:
                starts.append(seq)
                ends.append(seq)
                counts.append(1)
            last = key
            self.scanned_seq = seq
        self._key = last
        return fed

    def row(self, index: int) -> tuple[int, int, int]:
        """``(first seq, last seq, frames)`` of row ``index``."""
        return self.starts[index], self.ends[index], self.counts[index]

    def find(self, seq: int) -> int | None:
        """The index of the row holding frame ``seq`` (None when no indexed row holds it)."""
        starts = self.starts
        low, high = 0, len(starts)
        while low < high:
            middle = (low + high) // 2
            if starts[middle] <= seq:
                low = middle + 1
            else:
                high = middle
        index = low - 1
        if index < 0 or self.ends[index] < seq:
            return None
        return index
