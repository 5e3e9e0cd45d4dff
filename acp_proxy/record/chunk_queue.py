"""The recorder's queue: chunks wait here between the tap and the recorder thread.

Rules:
- Order is the timeline's: chunks come out exactly in the order they were put.
- Memory is bounded: up to ``memory_bytes`` chunks wait in memory. Past that, chunks spill to
  an unlinked temporary file (the page cache absorbs a burst at memory speed without holding it
  in this process), and everything put while the spill file still has unread chunks goes there
  too, so that order is kept. Once the recorder has read the file to its end, it is emptied and
  the queue is back in memory.
- Lossless while the spill file can be written: only when it holds more than ``spill_bytes``
  does ``put`` wait (and with it, through the full tap ring, forwarding, for as long as the
  tap allows); it says so once. If the spill file cannot be written (a full or failing
  temporary folder), the chunks that were to go there become holes (``Lost``, see losses.py)
  after everything already queued, and so does every chunk put until the recorder has taken
  all that was queued; then the queue starts afresh (an emptied spill file frees its room). It
  says so once. Holes come out of ``take`` in their place in the timeline.
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
from acp_proxy.record.losses import Lost
from acp_proxy.stderr import Reporter

DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024
DEFAULT_SPILL_BYTES = 1024 * 1024 * 1024

# A queue item: (direction, monotonic ns when read, chunk); an empty chunk ends a stream, a
# ``Lost`` stands for chunks that will not be recorded.
ChunkItem = tuple[Direction, int, bytes | Lost]
# What ``put_many`` accepts: the chunk may be a view (into the tap's ring), valid only during
# the call; the queue copies it into memory or writes it to the spill file before returning.
IncomingChunk = tuple[Direction, int, bytes | memoryview | Lost]

_RECORD = struct.Struct("<BQI")  # direction code (+ _LOST_FLAG), monotonic ns, length
_LOST_FLAG = 0x80
_LOST_RECORD = struct.Struct("<QQB")  # size, newlines, ends with a newline; the reason follows
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
        self._said_dropping = False
        # Holes waiting behind everything queued (the spill file failed), in order.
        self._overflow: list[ChunkItem] = []
        self._overflow_reason = "the recorder's spill file cannot be written"
        self.discarded_frames = 0
        self.waits = 0
        self.spilled_bytes = 0
        self.dropped_bytes = 0

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
            if self._overflow and self._drained():
                self._items.extend(self._overflow)  # the holes, now first in line
                self._overflow = []
            spill: list[bytes | memoryview] = []  # spill records, counted in _spill_written
            spilled: list[IncomingChunk] = []  # what those records hold
            for index, (direction, mono_ns, chunk) in enumerate(items):
                lost = chunk.__class__ is Lost
                size = 0 if lost else len(chunk)
                if not self._discarding and not self._overflow:
                    spilling = self._spill_written > self._spill_read
                    if not spilling and (
                        not self._items or self._bytes + size <= self._memory_bytes
                    ):
                        self._items.append((direction, mono_ns, chunk if lost else bytes(chunk)))  # type: ignore[arg-type]
                        self._bytes += size
                        continue
                    if self._spill_written - self._spill_read + size > self._spill_bytes:
                        self._write_spill(spill, spilled)  # counted must be there before we wait
                        spill, spilled = [], []
                        while (
                            self._spill_written - self._spill_read + size > self._spill_bytes
                            and not self._discarding
                            and not self._overflow
                        ):
                            self._say_waiting()
                            self.waits += 1
                            self._cond.wait()
                # Discarding or overflowing, from the start or since the wait for room.
                if self._discarding:
                    self._discard_items(items[index:])
                    break
                if self._overflow:
                    self._overflow_add((direction, mono_ns, chunk), None)
                    continue
                if isinstance(chunk, Lost):
                    payload: bytes | memoryview = (
                        _LOST_RECORD.pack(chunk.size, chunk.newlines, chunk.ends_line)
                        + chunk.reason.encode()
                    )
                    code = _CODES[direction] | _LOST_FLAG
                else:
                    payload, code = chunk, _CODES[direction]
                    self.spilled_bytes += len(chunk)
                spill += [_RECORD.pack(code, mono_ns, len(payload)), payload]
                spilled.append((direction, mono_ns, chunk))
                self._spill_written += _RECORD.size + len(payload)
            self._write_spill(spill, spilled)
            self._cond.notify_all()

    def _drained(self) -> bool:
        return not self._items and self._spill_written == self._spill_read

    def _overflow_add(self, item: IncomingChunk, error: OSError | None) -> None:
        """Make ``item`` part of the holes behind the queue (under the lock)."""
        direction, mono_ns, chunk = item
        if isinstance(chunk, Lost):
            lost = chunk
        elif not chunk:  # an end of stream is kept: it is no bytes, and it ends the stream
            self._overflow.append((direction, mono_ns, b""))
            return
        else:
            self.dropped_bytes += len(chunk)
            lost = Lost.of(chunk, self._overflow_reason)
        for index in range(len(self._overflow) - 1, -1, -1):
            earlier_direction, _, earlier = self._overflow[index]
            if earlier_direction is direction:
                if isinstance(earlier, Lost):
                    self._overflow[index] = (direction, mono_ns, earlier.then(lost))
                    return
                break
        self._overflow.append((direction, mono_ns, lost))

    def _spill_failed(self, error: OSError, items: list[IncomingChunk]) -> None:
        """The spill file refused ``items``: they, and what follows, become holes."""
        self._overflow_reason = f"the recorder's spill file cannot be written ({error})"
        if not self._said_dropping:
            self._said_dropping = True
            if self._report is not None:
                self._report(
                    f"{self._overflow_reason}: frames are left out of the recording (counted) "
                    "until the recorder catches up"
                )
        for item in items:
            self._overflow_add(item, error)

    def _discard_items(self, items: list[IncomingChunk]) -> None:
        self.discarded_frames += sum(
            bytes(chunk).count(b"\n") for _, _, chunk in items if not isinstance(chunk, Lost)
        )

    def _write_spill(self, parts: list[bytes | memoryview], items: list[IncomingChunk]) -> None:
        """Write ``parts``, the records of ``items`` that end at ``_spill_written``, at once.

        If the file cannot take them, the records are taken back and ``items`` become holes.
        """
        if not parts:
            return
        total = sum(len(part) for part in parts)
        offset = self._spill_written - total
        try:
            self._spill(parts, offset, total)
        except OSError as error:
            self._spill_written = offset
            self._spill_failed(error, items)

    def _spill(self, parts: list[bytes | memoryview], offset: int, total: int) -> None:
        if self._spill_fd is None:
            import tempfile  # only once a burst spills: the recorder process starts faster

            fd, path = tempfile.mkstemp(prefix="acp-proxy-spill-", dir=self._spill_dir)
            os.unlink(path)  # private to this process, and gone with it whatever happens
            self._spill_fd = fd
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
                if not step:
                    raise OSError(28, "No space left on device")
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
                if self._overflow:  # all that was queued before the holes is taken
                    overflow, self._overflow = self._overflow, []
                    self._taken()
                    return overflow
                if self._closed:
                    return None
                if not self._cond.wait(idle) and not self._pending() and not self._overflow:
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
            while self._items and (not items or taken + _size(self._items[0][2]) <= limit):
                item = self._items.popleft()
                items.append(item)
                taken += _size(item[2])
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
            if code & _LOST_FLAG:
                size, newlines, ends_line = _LOST_RECORD.unpack_from(chunk)
                reason = chunk[_LOST_RECORD.size :].decode("utf-8", "replace")
                items.append((_DIRECTIONS[code & ~_LOST_FLAG], mono_ns,
                              Lost(size, newlines, bool(ends_line), reason)))  # fmt: skip
            else:
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
        self.discarded_frames += sum(
            chunk.count(b"\n") for _, _, chunk in lost if not isinstance(chunk, Lost)
        )


def _kept(chunk: bytes | memoryview | Lost) -> bytes | Lost:
    return chunk if isinstance(chunk, Lost) else bytes(chunk)


def _size(chunk: bytes | Lost) -> int:
    return 0 if isinstance(chunk, Lost) else len(chunk)
