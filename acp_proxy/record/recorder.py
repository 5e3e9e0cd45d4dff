"""The recorder: frames, classifies and writes the chunks of one connection, in batches.

Rules:
- It runs in the recorder process (see recorder_process.py), fed through a ``ChunkQueue``
  (chunk_queue.py: bounded memory, then a spill file, lossless) by the thread that reads the
  tap. Batches are bounded by bytes, so the recorder's memory is too.
- All SQLite work happens on the recorder's one thread, through store.py. Each batch is one
  transaction, taken once the traffic pauses for 5 ms (at the latest after 250 ms): a stream
  is left the cores while it flows and becomes a few large batches, and an interactive frame
  is committed 5 ms after it crossed (``tail -f`` sees it at once).
- WAL checkpoints (copying committed pages into the main file) happen after 0.25 s with nothing
  to record if the WAL is past 4 MiB, when it is past 1 GiB in any case, and once at the
  end: never page by page while frames stream in.
- If the database cannot be opened or written, the recorder says so once on stderr, switches
  the queue to discarding (the tap keeps being read, so forwarding goes on untouched) and
  counts what it could not record.
- The full-text search index is kept off the stream: frames are indexed when the traffic
  pauses (``IDLE_INDEX_FRAMES`` per pause) and, after everything is committed and the proxy
  told so, all that is left (``checkpoint``); ``search`` catches up on whatever is missing.
- Sinks (``RecordSink``: a live exporter, say) see each batch once it is committed, on the
  recorder thread: they must hand the frames on without waiting. A sink that raises is said
  once on stderr and dropped; the recording goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from acp_proxy.errors import RecordingError
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.record.chunk_queue import ChunkItem, ChunkQueue
from acp_proxy.stderr import Reporter
from acp_proxy.store.database import NewConnection, RecordingWriter, connect

if TYPE_CHECKING:
    from acp_proxy.record.live_check import LiveCheck

# At most this much is framed and written per transaction (bounds the recorder's memory).
BATCH_BYTES = 1024 * 1024
# After this long with nothing to record, the recorder may checkpoint.
IDLE_SECONDS = 0.25
# When to record (see ChunkQueue.take): after a pause of QUIET_SECONDS in the traffic, or once
# chunks have waited PATIENCE_SECONDS, or once ENOUGH_BYTES wait. While a stream flows the
# recorder keeps off the cores the peers and the forwarding threads need (measured: 186 B
# frames 0.76x -> 0.85x of direct, docs/performance.md), and `tail -f` still moves four times
# a second.
QUIET_SECONDS = 0.005
PATIENCE_SECONDS = 0.25
ENOUGH_BYTES = 64 * 1024 * 1024
# WAL sizes that trigger a checkpoint: when nothing is queued, and in any case.
WAL_IDLE_LIMIT = 4 * 1024 * 1024
WAL_BUSY_LIMIT = 1024 * 1024 * 1024
# Frames indexed for search per pause in the traffic (tens of milliseconds of work).
IDLE_INDEX_FRAMES = 2000


class RecordSink(Protocol):
    """Something that follows a recording batch by batch, after each commit."""

    def committed(self, connection_id: int, records: Sequence[FrameRecord]) -> None:
        """``records`` were committed, in order; called on the recorder thread."""

    def close(self) -> None:
        """The recording is over: nothing more will be committed."""


@dataclass
class _Totals:
    frames: int = 0
    size: int = 0


@dataclass
class RecorderStatus:
    """What the recorder achieved; read after ``run`` returns."""

    connection_id: int | None = None
    frames_lost: int = 0
    error: str | None = None


class Recorder:
    """Owns the recording of one connection, on the thread that calls ``run``."""

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
        # ``record --check``: the spec rules, applied to every frame before it is written.
        self.live_check: LiveCheck | None = None
        self.sinks: list[RecordSink] = []

    def set_connection(self, **fields: object) -> None:
        """Ask for connection columns to be set (pid, exit status ...) on the recorder thread."""
        with self._lock:
            self._pending_updates.update(fields)

    # --- recorder thread ---------------------------------------------------------------

    def run(self) -> None:
        """Record until the queue is closed and drained, on the calling thread."""
        try:
            db = connect(self._db_path, recorder=True)
            self._writer = RecordingWriter.start(db, self._new, index=False)
            self.status.connection_id = self._writer.connection_id
            if self.live_check is not None:
                self.live_check.set_connection(self._writer.connection_id)
        except RecordingError as error:
            self._fail(error)
        while True:
            items = self._queue.take(
                QUIET_SECONDS, PATIENCE_SECONDS, ENOUGH_BYTES, idle=IDLE_SECONDS, limit=BATCH_BYTES
            )
            if items is None:
                break
            if self._writer is None:
                self._count_lost(items)
                continue
            if not items:
                self._idle()
                continue
            records = self._frames_of(items)
            del items  # the chunks now live on in the frames only: let them go before writing
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
        findings = self.live_check.frames(records) if self.live_check is not None else []
        try:
            writer.append(records, counts, facts, findings)
            self._apply_pending_updates(writer)
        except RecordingError as error:
            self.status.frames_lost += len(records)
            self._fail(error)
            return
        self._tell_sinks(writer.connection_id, records)
        self._maybe_checkpoint(writer)

    def _tell_sinks(self, connection_id: int, records: Sequence[FrameRecord]) -> None:
        for sink in list(self.sinks):
            try:
                sink.committed(connection_id, records)
            except Exception as error:  # a sink never ends the recording
                self._drop_sink(sink, error)

    def _drop_sink(self, sink: RecordSink, error: Exception) -> None:
        self.sinks.remove(sink)
        self._report(f"{type(sink).__name__} failed ({error}); the recording goes on without it")

    def _close_sinks(self) -> None:
        for sink in list(self.sinks):
            try:
                sink.close()
            except Exception as error:  # a sink never ends the recording
                self._drop_sink(sink, error)

    def _maybe_checkpoint(self, writer: RecordingWriter, limit: int = 0) -> None:
        """Checkpoint if the WAL is past ``limit`` bytes (the busy limit by default)."""
        if writer.wal_size() > (limit or WAL_BUSY_LIMIT):
            try:
                writer.checkpoint()
            except RecordingError as error:
                self._report(f"{error}; recording continues")

    def _idle(self) -> None:
        """Nothing arrived for a while: index some frames, checkpoint a WAL past the idle limit."""
        if self._writer is not None:
            self._writer.index_pending(IDLE_INDEX_FRAMES)
            self._maybe_checkpoint(self._writer, WAL_IDLE_LIMIT)

    def checkpoint(self) -> None:
        """The rest of the index and a last checkpoint once everything is committed (the
        recorder process's final act)."""
        writer = self._writer
        if writer is not None:
            writer.index_pending()
            try:
                writer.checkpoint()
            except RecordingError as error:
                self._report(f"{error}; the recording is complete in its WAL file")

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
        self._close_sinks()
        writer = self._writer
        if writer is None:
            return
        try:
            if self.live_check is not None:
                writer.append([], findings=self.live_check.finish())
            if self.status.frames_lost:
                self.set_connection(frames_lost=self.status.frames_lost)
            self._apply_pending_updates(writer)
        except RecordingError as error:
            self._fail(error)
