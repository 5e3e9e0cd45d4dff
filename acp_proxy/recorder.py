"""The recorder: frames, classifies and writes the chunks of one connection, in batches.

Rules:
- It runs in the recorder process (see recorder_process.py), fed through a ``ChunkQueue`` by
  the thread that reads the tap pipe. The queue is bounded by bytes: when the recorder falls
  behind by more than the bound, the reading thread waits, the pipe fills, and forwarding waits
  for it; the recorder says so once. Nothing is dropped silently.
- A chunk larger than the bound is still admitted when the queue is empty, so one huge frame
  can never deadlock forwarding.
- All SQLite work happens on the recorder's one thread, through store.py. Each drain of the
  queue is one transaction: under load batches grow by themselves, when idle every frame is
  committed at once (``tail -f`` sees it at once).
- If the database cannot be opened or written, the recorder says so once on stderr, switches
  the queue to discarding (the pipe keeps being read, so forwarding goes on untouched) and
  counts what it could not record.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .acp import Direction
from .errors import RecordingError
from .observer import ConnectionObserver, FrameRecord
from .store import NewConnection, RecordingWriter, connect
from .wire import LineSplitter

DEFAULT_QUEUE_BYTES = 32 * 1024 * 1024
# How long a small batch waits for more before it is committed (see ChunkQueue.take).
DEFAULT_LINGER = 0.005
Reporter = Callable[[str], None]

# A queue item: (direction, monotonic ns when read, chunk); an empty chunk ends a stream.
ChunkItem = tuple[Direction, int, bytes]


class ChunkQueue:
    """A byte-bounded hand-off from the tap-reading thread to the recorder thread."""

    def __init__(
        self, max_bytes: int = DEFAULT_QUEUE_BYTES, report: Reporter | None = None
    ) -> None:
        self._items: deque[ChunkItem] = deque()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._cond = threading.Condition()
        self._closed = False
        self._discarding = False
        self._report = report
        self._said_waiting = False
        self.discarded_frames = 0
        self.waits = 0

    def put(self, direction: Direction, mono_ns: int, chunk: bytes) -> None:
        """Hand a forwarded chunk to the recorder (an empty chunk means end of stream).

        Waits while more than the bound is queued (unless the queue is empty).
        """
        with self._cond:
            if self._discarding:
                self.discarded_frames += chunk.count(b"\n")
                return
            while self._bytes > 0 and self._bytes + len(chunk) > self._max_bytes:
                if not self._said_waiting:
                    self._said_waiting = True
                    if self._report is not None:
                        self._report(
                            "the recorder is behind: forwarding waits for it "
                            f"(more than {self._max_bytes // 1_048_576} MiB queued)"
                        )
                self.waits += 1
                self._cond.wait()
                if self._discarding:
                    self.discarded_frames += chunk.count(b"\n")
                    return
            self._items.append((direction, mono_ns, chunk))
            self._bytes += len(chunk)
            self._cond.notify_all()

    def take(self, linger: float = 0.0, enough: int = 1 << 20) -> list[ChunkItem] | None:
        """Wait for chunks and take all of them; ``None`` once closed and empty.

        With ``linger``, a small batch waits up to that long (from its first chunk) for more,
        until ``enough`` bytes are queued: one commit then covers a burst of small frames
        instead of one commit per frame. It delays recording, never forwarding.
        """
        with self._cond:
            while not self._items:
                if self._closed:
                    return None
                self._cond.wait()
            if linger > 0 and self._bytes < enough and not self._closed:
                deadline = time.monotonic() + linger
                while self._bytes < enough and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            items = list(self._items)
            self._items.clear()
            self._bytes = 0
            self._cond.notify_all()
            return items

    def close(self) -> None:
        """No more chunks will come: the recorder finishes once it has taken what is left."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def discard(self) -> None:
        """Stop keeping chunks (the recording failed); what is queued counts as lost."""
        with self._cond:
            self._discarding = True
            self.discarded_frames += sum(chunk.count(b"\n") for _, _, chunk in self._items)
            self._items.clear()
            self._bytes = 0
            self._cond.notify_all()


@dataclass
class _Totals:
    frames: int = 0
    size: int = 0


@dataclass
class RecorderStatus:
    """What the recorder achieved; read after ``join``."""

    connection_id: int | None = None
    frames_recorded: int = 0
    frames_lost: int = 0
    error: str | None = None
    totals: dict[str, tuple[int, int]] = field(default_factory=dict)


