"""The recorder's queue: chunks wait here between the tap and the recorder thread.

Rules:
- Order is the timeline's: chunks come out exactly in the order they were put.
- Memory is bounded: up to ``memory_bytes`` chunks wait in memory. Past that, chunks spill to
  an unlinked temporary file (the page cache absorbs a burst at memory speed without holding it
  in this process), and everything put while the spill file still has unread chunks goes there
  too, so that order is kept. Once the recorder has read the file to its end, it is emptied and
  the queue is back in memory.
- Lossless: only when the spill file holds more than ``spill_bytes`` does ``put`` wait (and
  with it, through the full tap ring, forwarding); it says so once. Nothing is dropped, except
  after ``discard()`` (the recording failed), where chunks are counted and let go.
- ``take`` hands out batches bounded by bytes, can wait for a pause in the traffic first (so
  that recording keeps out of a stream's way, and one commit covers a burst), and returns
  ``[]`` after an idle timeout (a moment for housekeeping).
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
from collections import deque

from acp_proxy.protocol.acp import Direction
from acp_proxy.stderr import Reporter

DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024
DEFAULT_SPILL_BYTES = 1024 * 1024 * 1024

# A queue item: (direction, monotonic ns when read, chunk); an empty chunk ends a stream.
ChunkItem = tuple[Direction, int, bytes]
# What ``put_many`` accepts: the chunk may be a view (into the tap's ring), valid only during
# the call; the queue copies it into memory or writes it to the spill file before returning.
IncomingChunk = tuple[Direction, int, bytes | memoryview]

_RECORD = struct.Struct("<BQI")  # direction code, monotonic ns, length
_IOV_MAX = 1024  # buffers per pwritev call (Linux's limit)
_CODES = {direction: code for code, direction in enumerate(Direction)}
_DIRECTIONS = dict(enumerate(Direction))


class ChunkQueue:
    """A byte-bounded, order-keeping hand-off from the tap reader to the recorder thread."""

    def __init__(
        self,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        spill_bytes: int = DEFAULT_SPILL_BYTES,
        report: Reporter | None = None,
        spill_dir: str | None = None,
    ) -> None:
        self._items: deque[ChunkItem] = deque()
        self._bytes = 0
        self._memory_bytes = memory_bytes
        self._spill_bytes = spill_bytes
        self._spill_dir = spill_dir
        self._spill_fd: int | None = None
        self._spill_written = 0  # end of the spill file
        self._spill_read = 0  # how far the recorder has read it
        self._cond = threading.Condition()
        self._last_put = 0.0  # monotonic seconds
        self._waiting_since: float | None = None  # when the queue last stopped being empty
        self._closed = False
        self._discarding = False
        self._report = report
        self._said_waiting = False
        self.discarded_frames = 0
        self.waits = 0
        self.spilled_bytes = 0

    # --- the tap reader's side --------------------------------------------------------------

    def put(self, direction: Direction, mono_ns: int, chunk: bytes) -> None:
        """Queue a forwarded chunk (an empty chunk means end of that stream)."""
        self.put_many([(direction, mono_ns, chunk)])

    def put_many(self, items: list[IncomingChunk]) -> None:
        """Queue chunks in order: one lock, one wake-up and at most one spill write for all.

        A chunk given as a view is used only during the call: what waits in memory is copied,
        what spills is written to the file straight from the view.
        """
        if not items:
            return
        with self._cond:
            self._last_put = time.monotonic()
            if self._waiting_since is None:
                self._waiting_since = self._last_put
            spill: list[bytes | memoryview] = []  # spill records, counted in _spill_written
            for index, (direction, mono_ns, chunk) in enumerate(items):
                if self._discarding:
                    self._discard_items(items[index:])
                    break
                spilling = self._spill_written > self._spill_read
                if not spilling and (
                    not self._items or self._bytes + len(chunk) <= self._memory_bytes
                ):
                    self._items.append((direction, mono_ns, bytes(chunk)))
                    self._bytes += len(chunk)
                    continue
                if self._spill_written - self._spill_read + len(chunk) > self._spill_bytes:
                    self._write_spill(spill)  # what is counted must be there before we wait
                    spill = []
                    while (
                        self._spill_written - self._spill_read + len(chunk) > self._spill_bytes
                        and not self._discarding
                    ):
                        self._say_waiting()
                        self.waits += 1
                        self._cond.wait()
                    if self._discarding:
                        self._discard_items(items[index:])
                        break
                spill += [_RECORD.pack(_CODES[direction], mono_ns, len(chunk)), chunk]
                self._spill_written += _RECORD.size + len(chunk)
                self.spilled_bytes += len(chunk)
            self._write_spill(spill)
            self._cond.notify_all()

    def _discard_items(self, items: list[IncomingChunk]) -> None:
        self.discarded_frames += sum(bytes(chunk).count(b"\n") for _, _, chunk in items)

    def _write_spill(self, parts: list[bytes | memoryview]) -> None:
        """Write ``parts``, the records that end at ``_spill_written``, in one system call."""
        if not parts:
            return
        if self._spill_fd is None:
            import tempfile  # only once a burst spills: the recorder process starts faster

            fd, path = tempfile.mkstemp(prefix="acp-proxy-spill-", dir=self._spill_dir)
            os.unlink(path)  # private to this process, and gone with it whatever happens
            self._spill_fd = fd
        total = sum(len(part) for part in parts)
        offset = self._spill_written - total
        written = 0
        for start in range(0, len(parts), _IOV_MAX):
            group = parts[start : start + _IOV_MAX]
            step = os.pwritev(self._spill_fd, group, offset + written)
            written += step
            if step < sum(len(part) for part in group):
                break
        if written < total:  # short write (a signal, a full disk): finish it plainly
            rest = memoryview(b"".join(parts))[written:]
            while rest:
                step = os.pwrite(self._spill_fd, rest, offset + total - len(rest))
                rest = rest[step:]

    def _say_waiting(self) -> None:
        if not self._said_waiting:
            self._said_waiting = True
            if self._report is not None:
                self._report(
                    "the recorder is behind: forwarding waits for it "
                    f"(more than {self._spill_bytes // 1_048_576} MiB queued)"
                )

    def close(self) -> None:
        """No more chunks will come: the recorder finishes once it has taken what is left."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # --- the recorder's side ----------------------------------------------------------------

    def take(
        self,
        quiet: float = 0.0,
        patience: float = 0.0,
        enough: int = 1 << 20,
        idle: float | None = None,
        limit: int = 1 << 62,
    ) -> list[ChunkItem] | None:
        """Wait for chunks and take them in order; ``None`` once closed and drained.

        - ``quiet``: once there are chunks, wait until none has been put for that long (a pause
          in the traffic), unless the queue has held chunks for ``patience`` seconds or more
          (since it was last empty) or holds ``enough`` bytes. While a stream flows, recording
          then leaves the cores to it; a burst of small frames becomes one commit; and nothing
          waits longer than ``patience``. It delays recording, never forwarding.
        - ``idle``: give up after that long with nothing queued and return ``[]``.
        - ``limit``: take only about that many bytes (at least one chunk), so a batch, and the
          memory it holds, stays bounded.
        """
        with self._cond:
            while not self._items and self._spill_written == self._spill_read:
                if self._closed:
                    return None
                if not self._cond.wait(idle) and not self._pending():
                    return []
            while quiet > 0 and not self._closed and self._pending() < enough:
                now = time.monotonic()
                waited = now - (self._waiting_since or now)
                wait = min(quiet - (now - self._last_put), patience - waited)
                if wait <= 0:
                    break
                self._cond.wait(wait)
            if self._items:  # memory holds the oldest chunks whenever it holds any
                return self._take_memory(limit)
            start, end = self._spill_read, self._spill_written
        return self._take_spilled(start, end, limit)

    def _pending(self) -> int:
        return self._bytes + self._spill_written - self._spill_read

    def _take_memory(self, limit: int) -> list[ChunkItem]:
        if self._bytes <= limit:
            items = list(self._items)
            self._items.clear()
            self._bytes = 0
        else:
            items, taken = [], 0
            while self._items and (not items or taken + len(self._items[0][2]) <= limit):
                item = self._items.popleft()
                items.append(item)
                taken += len(item[2])
            self._bytes -= taken
        self._taken()
        return items

    def _taken(self) -> None:
        """After a take (under the lock): wake a waiting ``put``; an emptied queue starts over."""
        if not self._pending():
            self._waiting_since = None
        self._cond.notify_all()

    def _read_spilled(self, start: int, end: int, limit: int) -> tuple[list[ChunkItem], int]:
        assert self._spill_fd is not None
        items: list[ChunkItem] = []
        offset = start
        while offset < end and (not items or offset - start < limit):
            code, mono_ns, length = _RECORD.unpack(os.pread(self._spill_fd, _RECORD.size, offset))
            chunk = os.pread(self._spill_fd, length, offset + _RECORD.size) if length else b""
            items.append((_DIRECTIONS[code], mono_ns, chunk))
            offset += _RECORD.size + length
        return items, offset

    def _take_spilled(self, start: int, end: int, limit: int) -> list[ChunkItem]:
        # Reading outside the lock is safe: the tap reader only ever appends past ``end``.
        items, offset = self._read_spilled(start, end, limit)
        with self._cond:
            if self._discarding:
                return []
            self._spill_read = offset
            if self._spill_read == self._spill_written:  # all read: start the file afresh
                self._spill_read = self._spill_written = 0
                with contextlib.suppress(OSError):
                    os.ftruncate(self._spill_fd or -1, 0)
            self._taken()
        return items

    def discard(self) -> None:
        """Stop keeping chunks (the recording failed); what is queued counts as lost."""
        with self._cond:
            self._discarding = True
            lost = list(self._items)
            self._items.clear()
            self._bytes = 0
            start, end = self._spill_read, self._spill_written
            self._spill_read = self._spill_written = 0
            self._taken()
        if end > start:
            lost += self._read_spilled(start, end, end - start)[0]
        self.discarded_frames += sum(chunk.count(b"\n") for _, _, chunk in lost)
