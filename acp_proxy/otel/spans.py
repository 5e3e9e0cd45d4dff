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

The builder reads the frames and decides; each kind of span is a module of its own:
span_tree.py (ids, events, failure, remote parents, the spans handed out), session_spans.py,
turn_spans.py, tool_spans.py and request_spans.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acp_proxy.otel.request_spans import Pending, request_span
from acp_proxy.otel.session_spans import SESSION_SPAN, SessionSpans
from acp_proxy.otel.span_tree import (
    CONNECTION_SPAN,
    SpanTree,
    as_dict,
    as_str,
    remote_parent,
    reparent,
    to_json,
)
from acp_proxy.otel.span_values import Attributes, ConnectionInfo, Options, Span, SpanRef
from acp_proxy.otel.tool_spans import FINAL_TOOL_STATUSES, TOOL_SPAN, ToolSpans
from acp_proxy.otel.turn_spans import TURN_SPAN, TurnSpans
from acp_proxy.protocol import acp
from acp_proxy.protocol.decode import json_or_none
from acp_proxy.protocol.observer import StoredFrameLike

__all__ = [
    "CONNECTION_SPAN", "FINAL_TOOL_STATUSES", "SESSION_CLOSE", "SESSION_OPENING_METHODS",
    "SESSION_SPAN", "TOOL_SPAN", "TURN_SPAN", "SpanBuilder",
]  # fmt: skip

SESSION_OPENING_METHODS = acp.SESSION_CREATING_METHODS | {acp.SESSION_LOAD, acp.SESSION_RESUME}
SESSION_CLOSE = "session/close"
_JSON_KINDS = frozenset({"request", "notification", "response", "error"})
# Updates whose body shapes a span (the others, streamed chunks mostly, need only their columns).
_PARSED_UPDATES = frozenset({"tool_call", "tool_call_update", "state_update", "usage_update"})


