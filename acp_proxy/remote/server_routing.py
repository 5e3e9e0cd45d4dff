"""Sans-I/O: where a remote ACP agent sends each message over Streamable HTTP (replay's rules).

Rules (the transport RFD, and what both official SDKs' clients accept):
- The answer to ``initialize`` is the body of the POST that carried it (the caller waits for
  it); everything else travels on an event stream.
- A message for a session goes on that session's stream while the client holds one open, and
  on the connection's stream otherwise (a client that follows the RFD's single stream opens no
  other): an agent request or notification whose params name a ``sessionId``; the answer to a
  client request that was for a session (its ``Acp-Session-Id`` header, or its params'
  ``sessionId``). An answer that creates a session (its result names a ``sessionId`` the
  request did not) goes on the connection's stream, where the client is listening already.
- ``session_required``: the methods whose POST must carry ``Acp-Session-Id``, by the RFD.
- Peer bytes never raise: what is not JSON-RPC goes on the connection's stream.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from acp_proxy.protocol.jsonrpc import JsonId, Kind, decode, envelope, id_key

SESSION_SCOPED = frozenset(
    {"session/prompt", "session/cancel", "session/set_mode", "session/set_config_option",
     "session/close"}
)  # fmt: skip


def session_of(payload: Any) -> str | None:
    if isinstance(payload, dict):
        session = payload.get("sessionId")
        if isinstance(session, str):
            return session
    return None


def session_required(method: str | None) -> bool:
    return method in SESSION_SCOPED


class ServerRoutes:
    def __init__(self) -> None:
        self._request_sessions: dict[tuple[str, JsonId], str | None] = {}

    def client_message(self, raw: bytes, header_session: str | None) -> None:
        """A message the client POSTed (with its ``Acp-Session-Id``, if any)."""
        value, failure = decode(raw)
        if failure is not None:
            return
        kind, rpc_id, _, payload, _ = envelope(value)
        if kind is Kind.REQUEST:
            self._request_sessions[id_key(rpc_id)] = header_session or session_of(payload)

    def destination(self, raw: bytes, open_sessions: Container[str]) -> str | None:
        """The session whose stream takes this agent message, or None: the connection's."""
        value, failure = decode(raw)
        if failure is not None:
            return None
        kind, rpc_id, _, payload, _ = envelope(value)
        if kind in (Kind.RESPONSE, Kind.ERROR):
            session = self._request_sessions.pop(id_key(rpc_id), None)
            if kind is Kind.RESPONSE and session is None and session_of(payload) is not None:
                return None  # a new session: the client is not listening on its stream yet
        elif kind in (Kind.REQUEST, Kind.NOTIFICATION):
            session = session_of(payload)
        else:
            return None
        return session if session is not None and session in open_sessions else None


def answers(raw: bytes, rpc_id: JsonId) -> bool:
    """Whether ``raw`` is the answer (result or error) to the request ``rpc_id``."""
    value, failure = decode(raw)
    if failure is not None:
        return False
    kind, answered, _, _, _ = envelope(value)
    return kind in (Kind.RESPONSE, Kind.ERROR) and id_key(answered) == id_key(rpc_id)
