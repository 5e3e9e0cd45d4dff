"""OTLP over HTTP (protobuf) with the OpenTelemetry SDK: span values (spans.py) out to a collector.

Rules:
- The SDK (the optional ``otel`` extra) is imported only when something is exported;
  ``missing_extra`` (the package's) says in one line what to install when it is not there.
- Where to: the URL given (``--endpoint``, ``record --otlp URL``) is a base URL like
  ``OTEL_EXPORTER_OTLP_ENDPOINT``: ``/v1/traces`` is added when it has no path. Without one,
  the SDK's standard variables decide (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as is,
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` plus ``/v1/traces``, else ``http://localhost:4318``), and so
  do they for headers, timeout, compression and certificates (``OTEL_EXPORTER_OTLP_*``).
- The resource: ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``; ``service.name`` is
  ``acp-proxy`` unless they name one. Span limits: the SDK's ``OTEL_SPAN_*`` and
  ``OTEL_ATTRIBUTE_*`` variables; attribute values are cut at 64 KiB unless a length limit is
  set there (content can hold whole files).
- The SDK's own log lines are silenced (they would be tracebacks on the proxy's stderr); a
  failed send comes back as one line of text for the caller to say.
- Nothing here reads the recording database: ``export_frames`` takes frames from the caller.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from acp_proxy import __version__
from acp_proxy.otel import span_values as values
from acp_proxy.otel import spans as model
from acp_proxy.protocol.observer import StoredFrameLike

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

TRACES_PATH = "/v1/traces"
DEFAULT_SERVICE = "acp-proxy"
DEFAULT_ATTRIBUTE_LENGTH = 64 * 1024
LENGTH_VARIABLES = ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
EVENT_LIMIT_VARIABLE = "OTEL_SPAN_EVENT_COUNT_LIMIT"
BATCH_SPANS = 512


def traces_endpoint(url: str | None) -> str | None:
    """The traces URL for a base URL given on the command line (None: the environment's)."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + TRACES_PATH
    return url


def described_endpoint(url: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """Where spans go, for messages (the same choice the SDK makes)."""
    chosen = traces_endpoint(url)
    if chosen:
        return chosen
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return base.rstrip("/") + TRACES_PATH


def max_events(environ: Mapping[str, str] = os.environ) -> int:
    try:
        return max(0, int(environ.get(EVENT_LIMIT_VARIABLE, values.MAX_EVENTS)))
    except ValueError:
        return values.MAX_EVENTS


def builder_options(content: bool, environ: Mapping[str, str] = os.environ) -> values.Options:
    """Span options: always the redactor for peer text; content through it only if asked."""
    from acp_proxy.share.redact import Redactor
    from acp_proxy.share.redaction_io import finder_for

    redactor = Redactor(finder_for(environ))

    def redact_value(value: Any, method: str | None) -> Any:
        return redactor.value(value, method)[0]

    return values.Options(
        content=redact_value if content else None, text=redactor.text,
        max_events=max_events(environ),
    )  # fmt: skip


_ERRNO = re.compile(r"\[Errno -?\d+\][^\"')]*")


class _LastMessage(logging.Handler):
    """Keeps the SDK's last complaint (as one short line) instead of printing it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.message = ""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed log call must not break the export
            text = str(record.msg)
        if "aborting retry" in text or "due to timeout" in text:
            return  # a summary without the reason: the one before it (or ``_diagnose``) says it
        errno = _ERRNO.search(text)
        if errno:
            self.message = errno.group(0).strip()
        elif not _ERRNO.match(self.message):  # a reason with an errno beats what follows it
            self.message = " ".join(text.split())[:200]


def _diagnose(endpoint: str) -> str:
    """Why a send failed when the SDK gave up without saying (its time ran out while retrying)."""
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=1.0):
            pass
    except OSError as error:
        return (
            str(error)
            if isinstance(error, TimeoutError)
            else f"[Errno {error.errno}] {error.strerror}"
        )
    return "the collector did not take the spans within the export timeout"


def _quiet_sdk_logs() -> logging.Logger:
    """The SDK's loggers, kept off stderr for good (they print tracebacks and retries)."""
    sdk_log = logging.getLogger("opentelemetry")
    sdk_log.propagate = False
    if not any(isinstance(h, logging.NullHandler) for h in sdk_log.handlers):
        sdk_log.addHandler(logging.NullHandler())
    return sdk_log


@dataclass(slots=True)
class SendResult:
    sent: int = 0
    failed: int = 0
    error: str | None = None  # the last failure, one line


class OtlpSender:
    """Sends span values over OTLP/HTTP; never raises for the collector's sake."""

    def __init__(self, endpoint: str | None = None, timeout: float | None = None) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self._complaints = _LastMessage()
        _quiet_sdk_logs().addHandler(self._complaints)
        self.endpoint = described_endpoint(endpoint)
        self._exporter = OTLPSpanExporter(endpoint=traces_endpoint(endpoint), timeout=timeout)
        resource = Resource.create({"service.version": __version__})
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE}))
        self.resource = resource
        if any(os.environ.get(name) for name in LENGTH_VARIABLES):
            self._limits = SpanLimits()
        else:
            self._limits = SpanLimits(max_span_attribute_length=DEFAULT_ATTRIBUTE_LENGTH)
        self._scope = InstrumentationScope("acp-proxy", __version__)

    def send(self, batch: Sequence[values.Span]) -> str | None:
        """Send spans; None when the collector took them, else why not (one line)."""
        if not batch:
            return None
        from opentelemetry.sdk.trace.export import SpanExportResult

        self._complaints.message = ""
        try:
            outcome = self._exporter.export([self.readable(span) for span in batch])
        except Exception as error:  # the SDK should not raise; a peer value must not crash us
            return f"{type(error).__name__}: {error}"
        if outcome is SpanExportResult.SUCCESS:
            return None
        return self._complaints.message or _diagnose(self.endpoint)

    def shutdown(self) -> None:
        """Stop: an export waiting to retry gives up at once."""
        try:
            self._exporter.shutdown()  # type: ignore[no-untyped-call]
        finally:
            logging.getLogger("opentelemetry").removeHandler(self._complaints)

    def readable(self, span: values.Span) -> ReadableSpan:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.sdk.util import BoundedList
        from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
        from opentelemetry.trace.status import Status, StatusCode

        kinds = {values.CLIENT: SpanKind.CLIENT, values.SERVER: SpanKind.SERVER}
        limits = self._limits
        sampled = TraceFlags(TraceFlags.SAMPLED)

        def context(ref: values.SpanRef, remote: bool = False) -> SpanContext:
            return SpanContext(ref.trace_id, ref.span_id, is_remote=remote, trace_flags=sampled)

        def attributes(values: values.Attributes, limit: int | None) -> BoundedAttributes:
            return BoundedAttributes(
                limit, values, immutable=True, max_value_len=limits.max_span_attribute_length
            )

        events = BoundedList.from_seq(
            limits.max_events,
            [
                Event(e.name, attributes(e.attributes, limits.max_event_attributes), e.time_ns)
                for e in span.events
            ],
        )
        events.dropped += span.dropped_events
        links = [
            Link(context(link), attributes({}, limits.max_link_attributes))
            for link in span.links[: limits.max_links]
        ]
        status = (
            Status(StatusCode.ERROR, span.status_message or None)
            if span.status == values.ERROR
            else Status(StatusCode.UNSET)
        )
        return ReadableSpan(
            name=span.name,
            context=context(values.SpanRef(span.trace_id, span.span_id)),
            parent=context(span.parent, span.parent_remote) if span.parent else None,
            resource=self.resource,
            attributes=attributes(span.attributes, limits.max_span_attributes),
            events=events,
            links=links,
            kind=kinds.get(span.kind, SpanKind.INTERNAL),
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=self._scope,
        )


def export_frames(
    frames: Iterable[StoredFrameLike],
    connection: values.ConnectionInfo,
    options: values.Options,
    sender: OtlpSender,
    batch_spans: int = BATCH_SPANS,
    exchanges: Iterable[dict[str, Any]] = (),
) -> SendResult:
    """Build the spans of one recorded connection and send them, ``batch_spans`` at a time.

    ``exchanges``: a remote connection's HTTP requests, one server span each (http_spans.py).
    Stops at the first batch the collector refuses (``error`` says why).
    """
    result = SendResult()
    builder = model.SpanBuilder(connection, options)
    pending: list[values.Span] = []

    def flush() -> bool:
        error = sender.send(pending)
        if error is None:
            result.sent += len(pending)
        else:
            result.failed += len(pending)
            result.error = error
        pending.clear()
        return error is None

    for frame in frames:
        pending += builder.feed(frame)
        if len(pending) >= batch_spans and not flush():
            return result  # the collector is not taking spans: do not wait on it batch by batch
    pending += builder.finish()
    from acp_proxy.otel.http_spans import exchange_spans

    pending += exchange_spans(connection.uid, exchanges, options.text)
    flush()
    return result
