"""A real OTLP/HTTP trace receiver for tests: a standard-library HTTP server on 127.0.0.1.

Rules:
- It listens on a free port (port 0) of the loopback interface only, and decodes each
  ``POST /v1/traces`` body as an ``ExportTraceServiceRequest`` with ``opentelemetry-proto``
  (gzip bodies too), answering with an empty ``ExportTraceServiceResponse``.
- ``delay`` makes it a slow collector (each answer waits that long, in the handler thread);
  ``status`` makes it refuse (an HTTP status other than 200).
- ``python -m tests.support.otlp_receiver PORT_FILE`` runs one in its own process (for the
  benchmark): it writes its port to PORT_FILE and, at SIGTERM, the number of spans received.
"""

from __future__ import annotations

import gzip
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value_of(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


@dataclass
class ReceivedEvent:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class ReceivedSpan:
    """One span as the collector saw it (ids as hex, like trace UIs show them)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[ReceivedEvent]
    dropped_events: int
    links: list[tuple[str, str]]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    scope: str
    received_at: float  # time.monotonic() when it arrived


@dataclass
class Receiver:
    delay: float = 0.0
    status: int = 200
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    headers: list[dict[str, str]] = field(default_factory=list)  # of each POST, names lowercase
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def received(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        now = time.monotonic()
        found: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            resource = attributes_of(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            span.name,
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            span.kind,
                            span.start_time_unix_nano,
                            span.end_time_unix_nano,
                            attributes_of(span.attributes),
                            [
                                ReceivedEvent(e.name, e.time_unix_nano, attributes_of(e.attributes))
                                for e in span.events
                            ],
                            span.dropped_events_count,
                            [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                            span.status.code,
                            span.status.message,
                            resource,
                            scope_spans.scope.name,
                            now,
                        )
                    )
        with self.lock:
            self.requests += 1
            self.spans += found

    def wait_for(self, count: int, timeout: float = 20.0) -> list[ReceivedSpan]:
        """The spans once at least ``count`` have arrived (polled, with a deadline)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.spans) >= count:
                    return list(self.spans)
            time.sleep(0.02)
        raise AssertionError(f"only {len(self.spans)} of {count} spans arrived in {timeout}s")


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.lock:
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if receiver.delay:
                time.sleep(receiver.delay)  # a slow collector, on purpose
            if self.path != "/v1/traces" or receiver.status != 200:
                self.send_response(404 if self.path != "/v1/traces" else receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            receiver.received(body)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # an exporter that gave up on a slow answer closed its end: expected here


def start(delay: float = 0.0, status: int = 200) -> Receiver:
    receiver = Receiver(delay=delay, status=status)
    server = _Server(("127.0.0.1", 0), _handler(receiver))
    receiver.server = server
    threading.Thread(target=server.serve_forever, name="otlp receiver", daemon=True).start()
    return receiver


def stop(receiver: Receiver) -> None:
    if receiver.server is not None:
        receiver.server.shutdown()
        receiver.server.server_close()


def running(delay: float = 0.0, status: int = 200) -> Iterator[Receiver]:
    """For a fixture: a receiver for the duration of a test."""
    receiver = start(delay, status)
    try:
        yield receiver
    finally:
        stop(receiver)


def tree(spans: list[ReceivedSpan]) -> list[tuple[int, str]]:
    """(depth, name) in tree order, children by start time: to compare span trees."""
    by_parent: dict[str, list[ReceivedSpan]] = {}
    ids = {span.span_id for span in spans}
    for span in spans:
        parent = span.parent_id if span.parent_id in ids else ""
        by_parent.setdefault(parent, []).append(span)
    out: list[tuple[int, str]] = []

    def walk(parent: str, depth: int) -> None:
        for span in sorted(by_parent.get(parent, []), key=lambda s: (s.start_ns, s.name)):
            out.append((depth, span.name))
            walk(span.span_id, depth + 1)

    walk("", 0)
    return out


def main(argv: list[str]) -> int:
    receiver = start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    Path(argv[0]).write_text(str(receiver.port))
    stopped.wait()
    stop(receiver)
    Path(argv[0]).write_text(f"{receiver.port} {len(receiver.spans)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
