"""Sans-I/O: how a remote connection was carried, as values every reader shares.

Rules:
- ``Exchange`` is one HTTP request of a remote connection (a WebSocket upgrade is one for the
  whole socket) as the store keeps it (docs/recording-format.md, format 8: ``http_exchange``),
  reduced to what readers judge by: method, stream, status, the request's ``Acp-Session-Id``
  and the names of the answer's headers (never their values).
- ``Transport`` is a connection's exchanges by ``seq`` and, per frame, the exchange and stream
  it crossed on (``frame_transport``). A stdio connection has none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Exchange:
    seq: int
    method: str | None
    stream: str | None  # post, connection_sse, session_sse, delete, websocket, other
    status: int | None
    acp_session_id: str | None  # the request's Acp-Session-Id header
    answer_headers: frozenset[str]  # the answer's header names, lower case


@dataclass(frozen=True, slots=True)
class Transport:
    kind: str  # "http" or "websocket"
    exchanges: dict[int, Exchange]
    frames: dict[int, tuple[int, str]]  # frame seq -> (exchange seq, stream)
