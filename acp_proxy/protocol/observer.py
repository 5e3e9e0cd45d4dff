"""Sans-I/O: turns the frames of one connection into recording rows and connection facts.

Rules:
- One ``ConnectionObserver`` per proxied connection; frames are applied in timeline order and
  each gets the next sequence number (starting at 1), whatever its direction.
- The raw bytes are kept untouched; parsed columns are derived from a copy and are best effort:
  any value of an unexpected type is simply not extracted. Peer input never raises.
- A response is named after the request it answers (tracked per direction) and points at that
  request's sequence number; it also inherits the request's session id.
- Agent stderr lines are frames too (direction ``stderr``, kind ``stderr``), never parsed.
- Facts from the ``initialize`` exchange (negotiated protocol version, client and agent info)
  are collected as they pass; ``facts_changed`` tells the caller to persist them.
- Clocks are passed in: this module knows no process, clock or database.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from acp_proxy.protocol import acp
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.jsonrpc import Correlator, JsonId, Kind, decode, envelope
from acp_proxy.protocol.wire import Frame, Raw

STDERR_KIND = "stderr"
_STDERR = Direction.AGENT_STDERR
# Plain str for SQLite: the sqlite3 module binds only exact str, int, float quickly; an enum
# member would go through its adaptation protocol on every row.
_DIRECTION_TEXT = {direction: str(direction.value) for direction in Direction}
_KIND_TEXT = {kind: str(kind.value) for kind in Kind}
_SESSION_UPDATE = acp.SESSION_UPDATE
_REQUEST, _NOTIFICATION, _RESPONSE, _ERROR, _BATCH = (
    Kind.REQUEST, Kind.NOTIFICATION, Kind.RESPONSE, Kind.ERROR, Kind.BATCH,
)  # fmt: skip
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class FrameRecord(NamedTuple):
    """One row of the ``frame`` table, in column order (without the connection id)."""

    seq: int
    direction: str
    mono_ns: int
    wall_ns: int
    offset: int
    size: int
    raw: Raw  # bytes, or a bytearray for a line that grew past wire.GROW_IN_PLACE
    kind: str
    rpc_id: str | int | float | None
    method: str | None
    request_seq: int | None
    session_id: str | None
    update_kind: str | None
    message_id: str | None
    tool_call_id: str | None
    error_code: int | None
    stop_reason: str | None
    bad_json: int
    bad_utf8: int
    not_jsonrpc: int
    batch: int
    no_newline: int


FRAME_COLUMNS: tuple[str, ...] = FrameRecord._fields


class ConnectionFacts(NamedTuple):
    protocol_version: int | None
    client_info: Any
    agent_info: Any


def storable_id(value: object) -> str | int | float | None:
    """An id as SQLite can hold it, keeping its JSON type (integers past 64 bits become text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if _INT64_MIN <= value <= _INT64_MAX else str(value)
    if isinstance(value, str | float) or value is None:
        return value
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and _INT64_MIN <= value <= _INT64_MAX:
        return value
    return None


class _Pending(NamedTuple):
    method: str
    seq: int
    session_id: str | None


class ConnectionObserver:
    """Applies frames of one connection in order; returns the row for each."""

    def __init__(self) -> None:
        self._seq = 0
        self._correlator = Correlator()
        self._sessions_of_requests: dict[int, str | None] = {}
        self.protocol_version: int | None = None
        self.client_info: Any = None
        self.agent_info: Any = None
        self.facts_changed = False

    def facts(self) -> ConnectionFacts:
        self.facts_changed = False
        return ConnectionFacts(self.protocol_version, self.client_info, self.agent_info)

    def observe(
        self, direction: Direction, frame: Frame, mono_ns: int, wall_ns: int
    ) -> FrameRecord:
        """The row for the next frame of the connection (this is the recorder's hot path)."""
        self._seq = seq = self._seq + 1
        raw, offset, complete = frame
        no_newline = 0 if complete else 1
        if direction is _STDERR:
            return FrameRecord(
                seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
                STDERR_KIND, None, None, None, None, None, None, None, None, None,
                0, 0, 0, 0, no_newline,
            )  # fmt: skip
        value, failure = decode(raw)
        if failure is not None:
            return FrameRecord(
                seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
                _KIND_TEXT[failure.kind], None, None, None, None, None, None, None, None, None,
                1, 1 if failure.bad_utf8 else 0, 1, 0, no_newline,
            )  # fmt: skip
        kind, message_id_or_none, method, payload, jsonrpc_ok = envelope(value)
        rpc_id: str | int | float | None = None
        request_seq: int | None = None
        session_id: str | None = None
        update_kind: str | None = None
        message_id: str | None = None
        tool_call_id: str | None = None
        error_code: int | None = None
        stop_reason: str | None = None
        batch = 0

        if kind is _NOTIFICATION or kind is _REQUEST:
            if type(payload) is dict:
                session_id = payload.get("sessionId")
                if type(session_id) is not str:
                    session_id = None
                if method == _SESSION_UPDATE:
                    update = payload.get("update")
                    if type(update) is dict:
                        # Inlined type checks: this branch runs for nearly every frame.
                        get = update.get
                        update_kind = get("sessionUpdate")
                        if type(update_kind) is not str:
                            update_kind = None
                        message_id = get("messageId")
                        if type(message_id) is not str:
                            message_id = None
                        tool_call_id = get("toolCallId")
                        if type(tool_call_id) is not str:
                            tool_call_id = None
                        stop_reason = get("stopReason")
                        if type(stop_reason) is not str:
                            stop_reason = None
                elif method == acp.REQUEST_PERMISSION:
                    tool_call = payload.get("toolCall")
                    if type(tool_call) is dict:
                        tool_call_id = _str(tool_call.get("toolCallId"))
            if kind is _REQUEST:
                assert method is not None
                rpc_id = storable_id(message_id_or_none)
                self._remember(direction, message_id_or_none, method, payload, seq, session_id)
        elif kind is _RESPONSE or kind is _ERROR:
            rpc_id = storable_id(message_id_or_none)
            pending = self._correlator.answered(direction.opposite.sender, message_id_or_none)
            if pending is not None:
                method = pending.method
                request_seq = pending.seq
                session_id = self._sessions_of_requests.pop(pending.seq, None)
            if kind is _ERROR:
                error_code = _int(payload.get("code"))
            elif type(payload) is dict:
                if method in acp.SESSION_CREATING_METHODS:
                    session_id = _str(payload.get("sessionId")) or session_id
                elif method == acp.SESSION_PROMPT:
                    stop_reason = _str(payload.get("stopReason"))
                    message_id = _str(payload.get("messageId"))
                elif method == acp.INITIALIZE and direction is Direction.AGENT_TO_CLIENT:
                    self._initialized(payload)
        elif kind is _BATCH:
            batch = 1
            for item in payload:
                entry = envelope(item) if type(item) is dict else None
                if entry is not None and entry.kind is _REQUEST:
                    params = entry.payload
                    session = params.get("sessionId") if type(params) is dict else None
                    assert entry.method is not None
                    self._remember(direction, entry.id, entry.method, params, seq, _str(session))

        return FrameRecord(
            seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
            _KIND_TEXT[kind], rpc_id, method, request_seq, session_id, update_kind, message_id,
            tool_call_id, error_code, stop_reason, 0, 0, 0 if jsonrpc_ok else 1, batch,
            no_newline,
        )  # fmt: skip

    def _remember(
        self,
        direction: Direction,
        request_id: JsonId,
        method: str,
        params: Any,
        seq: int,
        session_id: str | None,
    ) -> None:
        self._correlator.sent(direction.sender, request_id, method, seq)
        if session_id is not None:
            self._sessions_of_requests[seq] = session_id
        if method == acp.INITIALIZE and direction is Direction.CLIENT_TO_AGENT:
            self.client_info = acp.client_info(params)
            self.facts_changed = True

    def _initialized(self, result: dict[str, Any]) -> None:
        self.protocol_version = acp.protocol_version(result)
        self.agent_info = acp.agent_info(result)
        self.facts_changed = True
