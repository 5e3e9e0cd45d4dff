"""Sans-I/O: what the frames of one connection mean. The one classifier and correlator.

Rules:
- One ``ConnectionObserver`` per connection; frames are applied in timeline order and each gets
  the next sequence number (starting at 1), whatever its direction (``read`` takes the frame's
  own number instead, for frames read back from a recording).
- Its verdict is the only one: the stored columns (``FrameRecord``), the rule engine's and the
  transcript's messages (``Event``, one per JSON-RPC message, batch entries one by one) and the
  pending requests (``jsonrpc.Correlator``) all come from the same code. Readers that start from
  stored frames run their own observer over the raw bytes (``read``), so a batch entry, which
  has no columns of its own, gets the same verdict as a frame.
- A message with both ``result`` and ``error`` is an ``error`` (see jsonrpc.envelope).
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

import functools
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from acp_proxy.protocol import acp
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.jsonrpc import (
    Correlator,
    Envelope,
    JsonId,
    Kind,
    PendingKey,
    PendingRequest,
    decode,
    decode_for_reading,
    envelope,
)
from acp_proxy.protocol.wire import Frame, Raw

STDERR_KIND = "stderr"
_STDERR = Direction.AGENT_STDERR
# Plain str for SQLite: the sqlite3 module binds only exact str, int, float quickly; an enum
# member would go through its adaptation protocol on every row.
_DIRECTION_TEXT = {direction: str(direction.value) for direction in Direction}
_KIND_TEXT = {kind: str(kind.value) for kind in Kind}
_OPPOSITE_TEXT = {direction: str(direction.opposite.value) for direction in Direction}
_DIRECTION_OF_TEXT = {str(direction.value): direction for direction in Direction}
_SESSION_UPDATE = acp.SESSION_UPDATE
_REQUEST, _NOTIFICATION, _RESPONSE, _ERROR, _BATCH, _INVALID = (
    Kind.REQUEST, Kind.NOTIFICATION, Kind.RESPONSE, Kind.ERROR, Kind.BATCH, Kind.INVALID,
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
# FrameRecord(...) without its Python-level __new__: one row per frame on the hot path.
_record: Callable[[tuple[Any, ...]], FrameRecord] = functools.partial(tuple.__new__, FrameRecord)


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


class FrameLike(Protocol):
    """A frame as its readers see it: number, direction, clock and bytes.

    ``FrameRecord``, ``store.values.FrameRow`` and ``store.replay_rows.RecordedFrame`` all are one;
    the transcript, ``diff`` and the replay drive take any of them.
    """

    @property
    def seq(self) -> int: ...
    @property
    def direction(self) -> str: ...
    @property
    def mono_ns(self) -> int: ...
    @property
    def raw(self) -> Raw: ...


class StoredFrameLike(Protocol):
    """A frame with the columns it is stored with: ``FrameRecord`` (the recorder's) and
    ``store.values.FrameRow`` (a reader's) both are one; OpenTelemetry export reads it."""

    @property
    def seq(self) -> int: ...
    @property
    def direction(self) -> str: ...
    @property
    def wall_ns(self) -> int: ...
    @property
    def raw(self) -> bytes | bytearray: ...
    @property
    def kind(self) -> str: ...
    @property
    def rpc_id(self) -> Any: ...
    @property
    def method(self) -> str | None: ...
    @property
    def request_seq(self) -> int | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def update_kind(self) -> str | None: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def error_code(self) -> int | None: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def message_id(self) -> str | None: ...


class Event(NamedTuple):
    """One JSON-RPC message of a frame (a batch gives one per entry), as the observer reads it.

    ``kind`` is the frame kind of docs/recording-format.md for the message alone (an entry that
    is no message is ``invalid``, with ``reason``). ``method`` of a response or error is its
    request's; ``session_id`` is the stored column's rule (the request's, or the new session of a
    ``session/new`` or ``session/fork`` result). ``request`` is the request a response answers,
    ``replaces`` the still unanswered request with the same id that a request takes the place of.
    """

    seq: int
    direction: str  # c2a or a2c
    kind: str  # request, notification, response, error, invalid, unparseable
    method: str | None
    id: JsonId
    params: Any
    result: Any
    error: Any
    session_id: str | None
    update: dict[str, Any] | None
    update_kind: str | None
    request: PendingRequest | None
    replaces: PendingRequest | None = None
    in_batch: bool = False
    reason: str | None = None

    @property
    def sender(self) -> str:
        return "client" if self.direction == "c2a" else "agent"


# Event(...) without its Python-level __new__: the rule engine builds one per message.
_new_event: Callable[[tuple[Any, ...]], Event] = functools.partial(tuple.__new__, Event)


class Reading(NamedTuple):
    """What ``ConnectionObserver.read`` gives for one frame."""

    kind: str  # the frame's kind, as its stored row says it
    value: Any  # the parsed JSON, or None when the frame is not JSON (or is agent stderr)
    events: list[Event]


_reading: Callable[[tuple[Any, ...]], Reading] = functools.partial(tuple.__new__, Reading)


class ConnectionObserver:
    """Applies frames of one connection in order: ``observe`` gives each frame's row (recording),
    ``read`` its messages (readers of stored frames), ``row`` the row of a frame read back."""

    def __init__(self) -> None:
        self._seq = 0
        self._correlator = Correlator()
        self.protocol_version: int | None = None
        self.client_info: Any = None
        self.agent_info: Any = None
        self.facts_changed = False

    @property
    def pending(self) -> dict[PendingKey, PendingRequest]:
        """The requests still waiting for their answer, keyed ``(direction, id_key(id))``."""
        return self._correlator.pending

    def facts(self) -> ConnectionFacts:
        self.facts_changed = False
        return ConnectionFacts(self.protocol_version, self.client_info, self.agent_info)

    def read(self, seq: int, direction: str, raw: Raw) -> Reading:
        """The messages of a frame read back (stored, exported), numbered by its own ``seq``.

        The same classification and correlation as ``observe`` (both go through ``_message``),
        without building the row, which the reader already has.
        """
        self._seq = seq
        where = _DIRECTION_OF_TEXT.get(direction)
        if where is None or where is _STDERR:
            return _reading((STDERR_KIND, None, []))
        value, failure = decode_for_reading(raw)
        if failure is not None:
            kind = _KIND_TEXT[failure.kind]
            event = _new_event((seq, direction, kind, None, None, None, None, None, None, None,
                                None, None, None, False, failure.reason))  # fmt: skip
            return _reading((kind, None, [event]))
        events: list[Event] = []
        if type(value) is list:
            for item in value:
                self._message(where, seq, item, events, True)
            return _reading((_KIND_TEXT[_BATCH], value, events))
        return _reading((self._message(where, seq, value, events, False)[0], value, events))

    def row(self, seq: int, direction: str, raw: Raw) -> FrameRecord:
        """The row of a frame read back (an export, a log), numbered by its own ``seq``.

        Clocks and offset are 0; a direction that is not ``c2a`` or ``a2c`` is agent stderr.
        """
        self._seq = seq - 1
        return self.observe(_DIRECTION_OF_TEXT.get(direction, _STDERR), Frame(raw, 0), 0, 0)

    def observe(
        self, direction: Direction, frame: Frame, mono_ns: int, wall_ns: int
    ) -> FrameRecord:
        """The row for the next frame of the connection (this is the recorder's hot path)."""
        self._seq = seq = self._seq + 1
        raw, offset, complete = frame
        no_newline = 0 if complete else 1
        if direction is _STDERR:
            return _record((
                seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
                STDERR_KIND, None, None, None, None, None, None, None, None, None,
                0, 0, 0, 0, no_newline,
            ))  # fmt: skip
        value, failure = decode(raw)
        if failure is not None:
            return _record((
                seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
                _KIND_TEXT[failure.kind], None, None, None, None, None, None, None, None, None,
                1, 1 if failure.bad_utf8 else 0, 1, 0, no_newline,
            ))  # fmt: skip
        if type(value) is list:
            for item in value:
                self._message(direction, seq, item, None, True)
            return _record((
                seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
                _KIND_TEXT[_BATCH], None, None, None, None, None, None, None, None, None,
                0, 0, 0 if value else 1, 1, no_newline,
            ))  # fmt: skip
        (
            kind, rpc_id, method, request_seq, session_id, update_kind, message_id, tool_call_id,
            error_code, stop_reason, jsonrpc_ok,
        ) = self._message(direction, seq, value, None, False)  # fmt: skip
        return _record((
            seq, _DIRECTION_TEXT[direction], mono_ns, wall_ns, offset, len(raw), raw,
            kind, rpc_id, method, request_seq, session_id, update_kind, message_id,
            tool_call_id, error_code, stop_reason, 0, 0, 0 if jsonrpc_ok else 1, 0, no_newline,
        ))  # fmt: skip

    def _message(
        self,
        direction: Direction,
        seq: int,
        value: Any,
        events: list[Event] | None,
        in_batch: bool,
    ) -> _Columns:
        """Classify one message (a frame, or an entry of a batch) and correlate it."""
        # An array inside a batch is no message (envelope would call it a batch).
        shape = _NESTED_ARRAY if in_batch and type(value) is list else envelope(value)
        kind, message_id_or_none, method, payload, jsonrpc_ok = shape
        rpc_id: str | int | float | None = None
        request_seq: int | None = None
        session_id: str | None = None
        update: dict[str, Any] | None = None
        update_kind: str | None = None
        message_id: str | None = None
        tool_call_id: str | None = None
        error_code: int | None = None
        stop_reason: str | None = None
        pending: PendingRequest | None = None
        replaced: PendingRequest | None = None

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
                        update_kind = v if type(v := get("sessionUpdate")) is str else None
                        message_id = v if type(v := get("messageId")) is str else None
                        tool_call_id = v if type(v := get("toolCallId")) is str else None
                        stop_reason = v if type(v := get("stopReason")) is str else None
                    else:
                        update = None
                elif method == acp.REQUEST_PERMISSION:
                    tool_call = payload.get("toolCall")
                    if type(tool_call) is dict:
                        tool_call_id = _str(tool_call.get("toolCallId"))
            if kind is _REQUEST:
                assert method is not None
                rpc_id = storable_id(message_id_or_none)
                replaced = self._remember(
                    direction, message_id_or_none, method, payload, seq, session_id
                )
        elif kind is _RESPONSE or kind is _ERROR:
            rpc_id = storable_id(message_id_or_none)
            pending = self._correlator.answered(_OPPOSITE_TEXT[direction], message_id_or_none)
            if pending is not None:
                method = pending.method
                request_seq = pending.seq
                session_id = pending.session_id
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

        kind_text = _KIND_TEXT[kind]
        if events is not None:
            events.append(_new_event((
                seq, _DIRECTION_TEXT[direction], kind_text, method, message_id_or_none,
                payload if kind is _REQUEST or kind is _NOTIFICATION else None,
                payload if kind is _RESPONSE else None, payload if kind is _ERROR else None,
                session_id, update, update_kind, pending, replaced, in_batch,
                payload if kind is _INVALID else None,
            )))  # fmt: skip
        return (
            kind_text, rpc_id, method, request_seq, session_id, update_kind, message_id,
            tool_call_id, error_code, stop_reason, jsonrpc_ok,
        )  # fmt: skip

    def _remember(
        self,
        direction: Direction,
        request_id: JsonId,
        method: str,
        params: Any,
        seq: int,
        session_id: str | None,
    ) -> PendingRequest | None:
        replaced = self._correlator.sent(
            _DIRECTION_TEXT[direction], request_id, method, seq, session_id, params
        )
        if method == acp.INITIALIZE and direction is Direction.CLIENT_TO_AGENT:
            self.client_info = acp.client_info(params)
            self.facts_changed = True
        return replaced

    def _initialized(self, result: dict[str, Any]) -> None:
        self.protocol_version = acp.protocol_version(result)
        self.agent_info = acp.agent_info(result)
        self.facts_changed = True


# kind, rpc_id, method, request_seq, session_id, update_kind, message_id, tool_call_id,
# error_code, stop_reason, jsonrpc_ok
_Columns = tuple[
    str, str | int | float | None, str | None, int | None, str | None, str | None, str | None,
    str | None, int | None, str | None, bool,
]  # fmt: skip
_NESTED_ARRAY = Envelope(Kind.INVALID, None, None, "not a JSON object", False)
