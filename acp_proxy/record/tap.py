"""The tap: how forwarded chunks reach the recorder process, through a shared-memory ring.

Rules:
- The forwarding threads call ``Tap.put_view`` with each chunk just before they write it on.
  ``put_view`` copies a 16-byte header and the chunk into a ring buffer shared with the
  recorder process (an anonymous ``MAP_SHARED`` mapping made before the fork) and then
  publishes the new write position. All of it happens under one lock, so the order of records
  in the ring is the order of the timeline. No system call on this path while the recorder
  is awake: that is the point (a pipe write per chunk cost more than the forwarding itself).
- Positions are byte counts since the start (they only grow); a record may wrap around the
  end of the ring. The writer publishes ``write`` after the bytes are in place; the reader
  publishes ``read`` once its consumer is done with a batch (payloads are handed on as views
  into the ring, so the recorder writes each byte out of the ring once: a copy out and then a
  spill write cost the reader more CPU, taken from a stream's cores: docs/performance.md). A
  writer that finds the ring empty goes back to its start (a ``_SKIP`` record), so the ring is
  resident only as far as the reader falls behind. Each position is one aligned 64-bit word,
  stored and loaded whole (a native ``memoryview`` item). The protocol relies on the processor
  keeping stores in order and loads in order (x86-64's memory model); ``ring_supported`` says
  where that holds, and elsewhere the same records go through a plain pipe instead
  (``Channel(ring=False)``), with the same reader.
- Waking the reader: it polls the ring every ``ACTIVE_POLL_SECONDS`` while a stream flows (a
  burst of chunks costs it one wake-up, and the writers nothing), every
  ``TRICKLE_POLL_SECONDS`` while traffic trickles (fewer wake-ups beside a ping-pong of small
  messages, where each one can delay a peer; a writer then wakes it once a stream's worth of
  bytes waits, instead of at half full); after ``IDLE_SECONDS``
  without data it raises the ``sleeping`` word and waits on the wake pipe, and a writer that
  sees the word raised writes one byte there. The two checks can cross (a store can overtake
  a load); a missed wake-up costs at most ``SLEEP_SECONDS`` of recording delay, never a
  forwarded byte.
- ``put_view`` waits only when the ring is full, i.e. when the recorder's reader thread is
  starved or stopped, or the recorder's own queue is at its bound (see chunk_queue.py): that
  is the documented backpressure, and it is bounded: after ``max_wait`` seconds the chunk is
  dropped from the recording (forwarding goes on at once), the proxy says so once, and every
  chunk that finds no room after that is dropped without waiting until the ring has room for
  the hole's account and the next chunk. A hole travels as one ``LOST`` record in the chunks'
  place (see losses.py). The last ``CONTROL_RESERVE`` bytes of the ring are kept for those
  records and for ``UPDATE`` and ``CONFIG``, so that what the proxy says at the end (a hole,
  the agent's exit status) still fits when chunks filled the ring. If the recorder process is
  gone (the wake pipe reports an error or EPIPE), the tap stops sending and forwarding goes on.
  Through the pipe (processors without the ring) the wait is not bounded.
- ``close`` closes the wake pipe; the reader takes what is published and ends. If the proxy
  is killed, the pipe closes all the same: every record published (every chunk that was
  forwarded) is still read; a record cut short by the proxy's death was never published.
- Messages: ``CHUNK`` (direction, monotonic ns, bytes; empty bytes = end of that stream),
  ``LOST`` (direction: a hole in its stream, see ``encode_lost``),
  ``UPDATE`` (JSON object of connection columns, e.g. the agent's exit status) and ``CONFIG``
  (JSON: where and what to record; it may come after the first chunks, because forwarding
  starts before the command line has been read).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import select
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.record import defaults
from acp_proxy.record.losses import Lost
from acp_proxy.stderr import Reporter

DEFAULT_MAX_WAIT = defaults.DEFAULT_MAX_WAIT  # the same number, for those who look for it here

HEADER = struct.Struct("=BBxxIQ")  # kind, direction, (padding), payload length, monotonic ns
CHUNK, UPDATE, CONFIG = 1, 2, 3
_SKIP = 4  # ring only: the writer went back to the start of the ring; never a message
LOST = 5
_LOST = struct.Struct("=QQB")  # size, newlines, ends with a newline; the reason follows
CONTROL_RESERVE = 64 * 1024
STALL_REASON = "the recorder fell behind (forwarding waits at most {wait:g}s for it)"
DIRECTION_CODES = {Direction.CLIENT_TO_AGENT: 0, Direction.AGENT_TO_CLIENT: 1,
                   Direction.AGENT_STDERR: 2}  # fmt: skip
DIRECTIONS_BY_CODE = {code: direction for direction, code in DIRECTION_CODES.items()}

# The largest chunk a forwarding thread reads (forward.CHUNK_SIZE) must fit in the ring, and
# so must the chunks that arrive while the reader waits for a core: a stream gives reads of
# about half a megabyte, and a smaller ring made forwarding wait for room during a stream.
# The ring counts in the resident memory of both processes as far as it is written (see
# RESTART_OFFSET), so it stays no larger than that needs (docs/performance.md has the
# measurements behind the size).
RING_BYTES = 4 * 1024 * 1024
MAX_CHUNK = 1024 * 1024
_CONTROL_BYTES = 4096  # the control words, each on its own cache line, before the data
# Indices of 64-bit words in the control area, each on its own cache line: the two positions,
# the reader's "asleep on the wake pipe" flag, and how much unread data should wake it (half
# the ring while it looks at a stream's pace, STREAM_LOOK_BYTES while it looks at a trickle's).
_WRITE, _READ, _SLEEPING, _WAKE_AT = 0, 8, 16, 24

# A writer that finds the ring empty this far from its start goes back to the start, so that
# only as much of the ring is ever touched (resident) as the reader has fallen behind.
RESTART_OFFSET = 512 * 1024
# The reader hands on at most about this many bytes per batch: the recorder's queue (bounded,
# spilling) has taken them before more are handed on, and their room goes back to the writers
# in steps of this size, not only at the end of a long look.
READ_BATCH_BYTES = 1024 * 1024

# While chunks arrive at BUSY_BYTES_PER_SECOND or more (a stream) the reader looks every
# ACTIVE_POLL_SECONDS, so that it keeps up; while they trickle (interactive traffic) only every
# TRICKLE_POLL_SECONDS: each look wakes a normal-priority thread that can preempt a peer, and
# looking at a stream's pace during a ping-pong shows in the round trip's tail
# (docs/performance.md). A look that finds STREAM_LOOK_BYTES, even after a long
# wait, means a stream too; and at the trickle's pace a writer wakes the reader as soon as
# that much waits (at half full otherwise), so the start of a stream is taken at once.
ACTIVE_POLL_SECONDS = 0.002
TRICKLE_POLL_SECONDS = 0.05
BUSY_BYTES_PER_SECOND = 10_000_000
STREAM_LOOK_BYTES = 256 * 1024
IDLE_SECONDS = 0.2
SLEEP_SECONDS = 0.05
# While the ring is full the writer looks again this often: the reader frees a chunk's room
# in well under a millisecond, and a forwarding thread must not sleep longer than that.
FULL_WAIT_SECONDS = 0.0002


def ring_supported() -> bool:
    """Whether this processor orders plain stores and loads as the ring needs (see rules)."""
    return os.uname().machine.lower() in ("x86_64", "amd64")


def _padded(length: int) -> int:
    return (length + 7) & ~7  # records start on 8-byte boundaries


class Channel:
    """Both ends of the tap, made before the fork; each process keeps one end."""

    def __init__(self, *, ring: bool | None = None, ring_bytes: int = RING_BYTES) -> None:
        use_ring = ring_supported() if ring is None else ring
        if ring_bytes % 8 or ring_bytes < HEADER.size + MAX_CHUNK + CONTROL_RESERVE:
            raise ValueError("the ring must hold the largest chunk and be a multiple of 8")
        self.ring_bytes = ring_bytes
        self.shared = mmap.mmap(-1, _CONTROL_BYTES + ring_bytes) if use_ring else None
        self.read_fd, self.write_fd = os.pipe()

    def writer(self, report: Reporter | None = None) -> Tap:
        """The proxy's end (closes the reader's end of the pipe in this process)."""
        os.close(self.read_fd)
        return Tap(self.write_fd, self.shared, self.ring_bytes, report)

    def reader(self) -> TapReader:
        """The recorder's end (closes the writer's end of the pipe in this process)."""
        os.close(self.write_fd)
        return TapReader(self.read_fd, self.shared, self.ring_bytes)


def encode_lost(lost: Lost) -> bytes:
    return _LOST.pack(lost.size, lost.newlines, lost.ends_line) + lost.reason.encode()


def decode_lost(payload: bytes | memoryview) -> Lost:
    size, newlines, ends_line = _LOST.unpack_from(payload)
    reason = bytes(payload[_LOST.size :]).decode("utf-8", "replace")
    return Lost(size, newlines, bool(ends_line), reason)


class Tap:
    """The forwarding side of the tap (any thread)."""

    def __init__(
        self,
        fd: int,
        shared: mmap.mmap | None = None,
        ring_bytes: int = 0,
        report: Reporter | None = None,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._open = True
        self._shared = shared
        self._capacity = ring_bytes
        self._chunk_room = ring_bytes - CONTROL_RESERVE
        self._half = ring_bytes // 2
        self._report = report
        self.max_wait = max_wait
        self._lost: dict[int, Lost] = {}  # direction code -> the hole not yet sent
        self._dropping = False
        self._said_dropping = False
        self.dropped_chunks = 0
        if shared is not None:
            self._words = memoryview(shared).cast("Q")
            self._data = memoryview(shared)[_CONTROL_BYTES:]
            self._write = 0
            os.set_blocking(fd, False)  # a wake-up byte never waits: one pending is enough
            self._poller = select.poll()
            self._poller.register(fd, 0)  # errors only: the recorder has gone
        self.full_waits = 0

    def put(self, direction: Direction, mono_ns: int, chunk: bytes) -> None:
        """Send one forwarded chunk (``b""`` marks the end of that direction's stream)."""
        self.put_view(direction, mono_ns, memoryview(chunk))

    def put_view(self, direction: Direction, mono_ns: int, chunk: memoryview) -> None:
        """``put`` for a view into the forwarding thread's buffer (copied into the tap).

        It runs once per forwarded chunk: a chunk that fits the ring goes straight to it.
        """
        with self._lock:
            if self._shared is not None and len(chunk) <= MAX_CHUNK and self._open:
                if self._dropping:
                    self._put_after_hole(DIRECTION_CODES[direction], mono_ns, chunk)
                elif not self._send_by_ring(
                    CHUNK, DIRECTION_CODES[direction], mono_ns, chunk, self._chunk_room
                ):
                    self._drop(DIRECTION_CODES[direction], chunk)
                return
        self._send(CHUNK, DIRECTION_CODES[direction], mono_ns, chunk)

    def _drop(self, code: int, chunk: memoryview) -> None:
        """Leave ``chunk`` out of the recording: it joins its direction's hole (under the lock)."""
        if not self._open:
            return
        if not self._dropping:
            self._dropping = True
            if not self._said_dropping and self._report is not None:
                self._said_dropping = True
                self._report(
                    f"the recorder is more than {self.max_wait:g}s behind: frames are left out "
                    "of the recording (counted) so that forwarding goes on"
                )
        self.dropped_chunks += 1
        lost = Lost.of(chunk, STALL_REASON.format(wait=self.max_wait))
        earlier = self._lost.get(code)
        self._lost[code] = lost if earlier is None else earlier.then(lost)

    def _put_after_hole(self, code: int, mono_ns: int, chunk: memoryview) -> None:
        """While dropping: send the holes and ``chunk`` if they all fit now, else drop it."""
        records = [(c, encode_lost(lost)) for c, lost in self._lost.items()]
        needed = sum(HEADER.size + _padded(len(p)) for _, p in records)
        needed += HEADER.size + _padded(len(chunk))
        if needed > self._chunk_room - (self._write - self._words[_READ]):
            self._drop(code, chunk)
            return
        for lost_code, payload in records:
            self._send_by_ring(LOST, lost_code, mono_ns, memoryview(payload), self._capacity)
        self._lost.clear()
        self._dropping = False
        self._send_by_ring(CHUNK, code, mono_ns, chunk, self._chunk_room)

    def _send_holes(self) -> None:
        """Send what is left of the holes, into the reserve if need be (under the lock)."""
        if self._open and self._shared is not None:
            for code, lost in list(self._lost.items()):
                now = time.monotonic_ns()
                self._send_by_ring(LOST, code, now, memoryview(encode_lost(lost)), self._capacity)
        self._lost.clear()

    def update(self, **columns: Any) -> None:
        """Ask the recorder to set connection columns (agent pid, exit status ...)."""
        self._send_json(UPDATE, columns)

    def configure(self, **settings: Any) -> None:
        """Tell the recorder where and what to record (see recorder_process.py)."""
        self._send_json(CONFIG, settings)

    def _send_json(self, kind: int, value: dict[str, Any]) -> None:
        import orjson  # not needed before the first message of this kind: keep start-up light

        self._send(kind, 0, 0, memoryview(orjson.dumps(value)))

    def close(self) -> None:
        """No more messages: the recorder finishes once it has read what was sent."""
        with self._lock:
            self._send_holes()
            self._stop()

    def _stop(self) -> None:
        if self._open:
            self._open = False
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def _send(self, kind: int, code: int, mono_ns: int, payload: memoryview) -> None:
        with self._lock:
            if not self._open:
                return
            if self._shared is None:
                self._send_by_pipe(HEADER.pack(kind, code, len(payload), mono_ns), payload)
                return
            if len(payload) > MAX_CHUNK and kind != CHUNK:
                raise ValueError(f"a tap message holds at most {MAX_CHUNK} bytes")
            if kind != CHUNK:
                self._send_holes()  # the holes come before what follows them
                if not self._send_by_ring(kind, code, mono_ns, payload, self._capacity):
                    self._said_lost_message()
                return
            # A chunk larger than the ring allows (replay hands over whole frames) goes in
            # pieces: the recorder reads chunks as one stream per direction.
            for start in range(0, len(payload), MAX_CHUNK) if payload else (0,):
                piece = payload[start : start + MAX_CHUNK]
                if not self._open:
                    return
                if self._dropping:
                    self._put_after_hole(code, mono_ns, piece)
                elif not self._send_by_ring(kind, code, mono_ns, piece, self._chunk_room):
                    self._drop(code, piece)

    def _said_lost_message(self) -> None:
        if self._report is not None and self._open:
            self._report("the recorder is not reading: a detail of the connection went unrecorded")

    def _send_by_ring(
        self, kind: int, code: int, mono_ns: int, payload: memoryview, room: int
    ) -> bool:
        """Put one record in the ring, waiting at most ``max_wait`` for ``room`` to have it.

        ``room``: how much of the ring this record may fill. False if it was not put.
        """
        size = len(payload)
        capacity = self._capacity
        start = self._write
        words = self._words
        read = words[_READ]
        offset = start % capacity
        if (
            read == start
            and offset >= max(RESTART_OFFSET, HEADER.size + _padded(size))
            and offset <= capacity - HEADER.size
        ):
            # The reader has taken everything: rather than touch the next pages of the ring,
            # go back to its start (resident, likely in cache) where this record fits.
            HEADER.pack_into(self._data, offset, _SKIP, 0, capacity - offset - HEADER.size, 0)
            start += capacity - offset
            read = start  # the skipped bytes are free once the reader has passed them
        end = start + HEADER.size + _padded(size)
        if end - read > room:
            if not self._wait_for_room(end, room):
                return False
            read = words[_READ]
        offset = start % capacity
        if offset + HEADER.size + size <= capacity:  # the usual case: no wrapping
            HEADER.pack_into(self._data, offset, kind, code, size, mono_ns)
            self._data[offset + HEADER.size : offset + HEADER.size + size] = payload
        else:
            self._copy_in(start, HEADER.pack(kind, code, size, mono_ns))
            self._copy_in(start + HEADER.size, payload)
        self._write = end
        words[_WRITE] = end  # published: the reader may take the record from now on
        # Wake the reader if it sleeps, or when this record fills the ring past half (past
        # STREAM_LOOK_BYTES while the reader looks at a trickle's pace): it may be between two
        # looks, and the rest of a burst must not wait for the next one.
        wake_at = words[_WAKE_AT] or self._half
        if words[_SLEEPING] or start - read <= wake_at < end - read:
            self._wake()
        return True

    def _copy_in(self, position: int, data: bytes | memoryview) -> None:
        offset = position % self._capacity
        first = min(len(data), self._capacity - offset)
        self._data[offset : offset + first] = data[:first]
        if first < len(data):  # the record wraps around the end of the ring
            self._data[: len(data) - first] = data[first:]

    def _wait_for_room(self, end: int, room: int) -> bool:
        """Wait until the reader has made ``room`` up to ``end``; False if it is gone or late."""
        self.full_waits += 1
        deadline = time.monotonic() + self.max_wait
        while end - self._words[_READ] > room:
            self._wake()  # it may be between two looks, or asleep and have missed a wake-up
            if not self._open or self._poller.poll(0):  # POLLERR: the reader has gone
                self._stop()
                return False
            if time.monotonic() >= deadline:
                return False
            time.sleep(FULL_WAIT_SECONDS)
        return True

    def _wake(self) -> None:
        try:
            os.write(self._fd, b"\x00")
        except BlockingIOError:
            pass  # wake-up bytes are already waiting: the reader will look
        except OSError:
            self._stop()  # the recorder process is gone; it has said why

    def _send_by_pipe(self, header: bytes, payload: memoryview) -> None:
        try:
            written = os.writev(self._fd, (header, payload))
            total = len(header) + len(payload)
            if written < total:  # a signal interrupted a large write: finish it
                rest = memoryview(header + bytes(payload))[written:]
                while rest:
                    rest = rest[os.write(self._fd, rest) :]
        except OSError:
            self._stop()  # the recorder process is gone; it has said why


Message = tuple[int, Direction, int, bytes | memoryview]  # kind, direction, mono ns, payload


class TapReader:
    """The recorder side of the tap: yields messages until the writer has closed its end."""

    PIPE_READ_SIZE = 1024 * 1024

    def __init__(self, fd: int, shared: mmap.mmap | None = None, ring_bytes: int = 0) -> None:
        self._fd = fd
        self._shared = shared
        self._capacity = ring_bytes

    def messages(self) -> Iterator[Message]:
        """``(kind, direction, mono_ns, payload)`` in the writers' order; ends at end of file.

        Each payload is ``bytes`` of its own (copied out of the ring).
        """
        for batch in self.batches():
            yield from [(kind, d, ns, bytes(payload)) for kind, d, ns, payload in batch]

    def batches(self) -> Iterator[list[Message]]:
        """The messages in the writers' order, in lists: what one look at the tap found.

        Handing them on a list at a time (not one by one) is what keeps the reader thread
        cheap: per look, not per chunk, it takes a lock and wakes the recorder. A payload may
        be a ``memoryview`` into the ring, valid only until the next batch is asked for: the
        room it takes is given back to the writers then. So the consumer writes a payload out
        of the ring once (the recorder's spill file) instead of copying it out and then again.
        """
        if self._shared is None:
            yield from self._from_pipe()
        else:
            yield from self._from_ring(self._shared)

    def _from_ring(self, shared: mmap.mmap) -> Iterator[list[Message]]:
        words = memoryview(shared).cast("Q")
        data = memoryview(shared)[_CONTROL_BYTES:]
        unpack = HEADER.unpack_from
        capacity = self._capacity
        position = 0
        last_data = time.monotonic()
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        ended = False
        streaming = True  # until the first look says otherwise
        last_look = time.monotonic()
        while True:
            published = words[_WRITE]
            if position < published:
                now = time.monotonic()
                rate_floor = BUSY_BYTES_PER_SECOND * max(now - last_look, ACTIVE_POLL_SECONDS)
                streaming = published - position >= min(rate_floor, STREAM_LOOK_BYTES)
                last_look = now
                batch: list[Message] = []
                batch_bytes = 0
                while position < published:
                    offset = position % capacity
                    if capacity - offset >= HEADER.size:
                        header: bytes | memoryview = data[offset : offset + HEADER.size]
                    else:
                        header = self._copy_out(data, position, HEADER.size)
                    kind, code, length, mono_ns = unpack(header)
                    if kind == _SKIP:  # the writer went back to the start of the ring
                        position += HEADER.size + length
                        if not batch:
                            words[_READ] = position
                        continue
                    if batch_bytes >= READ_BATCH_BYTES:
                        yield batch
                        words[_READ] = position  # the consumer is done with those views
                        batch, batch_bytes = [], 0
                    batch_bytes += length
                    start = (offset + HEADER.size) % capacity
                    payload: bytes | memoryview
                    if start + length <= capacity:
                        payload = data[start : start + length]
                    else:  # a record that wraps around the end of the ring (rare)
                        payload = self._copy_out(data, position + HEADER.size, length)
                    position += HEADER.size + _padded(length)
                    direction = DIRECTIONS_BY_CODE.get(code, Direction.AGENT_STDERR)
                    batch.append((kind, direction, mono_ns, payload))
                if batch:
                    yield batch
                words[_READ] = position  # the consumer is done with the batch: room for writers
                last_data = time.monotonic()
            elif ended:  # the writer closed its end after its last record: all is read
                return
            elif time.monotonic() - last_data < IDLE_SECONDS:
                # At a trickle's pace, a writer wakes the reader as soon as a stream begins.
                words[_WAKE_AT] = 0 if streaming else STREAM_LOOK_BYTES
                poll = ACTIVE_POLL_SECONDS if streaming else TRICKLE_POLL_SECONDS
                ended = self._wait(poller, poll)
            else:
                words[_SLEEPING] = 1
                if words[_WRITE] == position:
                    ended = self._wait(poller, SLEEP_SECONDS)
                words[_SLEEPING] = 0

    def _wait(self, poller: select.poll, seconds: float) -> bool:
        """Wait for a wake-up byte or the timeout; True once the writer has closed its end."""
        if not poller.poll(seconds * 1000):
            return False
        try:
            return not os.read(self._fd, 4096)  # wake-up bytes are consumed; b"" is the end
        except OSError:
            return True

    def _copy_out(self, data: memoryview, position: int, length: int) -> bytes:
        offset = position % self._capacity
        first = min(length, self._capacity - offset)
        return bytes(data[offset : offset + first]) + bytes(data[: length - first])

    def _from_pipe(self) -> Iterator[list[Message]]:
        buffer = b""
        header_size = HEADER.size
        unpack = HEADER.unpack_from
        while True:
            data = os.read(self._fd, self.PIPE_READ_SIZE)
            if not data:
                return  # a message cut short by the proxy's death is dropped
            buffer = buffer + data if buffer else data
            start = 0
            batch: list[Message] = []
            while len(buffer) - start >= header_size:
                kind, code, length, mono_ns = unpack(buffer, start)
                end = start + header_size + length
                if end > len(buffer):
                    break
                payload = buffer[start + header_size : end]
                direction = DIRECTIONS_BY_CODE.get(code, Direction.AGENT_STDERR)
                batch.append((kind, direction, mono_ns, payload))
                start = end
            if batch:
                yield batch
            buffer = buffer[start:]
            if len(data) < 64 * 1024:
                # A trickle (interactive traffic): let it gather for a moment, so that the
                # forwarding threads do not wake this process for every single chunk.
                time.sleep(ACTIVE_POLL_SECONDS)


def decode_json(payload: bytes | memoryview) -> dict[str, Any]:
    import orjson

    value = orjson.loads(payload)
    return value if isinstance(value, dict) else {}