class SpanBuilder:
    """Turns one connection's frames, in ``seq`` order, into finished spans."""

    def __init__(self, connection: ConnectionInfo, options: Options | None = None) -> None:
        self._options = options or Options()
        self._tree = tree = SpanTree(connection, self._options)
        self._content = tree.content
        self._text = tree.text
        self._connection = tree.connection
        self._tools = ToolSpans(tree)
        self._turns = TurnSpans(tree, self._tools)
        self._sessions = SessionSpans(tree, self._turns)
        self._newest = self._turns.newest  # the same dicts: the common frame reads them directly
        self._open_sessions = self._sessions.open
        self._last_ns = connection.started_ns
        self._protocol_version: int | None = None
        self._agent: dict[str, str] = {}
        self._frames = 0
        self._stderr_lines = 0
        self._malformed = 0
        self._requests: dict[int, Pending] = {}

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
        tree = self._tree
        if kind == "stderr":
            self._stderr(frame)
        elif kind == "batch":  # valid JSON-RPC, but ACP has no batches: noted, not traced
            tree.event(self._connection, "acp.frame.batch", frame, {})
        elif kind not in _JSON_KINDS:
            self._malformed += 1
            tree.event(self._connection, "acp.frame.malformed", frame, {"acp.frame.kind": kind})
        else:
            message = as_dict(json_or_none(frame.raw))
            if kind == "request":
                self._request(frame, message)
            elif kind == "notification":
                self._notification(frame, message)
            else:
                self._response(frame, message)
        return tree.take()

    def open_spans(self) -> int:
        """How many spans are still open (the connection's included)."""
        return (
            1 + len(self._open_sessions) + len(self._turns.open) + len(self._requests)
            + len(self._tools.open)
        )  # fmt: skip

    def feed_all(self, frames: Iterable[StoredFrameLike]) -> list[Span]:
        spans: list[Span] = []
        for frame in frames:
            spans += self.feed(frame)
        return spans

    def finish(self) -> list[Span]:
        """Everything still open, ended at the last frame (``acp.unfinished``), connection last."""
        end = self._last_ns
        self._tools.end_all(end)
        self._turns.end_all(end)
        for pending in list(self._requests.values()):
            span = self._request_span(pending)
            span.attributes["acp.unfinished"] = True
            self._tree.emit(span, end)
        self._requests.clear()
        self._sessions.end_all(end)
        connection = self._connection
        connection.attributes.update(
            {"acp.frames": self._frames, "acp.stderr.lines": self._stderr_lines}
        )
        if self._malformed:
            connection.attributes["acp.frames.malformed"] = self._malformed
        self._tree.emit(connection, end)
        return self._tree.take()

    # --- frames ----------------------------------------------------------------------------
    def _stderr(self, frame: StoredFrameLike) -> None:
        self._stderr_lines += 1
        if self._content is None:
            return
        text = bytes(frame.raw).decode("utf-8", "replace").rstrip("\r\n")
        redacted = self._content(text, None)
        attributes: Attributes = {"acp.stderr.text": redacted if isinstance(redacted, str) else ""}
        self._tree.event(self._connection, "acp.stderr", frame, attributes)

    def _request(self, frame: StoredFrameLike, message: dict[str, Any]) -> None:
        method = frame.method or ""
        params = message.get("params")
        remote = remote_parent(params)
        if method == acp.INITIALIZE and frame.direction == "c2a":
            self._initialize_request(params, remote)
            remote = None  # the connection took it; initialize is its child
        session_id = frame.session_id
        if method not in SESSION_OPENING_METHODS:  # those open theirs when they succeed
            self._sessions.seen(session_id, frame.wall_ns)
        pending = Pending(
            frame.seq, method, frame.direction, frame.wall_ns, frame.rpc_id, session_id, remote,
            params if self._content is not None else None, frame.tool_call_id,
        )  # fmt: skip
        self._requests[frame.seq] = pending
        if method == acp.SESSION_PROMPT and frame.direction == "c2a" and session_id is not None:
            session = self._sessions.parent_for(session_id, frame.wall_ns)
            self._turns.start(frame, session, session_id, remote, params, self._agent)
            self._sessions.count_prompt(session)
            pending.remote = None  # the turn stands for this message: it took the remote parent

    def _initialize_request(self, params: Any, remote: SpanRef | None) -> None:
        info = as_dict(acp.client_info(params))
        for key in ("name", "version"):
            if isinstance(info.get(key), str):
                self._connection.attributes[f"acp.client.{key}"] = self._text(info[key])
        if remote is not None and not self._tree.spans_out:
            reparent(self._connection, remote, None)

    def _initialize_response(self, result: Any) -> None:
        version = acp.protocol_version(result)
        if version is not None:
            self._protocol_version = version
            self._connection.attributes["acp.protocol.version"] = version
        info = as_dict(acp.agent_info(result))
        for key in ("name", "version"):
            if isinstance(info.get(key), str):
                self._agent[key] = self._text(info[key])
                self._connection.attributes[f"gen_ai.agent.{key}"] = self._agent[key]

    def _response(self, frame: StoredFrameLike, message: dict[str, Any]) -> None:
        pending = self._requests.pop(frame.request_seq, None) if frame.request_seq else None
        if pending is None:
            self._tree.event(self._connection, "acp.response.unmatched", frame, {})
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
            self._sessions.session(session_id, pending.start_ns, pending.remote, pending.method)
            pending.remote = None  # the session took it; this request is its child
        span = self._request_span(pending)
        span.attributes["acp.frame.response_seq"] = frame.seq
        if frame.kind == "error":
            error = as_dict(message.get("error"))
            code = frame.error_code
            self._tree.fail(
                span, "_OTHER" if code is None else str(code), as_str(error.get("message"))
            )
            if code is not None:
                span.attributes["rpc.response.status_code"] = str(code)
            if self._content is not None and "data" in error:
                span.attributes["acp.response.error_data"] = to_json(
                    self._content(error["data"], pending.method)
                )
        elif self._content is not None and "result" in message:
            span.attributes["acp.response.result"] = to_json(self._content(result, pending.method))
        if frame.stop_reason is not None:
            span.attributes["acp.stop_reason"] = frame.stop_reason
        self._tree.emit(span, frame.wall_ns)
        turn = self._turns.open.get(pending.seq) if pending.method == acp.SESSION_PROMPT else None
        if turn is not None:
            self._turns.answered(turn, frame, self._protocol_version)
        if pending.method == SESSION_CLOSE and session_id is not None:
            self._sessions.end(session_id, frame.wall_ns)

    def _streamed(self, frame: StoredFrameLike) -> None:
        """A notification that ends nothing and needs no parse (a streamed chunk, mostly)."""
        session_id = frame.session_id
        target: Span | None
        if session_id is None:
            target = self._connection
        else:
            turn = self._newest.get(session_id)
            target = turn.span if turn is not None else self._open_sessions.get(session_id)
            if target is None:
                target = self._sessions.parent_for(session_id, frame.wall_ns)
        if len(target.events) >= self._options.max_events:
            target.dropped_events += 1  # before building attributes nobody will see
            return
        attributes: Attributes = {}
        if frame.update_kind is not None:
            attributes["acp.session_update"] = frame.update_kind
        if frame.message_id is not None:
            attributes["acp.message.id"] = frame.message_id
        self._tree.event(target, frame.method or "notification", frame, attributes)

    def _notification(self, frame: StoredFrameLike, message: dict[str, Any]) -> None:
        params = message.get("params")
        session_id = frame.session_id
        self._sessions.seen(session_id, frame.wall_ns)
        attributes: Attributes = {}
        update_kind = frame.update_kind
        if update_kind is not None:
            attributes["acp.session_update"] = update_kind
        if frame.message_id is not None:
            attributes["acp.message.id"] = frame.message_id
        if self._content is not None and params is not None:
            params = self._content(params, frame.method)
            attributes["acp.params"] = to_json(params)
        update = as_dict(as_dict(params).get("update"))
        tool_key = None
        if session_id is not None and update_kind in ("tool_call", "tool_call_update"):
            tool_key = self._tools.update(
                frame, session_id, update, remote_parent(params),
                lambda: self._tool_parent(session_id, frame.wall_ns),
            )  # fmt: skip
        turn = self._turns.newest_of(session_id)
        if turn is not None and self._content is not None:
            self._turns.collect_output(turn, update_kind, update)
        if update_kind == "usage_update":
            self._usage(turn.span if turn else self._open_sessions.get(session_id or ""), update)
        if tool_key is not None:
            target = self._tools.open[tool_key].span
        elif turn is not None:
            target = turn.span
        else:
            target = self._open_sessions.get(session_id or "", self._connection)
        self._tree.event(target, frame.method or "notification", frame, attributes)
        if tool_key is not None and update.get("status") in FINAL_TOOL_STATUSES:
            self._tools.end(tool_key, frame.wall_ns)
        if update_kind == "state_update" and update.get("state") == "idle":
            self._turns.idle(frame, session_id, self._protocol_version)

    def _usage(self, span: Span | None, update: dict[str, Any]) -> None:
        if span is None:
            return
        for key in ("used", "size"):
            value = update.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                span.attributes[f"acp.usage.{key}"] = value

    # --- parents ---------------------------------------------------------------------------

    def _request_span(self, pending: Pending) -> Span:
        return request_span(self._tree, pending, self._request_parent(pending))

    def _request_parent(self, pending: Pending) -> Span:
        turn = self._turns.open.get(pending.seq)
        if turn is not None:  # the session/prompt request of a turn
            return turn.span
        session_id = pending.session_id
        if session_id is None:
            return self._connection
        if pending.tool_call_id is not None:
            tool = self._tools.span(session_id, pending.tool_call_id)
            if tool is not None:
                return tool
        if pending.method not in SESSION_OPENING_METHODS:
            newest = self._turns.newest_of(session_id)
            if newest is not None:
                return newest.span
        return self._open_sessions.get(session_id, self._connection)

    def _tool_parent(self, session_id: str, time_ns: int) -> tuple[Span, int | None]:
        turn = self._turns.newest_of(session_id)
        if turn is not None:
            return turn.span, turn.seq
        return self._sessions.parent_for(session_id, time_ns), None
