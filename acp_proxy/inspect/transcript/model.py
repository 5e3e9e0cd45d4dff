"""Sans-I/O transcript model: apply a connection's frames, get what a client would render.

Rules:
- ``Transcript.apply(frame)`` takes frames in timeline order (``seq``); a frame is anything with
  ``seq``, ``direction``, ``mono_ns`` and ``raw`` (``observer.FrameLike``: an observer
  ``FrameRecord``, a stored row). What each message is, and which request a response answers,
  comes from the observer (protocol/observer.py), run over the frames' bytes: the same verdict
  as the stored columns, so batches (v2) are handled entry by entry.
- ``view()`` returns frozen values (values.py). Entities follow entities.py. Peer input
  never raises; what is not JSON-RPC becomes ``Malformed``.
- Protocol v1: the ``session/prompt`` request is the user's message and its response ends the
  turn with ``stopReason``. Chunks without ``messageId`` append to the newest entry when that is
  an id-less message of the same role in the same turn; otherwise they start a new message.
- v2 draft: the prompt response is the acceptance receipt (``messageId``); the turn ends with an
  idle ``state_update`` (its ``stopReason`` is the turn's). Every v2 rule is applied whatever the
  negotiated version, since agents mix them; only the end of a turn follows the version.
- ``notice`` is a live event, never history. Unknown update kinds become ``UnknownUpdate``
  entries, kept verbatim; unknown methods become ``Call`` events, kept verbatim.
- This module knows no process, clock or database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from acp_proxy.inspect.transcript.entities import (
    CHUNK_KINDS,
    ENTITY_KINDS,
    MESSAGE_CHUNKS,
    Appended,
    Key,
    append_chunk,
    apply,
    entity_key,
    new_entity,
)
from acp_proxy.inspect.transcript.state import SessionState, Timeline
from acp_proxy.inspect.transcript.values import (
    Call,
    Entry,
    Malformed,
    Notice,
    Permission,
    PromptTurn,
    StateChange,
    TranscriptView,
    TurnMark,
    UnknownUpdate,
)
from acp_proxy.inspect.transcript.values import Message as ChatMessage
from acp_proxy.protocol import acp
from acp_proxy.protocol.jsonrpc import PendingRequest, id_key
from acp_proxy.protocol.observer import ConnectionObserver, Event, FrameLike

__all__ = ["FrameLike", "Transcript", "build"]


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


class Transcript:
    """Applies one connection's frames in order; ``view()`` is what a client would render."""

    def __init__(self, protocol_version: int | None = None) -> None:
        self.protocol_version = protocol_version
        self.client_info: Any = None
        self.agent_info: Any = None
        self._sessions: dict[str, SessionState] = {}
        self._events = Timeline()
        self._observer = ConnectionObserver()
        # Where each pending request is shown, by (direction, seq, id_key(id)).
        self._keys: dict[tuple[str, int, tuple[str, Any]], Key] = {}
        self._frames = 0
        self._stderr = 0
        self._first_ns: int | None = None
        self._last_ns: int | None = None

    def view(self) -> TranscriptView:
        return TranscriptView(
            self.protocol_version, self.client_info, self.agent_info,
            tuple(s.view() for s in self._sessions.values()),
            tuple(self._events.items.values()),  # type: ignore[arg-type]
            self._frames, self._stderr, self._first_ns, self._last_ns,
        )  # fmt: skip

    def apply(self, frame: FrameLike) -> None:
        self._frames += 1
        if self._first_ns is None:
            self._first_ns = frame.mono_ns
        self._last_ns = frame.mono_ns
        if frame.direction == acp.Direction.AGENT_STDERR:
            self._stderr += 1
            return
        for event in self._observer.read(frame.seq, frame.direction, frame.raw).events:
            self._message(frame, event)

    # ------------------------------------------------------------------ dispatch

    def _message(self, frame: FrameLike, event: Event) -> None:
        kind, session_id = event.kind, event.session_id
        if kind in {"request", "notification"}:
            if kind == "notification" and session_id is not None and event.update is not None:
                self._update(self._session(session_id), frame, event.update)
                return
            self._request(frame, event, session_id)
        elif kind in {"response", "error"}:
            pending = event.request
            if pending is None:
                reason = f"response to unknown request id {event.id!r}"
                self._events.put(
                    ("event", str(frame.seq)), Malformed(frame.seq, frame.direction, reason)
                )
                return
            shown: Key = ("event", str(pending.seq))
            where = self._keys.pop((pending.direction, pending.seq, id_key(pending.id)), shown)
            self._answer(frame, pending, where, event)
        else:
            reason = event.reason or "not JSON-RPC"
            self._events.put(
                ("event", str(frame.seq)), Malformed(frame.seq, frame.direction, reason)
            )

    def _session(self, session_id: str, opened_by: str | None = None) -> SessionState:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = SessionState(session_id, opened_by)
        return session

    def _request(self, frame: FrameLike, event: Event, session_id: str | None) -> None:
        method, params, seq, sender = event.method or "", event.params, frame.seq, event.sender
        session = self._session(session_id) if session_id is not None else None
        key: Key = ("event", str(seq))
        timeline = session.timeline if session is not None else self._events
        if method == acp.INITIALIZE and sender == "client":
            self.client_info = acp.client_info(params)
        if session is not None and method == acp.SESSION_PROMPT and sender == "client":
            self._start_turn(session, frame, params)
            key = ("turn", str(len(session.turns) - 1))
        elif session is not None and method == acp.REQUEST_PERMISSION and sender == "agent":
            tool_call = params.get("toolCall") if isinstance(params, dict) else None
            tool_id = _str(tool_call.get("toolCallId")) if isinstance(tool_call, dict) else None
            turn = session.turn
            timeline.put(key, Permission(seq, params, tool_id, frame.mono_ns, turn))
            if turn is not None:
                t = session.turns[turn]
                session.change_turn(turn, permissions=t.permissions + 1)
        else:
            notification = event.kind == "notification"
            call = Call(seq, sender, method, params, frame.mono_ns, notification)
            timeline.put(key, call)
            if session is not None and method == acp.SESSION_CANCEL and session.turn is not None:
                session.change_turn(session.turn, cancel_seq=seq)
        if event.kind == "request":
            self._keys[(event.direction, seq, id_key(event.id))] = key

    def _start_turn(self, session: SessionState, frame: FrameLike, params: Any) -> None:
        prompt = params.get("prompt") if isinstance(params, dict) else None
        blocks = tuple(prompt) if isinstance(prompt, list) else ()
        index = len(session.turns)
        session.turns.append(
            PromptTurn(index, session.session_id, frame.seq, blocks, frame.mono_ns)
        )
        session.open_turns.append(index)
        session.timeline.put(("turn", str(index)), TurnMark(frame.seq, index, end=False))
        if self.protocol_version != acp.PROTOCOL_V2:
            # v1: the prompt itself is the user's message in the history.
            key: Key = ("anon", "user", f"prompt{frame.seq}")
            message = ChatMessage(
                "user", None, blocks, first_seq=frame.seq, turn=index, origin="prompt"
            )
            session.timeline.put(key, message)
            session.last_entity = key

    def _answer(self, frame: FrameLike, pending: PendingRequest, key: Key, event: Event) -> None:
        seq, now = frame.seq, frame.mono_ns
        result = event.result
        error = None
        if event.kind == "error":
            fields = event.error if isinstance(event.error, dict) else {}
            error = {"code": fields.get("code"), "message": fields.get("message"),
                     "data": fields.get("data")}  # fmt: skip
        result_map: Mapping[str, Any] = result if isinstance(result, dict) else {}
        if pending.method == acp.INITIALIZE and error is None:
            self.protocol_version = acp.protocol_version(result)
            self.agent_info = acp.agent_info(result)
        session = self._sessions.get(pending.session_id) if pending.session_id else None
        if pending.method in acp.SESSION_CREATING_METHODS and error is None:
            created = _str(result_map.get("sessionId"))
            if created is not None:
                self._session(created, pending.method)
        elif pending.method in (acp.SESSION_LOAD, acp.SESSION_RESUME) and session is not None:
            session.opened_by = session.opened_by or pending.method
        if session is not None and key[0] == "turn":
            self._prompt_answered(session, int(key[1]), seq, now, result_map, error)
            return
        timeline = session.timeline if session is not None else self._events
        item = timeline.items.get(key)
        if isinstance(item, Permission):
            outcome = result_map.get("outcome")
            answered = replace(
                item, answered_seq=seq, answered_ns=now, outcome=outcome, error=error
            )
            timeline.put(key, answered)
            if session is not None and item.turn is not None and item.wait_ns is None:
                turn = session.turns[item.turn]
                wait = turn.permission_wait_ns + now - item.requested_ns
                session.change_turn(item.turn, permission_wait_ns=wait)
        elif isinstance(item, Call):
            timeline.put(key, replace(item, answered_seq=seq, answered_ns=now,
                                              result=result, error=error))  # fmt: skip

    def _prompt_answered(
        self,
        session: SessionState,
        index: int,
        seq: int,
        now: int,
        result: Mapping[str, Any],
        error: Any,
    ) -> None:
        changes: dict[str, Any] = {"response_seq": seq, "response_ns": now}
        message_id = _str(result.get("messageId"))
        if message_id is not None:
            changes["message_id"] = message_id
        if result.get("usage") is not None:
            changes["usage"] = result["usage"]
        if error is not None:
            changes["error"] = error
        session.change_turn(index, **changes)
        if error is not None or self.protocol_version != acp.PROTOCOL_V2:
            self._end_turn(session, index, seq, now, _str(result.get("stopReason")))

    def _end_turn(
        self, session: SessionState, index: int, seq: int, now: int, stop: str | None
    ) -> None:
        if index in session.open_turns:
            session.open_turns.remove(index)
        session.change_turn(index, end_seq=seq, end_ns=now, stop_reason=stop)
        session.timeline.put(("turn-end", str(index)), TurnMark(seq, index, end=True))

    # ------------------------------------------------------------------ session/update

    def _update(self, session: SessionState, frame: FrameLike, update: dict[str, Any]) -> None:
        kind = _str(update.get("sessionUpdate")) or ""
        seq, turn = frame.seq, session.turn
        if kind in ENTITY_KINDS or kind == "plan_removed":
            self._entity(session, frame, kind, update)
        elif kind == "notice":
            notice = Notice(seq, _str(update.get("severity")), _str(update.get("title")),
                            _str(update.get("description")), update)  # fmt: skip
            session.timeline.put(("event", str(seq)), notice)
        elif kind == "state_update":
            self._state(session, frame, update)
        elif kind == "usage_update":
            session.usage = {k: v for k, v in update.items() if k != "sessionUpdate"}
            if turn is not None:
                session.change_turn(turn, usage=session.usage)
        elif kind == "available_commands_update":
            session.commands = update.get("availableCommands")
        elif kind == "config_option_update":
            session.config_options = update.get("configOptions")
        elif kind == "current_mode_update":
            session.mode = _str(update.get("currentModeId"))
        elif kind == "session_info_update":
            for name, value in update.items():
                if name == "sessionUpdate":
                    continue
                if value is None:
                    session.info.pop(name, None)
                else:
                    session.info[name] = value
        else:
            key: Key = ("unknown", str(seq))
            session.timeline.put(key, UnknownUpdate(kind, update, seq, turn))
            session.last_entity = key

    def _entity(
        self, session: SessionState, frame: FrameLike, kind: str, update: dict[str, Any]
    ) -> None:
        seq, turn = frame.seq, session.turn
        key = entity_key(kind, update)
        if kind == "plan_removed":
            if key is not None:
                session.timeline.remove(key)
                session.appended.pop(key, None)
            return
        origin = "chunk" if kind in MESSAGE_CHUNKS else "update"
        if key is None:  # a message chunk without messageId (v1)
            role = MESSAGE_CHUNKS.get(kind, "agent")
            last = session.timeline.items.get(session.last_entity) if session.last_entity else None
            if (
                isinstance(last, ChatMessage) and last.message_id is None and last.role == role
                and last.origin == "chunk" and last.turn == turn and session.last_entity
            ):  # fmt: skip
                key = session.last_entity
            else:
                session.anonymous += 1
                key = ("anon", role, str(session.anonymous))
        current = session.timeline.items.get(key)
        if not isinstance(current, Entry):
            current = new_entity(key, seq, turn, origin)
            session.last_entity = key
            if key[0] == "tool" and turn is not None:
                t = session.turns[turn]
                session.change_turn(turn, tool_calls=(*t.tool_calls, key[1]))
        if kind in CHUNK_KINDS:
            appended = session.appended.get(key)
            if appended is None:
                appended = session.appended[key] = Appended()
            changed = append_chunk(current, kind, update, appended)
            if changed is not current or key not in session.timeline.items:
                session.timeline.put(key, changed)
        else:
            session.settle(key)
            settled = session.timeline.items.get(key)
            if isinstance(settled, Entry):
                current = settled
            session.timeline.put(key, apply(current, kind, update))
        output = kind in ("agent_message", "agent_message_chunk")
        if output and turn is not None and session.turns[turn].first_output_ns is None:
            session.change_turn(turn, first_output_ns=frame.mono_ns)

    def _state(self, session: SessionState, frame: FrameLike, update: dict[str, Any]) -> None:
        state, stop = _str(update.get("state")), _str(update.get("stopReason"))
        session.state = state
        session.timeline.put(("event", str(frame.seq)), StateChange(frame.seq, state, stop, update))
        if state == "idle" and self.protocol_version == acp.PROTOCOL_V2:
            for index in list(session.open_turns):
                if update.get("usage") is not None:
                    session.change_turn(index, usage=update["usage"])
                self._end_turn(session, index, frame.seq, frame.mono_ns, stop)


def build(frames: Any, protocol_version: int | None = None) -> TranscriptView:
    """Apply every frame of an iterable and return the view."""
    transcript = Transcript(protocol_version)
    for frame in frames:
        transcript.apply(frame)
    return transcript.view()
