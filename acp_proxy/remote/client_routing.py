"""Sans-I/O: how a remote ACP client routes messages over Streamable HTTP (the bridge's rules).

Rules (the transport RFD, as both official SDKs' clients apply it, so that either SDK's server
accepts what the bridge sends):
- ``initialize`` (a request) is POSTed without ``Acp-Connection-Id``; its answer is the POST's
  body, with the connection id in a header. Every other message is POSTed with the connection
  id.
- A message for a session carries ``Acp-Session-Id``: a request or notification whose params
  name a ``sessionId``; an answer to an agent request that came on a session's stream (or whose
  params named one). Before such a POST, that session's stream is open (``sessions_to_open``).
- A result that names a ``sessionId`` (``session/new``, ``session/load`` ...) opens that
  session's stream; so does a session seen first in a message the client sends.
- The client's requests still unanswered are kept (``pending``): when the remote end fails, each
  gets an error answer, as the stdio side would otherwise wait for ever.
- Peer bytes never raise: a message that is not JSON-RPC is POSTed as it is, with no session.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from acp_proxy.protocol.jsonrpc import JsonId, Kind, decode, envelope, id_key

INITIALIZE = "initialize"
FAILURE_CODE = -32603  # JSON-RPC internal error: the remote end could not be reached


class Outgoing(NamedTuple):
    initialize: bool  # POSTed without a connection id; the answer is the body
    session: str | None  # the Acp-Session-Id header, if any
    request_id: JsonId  # the id of a client request (to answer it on failure), else None
    is_request: bool


def _session_of(payload: Any) -> str | None:
    if isinstance(payload, dict):
        session = payload.get("sessionId")
        if isinstance(session, str):
            return session
    return None


class ClientRoutes:
    def __init__(self) -> None:
        self.pending: dict[tuple[str, JsonId], JsonId] = {}  # the client's unanswered requests
        self._agent_request_sessions: dict[tuple[str, JsonId], str] = {}
        self.known_sessions: set[str] = set()

    def outgoing(self, raw: bytes) -> Outgoing:
        """Where the client's message goes (and remember its request, if it is one)."""
        value, failure = decode(raw)
        if failure is not None:
            return Outgoing(False, None, None, False)
        kind, rpc_id, method, payload, _ = envelope(value)
        if kind is Kind.REQUEST:
            self.pending[id_key(rpc_id)] = rpc_id
            session = _session_of(payload)
            return Outgoing(method == INITIALIZE, session, rpc_id, True)
        if kind is Kind.NOTIFICATION:
            return Outgoing(False, _session_of(payload), None, False)
        if kind in (Kind.RESPONSE, Kind.ERROR):
            session = self._agent_request_sessions.pop(id_key(rpc_id), None)
            return Outgoing(False, session, None, False)
        return Outgoing(False, None, None, False)

    def incoming(self, raw: bytes, stream_session: str | None) -> list[str]:
        """A message from the agent (on ``stream_session``'s stream, or the connection's).

        Returns the sessions whose streams should now be opened.
        """
        value, failure = decode(raw)
        if failure is not None:
            return []
        kind, rpc_id, _, payload, _ = envelope(value)
        opened: list[str] = []
        if kind in (Kind.RESPONSE, Kind.ERROR):
            self.pending.pop(id_key(rpc_id), None)
            session = _session_of(payload) if kind is Kind.RESPONSE else None
            if session is not None:
                opened.append(session)
        elif kind is Kind.REQUEST:
            session = stream_session or _session_of(payload)
            if session is not None:
                self._agent_request_sessions[id_key(rpc_id)] = session
        return [s for s in opened if self.new_session(s)]

    def new_session(self, session: str) -> bool:
        """Whether ``session`` is seen for the first time (its stream is then to be opened)."""
        if session in self.known_sessions:
            return False
        self.known_sessions.add(session)
        return True

    def failure_answers(self, reason: str) -> list[bytes]:
        """An error answer (one line each) for every request still waiting; forgets them."""
        lines = [failure_answer(rpc_id, reason) for rpc_id in self.pending.values()]
        self.pending.clear()
        return lines


def failure_answer(rpc_id: JsonId, reason: str) -> bytes:
    """A JSON-RPC error line answering ``rpc_id`` with ``reason``."""
    error = {"code": FAILURE_CODE, "message": f"acp-proxy: {reason}"}
    return orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": error}) + b"\n"


def as_line(payload: bytes) -> bytes:
    """A message from the remote end as one stdio line.

    Line breaks can only be whitespace between JSON tokens (JSON strings hold them escaped), so
    each becomes a space: the line says the same and keeps its length. Anything else is kept.
    """
    payload = payload.rstrip(b"\r\n")
    if b"\n" in payload or b"\r" in payload:
        payload = payload.replace(b"\r", b" ").replace(b"\n", b" ")
    return payload + b"\n"
