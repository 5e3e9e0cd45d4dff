"""Sans-I/O: the values of OpenTelemetry export: spans, their events and references, options.

Rules:
- Plain dataclasses; a ``Span`` is final once the builder (spans.py) hands it out, and the
  exporter (export.py) only reads it.
- ``Options.content`` decides what peer content a span may carry (None: none); ``Options.text``
  passes every other peer text (titles, names, error messages) and is the identity by default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

AttributeValue = str | bool | int | float | tuple[str, ...]
Attributes = dict[str, AttributeValue]
# Redacts one JSON value (the method of its message is given for the redactor's rules).
ContentFilter = Callable[[Any, str | None], Any]

INTERNAL, CLIENT, SERVER = "internal", "client", "server"
UNSET, ERROR = "unset", "error"
MAX_EVENTS = 128


class Event(NamedTuple):
    """A span event: a notification of the span it belongs to (one is made per notification,
    so a tuple)."""

    name: str
    time_ns: int
    attributes: Attributes


@dataclass(frozen=True, slots=True)
class SpanRef:
    """A span by its ids (a parent, a link, a remote span from a ``traceparent``)."""

    trace_id: int
    span_id: int


@dataclass(slots=True)
class Span:
    """One span; final once handed out by ``SpanBuilder``."""

    name: str
    trace_id: int
    span_id: int
    parent: SpanRef | None
    parent_remote: bool
    kind: str
    start_ns: int
    end_ns: int = 0
    attributes: Attributes = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    dropped_events: int = 0
    links: list[SpanRef] = field(default_factory=list)
    status: str = UNSET
    status_message: str = ""

    @property
    def ref(self) -> SpanRef:
        return SpanRef(self.trace_id, self.span_id)


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """What the builder knows of the connection before its first frame."""

    uid: str
    started_ns: int
    label: str | None = None
    transport: str = "stdio"  # or http, websocket: a remote connection (otel/http_spans.py)


def _same(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Options:
    content: ContentFilter | None = None
    text: Callable[[str], str] = _same
    max_events: int = MAX_EVENTS