class Recorder:
    """Owns the recording of one connection, on one thread (``run`` or ``start``)."""

    def __init__(
        self,
        db_path: Path,
        new_connection: NewConnection,
        queue: ChunkQueue,
        report: Reporter,
        clock_origin: tuple[int, int] | None = None,
    ) -> None:
        self._db_path = db_path
        self._new = new_connection
        self._queue = queue
        self._report = report
        mono0, wall0 = clock_origin or (time.monotonic_ns(), time.time_ns())
        self._wall_minus_mono = wall0 - mono0
        self._observer = ConnectionObserver()
        self._splitters = {d: LineSplitter() for d in Direction}
        self._totals = {d: _Totals() for d in Direction}
        self._writer: RecordingWriter | None = None
        self._pending_updates: dict[str, object] = {}
        self._lock = threading.Lock()
        self.status = RecorderStatus()
        self.linger = DEFAULT_LINGER
        self._thread = threading.Thread(target=self._run, name="acp-proxy recorder", daemon=True)

    def start(self) -> None:
        """Run the recorder on its own thread (see ``join``)."""
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the recorder to finish; False if it is still writing after ``timeout``."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def set_connection(self, **fields: object) -> None:
        """Ask for connection columns to be set (pid, exit status ...) on the recorder thread."""
        with self._lock:
            self._pending_updates.update(fields)

    # --- recorder thread ---------------------------------------------------------------

    def run(self) -> None:
        """Record until the queue is closed and drained, on the calling thread."""
        self._run()

    def _run(self) -> None:
        try:
            db = connect(self._db_path)
            self._writer = RecordingWriter.start(db, self._new)
            self.status.connection_id = self._writer.connection_id
        except RecordingError as error:
            self._fail(error)
        while True:
            items = self._queue.take(self.linger)
            if items is None:
                break
            if self._writer is None:
                self._count_lost(items)
                continue
            records = self._frames_of(items)
            self._write(records)
        self._finish()

    def _frames_of(self, items: list[ChunkItem]) -> list[FrameRecord]:
        records: list[FrameRecord] = []
        observe = self._observer.observe
        offset_ns = self._wall_minus_mono
        for direction, mono_ns, chunk in items:
            splitter = self._splitters[direction]
            before = splitter.offset
            if chunk:
                frames = splitter.feed(chunk)
            else:
                last = splitter.finish()
                frames = [] if last is None else [last]
            if frames:
                wall_ns = mono_ns + offset_ns
                records += [observe(direction, frame, mono_ns, wall_ns) for frame in frames]
                totals = self._totals[direction]
                totals.frames += len(frames)
                totals.size += splitter.offset - before
        return records

    def _write(self, records: list[FrameRecord]) -> None:
        writer = self._writer
        assert writer is not None
        observer = self._observer
        facts = observer.facts() if observer.facts_changed else None
        counts = [(d.value, t.frames, t.size) for d, t in self._totals.items()]
        try:
            writer.append(records, counts, facts)
            self._apply_pending_updates(writer)
        except RecordingError as error:
            self.status.frames_lost += len(records)
            self._fail(error)
            return
        self.status.frames_recorded += len(records)

    def _apply_pending_updates(self, writer: RecordingWriter) -> None:
        with self._lock:
            updates, self._pending_updates = self._pending_updates, {}
        if updates:
            writer.update(**updates)

    def _count_lost(self, items: list[ChunkItem]) -> None:
        for direction, _, chunk in items:
            self.status.frames_lost += chunk.count(b"\n")
            self._totals[direction].size += len(chunk)

    def _fail(self, error: RecordingError) -> None:
        if self.status.error is None:
            self.status.error = str(error)
            self._report(f"{error}; forwarding continues, nothing more will be recorded")
        self._writer = None
        self._queue.discard()

    def _finish(self) -> None:
        self.status.frames_lost += self._queue.discarded_frames
        self.status.totals = {d.value: (t.frames, t.size) for d, t in self._totals.items()}
        writer = self._writer
        if writer is None:
            return
        try:
            if self.status.frames_lost:
                self.set_connection(frames_lost=self.status.frames_lost)
            self._apply_pending_updates(writer)
        except RecordingError as error:
            self._fail(error)
