"""Sans-I/O: one HTTP server span per request of a remote connection (docs/otel.md).

Rules:
- A connection recorded from ACP's remote transport (``record --listen``) had HTTP requests:
  each becomes a ``server`` span, child of the connection's span, in the connection's trace,
  its id derived from the uid and the exchange's ``seq`` (the same recording, the same spans).
  It is named ``METHOD /path`` (OpenTelemetry's HTTP conventions: the route, never the query,
  which may hold a token) and spans from the request's arrival to its end (an event stream or
  a WebSocket lives as long as it was open; a request that never ended, to its answer).
- Attributes follow the HTTP semantic conventions (``http.request.method``, ``url.path``,
  ``http.response.status_code``, ``network.protocol.version``) plus what ACP adds:
  ``acp.transport.stream`` (post, connection_sse, session_sse, delete, websocket) and the
  ``Acp-Session-Id`` the request named. Header values are never sent.
- A 5xx answer or a recorded error is the span's error status; peer text goes through the
  caller's ``text`` filter. Values of unexpected types are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from acp_proxy.otel.span_values import ERROR, SERVER, Attributes, Span, SpanRef
from acp_proxy.otel.trace_ids import span_id_of, trace_id_of


def _same(text: str) -> str:
    return text


def exchange_spans(
    uid: str, exchanges: Iterable[dict[str, Any]], text: Callable[[str], str] = _same
) -> list[Span]:
    """The server span of every exchange (rows as store/remote.py's ``exchanges`` gives them)."""
    trace = trace_id_of(uid)
    parent = SpanRef(trace, span_id_of(uid, "connection"))
    spans = []
    for row in exchanges:
        seq, started = row.get("seq"), row.get("started_ns")
        if not isinstance(seq, int) or not isinstance(started, int):
            continue
        method = row.get("method") if isinstance(row.get("method"), str) else "HTTP"
        path = _path(row.get("target"))
        ended = next(
            (row[k] for k in ("ended_ns", "answered_ns") if isinstance(row.get(k), int)), started
        )
        attributes: Attributes = {"http.request.method": str(method), "url.path": text(path)}
        status = row.get("status")
        if isinstance(status, int):
            attributes["http.response.status_code"] = status
        for column, name in (("http_version", "network.protocol.version"),
                             ("stream", "acp.transport.stream"),
                             ("acp_session_id", "acp.session.id")):  # fmt: skip
            value = row.get(column)
            if isinstance(value, str):
                attributes[name] = text(value)
        span = Span(
            f"{method} {text(path)}", trace, span_id_of(uid, f"http\0{seq}"), parent, False,
            SERVER, started, max(ended, started), attributes=attributes,
        )  # fmt: skip
        error = row.get("error")
        if (isinstance(status, int) and status >= 500) or isinstance(error, str):
            span.status = ERROR
            span.status_message = text(error) if isinstance(error, str) else f"HTTP {status}"
        spans.append(span)
    return spans


def _path(target: Any) -> str:
    if not isinstance(target, str):
        return "/"
    try:
        return urlsplit(target).path or "/"
    except ValueError:
        return "/"
