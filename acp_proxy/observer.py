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

from . import acp
from .acp import Direction
from .jsonrpc import (
    Batch,
    Correlator,
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
    Unparseable,
    classify,
)
from .wire import Frame

STDERR_KIND = "stderr"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class FrameRecord(NamedTuple):
    """One row of the ``frame`` table, in column order (without the connection id)."""

    seq: int
    direction: str
    mono_ns: int
    wall_ns: int
    offset: int
    size: int
    raw: bytes
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
        self.requested_protocol_version: int | None = None
        self.client_info: Any = None
        self.agent_info: Any = None
        self.facts_changed = False

    @property
    def last_seq(self) -> int:
        return self._seq

    def facts(self) -> ConnectionFacts:
        self.facts_changed = False
        return ConnectionFacts(self.protocol_version, self.client_info, self.agent_info)

    def observe(
        self, direction: Direction, frame: Frame, mono_ns: int, wall_ns: int
    ) -> FrameRecord:
        self._seq += 1
        seq = self._seq
        raw = frame.raw
        no_newline = 0 if frame.complete else 1
        if direction is Direction.AGENT_STDERR:
            return FrameRecord(
                seq, direction.value, mono_ns, wall_ns, frame.offset, len(raw), raw,
                STDERR_KIND, None, None, None, None, None, None, None, None, None,
                0, 0, 0, 0, no_newline,
            )  # fmt: skip
        message = classify(raw)
        return self._record(direction, seq, frame, raw, message, mono_ns, wall_ns, no_newline)

    def _record(
        self,
        direction: Direction,
        seq: int,
        frame: Frame,
        raw: bytes,
        message: Message,
        mono_ns: int,
        wall_ns: int,
        no_newline: int,
    ) -> FrameRecord:
        rpc_id: str | int | float | None = None
        method: str | None = None
        request_seq: int | None = None
        session_id: str | None = None
        update_kind: str | None = None
        message_id: str | None = None
        tool_call_id: str | None = None
        error_code: int | None = None
        stop_reason: str | None = None
        bad_json = bad_utf8 = batch = 0

        if isinstance(message, Request | Notification):
            method = message.method
            params = message.params
            if isinstance(params, dict):
                session_id = _str(params.get("sessionId"))
                if method == acp.SESSION_UPDATE:
                    update = params.get("update")
                    if isinstance(update, dict):
                        update_kind = _str(update.get("sessionUpdate"))
                        message_id = _str(update.get("messageId"))
                        tool_call_id = _str(update.get("toolCallId"))
                        stop_reason = _str(update.get("stopReason"))
                elif method == acp.REQUEST_PERMISSION:
                    tool_call = params.get("toolCall")
                    if isinstance(tool_call, dict):
                        tool_call_id = _str(tool_call.get("toolCallId"))
            if isinstance(message, Request):
                rpc_id = storable_id(message.id)
                self._remember(direction, message, seq, session_id)
        elif isinstance(message, Response | ErrorResponse):
            rpc_id = storable_id(message.id)
            pending = self._correlator.answered(direction.opposite.sender, message.id)
            if pending is not None:
                method = pending.method
                request_seq = pending.seq
                session_id = self._sessions_of_requests.pop(pending.seq, None)
            if isinstance(message, ErrorResponse):
                error_code = _int(message.code)
            else:
                result = message.result
                if isinstance(result, dict):
                    if method in acp.SESSION_CREATING_METHODS:
                        session_id = _str(result.get("sessionId")) or session_id
                    elif method == acp.SESSION_PROMPT:
                        stop_reason = _str(result.get("stopReason"))
                        message_id = _str(result.get("messageId"))
                    elif method == acp.INITIALIZE and direction is Direction.AGENT_TO_CLIENT:
                        self._initialized(result)
        elif isinstance(message, Batch):
            batch = 1
            for item in message.items:
                if isinstance(item, Request):
                    session = (
                        item.params.get("sessionId") if isinstance(item.params, dict) else None
                    )
                    self._remember(direction, item, seq, _str(session))
        elif isinstance(message, Unparseable):
            bad_json = 1
            bad_utf8 = 1 if message.bad_utf8 else 0

        return FrameRecord(
            seq, direction.value, mono_ns, wall_ns, frame.offset, len(raw), raw,
            message.kind.value, rpc_id, method, request_seq, session_id, update_kind, message_id,
            tool_call_id, error_code, stop_reason, bad_json, bad_utf8,
            0 if message.jsonrpc_ok else 1, batch, no_newline,
        )  # fmt: skip

    def _remember(
        self, direction: Direction, request: Request, seq: int, session_id: str | None
    ) -> None:
        self._correlator.sent(direction.sender, request.id, request.method, seq)
        if session_id is not None:
            self._sessions_of_requests[seq] = session_id
        if request.method == acp.INITIALIZE and direction is Direction.CLIENT_TO_AGENT:
            self.requested_protocol_version = acp.protocol_version(request.params)
            self.client_info = acp.client_info(request.params)
            self.facts_changed = True

    def _initialized(self, result: dict[str, Any]) -> None:
        self.protocol_version = acp.protocol_version(result)
        self.agent_info = acp.agent_info(result)
        self.facts_changed = True
