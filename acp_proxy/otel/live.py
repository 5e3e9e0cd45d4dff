"""``record --otlp``: the spans of the connection being recorded, sent while it is recorded.

Rules:
- ``LiveExport`` is a recorder sink (record/recorder.py): ``committed`` runs on the recorder
  thread, in the recorder process, and only appends the batch to a queue bounded in frames and
  bytes. A batch that does not fit is dropped whole and its frames are counted; ``committed``
  never waits for anything but a short lock. Forwarding never sees any of this.
- One exporter thread, started by the constructor (it inherits the recorder thread's idle
  scheduling class when started from there), builds the spans (spans.py) and sends them
  (export.py) in batches: at most ``SEND_SECONDS`` after they end, or at ``BATCH_SPANS``.
- A batch the collector does not take is dropped and counted; the exporter then rests for
  ``REST_SECONDS`` (spans ended meanwhile are counted as dropped) instead of waiting on a
  collector that is down batch after batch, and tries again.
- The first drop, of either kind, is said once on stderr; ``close`` stores both counts in the
  connection's row (``otlp_frames_dropped``, ``otlp_spans_dropped``) through ``set_connection``.
- A remote connection's HTTP exchanges (``exchanged``, record/hub_recorder.py) are queued the
  same way (bounded in count; what does not fit is a dropped span); the exporter merges what
  each learns and sends its server span (http_spans.py, the same function ``export --format
  otlp`` uses, so live and exported spans are the same) once the exchange has ended, or at
  ``close`` for one that never did.
- ``close`` lets the exporter build the last spans (the sessions, the connection) from what is
  queued (local work, bounded by the queue; at most ``BUILD_SECONDS``), then gives it up to
  ``CLOSE_SECONDS`` to send them, then stops it: whatever was not sent by then counts as
  dropped. So a collector that is down or slow delays the proxy's exit by at most that.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from acp_proxy.otel import missing_extra
from acp_proxy.otel import span_values as values
from acp_proxy.otel import spans as model
from acp_proxy.otel.export import BATCH_SPANS, OtlpSender, builder_options
from acp_proxy.otel.http_spans import exchange_spans
from acp_proxy.protocol.observer import FrameRecord
from acp_proxy.stderr import Reporter

MAX_QUEUED_FRAMES = 65_536
MAX_QUEUED_BYTES = 32 * 1024 * 1024
MAX_QUEUED_EXCHANGES = 65_536
SEND_SECONDS = 0.2
REST_SECONDS = 5.0
CLOSE_SECONDS = 2.0
BUILD_SECONDS = 30.0

SetConnection = Callable[..., None]


class LiveExport:
    """Follows one recording and sends its spans as they end."""

    def __init__(
        self,
        connection: values.ConnectionInfo,
        options: values.Options,
        sender: OtlpSender,
        report: Reporter,
        set_connection: SetConnection,
        *,
        max_frames: int = MAX_QUEUED_FRAMES,
        max_bytes: int = MAX_QUEUED_BYTES,
        close_seconds: float = CLOSE_SECONDS,
        rest_seconds: float = REST_SECONDS,
    ) -> None:
        self._builder = model.SpanBuilder(connection, options)
        self._uid, self._text = connection.uid, options.text
        self._exchange_queue: deque[tuple[int, dict[str, Any]]] = deque()  # (seq, columns)
        self._exchanges: dict[int, dict[str, Any]] = {}  # exchanges begun, not ended yet
        self._sender = sender
        self._report = report
        self._set_connection = set_connection
        self._max_frames, self._max_bytes = max_frames, max_bytes
        self._close_seconds, self._rest_seconds = close_seconds, rest_seconds
        self._queue: deque[Sequence[FrameRecord]] = deque()
        self._queued_frames = self._queued_bytes = 0
        self._closing = False
        self._wake = threading.Condition()
        self.frames_dropped = 0
        self.spans_dropped = 0
        self.spans_sent = 0
        self._said = False
        self._resting_until = 0.0
        self._unsent = self._open_spans = 0
        self._finished = self._abandoned = False
        self._built = threading.Event()  # the last spans are built (only sending remains)
        self._sending = False
        self._thread = threading.Thread(target=self._run, name="acp-proxy otlp", daemon=True)
        self._thread.start()

    # --- recorder thread -------------------------------------------------------------------

    def committed(self, connection_id: int, records: Sequence[FrameRecord]) -> None:
        size = sum(record.size for record in records)
        with self._wake:
            if (
                self._queued_frames + len(records) > self._max_frames
                or self._queued_bytes + size > self._max_bytes
            ):
                self.frames_dropped += len(records)
                dropped = True
            else:
                self._queue.append(records)
                self._queued_frames += len(records)
                self._queued_bytes += size
                self._wake.notify()
                dropped = False
        if dropped:
            self._say_once(
                f"OTLP export to {self._sender.endpoint} is falling behind (a slow or unreachable "
                "collector?): frames are left out of the trace (the recording is complete)"
            )

    def exchanged(
        self, new: Sequence[dict[str, Any]], updates: Sequence[tuple[int, dict[str, Any]]]
    ) -> None:
        """HTTP exchanges begun and learnt about (an ``ExchangeSink``; see the rules)."""
        events = [(int(row["seq"]), row) for row in new] + list(updates)
        with self._wake:
            dropped = len(self._exchange_queue) + len(events) > MAX_QUEUED_EXCHANGES
            if dropped:  # the exchanges begun here are spans lost; the updates are let go
                self.spans_dropped += len(new)
            else:
                self._exchange_queue.extend(events)
                self._wake.notify()
        if dropped:
            self._say_once(
                f"OTLP export to {self._sender.endpoint} is falling behind (a slow or unreachable "
                "collector?): HTTP spans are left out of the trace (the recording is complete)"
            )

    def close(self) -> None:
        with self._wake:
            self._closing = True
            self._wake.notify()
        # Building the last spans is local work bounded by the queue: it may take its time.
        # Sending them waits on the collector: that gets ``close_seconds``.
        deadline = time.monotonic() + BUILD_SECONDS
        while not self._built.wait(0.05):
            if self._sending or time.monotonic() > deadline:
                break  # it waits on the collector: that time is counted from now
        self._thread.join(self._close_seconds)
        late = self._thread.is_alive()
        self._sender.shutdown()  # a send still retrying gives up now
        if late:  # the collector is slow: what is not sent by now is lost
            self._thread.join(1.0)
        with self._wake:
            if self._thread.is_alive():
                self._abandoned = True
                self.frames_dropped += self._queued_frames
                self.spans_dropped += self._unsent + (0 if self._finished else self._open_spans)
            self._queue.clear()
            self._queued_frames = self._queued_bytes = 0
        if late:
            self._say_once(
                f"OTLP export to {self._sender.endpoint} did not finish in time: the last spans "
                "are dropped (the recording is complete)"
            )
        counts: dict[str, Any] = {}
        if self.frames_dropped:
            counts["otlp_frames_dropped"] = self.frames_dropped
        if self.spans_dropped:
            counts["otlp_spans_dropped"] = self.spans_dropped
        if counts:
            self._set_connection(**counts)

    # --- exporter thread -------------------------------------------------------------------

    def _run(self) -> None:
        pending: list[values.Span] = []
        oldest = 0.0
        while True:
            with self._wake:
                if not self._queue and not self._exchange_queue and not self._closing:
                    self._wake.wait(SEND_SECONDS if pending else None)
                batches = list(self._queue)
                self._queue.clear()
                self._queued_frames = self._queued_bytes = 0
                exchanges = list(self._exchange_queue)
                self._exchange_queue.clear()
                closing = self._closing
            for records in batches:
                for record in records:
                    ended = self._builder.feed(record)
                    if ended and not pending:
                        oldest = time.monotonic()
                    pending += ended
            if exchanges:
                ended = self._exchange_spans(exchanges)
                if ended and not pending:
                    oldest = time.monotonic()
                pending += ended
            if closing:
                pending += self._builder.finish()
                pending += exchange_spans(self._uid, self._exchanges.values(), self._text)
                self._exchanges.clear()
                self._finished = True
            open_spans = self._builder.open_spans() + len(self._exchanges)
            self._unsent, self._open_spans = len(pending), open_spans
            if closing:
                self._built.set()
                self._send(pending)
                return
            if pending and (
                len(pending) >= BATCH_SPANS or time.monotonic() - oldest >= SEND_SECONDS
            ):
                self._send(pending)
                pending = []

    def _exchange_spans(self, events: list[tuple[int, dict[str, Any]]]) -> list[values.Span]:
        """Merge what ``events`` say into the exchanges; the spans of those that ended."""
        touched = set()
        for seq, columns in events:
            row = self._exchanges.get(seq)
            if row is None and "started_ns" not in columns:
                continue  # learnt after its span was sent (nothing a span carries comes later)
            self._exchanges.setdefault(seq, {"seq": seq}).update(columns)
            touched.add(seq)
        ended = [s for s in sorted(touched) if self._exchanges[s].get("ended_ns") is not None]
        return exchange_spans(self._uid, [self._exchanges.pop(s) for s in ended], self._text)

    def _send(self, batch: list[values.Span]) -> None:
        if not batch:
            return
        if time.monotonic() < self._resting_until:
            self._count(sent=0, dropped=len(batch))
            return
        self._sending = True
        try:
            error = self._sender.send(batch)
        finally:
            self._sending = False
        if error is None:
            self._count(sent=len(batch), dropped=0)
            return
        self._count(sent=0, dropped=len(batch))
        self._resting_until = time.monotonic() + self._rest_seconds
        self._say_once(
            f"OTLP export to {self._sender.endpoint} failed ({error}): spans are dropped "
            "(the recording is complete)"
        )

    def _count(self, *, sent: int, dropped: int) -> None:
        with self._wake:
            if self._abandoned:  # ``close`` has already counted this batch as lost
                return
            self.spans_sent += sent
            self.spans_dropped += dropped
            self._unsent = 0

    def _say_once(self, message: str) -> None:
        """The first trouble is said; the counts in the connection's row tell the rest."""
        with self._wake:
            if self._said:
                return
            self._said = True
        self._report(message)


def start_live_export(
    settings: dict[str, Any], connection: dict[str, Any], report: Reporter,
    set_connection: SetConnection,
) -> LiveExport | None:  # fmt: skip
    """The sink for ``record --otlp`` (settings from the proxy), or None if it cannot start."""
    missing = missing_extra()
    if missing is not None:
        report(f"{missing}; recording without it")
        return None
    try:
        sender = OtlpSender(settings.get("endpoint"))
    except Exception as error:  # a bad URL or certificate: say it, record without export
        report(f"cannot export to OTLP ({error}); recording without it")
        return None
    info = values.ConnectionInfo(
        str(connection["uid"]),
        int(connection["started_ns"]),
        connection.get("label"),
        str(connection.get("transport") or "stdio"),
    )
    options = builder_options(bool(settings.get("content")))
    return LiveExport(info, options, sender, report, set_connection)
