"""Sans-I/O: the span of each prompt turn (``invoke_agent``), from its ``session/prompt``
request to its end.

Rules:
- A turn ends at its prompt's response in protocol v1, at the first idle ``state_update`` of
  its session after it in v2 (draft), at an error response in either, or with its session; its
  open tool calls end with it.
- The newest open turn of a session is the one its notifications and new tool calls belong to;
  when it ends, an older turn of the session still open becomes the newest again.
- The prompt and the agent's output (its message and thought chunks) are content: there only
  when ``Options.content`` is given, as it returns them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_proxy.otel.span_tree import SpanTree, as_dict, as_str, stop, to_json
from acp_proxy.otel.span_values import CLIENT, Attributes, Span, SpanRef
from acp_proxy.otel.tool_spans import ToolSpans
from acp_proxy.protocol import acp
from acp_proxy.protocol.observer import StoredFrameLike

TURN_SPAN = "invoke_agent"


@dataclass(slots=True)
class Turn:
    seq: int
    session_id: str
    span: Span
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)


class TurnSpans:
    def __init__(self, tree: SpanTree, tools: ToolSpans) -> None:
        self._tree = tree
        self._tools = tools
        self.open: dict[int, Turn] = {}  # by prompt seq, oldest first
        self.newest: dict[str, Turn] = {}  # the newest open turn of each session

    def newest_of(self, session_id: str | None) -> Turn | None:
        return None if session_id is None else self.newest.get(session_id)

    def start(
        self, frame: StoredFrameLike, session: Span, session_id: str, remote: SpanRef | None,
        params: Any, agent: dict[str, str],
    ) -> Turn:  # fmt: skip
        """The turn of the ``session/prompt`` request ``frame``, under ``session``."""
        name = f"{TURN_SPAN} {agent['name']}" if "name" in agent else TURN_SPAN
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": session_id,
            "acp.frame.request_seq": frame.seq,
        }
        for key, value in agent.items():
            attributes[f"gen_ai.agent.{key}"] = value
        span = self._tree.new_span(
            name, session, f"turn\0{frame.seq}", CLIENT, frame.wall_ns, attributes, remote
        )
        content = self._tree.content
        if content is not None:
            prompt = as_dict(content(params, acp.SESSION_PROMPT)).get("prompt")
            parts = [_part(block) for block in prompt] if isinstance(prompt, list) else []
            span.attributes["gen_ai.input.messages"] = to_json([{"role": "user", "parts": parts}])
        turn = self.open[frame.seq] = self.newest[session_id] = Turn(frame.seq, session_id, span)
        return turn

    def answered(self, turn: Turn, frame: StoredFrameLike, protocol_version: int | None) -> None:
        """The prompt's response (or error) ``frame``: the end of the turn, but in v2."""
        span = turn.span
        if frame.message_id is not None:
            span.attributes["acp.message.id"] = frame.message_id
        if frame.kind == "error":
            code = frame.error_code
            self._tree.fail(span, "_OTHER" if code is None else str(code), None)
            self.end(turn, frame.wall_ns)
        elif (protocol_version or acp.PROTOCOL_V1) < acp.PROTOCOL_V2:
            stop(span, frame.stop_reason)
            self.end(turn, frame.wall_ns)

    def idle(
        self, frame: StoredFrameLike, session_id: str | None, protocol_version: int | None
    ) -> None:
        """An idle ``state_update``: the end of the session's turns in v2."""
        if (protocol_version or acp.PROTOCOL_V1) < acp.PROTOCOL_V2:
            return
        for turn in [t for t in self.open.values() if t.session_id == session_id]:
            stop(turn.span, frame.stop_reason)
            self.end(turn, frame.wall_ns)

    def collect_output(self, turn: Turn, update_kind: str | None, update: dict[str, Any]) -> None:
        content = as_dict(update.get("content"))
        if content.get("type") != "text" or not isinstance(content.get("text"), str):
            return
        if update_kind == "agent_message_chunk":
            turn.texts.append(content["text"])
        elif update_kind == "agent_thought_chunk":
            turn.thoughts.append(content["text"])

    def end(self, turn: Turn, end_ns: int, *, unfinished: bool = False) -> None:
        if self.open.pop(turn.seq, None) is None:
            return
        if self.newest.get(turn.session_id) is turn:
            del self.newest[turn.session_id]
            for other in self.open.values():  # an older turn of the session still open
                if other.session_id == turn.session_id:
                    self.newest[turn.session_id] = other
        self._tools.end_of_turn(turn.seq, end_ns)
        span = turn.span
        if unfinished:
            span.attributes["acp.unfinished"] = True
        if self._tree.content is not None:
            parts = []
            if turn.thoughts:
                parts.append({"type": "reasoning", "content": "".join(turn.thoughts)})
            if turn.texts:
                parts.append({"type": "text", "content": "".join(turn.texts)})
            message: dict[str, Any] = {"role": "assistant", "parts": parts}
            reason = span.attributes.get("acp.stop_reason")
            message["finish_reason"] = reason if isinstance(reason, str) else ""
            span.attributes["gen_ai.output.messages"] = to_json([message])
        self._tree.emit(span, end_ns)

    def end_of_session(self, session_id: str, end_ns: int) -> None:
        for turn in [t for t in self.open.values() if t.session_id == session_id]:
            self.end(turn, end_ns, unfinished=True)

    def end_all(self, end_ns: int) -> None:
        for turn in list(self.open.values()):
            self.end(turn, end_ns, unfinished=True)


def _part(block: Any) -> dict[str, Any]:
    """A prompt content block as a GenAI message part (text, else the block's kind and names)."""
    block = as_dict(block)
    kind = as_str(block.get("type")) or "unknown"
    if kind == "text":
        return {"type": "text", "content": as_str(block.get("text")) or ""}
    part: dict[str, Any] = {"type": kind}
    resource = as_dict(block.get("resource"))
    for key, source in (("uri", block), ("name", block), ("mime_type", block), ("uri", resource)):
        value = source.get("mimeType" if key == "mime_type" else key)
        if isinstance(value, str):
            part.setdefault(key, value)
    if isinstance(resource.get("text"), str):
        part["content"] = resource["text"]
    return part
