"""The recorder process of a ``RecordingHub`` (hub.py): many connections, whole messages.

Rules:
- As the stdio recorder: a reader thread at normal priority drains the hub's pipe at once,
  whole records at a time, into a ``ChunkQueue`` (memory, then a spill file: chunk_queue.py),
  so the pipe never stays full while SQLite works; the recording thread runs in the idle
  scheduling class (the listener and the peers win every contest for a core) and records in
  batches: after a pause of ``QUIET_SECONDS`` in the traffic, or once records have waited
  ``PATIENCE_SECONDS``, or once ``ENOUGH_BYTES`` wait.
- Each connection has its own observer (protocol/observer.py, the one verdict), its own
  ``RecordingWriter`` row and counts; all share one SQLite connection. A message is one frame,
  ``raw`` exactly as it crossed, ``offset`` the sum of the sizes before it in its direction;
  its transport row (store/remote.py) is written right after the frames of the batch. A line
  of the agent side's own stderr (``STDERR``: a replay's summary) is a ``stderr`` frame, as
  stdio's recorder makes one, and crossed no stream: it has no transport row.
- A connection that is closed is finished at the next batch (status, end, losses, the rest of
  its search index, its sinks closed) and forgotten: memory stays bounded by the connections
  open, not by the listener's lifetime.
- Losses as for stdio: a message the hub dropped is counted (``frames_lost``, ``bytes_lost``,
  the reason in ``error``, ``status = 'incomplete'``); a database that cannot be written is
  said once on stderr and everything after it is counted as lost. A busy database is waited
  for, as long as it takes.
- It tells the hub through ``committed_fd`` once everything is committed (``1``, ``2`` when
  frames were lost, ``0`` when the database failed), then exits.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from acp_proxy.errors import RecordingBusy, RecordingError
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import Frame
from acp_proxy.record import hub_pipe as pipe
from acp_proxy.record.losses import Lost
from acp_proxy.record.recorder import IDLE_INDEX_FRAMES, retry_while_busy
from acp_proxy.record.recorder_process import _yield_to_forwarding
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.chunk_queue import ChunkQueue
    from acp_proxy.record.live_check import LiveCheck, LiveSchemas
    from acp_proxy.record.recorder import RecordSink, SinkFactory
    from acp_proxy.store.remote import RemoteFactsWriter, TransportRow
    from acp_proxy.store.writer import RecordingWriter

_T = TypeVar("_T")

QUIET_SECONDS = 0.005
PATIENCE_SECONDS = 0.25
ENOUGH_BYTES = 16 * 1024 * 1024
BATCH_BYTES = 4 * 1024 * 1024
IDLE_SECONDS = 0.25
READ_BYTES = 1024 * 1024


@dataclass
class _Connection:
    """One recorded connection while it is open."""

    writer: RecordingWriter | None
    settings: dict[str, Any]
    observer: ConnectionObserver = field(default_factory=ConnectionObserver)
    totals: dict[str, list[int]] = field(
        default_factory=lambda: {"c2a": [0, 0], "a2c": [0, 0], "stderr": [0, 0]}
    )
    records: list[FrameRecord] = field(default_factory=list)
    transports: list[TransportRow] = field(default_factory=list)
    new_exchanges: list[dict[str, Any]] = field(default_factory=list)
    exchange_updates: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    updates: dict[str, Any] = field(default_factory=dict)
    lost: list[int] = field(default_factory=lambda: [0, 0])
    reasons: list[str] = field(default_factory=list)
    closed: dict[str, Any] | None = None
    sinks: list[RecordSink] = field(default_factory=list)
    live_check: LiveCheck | None = None


class HubRecorder:
    """Records every connection the hub opens, on the calling thread."""

    def __init__(
        self, report: Reporter, clock_origin: tuple[int, int], sinks: SinkFactory | None = None
    ) -> None:
        self._report = report
        self._sinks = sinks
        mono0, wall0 = clock_origin
        self._wall_minus_mono = wall0 - mono0
        self._settings: dict[str, Any] = {}
        self._facts: RemoteFactsWriter | None = None
        self._connections: dict[int, _Connection] = {}
        self.error: str | None = None
        self.frames_lost = 0
        self._said_busy = False
        self._schemas: LiveSchemas | None = None  # record --check: loaded once for all

    # --- reading ------------------------------------------------------------------------

    def run(self, fd: int) -> None:
        """Record until the hub closes its pipe (on this thread, which ``record_from_pipe``
        has put in the idle class; the pipe's reader thread keeps normal priority)."""
        from acp_proxy.record.chunk_queue import ChunkQueue

        queue = ChunkQueue(report=self._report)
        reader = threading.Thread(
            target=_read_pipe, args=(fd, queue), name="acp-proxy hub reader", daemon=True
        )
        reader.start()
        _yield_to_forwarding()
        buffer = bytearray()
        while True:
            items = queue.take(
                QUIET_SECONDS, PATIENCE_SECONDS, ENOUGH_BYTES, idle=IDLE_SECONDS, limit=BATCH_BYTES
            )
            if items is None:
                break
            if not items:
                self._idle()
                continue
            for _, _, chunk in items:
                if isinstance(chunk, Lost):
                    self._records_lost(chunk)
                    continue
                buffer += chunk
                del buffer[: self._take(buffer)]
            self._batch()
        reader.join()
        for connection in self._connections.values():
            connection.closed = connection.closed or {
                "status": "dropped", "error": "the listener stopped with the connection open",
                "ended_ns": time.time_ns(),
            }  # fmt: skip
        self._batch()
        if self._facts is not None:
            with contextlib.suppress(RecordingError):
                self._facts.checkpoint()

    def _records_lost(self, lost: Lost) -> None:
        """The queue could not keep some records (its spill file failed): which connections
        they belonged to is not known, so every open one counts at least one frame lost."""
        for connection in self._connections.values():
            connection.lost[0] += 1
            connection.lost[1] += 0
            if lost.reason not in connection.reasons:
                connection.reasons.append(lost.reason)

    def _take(self, buffer: bytearray) -> int:
        """Handle every whole record in ``buffer``; return the bytes taken."""
        view = memoryview(buffer)
        at = 0
        size = pipe.HEADER.size
        try:
            while len(buffer) - at >= size:
                kind, direction, stream, key, exchange_seq, mono_ns, length = (
                    pipe.HEADER.unpack_from(view, at)
                )
                if len(buffer) - at - size < length:
                    break
                payload = bytes(view[at + size : at + size + length])
                at += size + length
                self._handle(kind, direction, stream, key, exchange_seq, mono_ns, payload)
        finally:
            view.release()
        return at

    def _handle(
        self, kind: int, direction: int, stream: int, key: int, exchange_seq: int,
        mono_ns: int, payload: bytes,
    ) -> None:  # fmt: skip
        if kind == pipe.MESSAGE:
            connection = self._connections.get(key)
            if connection is None:
                return
            self._message(connection, pipe.DIRECTIONS_BY_CODE[direction], mono_ns, payload,
                          exchange_seq, pipe.STREAMS_BY_CODE[stream])  # fmt: skip
            return
        if kind == pipe.STDERR:
            if (connection := self._connections.get(key)) is not None:
                self._message(connection, Direction.AGENT_STDERR, mono_ns, payload, 0, None)
            return
        value = orjson.loads(payload)
        if kind == pipe.CONFIG:
            self._configure(value)
        elif kind == pipe.OPEN:
            self._open(key, value)
        elif (connection := self._connections.get(key)) is None:
            return
        elif kind == pipe.EXCHANGE:
            value.setdefault("started_ns", mono_ns + self._wall_minus_mono)
            connection.new_exchanges.append(value)
        elif kind == pipe.EXCHANGE_SET:
            connection.exchange_updates.append((exchange_seq, value))
        elif kind == pipe.UPDATE:
            connection.updates.update(value)
        elif kind == pipe.LOST:
            connection.lost[0] += int(value["frames"])
            connection.lost[1] += int(value["bytes"])
            if value["reason"] not in connection.reasons:
                connection.reasons.append(value["reason"])
        elif kind == pipe.CLOSE:
            connection.closed = value

    def _message(
        self, connection: _Connection, direction: Direction, mono_ns: int, raw: bytes,
        exchange_seq: int, stream: str | None,
    ) -> None:  # fmt: skip
        totals = connection.totals[direction.value]
        record = connection.observer.observe(
            direction, Frame(raw, totals[1]), mono_ns, mono_ns + self._wall_minus_mono
        )
        totals[0] += 1
        totals[1] += len(raw)
        connection.records.append(record)
        if stream is not None:  # a stderr line crossed no stream
            connection.transports.append((0, record.seq, exchange_seq, stream))

    # --- writing ------------------------------------------------------------------------

    def _configure(self, settings: dict[str, Any]) -> None:
        from acp_proxy.store.database import connect
        from acp_proxy.store.remote import RemoteFactsWriter

        self._settings = settings
        try:
            db = self._busy_retry(lambda: connect(Path(settings["db"]), recorder=True))
        except RecordingError as error:
            self._fail(error)
            return
        self._facts = RemoteFactsWriter(db)

    def _open(self, key: int, settings: dict[str, Any]) -> None:
        from acp_proxy.store.writer import NewConnection, RecordingWriter

        writer = None
        if self._facts is not None:
            db = self._facts.db
            try:
                writer = self._busy_retry(
                    lambda: RecordingWriter.start(db, NewConnection(**settings), index=False)
                )
            except RecordingError as error:
                self._fail(error)
        connection = _Connection(writer, settings)
        if writer is not None:
            self._add_followers(connection, writer.connection_id)
        self._connections[key] = connection

    def _add_followers(self, connection: _Connection, connection_id: int) -> None:
        if self._settings.get("check"):
            from acp_proxy.record.live_check import LiveCheck, LiveSchemas

            if self._schemas is None:
                self._schemas = LiveSchemas(self._report)
            connection.live_check = LiveCheck(self._report, self._schemas)
            connection.live_check.set_connection(connection_id)
        if self._sinks is not None:

            def set_connection(**columns: object) -> None:
                connection.updates.update(columns)

            connection.sinks += self._sinks(
                self._settings, connection.settings, self._report, set_connection
            )

    def _batch(self) -> None:
        new_exchanges: list[tuple[int, dict[str, Any]]] = []
        exchange_updates: list[tuple[int, int, dict[str, Any]]] = []
        transports: list[TransportRow] = []
        written: list[tuple[_Connection, list[FrameRecord]]] = []
        exchanged: list[tuple[_Connection, list[Any], list[Any]]] = []  # for the sinks
        for connection in self._connections.values():
            writer = connection.writer
            records, connection.records = connection.records, []
            if writer is None:
                self._count_unrecorded(connection, records)
                connection.transports.clear()
                connection.new_exchanges.clear()
                connection.exchange_updates.clear()
                continue
            if records or connection.lost[0]:
                if not self._append(connection, writer, records):
                    connection.transports.clear()
                    continue
                written.append((connection, records))
            cid = writer.connection_id
            transports += [(cid, seq, ex, stream) for _, seq, ex, stream in connection.transports]
            new_exchanges += [(cid, columns) for columns in connection.new_exchanges]
            exchange_updates += [(cid, seq, cols) for seq, cols in connection.exchange_updates]
            if connection.sinks and (connection.new_exchanges or connection.exchange_updates):
                exchanged.append(
                    (connection, connection.new_exchanges, connection.exchange_updates)
                )
                connection.new_exchanges, connection.exchange_updates = [], []
            connection.transports.clear()
            connection.new_exchanges.clear()
            connection.exchange_updates.clear()
        facts = self._facts
        if facts is not None and (new_exchanges or exchange_updates or transports):
            try:
                self._busy_retry(lambda: facts.write(new_exchanges, exchange_updates, transports))
            except RecordingError as error:
                self._fail(error)
        for connection, records in written:
            self._tell_sinks(connection, records)
        if self._facts is not None:
            for connection, new, updates in exchanged:
                self._tell_exchanges(connection, new, updates)
        for key, connection in list(self._connections.items()):
            self._apply_updates(connection)
            if connection.closed is not None:
                self._finish(connection)
                del self._connections[key]

    def _append(
        self, connection: _Connection, writer: RecordingWriter, records: list[FrameRecord]
    ) -> bool:
        observer = connection.observer
        facts = observer.facts() if observer.facts_changed else None
        counts = [(d, t[0], t[1]) for d, t in connection.totals.items()]
        findings = (
            connection.live_check.frames(records) if connection.live_check is not None else []
        )
        lost = (connection.lost[0], connection.lost[1]) if connection.lost[0] else None
        try:
            too_long = self._busy_retry(
                lambda: writer.append(records, counts, facts, findings, lost=lost)
            )
        except RecordingError as error:
            self._fail(error)
            self._count_unrecorded(connection, records)
            return False
        if too_long:
            for record in too_long:
                connection.lost[0] += 1
                connection.lost[1] += len(record.raw)
            reason = f"a frame longer than the database takes ({writer.max_raw_bytes} bytes)"
            if reason not in connection.reasons:
                connection.reasons.append(reason)
            connection.updates.update(frames_lost=connection.lost[0], bytes_lost=connection.lost[1])
        return True

    def _tell_sinks(self, connection: _Connection, records: list[FrameRecord]) -> None:
        writer = connection.writer
        if writer is None or not records:
            return
        for sink in list(connection.sinks):
            try:
                sink.committed(writer.connection_id, records)
            except Exception as error:  # a sink never ends the recording
                connection.sinks.remove(sink)
                self._report(f"{type(sink).__name__} failed ({error}); recording goes on")

    def _tell_exchanges(
        self, connection: _Connection, new: list[Any], updates: list[Any]
    ) -> None:  # fmt: skip
        """The sinks that follow exchanges (``ExchangeSink``) hear of this batch's."""
        for sink in list(connection.sinks):
            exchanged = getattr(sink, "exchanged", None)
            if exchanged is None:
                continue
            try:
                exchanged(new, updates)
            except Exception as error:  # a sink never ends the recording
                connection.sinks.remove(sink)
                self._report(f"{type(sink).__name__} failed ({error}); recording goes on")

    def _apply_updates(self, connection: _Connection) -> None:
        writer = connection.writer
        if writer is None or not connection.updates:
            return
        updates, connection.updates = connection.updates, {}
        try:
            self._busy_retry(lambda: writer.update(**updates))
        except RecordingError as error:
            self._fail(error)

    def _finish(self, connection: _Connection) -> None:
        closed = connection.closed or {}
        for sink in list(connection.sinks):
            try:
                sink.close()
            except Exception as error:  # a sink never ends the recording
                self._report(f"{type(sink).__name__} failed ({error}); recording goes on")
        self._apply_updates(connection)  # what the sinks said when they closed
        writer = connection.writer
        self.frames_lost += connection.lost[0]
        if writer is None:
            return
        if connection.live_check is not None:
            findings = connection.live_check.finish()
            with contextlib.suppress(RecordingError):
                self._busy_retry(lambda: writer.append([], findings=findings))
        status = closed.get("status") or "closed"
        errors = [closed["error"]] if closed.get("error") else []
        if connection.lost[0]:
            status = "incomplete"
            errors.insert(0, "frames not recorded: " + "; ".join(connection.reasons))
        columns: dict[str, Any] = {
            "status": status, "ended_ns": closed.get("ended_ns") or time.time_ns(),
            "error": "; ".join(errors) or None,
            "recorder_pid": None,  # this process writes no more of it: no longer live
        }  # fmt: skip
        if connection.lost[0]:
            columns.update(frames_lost=connection.lost[0], bytes_lost=connection.lost[1])
        try:
            self._busy_retry(lambda: writer.update(**columns))
        except RecordingError as error:
            self._fail(error)
        writer.index_pending()

    def _idle(self) -> None:
        for connection in self._connections.values():
            if connection.writer is not None:
                connection.writer.index_pending(IDLE_INDEX_FRAMES)

    def _count_unrecorded(self, connection: _Connection, records: list[FrameRecord]) -> None:
        self.frames_lost += len(records)

    def _busy_retry(self, attempt: Callable[[], _T]) -> _T:
        return retry_while_busy(attempt, self._say_busy)

    def _say_busy(self, error: RecordingBusy) -> None:
        if not self._said_busy:
            self._said_busy = True
            self._report(f"{error}; waiting for it (frames are kept meanwhile)")

    def _fail(self, error: RecordingError) -> None:
        if self.error is None:
            self.error = str(error)
            self._report(f"{error}; forwarding continues, nothing more will be recorded")
        for connection in self._connections.values():
            connection.writer = None
        self._facts = None


def _read_pipe(fd: int, queue: ChunkQueue) -> None:
    """Drain the hub's pipe into the queue promptly, whole records at a time, until EOF."""
    rest = bytearray()
    size = pipe.HEADER.size
    try:
        while True:
            try:
                data = os.read(fd, READ_BYTES)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            if not data:
                return
            rest += data
            at = 0
            while len(rest) - at >= size:
                length = pipe.HEADER.unpack_from(rest, at)[-1]
                if len(rest) - at - size < length:
                    break
                at += size + length
            if at:
                queue.put(Direction.CLIENT_TO_AGENT, time.monotonic_ns(), bytes(rest[:at]))
                del rest[:at]
    finally:
        queue.close()


def record_from_pipe(
    fd: int, clock_origin: tuple[int, int], report: Reporter, committed_fd: int,
    sinks: SinkFactory | None = None,
) -> int:  # fmt: skip
    """The recorder process's work: read the hub's pipe until EOF; the exit status."""
    gc.disable()  # no reference cycles are made here; millions of rows would trigger it
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # it ends with the pipe
        signal.signal(signum, signal.SIG_IGN)
    recorder = HubRecorder(report, clock_origin, sinks)
    recorder.run(fd)
    outcome = b"0" if recorder.error is not None else b"2" if recorder.frames_lost else b"1"
    with contextlib.suppress(OSError):
        os.write(committed_fd, outcome)
        os.close(committed_fd)
    return {b"1": 0, b"0": 1}.get(outcome, 2)
