"""Sans-I/O: the spans of one connection while they are made, and what every kind of span
(session, turn, tool call, request) does to a span: events, failure, a remote parent, its end.

Rules:
- Every span id is derived from the connection's uid and what the span stands for
  (``new_span``'s ``key``): the same frames always give the same spans.
- A span is handed out once, when it ends (``emit``); ``take`` hands out what has ended since
  the last call. Once a span is out, the connection's trace is fixed (``spans_out``).
- At most ``Options.max_events`` events per span; the rest are counted in ``dropped_events``.
- The peer text every span may carry goes through ``Options.text``; content only through
  ``Options.content`` (None: none), and the helpers here never raise on an unexpected shape.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from acp_proxy.otel.span_values import (
    ERROR,
    INTERNAL,
    Attributes,
    ConnectionInfo,
    Event,
    Options,
    Span,
    SpanRef,
)
from acp_proxy.otel.trace_ids import parse_traceparent, span_id_of, trace_id_of
from acp_proxy.protocol.observer import StoredFrameLike

CONNECTION_SPAN = "acp connection"
CALLER = {"c2a": "client", "a2c": "agent"}


def to_json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers past 64 bits, which orjson refuses
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def remote_parent(params: Any) -> SpanRef | None:
    """The span a ``traceparent`` in ``params._meta`` names, if any."""
    meta = as_dict(params).get("_meta")
    return parse_traceparent(meta.get("traceparent")) if isinstance(meta, dict) else None


class SpanTree:
    """The connection's span, the spans ended and not yet handed out, and the operations on a
    span that every kind of span shares."""

    def __init__(self, connection: ConnectionInfo, options: Options) -> None:
        self.uid = connection.uid
        self.options = options
        self.content = options.content
        self.text = options.text
        self.max_events = options.max_events
        remote = connection.transport != "stdio"
        attributes: Attributes = {
            "acp.connection.uid": connection.uid, "network.transport": "tcp" if remote else "pipe",
        }  # fmt: skip
        if remote:
            attributes["acp.transport"] = connection.transport
        if connection.label:
            attributes["acp.connection.label"] = self.text(connection.label)
        self.connection = Span(
            CONNECTION_SPAN, trace_id_of(connection.uid), span_id_of(connection.uid, "connection"),
            None, False, INTERNAL, connection.started_ns, attributes=attributes,
        )  # fmt: skip
        self.spans_out = False
        self._out: list[Span] = []

    def new_span(
        self, name: str, parent: Span, key: str, kind: str, start_ns: int, attributes: Attributes,
        remote: SpanRef | None = None,
    ) -> Span:  # fmt: skip
        """A span under ``parent`` (or under ``remote``, ``parent`` then its link)."""
        span = Span(
            name, parent.trace_id, span_id_of(self.uid, key), parent.ref, False, kind, start_ns,
            attributes=attributes,
        )  # fmt: skip
        if remote is not None:
            reparent(span, remote, parent.ref)
        return span

    def event(self, span: Span, name: str, frame: StoredFrameLike, attributes: Attributes) -> None:
        if len(span.events) >= self.max_events:
            span.dropped_events += 1
            return
        attributes["acp.frame.seq"] = frame.seq
        caller = CALLER.get(frame.direction)
        if caller is not None:
            attributes["acp.caller"] = caller
        span.events.append(Event(name, frame.wall_ns, attributes))

    def fail(self, span: Span, error_type: str, message: str | None) -> None:
        span.attributes["error.type"] = error_type
        span.status = ERROR
        if message:
            span.status_message = self.text(message)

    def emit(self, span: Span, end_ns: int) -> None:
        span.end_ns = max(end_ns, span.start_ns)
        self.spans_out = True
        self._out.append(span)

    def take(self) -> list[Span]:
        out, self._out = self._out, []
        return out


def reparent(span: Span, remote: SpanRef, structural: SpanRef | None) -> None:
    """``span`` becomes a child of the remote span; its structural parent, a link."""
    span.trace_id = remote.trace_id
    span.parent = remote
    span.parent_remote = True
    if structural is not None:
        span.links.append(structural)


def stop(span: Span, stop_reason: str | None) -> None:
    if stop_reason is not None:
        span.attributes["acp.stop_reason"] = stop_reason
        span.attributes["gen_ai.response.finish_reasons"] = (stop_reason,)
