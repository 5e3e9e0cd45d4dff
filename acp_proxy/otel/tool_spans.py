"""Sans-I/O: the span of each tool call (``execute_tool``), from its ``tool_call`` update to its
final status.

Rules:
- One span per (session, tool call id), under the turn that was newest when the call began
  (else its session, else the connection); a tool call that has ended never opens again.
- It ends at its final status (``completed`` or ``failed``: failed marks it an error), or with
  its turn; its name is ``execute_tool NAME`` (the tool's name, else its kind).
- Its arguments and result are content: there only when ``Options.content`` is given (the
  update handed in is the redacted one); ``rawOutput`` wins over ``content`` as the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_proxy.otel.span_tree import SpanTree, to_json
from acp_proxy.otel.span_values import INTERNAL, Span, SpanRef
from acp_proxy.protocol.observer import StoredFrameLike

TOOL_SPAN = "execute_tool"
FINAL_TOOL_STATUSES = frozenset({"completed", "failed"})
ToolKey = tuple[str, str]  # (session id, tool call id)


@dataclass(slots=True)
class _Tool:
    span: Span
    turn_seq: int | None
    raw_output: bool = False


class ToolSpans:
    def __init__(self, tree: SpanTree) -> None:
        self._tree = tree
        self.open: dict[ToolKey, _Tool] = {}
        self._ended: set[ToolKey] = set()

    def span(self, session_id: str, tool_call_id: str) -> Span | None:
        tool = self.open.get((session_id, tool_call_id))
        return tool.span if tool is not None else None

    def update(
        self, frame: StoredFrameLike, session_id: str, update: dict[str, Any],
        remote: SpanRef | None, parent: Callable[[], tuple[Span, int | None]],
    ) -> ToolKey | None:  # fmt: skip
        """Apply a tool call (update) to its span, opened under ``parent()`` (its span and the
        turn's prompt seq) if it is new; returns its key, None if it has ended."""
        tool_call_id = frame.tool_call_id
        if tool_call_id is None:
            return None
        key = (session_id, tool_call_id)
        if key in self._ended:
            return None
        tool = self.open.get(key)
        if tool is None:
            parent_span, turn_seq = parent()
            span = self._tree.new_span(
                TOOL_SPAN, parent_span, f"tool\0{session_id}\0{tool_call_id}", INTERNAL,
                frame.wall_ns, {
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": tool_call_id,
                    "gen_ai.conversation.id": session_id,
                }, remote,
            )  # fmt: skip
            tool = self.open[key] = _Tool(span, turn_seq)
        attributes = tool.span.attributes
        for name, attribute in (("kind", "acp.tool_call.kind"), ("status", "acp.tool_call.status")):
            if isinstance(update.get(name), str):
                attributes[attribute] = update[name]
        if isinstance(update.get("title"), str):
            attributes["acp.tool_call.title"] = self._tree.text(update["title"])
        if isinstance(update.get("name"), str):
            attributes["gen_ai.tool.name"] = self._tree.text(update["name"])
        if self._tree.content is not None:  # ``update`` is already the redacted one
            if "rawInput" in update:
                attributes["gen_ai.tool.call.arguments"] = to_json(update["rawInput"])
            if "rawOutput" in update:
                attributes["gen_ai.tool.call.result"] = to_json(update["rawOutput"])
                tool.raw_output = True
            elif "content" in update and not tool.raw_output:
                attributes["gen_ai.tool.call.result"] = to_json(update["content"])
        return key

    def end(self, key: ToolKey, end_ns: int, *, unfinished: bool = False) -> None:
        tool = self.open.pop(key, None)
        if tool is None:
            return
        self._ended.add(key)
        span = tool.span
        attributes = span.attributes
        if "gen_ai.tool.name" not in attributes and isinstance(
            attributes.get("acp.tool_call.kind"), str
        ):
            attributes["gen_ai.tool.name"] = attributes["acp.tool_call.kind"]
        name = attributes.get("gen_ai.tool.name")
        span.name = f"{TOOL_SPAN} {name}" if isinstance(name, str) else TOOL_SPAN
        if attributes.get("acp.tool_call.status") == "failed":
            self._tree.fail(span, "tool_error", None)
        if unfinished:
            attributes["acp.unfinished"] = True
        self._tree.emit(span, end_ns)

    def end_of_turn(self, turn_seq: int, end_ns: int) -> None:
        """The tool calls still open in the turn of prompt ``turn_seq``, ended unfinished."""
        for key, tool in list(self.open.items()):
            if tool.turn_seq == turn_seq:
                self.end(key, end_ns, unfinished=True)

    def end_all(self, end_ns: int) -> None:
        for key in list(self.open):
            self.end(key, end_ns, unfinished=True)
