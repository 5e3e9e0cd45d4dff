"""Sans-I/O: the spans of one recorded connection, built frame by frame (docs/otel.md).

Rules:
- One trace per connection. Its id is the connection's uid (128 bits of hex) and every span id
  is derived from the uid and what the span stands for (a session id, a request's sequence
  number, a tool call id): the same frames always give the same spans, live or a week later,
  and a span can name a parent that has not ended yet.
- Times are the recorded wall-clock times of the frames; nothing here reads a clock.
- A span is handed out once, when it ends: a request at its response; a prompt turn at its
  response (v1) or at the first idle ``state_update`` of its session after it (v2 draft); a tool
  call at its final status, or with its turn; sessions at ``session/close``; the connection and
  whatever is still open at ``finish`` (ended at the last frame, marked unfinished).
- Notifications are events of the span they belong to (their tool call, else the session's
  newest open turn, else the session, else the connection), at most ``max_events`` per span;
  the rest are counted in ``dropped_events``.
- A ``traceparent`` (W3C trace context) in the ``params._meta`` of the message that opens a
  span makes that span a child of the remote span, and its descendants follow it into that
  trace; the span that would otherwise have been its parent becomes a link.
- Content (prompt text, agent output, tool input and output, request params and results,
  notification params, stderr lines) is there only when ``Options.content`` is given, and then
  only as that function returns it (the bug-report redactor). The other peer text that is always
  sent (titles, error messages, names, labels) goes through ``Options.text``.
- Peer bytes never raise: a value of an unexpected shape is simply left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.otel.span_values import (
    CLIENT,
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
from acp_proxy.protocol import acp
from acp_proxy.protocol.decode import json_or_none
from acp_proxy.protocol.observer import StoredFrameLike

CONNECTION_SPAN, SESSION_SPAN, TURN_SPAN, TOOL_SPAN = (
    "acp connection", "acp session", "invoke_agent", "execute_tool",
)  # fmt: skip
FINAL_TOOL_STATUSES = frozenset({"completed", "failed"})
SESSION_OPENING_METHODS = acp.SESSION_CREATING_METHODS | {acp.SESSION_LOAD, acp.SESSION_RESUME}
SESSION_CLOSE = "session/close"
_CALLER = {"c2a": "client", "a2c": "agent"}
_JSON_KINDS = frozenset({"request", "notification", "response", "error"})
# Updates whose body shapes a span (the others, streamed chunks mostly, need only their columns).
_PARSED_UPDATES = frozenset({"tool_call", "tool_call_update", "state_update", "usage_update"})


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers past 64 bits, which orjson refuses
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _id_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    return value if isinstance(value, str) else str(value)


@dataclass(slots=True)
class _Pending:
    seq: int
    method: str
    direction: str
    start_ns: int
    rpc_id: Any
    session_id: str | None
    remote: SpanRef | None
    params: Any
    tool_call_id: str | None


@dataclass(slots=True)
class _Turn:
    seq: int
    session_id: str
    span: Span
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Tool:
    span: Span
    turn_seq: int | None
    raw_output: bool = False


class SpanBuilder:
    """Turns one connection's frames, in ``seq`` order, into finished spans."""

    def __init__(self, connection: ConnectionInfo, options: Options | None = None) -> None:
        self._uid = connection.uid
        self._options = options or Options()
        self._content = self._options.content
        self._text = self._options.text
        self._last_ns = connection.started_ns
        self._protocol_version: int | None = None
        self._agent: dict[str, str] = {}
        self._frames = 0
        self._stderr_lines = 0
        self._malformed = 0
        remote = connection.transport != "stdio"
        attributes: Attributes = {
            "acp.connection.uid": connection.uid, "network.transport": "tcp" if remote else "pipe",
        }  # fmt: skip
        if remote:
            attributes["acp.transport"] = connection.transport
        if connection.label:
            attributes["acp.connection.label"] = self._text(connection.label)
        self._connection = Span(
            CONNECTION_SPAN, trace_id_of(connection.uid), span_id_of(connection.uid, "connection"),
            None, False, INTERNAL, connection.started_ns, attributes=attributes,
        )  # fmt: skip
        self._spans_out = False  # once a span is out, the connection's trace is fixed
        self._sessions: dict[str, Span] = {}
        self._closed_sessions: set[str] = set()
        self._openings: dict[str, int] = {}
        self._prompts: dict[int, int] = {}  # by session span id
        self._requests: dict[int, _Pending] = {}
        self._turns: dict[int, _Turn] = {}  # open turns by prompt seq, oldest first
        self._newest: dict[str, _Turn] = {}  # the newest open turn of each session
        self._tools: dict[tuple[str, str], _Tool] = {}
        self._ended_tools: set[tuple[str, str]] = set()
        self._out: list[Span] = []

    # --- feeding ---------------------------------------------------------------------------

    def feed(self, frame: StoredFrameLike) -> list[Span]:
        """Apply the next frame; returns the spans it ended."""
        self._frames += 1
        self._last_ns = max(self._last_ns, frame.wall_ns)
        kind = frame.kind
        if (
            kind == "notification"
            and self._content is None
            and frame.update_kind not in _PARSED_UPDATES
        ):
            self._streamed(frame)  # the stored columns say all a span needs: the common case
            return []
        if kind == "stderr":
            self._stderr(frame)
        elif kind == "batch":  # valid JSON-RPC, but ACP has no batches: noted, not traced
            self._event(self._connection, "acp.frame.batch", frame, {})
        elif kind not in _JSON_KINDS:
            self._malformed += 1
            self._event(self._connection, "acp.frame.malformed", frame, {"acp.frame.kind": kind})
        else:
            message = _dict(json_or_none(frame.raw))
            if kind == "request":
                self._request(frame, message)
            elif kind == "notification":
                self._notification(frame, message)
            else:
                self._response(frame, message)
        return self._take()

    def open_spans(self) -> int:
        """How many spans are still open (the connection's included)."""
        return 1 + len(self._sessions) + len(self._turns) + len(self._requests) + len(self._tools)

    def feed_all(self, frames: Iterable[StoredFrameLike]) -> list[Span]:
        spans: list[Span] = []
        for frame in frames:
            spans += self.feed(frame)
        return spans

    def finish(self) -> list[Span]:
        """Everything still open, ended at the last frame (``acp.unfinished``), connection last."""
        end = self._last_ns
        for key in list(self._tools):
            self._end_tool(key, end, unfinished=True)
        for turn in list(self._turns.values()):
            self._end_turn(turn, end, unfinished=True)
        for pending in list(self._requests.values()):
            span = self._request_span(pending)
            span.attributes["acp.unfinished"] = True
            self._emit(span, end)
        self._requests.clear()
        for session_id in list(self._sessions):
            self._end_session(session_id, end, unfinished=True)
        connection = self._connection
        connection.attributes.update(
            {"acp.frames": self._frames, "acp.stderr.lines": self._stderr_lines}
        )
        if self._malformed:
            connection.attributes["acp.frames.malformed"] = self._malformed
        self._emit(connection, end)
        return self._take()

    # --- frames ----------------------------------------------------------------------------

    def _stderr(self, frame: StoredFrameLike) -> None:
        self._stderr_lines += 1
        if self._content is None:
            return
        text = bytes(frame.raw).decode("utf-8", "replace").rstrip("\r\n")
        redacted = self._content(text, None)
        attributes: Attributes = {"acp.stderr.text": redacted if isinstance(redacted, str) else ""}
        self._event(self._connection, "acp.stderr", frame, attributes)

    def _request(self, frame: StoredFrameLike, message: dict[str, Any]) -> None:
        method = frame.method or ""
        params = message.get("params")
        remote = self._remote(params)
        if method == acp.INITIALIZE and frame.direction == "c2a":
            self._initialize_request(params, remote)
            remote = None  # the connection took it; initialize is its child
        session_id = frame.session_id
        if method not in SESSION_OPENING_METHODS:  # those open theirs when they succeed
            self._seen_session(session_id, frame.wall_ns)
        pending = _Pending(
            frame.seq, method, frame.direction, frame.wall_ns, frame.rpc_id, session_id, remote,
            params if self._content is not None else None, frame.tool_call_id,
        )  # fmt: skip
        self._requests[frame.seq] = pending
        if method == acp.SESSION_PROMPT and frame.direction == "c2a" and session_id is not None:
            self._open_turn(frame, session_id, remote, params)
            pending.remote = None  # the turn stands for this message: it took the remote parent

    def _initialize_request(self, params: Any, remote: SpanRef | None) -> None:
        info = _dict(acp.client_info(params))
        for key in ("name", "version"):
            if isinstance(info.get(key), str):
                self._connection.attributes[f"acp.client.{key}"] = self._text(info[key])
        if remote is not None and not self._spans_out:
            self._reparent(self._connection, remote, None)

    def _initialize_response(self, result: Any) -> None:
        version = acp.protocol_version(result)
        if version is not None:
            self._protocol_version = version
            self._connection.attributes["acp.protocol.version"] = version
        info = _dict(acp.agent_info(result))
        for key in ("name", "version"):
            if isinstance(info.get(key), str):
                self._agent[key] = self._text(info[key])
                self._connection.attributes[f"gen_ai.agent.{key}"] = self._agent[key]

    def _response(self, frame: StoredFrameLike, message: dict[str, Any]) -> None:
        pending = self._requests.pop(frame.request_seq, None) if frame.request_seq else None
        if pending is None:
            self._event(self._connection, "acp.response.unmatched", frame, {})
            return
        result = message.get("result")
        if pending.method == acp.INITIALIZE and frame.kind == "response":
            self._initialize_response(result)
        session_id = pending.session_id or frame.session_id
        if (
            session_id is not None
            and pending.method in SESSION_OPENING_METHODS
            and frame.kind == "response"
        ):
            pending.session_id = session_id
            self._session(session_id, pending.start_ns, pending.remote, pending.method)
            pending.remote = None  # the session took it; this request is its child
        span = self._request_span(pending)
        span.attributes["acp.frame.response_seq"] = frame.seq
        if frame.kind == "error":
            error = _dict(message.get("error"))
            code = frame.error_code
            self._fail(span, "_OTHER" if code is None else str(code), _str(error.get("message")))
            if code is not None:
                span.attributes["rpc.response.status_code"] = str(code)
            if self._content is not None and "data" in error:
                span.attributes["acp.response.error_data"] = _json(
                    self._content(error["data"], pending.method)
                )
        elif self._content is not None and "result" in message:
            span.attributes["acp.response.result"] = _json(self._content(result, pending.method))
        if frame.stop_reason is not None:
            span.attributes["acp.stop_reason"] = frame.stop_reason
        self._emit(span, frame.wall_ns)
        turn = self._turns.get(pending.seq) if pending.method == acp.SESSION_PROMPT else None
        if turn is not None:
            self._prompt_answered(turn, frame)
        if pending.method == SESSION_CLOSE and session_id is not None:
            self._end_session(session_id, frame.wall_ns)

    def _streamed(self, frame: StoredFrameLike) -> None:
        """A notification that ends nothing and needs no parse (a streamed chunk, mostly)."""
        session_id = frame.session_id
        target: Span | None
        if session_id is None:
            target = self._connection
        else:
            turn = self._newest.get(session_id)
            target = turn.span if turn is not None else self._sessions.get(session_id)
            if target is None:
                target = self._session_or_connection(session_id, frame.wall_ns)
        if len(target.events) >= self._options.max_events:
            target.dropped_events += 1  # before building attributes nobody will see
            return
        attributes: Attributes = {}
        if frame.update_kind is not None:
            attributes["acp.session_update"] = frame.update_kind
        if frame.message_id is not None:
            attributes["acp.message.id"] = frame.message_id
        self._event(target, frame.method or "notification", frame, attributes)

    def _notification(self, frame: StoredFrameLike, message: dict[str, Any]) -> None:
        params = message.get("params")
        session_id = frame.session_id
        self._seen_session(session_id, frame.wall_ns)
        attributes: Attributes = {}
        update_kind = frame.update_kind
        if update_kind is not None:
            attributes["acp.session_update"] = update_kind
        if frame.message_id is not None:
            attributes["acp.message.id"] = frame.message_id
        if self._content is not None and params is not None:
            params = self._content(params, frame.method)
            attributes["acp.params"] = _json(params)
        update = _dict(_dict(params).get("update"))
        tool_key = None
        if session_id is not None and update_kind in ("tool_call", "tool_call_update"):
            tool_key = self._tool_update(frame, session_id, update, self._remote(params))
        turn = self._newest_turn(session_id)
        if turn is not None and self._content is not None:
            self._collect_output(turn, update_kind, update)
        if update_kind == "usage_update":
            self._usage(turn.span if turn else self._sessions.get(session_id or ""), update)
        if tool_key is not None:
            target = self._tools[tool_key].span
        elif turn is not None:
            target = turn.span
        else:
            target = self._sessions.get(session_id or "", self._connection)
        self._event(target, frame.method or "notification", frame, attributes)
        if tool_key is not None and update.get("status") in FINAL_TOOL_STATUSES:
            self._end_tool(tool_key, frame.wall_ns)
        if update_kind == "state_update" and update.get("state") == "idle":
            self._idle(frame, session_id)

    # --- sessions and turns ----------------------------------------------------------------

    def _session(
        self, session_id: str, start_ns: int, remote: SpanRef | None, opened_by: str | None
    ) -> Span:
        span = self._sessions.get(session_id)
        if span is None:
            # A session opened again after its close (``session/load``) is a span of its own.
            opened = self._openings[session_id] = self._openings.get(session_id, 0) + 1
            key = f"session\0{session_id}" + (f"\0{opened}" if opened > 1 else "")
            self._closed_sessions.discard(session_id)
            span = Span(
                SESSION_SPAN, self._connection.trace_id, span_id_of(self._uid, key),
                self._connection.ref, False, INTERNAL, start_ns,
                attributes={"gen_ai.conversation.id": session_id, "acp.session.id": session_id},
            )  # fmt: skip
            if remote is not None:
                self._reparent(span, remote, self._connection.ref)
            self._sessions[session_id] = span
        if opened_by is not None and "acp.session.opened_by" not in span.attributes:
            span.attributes["acp.session.opened_by"] = opened_by
            span.start_ns = min(span.start_ns, start_ns)
        return span

    def _seen_session(self, session_id: str | None, time_ns: int) -> None:
        """A session first seen in a message that does not open it (a session span all the same)."""
        if session_id is not None and session_id not in self._closed_sessions:
            self._session(session_id, time_ns, None, None)

    def _session_or_connection(self, session_id: str, time_ns: int) -> Span:
        """The parent for a span of this session (the connection once the session is closed)."""
        if session_id in self._closed_sessions:
            return self._connection
        return self._session(session_id, time_ns, None, None)

    def _end_session(self, session_id: str, end_ns: int, *, unfinished: bool = False) -> None:
        for turn in [t for t in self._turns.values() if t.session_id == session_id]:
            self._end_turn(turn, end_ns, unfinished=True)
        span = self._sessions.pop(session_id, None)
        if span is None:
            return
        self._closed_sessions.add(session_id)
        if unfinished:
            span.attributes["acp.unfinished"] = True
        self._emit(span, end_ns)

    def _open_turn(
        self, frame: StoredFrameLike, session_id: str, remote: SpanRef | None, params: Any
    ) -> None:
        session = self._session_or_connection(session_id, frame.wall_ns)
        name = f"{TURN_SPAN} {self._agent['name']}" if "name" in self._agent else TURN_SPAN
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": session_id,
            "acp.frame.request_seq": frame.seq,
        }
        for key, value in self._agent.items():
            attributes[f"gen_ai.agent.{key}"] = value
        span = Span(
            name, session.trace_id, span_id_of(self._uid, f"turn\0{frame.seq}"), session.ref,
            False, CLIENT, frame.wall_ns, attributes=attributes,
        )  # fmt: skip
        if remote is not None:
            self._reparent(span, remote, session.ref)
        if self._content is not None:
            prompt = _dict(self._content(params, acp.SESSION_PROMPT)).get("prompt")
            parts = [_part(block) for block in prompt] if isinstance(prompt, list) else []
            span.attributes["gen_ai.input.messages"] = _json([{"role": "user", "parts": parts}])
        self._turns[frame.seq] = self._newest[session_id] = _Turn(frame.seq, session_id, span)
        if session is not self._connection:
            self._prompts[session.span_id] = self._prompts.get(session.span_id, 0) + 1
            session.attributes["acp.session.prompts"] = self._prompts[session.span_id]

    def _newest_turn(self, session_id: str | None) -> _Turn | None:
        return None if session_id is None else self._newest.get(session_id)

    def _prompt_answered(self, turn: _Turn, frame: StoredFrameLike) -> None:
        span = turn.span
        if frame.message_id is not None:
            span.attributes["acp.message.id"] = frame.message_id
        if frame.kind == "error":
            code = frame.error_code
            self._fail(span, "_OTHER" if code is None else str(code), None)
            self._end_turn(turn, frame.wall_ns)
        elif (self._protocol_version or acp.PROTOCOL_V1) < acp.PROTOCOL_V2:
            self._stop(span, frame.stop_reason)
            self._end_turn(turn, frame.wall_ns)

    def _idle(self, frame: StoredFrameLike, session_id: str | None) -> None:
        if (self._protocol_version or acp.PROTOCOL_V1) < acp.PROTOCOL_V2:
            return
        for turn in [t for t in self._turns.values() if t.session_id == session_id]:
            self._stop(turn.span, frame.stop_reason)
            self._end_turn(turn, frame.wall_ns)

    def _stop(self, span: Span, stop_reason: str | None) -> None:
        if stop_reason is not None:
            span.attributes["acp.stop_reason"] = stop_reason
            span.attributes["gen_ai.response.finish_reasons"] = (stop_reason,)

    def _end_turn(self, turn: _Turn, end_ns: int, *, unfinished: bool = False) -> None:
        if self._turns.pop(turn.seq, None) is None:
            return
        if self._newest.get(turn.session_id) is turn:
            del self._newest[turn.session_id]
            for other in self._turns.values():  # an older turn of the session still open
                if other.session_id == turn.session_id:
                    self._newest[turn.session_id] = other
        for key, tool in list(self._tools.items()):
            if tool.turn_seq == turn.seq:
                self._end_tool(key, end_ns, unfinished=True)
        span = turn.span
        if unfinished:
            span.attributes["acp.unfinished"] = True
        if self._content is not None:
            parts = []
            if turn.thoughts:
                parts.append({"type": "reasoning", "content": "".join(turn.thoughts)})
            if turn.texts:
                parts.append({"type": "text", "content": "".join(turn.texts)})
            message: dict[str, Any] = {"role": "assistant", "parts": parts}
            reason = span.attributes.get("acp.stop_reason")
            message["finish_reason"] = reason if isinstance(reason, str) else ""
            span.attributes["gen_ai.output.messages"] = _json([message])
        self._emit(span, end_ns)

    def _collect_output(self, turn: _Turn, update_kind: str | None, update: dict[str, Any]) -> None:
        content = _dict(update.get("content"))
        if content.get("type") != "text" or not isinstance(content.get("text"), str):
            return
        if update_kind == "agent_message_chunk":
            turn.texts.append(content["text"])
        elif update_kind == "agent_thought_chunk":
            turn.thoughts.append(content["text"])

    def _usage(self, span: Span | None, update: dict[str, Any]) -> None:
        if span is None:
            return
        for key in ("used", "size"):
            value = update.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                span.attributes[f"acp.usage.{key}"] = value

    # --- tool calls ------------------------------------------------------------------------

    def _tool_update(
        self,
        frame: StoredFrameLike,
        session_id: str,
        update: dict[str, Any],
        remote: SpanRef | None,
    ) -> tuple[str, str] | None:
        """Apply a tool call (update) to its span; returns its key, None if it has ended."""
        tool_call_id = frame.tool_call_id
        if tool_call_id is None:
            return None
        key = (session_id, tool_call_id)
        if key in self._ended_tools:
            return None
        tool = self._tools.get(key)
        if tool is None:
            turn = self._newest_turn(session_id)
            parent = turn.span if turn else self._session_or_connection(session_id, frame.wall_ns)
            span = Span(
                TOOL_SPAN, parent.trace_id,
                span_id_of(self._uid, f"tool\0{session_id}\0{tool_call_id}"), parent.ref, False,
                INTERNAL, frame.wall_ns,
                attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": tool_call_id,
                    "gen_ai.conversation.id": session_id,
                },
            )  # fmt: skip
            if remote is not None:
                self._reparent(span, remote, parent.ref)
            tool = self._tools[key] = _Tool(span, turn.seq if turn else None)
        attributes = tool.span.attributes
        for name, attribute in (("kind", "acp.tool_call.kind"), ("status", "acp.tool_call.status")):
            if isinstance(update.get(name), str):
                attributes[attribute] = update[name]
        if isinstance(update.get("title"), str):
            attributes["acp.tool_call.title"] = self._text(update["title"])
        if isinstance(update.get("name"), str):
            attributes["gen_ai.tool.name"] = self._text(update["name"])
        if self._content is not None:  # ``update`` is already the redacted one
            if "rawInput" in update:
                attributes["gen_ai.tool.call.arguments"] = _json(update["rawInput"])
            if "rawOutput" in update:
                attributes["gen_ai.tool.call.result"] = _json(update["rawOutput"])
                tool.raw_output = True
            elif "content" in update and not tool.raw_output:
                attributes["gen_ai.tool.call.result"] = _json(update["content"])
        return key

    def _end_tool(self, key: tuple[str, str], end_ns: int, *, unfinished: bool = False) -> None:
        tool = self._tools.pop(key, None)
        if tool is None:
            return
        self._ended_tools.add(key)
        span = tool.span
        attributes = span.attributes
        if "gen_ai.tool.name" not in attributes and isinstance(
            attributes.get("acp.tool_call.kind"), str
        ):
            attributes["gen_ai.tool.name"] = attributes["acp.tool_call.kind"]
        name = attributes.get("gen_ai.tool.name")
        span.name = f"{TOOL_SPAN} {name}" if isinstance(name, str) else TOOL_SPAN
        if attributes.get("acp.tool_call.status") == "failed":
            self._fail(span, "tool_error", None)
        if unfinished:
            attributes["acp.unfinished"] = True
        self._emit(span, end_ns)

    # --- spans -----------------------------------------------------------------------------

    def _request_span(self, pending: _Pending) -> Span:
        parent = self._request_parent(pending)
        attributes: Attributes = {
            "rpc.system.name": "jsonrpc",
            "rpc.method": pending.method,
            "acp.caller": _CALLER.get(pending.direction, pending.direction),
            "acp.frame.request_seq": pending.seq,
        }
        request_id = _id_text(pending.rpc_id)
        if request_id is not None:
            attributes["jsonrpc.request.id"] = request_id
        if pending.session_id is not None:
            attributes["acp.session.id"] = pending.session_id
        if pending.tool_call_id is not None:
            attributes["gen_ai.tool.call.id"] = pending.tool_call_id
        if self._content is not None and pending.params is not None:
            attributes["acp.request.params"] = _json(self._content(pending.params, pending.method))
        span = Span(
            pending.method or "request", parent.trace_id,
            span_id_of(self._uid, f"request\0{pending.seq}"), parent.ref, False, CLIENT,
            pending.start_ns, attributes=attributes,
        )  # fmt: skip
        if pending.remote is not None:
            self._reparent(span, pending.remote, parent.ref)
        return span

    def _request_parent(self, pending: _Pending) -> Span:
        turn = self._turns.get(pending.seq)
        if turn is not None:  # the session/prompt request of a turn
            return turn.span
        session_id = pending.session_id
        if session_id is None:
            return self._connection
        if pending.tool_call_id is not None:
            tool = self._tools.get((session_id, pending.tool_call_id))
            if tool is not None:
                return tool.span
        if pending.method not in SESSION_OPENING_METHODS:
            newest = self._newest_turn(session_id)
            if newest is not None:
                return newest.span
        return self._sessions.get(session_id, self._connection)

    def _reparent(self, span: Span, remote: SpanRef, structural: SpanRef | None) -> None:
        span.trace_id = remote.trace_id
        span.parent = remote
        span.parent_remote = True
        if structural is not None:
            span.links.append(structural)

    def _remote(self, params: Any) -> SpanRef | None:
        meta = _dict(params).get("_meta")
        return parse_traceparent(meta.get("traceparent")) if isinstance(meta, dict) else None

    def _fail(self, span: Span, error_type: str, message: str | None) -> None:
        span.attributes["error.type"] = error_type
        span.status = ERROR
        if message:
            span.status_message = self._text(message)

    def _event(self, span: Span, name: str, frame: StoredFrameLike, attributes: Attributes) -> None:
        if len(span.events) >= self._options.max_events:
            span.dropped_events += 1
            return
        attributes["acp.frame.seq"] = frame.seq
        caller = _CALLER.get(frame.direction)
        if caller is not None:
            attributes["acp.caller"] = caller
        span.events.append(Event(name, frame.wall_ns, attributes))

    def _emit(self, span: Span, end_ns: int) -> None:
        span.end_ns = max(end_ns, span.start_ns)
        self._spans_out = True
        self._out.append(span)

    def _take(self) -> list[Span]:
        out, self._out = self._out, []
        return out


def _part(block: Any) -> dict[str, Any]:
    """A prompt content block as a GenAI message part (text, else the block's kind and names)."""
    block = _dict(block)
    kind = _str(block.get("type")) or "unknown"
    if kind == "text":
        return {"type": "text", "content": _str(block.get("text")) or ""}
    part: dict[str, Any] = {"type": kind}
    resource = _dict(block.get("resource"))
    for key, source in (("uri", block), ("name", block), ("mime_type", block), ("uri", resource)):
        value = source.get("mimeType" if key == "mime_type" else key)
        if isinstance(value, str):
            part.setdefault(key, value)
    if isinstance(resource.get("text"), str):
        part["content"] = resource["text"]
    return part
