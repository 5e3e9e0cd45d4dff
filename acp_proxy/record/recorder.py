"""The recorder: frames, classifies and writes the chunks of one connection, in batches.

Rules:
- It runs in the recorder process (see recorder_process.py), fed through a ``ChunkQueue``
  (chunk_queue.py: bounded memory, then a spill file, lossless) by the thread that reads the
  tap. Batches are bounded by bytes, so the recorder's memory is too.
- All SQLite work happens on the recorder's one thread, through store/writer.py. Each batch
  is one transaction, taken once the traffic pauses for 5 ms (at the latest after 250 ms): a stream
  is left the cores while it flows and becomes a few large batches, and an interactive frame
  is committed 5 ms after it crossed (``tail -f`` sees it at once).
- WAL checkpoints (copying committed pages into the main file) happen after 0.25 s with nothing
  to record if the WAL is past 4 MiB, when it is past 1 GiB in any case, and once at the
  end: never page by page while frames stream in.
# Waits between attempts on a busy database (each attempt itself waits the busy timeout).
BUSY_RETRY_SECONDS = (0.01, 0.05, 0.2, 0.5)
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from acp_proxy.errors import RecordingBusy, RecordingError
from acp_proxy.plural import counted, noun
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.record.chunk_queue import ChunkItem, ChunkQueue
from acp_proxy.record.losses import Holes, Lost
from acp_proxy.stderr import Reporter
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter

if TYPE_CHECKING:
    from acp_proxy.record.live_check import LiveCheck

_T = TypeVar("_T")

# At most this much is framed and written per transaction (bounds the recorder's memory).
BATCH_BYTES = 1024 * 1024
# After this long with nothing to record, the recorder may checkpoint.
IDLE_SECONDS = 0.25
# When to record (see ChunkQueue.take): after a pause of QUIET_SECONDS in the traffic, or once
# chunks have waited PATIENCE_SECONDS, or once ENOUGH_BYTES wait. While a stream flows the
# recorder keeps off the cores the peers and the forwarding threads need (measured in
# docs/performance.md), and `tail -f` still moves several times a second.
QUIET_SECONDS = 0.005
PATIENCE_SECONDS = 0.25
ENOUGH_BYTES = 64 * 1024 * 1024
# WAL sizes that trigger a checkpoint: when nothing is queued, and in any case.
WAL_IDLE_LIMIT = 4 * 1024 * 1024
WAL_BUSY_LIMIT = 1024 * 1024 * 1024
# Frames indexed for search per pause in the traffic (tens of milliseconds of work).
IDLE_INDEX_FRAMES = 2000
# Waits between attempts on a busy database (each attempt itself waits the busy timeout).
BUSY_RETRY_SECONDS = (0.01, 0.05, 0.2, 0.5)


class RecordSink(Protocol):
    """Something that follows a recording batch by batch, after each commit."""

    def committed(self, connection_id: int, records: Sequence[FrameRecord]) -> None:
        """``records`` were committed, in order; called on the recorder thread."""

    def close(self) -> None:
        """The recording is over: nothing more will be committed."""


class ExchangeSink(Protocol):
    """A sink that also follows a remote connection's HTTP exchanges (record/hub_recorder.py
    calls ``exchanged`` on the sinks that have it, after the transport facts are committed)."""

    def exchanged(
        self, new: Sequence[dict[str, Any]], updates: Sequence[tuple[int, dict[str, Any]]]
    ) -> None:
        """``new``: exchanges begun (columns with their ``seq``); ``updates``: (seq, columns
        learnt since), both in the order they happened; called on the recorder thread."""


def retry_while_busy(attempt: Callable[[], _T], waiting: Callable[[RecordingBusy], None]) -> _T:
    """``attempt()`` until it does not raise ``RecordingBusy``, pausing ever longer between
    tries (``BUSY_RETRY_SECONDS``); ``waiting`` hears of every busy attempt."""
    tries = 0
    while True:
        try:
            return attempt()
        except RecordingBusy as error:
            waiting(error)
            time.sleep(BUSY_RETRY_SECONDS[min(tries, len(BUSY_RETRY_SECONDS) - 1)])
            tries += 1


class SinkFactory(Protocol):
    """What the command line hands the recorder: the sinks of one connection's recording.

    Called in the recorder process with the recording's settings (the ``CONFIG`` message:
    ``otlp`` ...), the connection's (uid, start, label), the reporter and how a sink sets
    columns of the connection row. The command line lists every sink in one place
    (cli/sinks.py); the recorder never chooses one itself.
    """

    def __call__(
        self, settings: Mapping[str, Any], connection: Mapping[str, Any], report: Reporter,
        set_connection: Callable[..., None],
    ) -> list[RecordSink]: ...  # fmt: skip


@dataclass
class _Totals:
    frames: int = 0
    size: int = 0


@dataclass
class RecorderStatus:
    """What the recorder achieved; read after ``run`` returns."""

    connection_id: int | None = None
    frames_lost: int = 0
    bytes_lost: int = 0
    error: str | None = None  # why the database could not be written
    reasons: list[str] = field(default_factory=list)  # why frames were lost, first first
    busy_waits: int = 0

    @property
    def complete(self) -> bool:
        return self.error is None and not self.frames_lost and not self.bytes_lost


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
        self._holes = {d: Holes() for d in Direction}
        self._ended: set[Direction] = set()
        self._lost_written = (0, 0)
        self._said_busy = False
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
            db = self._busy_retry(lambda: connect(self._db_path, recorder=True))
            self._writer = self._busy_retry(
                lambda: RecordingWriter.start(db, self._new, index=False)
            )
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

    def _busy_retry(self, attempt: Callable[[], _T]) -> _T:
        """``attempt()`` until the database is not busy (see the module rules)."""
        return retry_while_busy(attempt, self._say_busy)

    def _say_busy(self, error: RecordingBusy) -> None:
        self.status.busy_waits += 1
        if not self._said_busy:
            self._said_busy = True
            self._report(f"{error}; waiting for it (frames are kept meanwhile)")

    def _frames_of(self, items: list[ChunkItem]) -> list[FrameRecord]:
        records: list[FrameRecord] = []
        observe = self._observer.observe
        offset_ns = self._wall_minus_mono
        for direction, mono_ns, chunk in items:
            splitter = self._splitters[direction]
            if isinstance(chunk, Lost):
                self._hole(direction, chunk)
                continue
            data = self._after_hole(direction, chunk) if self._holes[direction].inside else chunk
            if data is None:
                continue
            before = splitter.offset
            if data:
                frames = splitter.feed(data)
            elif direction in self._ended:  # ended twice (a caller that ends every stream)
                continue
            else:
                self._ended.add(direction)
                last = splitter.finish()
                frames = [] if last is None else [last]
            if frames:
                wall_ns = mono_ns + offset_ns
                records += [observe(direction, frame, mono_ns, wall_ns) for frame in frames]
                totals = self._totals[direction]
                totals.frames += len(frames)
                totals.size += splitter.offset - before
        return records

    def _after_hole(self, direction: Direction, chunk: bytes) -> bytes | None:
        """What is left of ``chunk`` once the rest of a lost frame is dropped (None: nothing)."""
        if not chunk:
            return chunk
        taken = self._holes[direction].rest_of_frame(chunk)
        self._splitters[direction].drop(taken)
        return chunk[taken:] or None

    def _hole(self, direction: Direction, lost: Lost) -> None:
        """A hole in ``direction``'s stream: the frames it touches are lost (losses.py)."""
        held = self._splitters[direction].drop(lost.size)
        self._holes[direction].hole(lost, held)
        self._reason(lost.reason)

    def _reason(self, reason: str) -> None:
        if reason not in self.status.reasons:
            self.status.reasons.append(reason)
            self.set_connection(error=self._reasons_text())

    def _reasons_text(self) -> str:
        return "frames not recorded: " + "; ".join(self.status.reasons)

    def _lost_totals(self) -> tuple[int, int]:
        holes = self._holes.values()
        return sum(h.frames for h in holes), sum(h.bytes for h in holes)

    def _write(self, records: list[FrameRecord]) -> None:
        writer = self._writer
        assert writer is not None
        observer = self._observer
        facts = observer.facts() if observer.facts_changed else None
        counts = [(d.value, t.frames, t.size) for d, t in self._totals.items()]
        findings = self.live_check.frames(records) if self.live_check is not None else []
        lost = self._lost_totals()
        try:
            too_long = self._busy_retry(
                lambda: writer.append(
                    records, counts, facts, findings,
                    lost=lost if lost != self._lost_written else None,
                )
            )  # fmt: skip
            self._lost_written = lost
            if too_long:
                self._too_long(writer, too_long)
            self._busy_retry(lambda: self._apply_pending_updates(writer))
        except RecordingError as error:
            self._fail(error)
            self._unrecorded(records)
            return
        self._tell_sinks(writer.connection_id, records)
        self._maybe_checkpoint(writer)

    def _too_long(self, writer: RecordingWriter, records: list[FrameRecord]) -> None:
        for record in records:
            self._holes[Direction(record.direction)].unrecorded(1, len(record.raw))
        self._reason(f"a frame longer than the database takes ({writer.max_raw_bytes} bytes)")
        lost = self._lost_totals()
        self.set_connection(frames_lost=lost[0], bytes_lost=lost[1])
        self._lost_written = lost

    def _unrecorded(self, records: Sequence[FrameRecord]) -> None:
        for record in records:
            self._holes[Direction(record.direction)].unrecorded(1, len(record.raw))

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
            try:  # nothing more is written: the connection is no longer live on our account
                self._busy_retry(writer.done)
            except RecordingError as error:
                self._report(f"{error}; the recording stays marked as being written")

    def _apply_pending_updates(self, writer: RecordingWriter) -> None:
        with self._lock:
            updates, self._pending_updates = self._pending_updates, {}
        if not updates:
            return
        try:
            writer.update(**updates)
        except RecordingError:
            with self._lock:  # kept for the next attempt; what came meanwhile is newer
                self._pending_updates = {**updates, **self._pending_updates}
            raise

    def _count_lost(self, items: list[ChunkItem]) -> None:
        """The database failed: frame what arrives only to count it as lost."""
        for direction, _, chunk in items:
            splitter = self._splitters[direction]
            if isinstance(chunk, Lost):
                self._hole(direction, chunk)
                continue
            holes = self._holes[direction]
            data = self._after_hole(direction, chunk) if holes.inside else chunk
            if data is None:
                continue
            before = splitter.offset
            if data:
                frames = len(splitter.feed(data))
            elif direction in self._ended:
                continue
            else:
                self._ended.add(direction)
                frames = 0 if splitter.finish() is None else 1
            holes.unrecorded(frames, splitter.offset - before)

    def _fail(self, error: RecordingError) -> None:
        if self.status.error is None:
            self.status.error = str(error)
            self._report(f"{error}; forwarding continues, nothing more will be recorded")
            self.status.reasons.append(f"the database failed ({error})")
        self._writer = None

    def _finish(self) -> None:
        self._close_sinks()
        self.status.frames_lost, self.status.bytes_lost = self._lost_totals()
        lost = self.status.frames_lost or self.status.bytes_lost or self.status.error
        writer = self._writer
        if writer is not None:
            try:
                if self.live_check is not None:
                    findings = self.live_check.finish()
                    self._busy_retry(lambda: writer.append([], findings=findings))
                if lost:
                    self._mark_incomplete()
                self._busy_retry(lambda: self._apply_pending_updates(writer))
            except RecordingError as error:
                self._fail(error)
            else:
                return
        if self.status.connection_id is None:  # no row to hold the counts: said here instead
            if lost:
                self._report(
                    f"nothing was recorded: {self.status.frames_lost} frames "
                    f"({self.status.bytes_lost} bytes) crossed unrecorded"
                )
            return
        if self._write_losses_afresh():
            return
        if lost:
            self._report(
                f"the recording is incomplete: {counted(self.status.frames_lost, 'frame')} "
                f"({counted(self.status.bytes_lost, 'byte')}) "
                f"{noun(self.status.frames_lost, 'was', 'were')} not recorded"
            )

    def _mark_incomplete(self) -> None:
        self.set_connection(
            status="incomplete", error=self._reasons_text(),
            frames_lost=self.status.frames_lost, bytes_lost=self.status.bytes_lost,
        )  # fmt: skip

    def _write_losses_afresh(self) -> bool:
        """After a failure: one more try, on a new connection, to say what was lost."""
        try:
            db = connect(self._db_path, recorder=True)
            try:
                writer = RecordingWriter(db, self.status.connection_id or 0)
                self._mark_incomplete()
                self._busy_retry(lambda: self._apply_pending_updates(writer))
            finally:
                db.close()
        except RecordingError:
            return False
        return True
