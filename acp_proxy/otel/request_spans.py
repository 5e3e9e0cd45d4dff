"""Sans-I/O: the span of each JSON-RPC request (named by its method), from the request to its
response or error.

Rules:
- The request is held (``Pending``) until its response; its span is made then, under the
  parent the builder chooses when it ends (the turn it stands for, its tool call, the newest
  turn of its session, its session, else the connection).
- Who called (client or agent), its id, session and tool call are attributes; its params are
  content (there only when ``Options.content`` is given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_proxy.otel.span_tree import CALLER, SpanTree, to_json
from acp_proxy.otel.span_values import CLIENT, Attributes, Span, SpanRef


@dataclass(slots=True)
class Pending:
    seq: int
    method: str
    direction: str
    start_ns: int
    rpc_id: Any
    session_id: str | None
    remote: SpanRef | None
    params: Any
    tool_call_id: str | None


def request_span(tree: SpanTree, pending: Pending, parent: Span) -> Span:
    attributes: Attributes = {
        "rpc.system.name": "jsonrpc",
        "rpc.method": pending.method,
        "acp.caller": CALLER.get(pending.direction, pending.direction),
        "acp.frame.request_seq": pending.seq,
    }
    request_id = _id_text(pending.rpc_id)
    if request_id is not None:
        attributes["jsonrpc.request.id"] = request_id
    if pending.session_id is not None:
        attributes["acp.session.id"] = pending.session_id
    if pending.tool_call_id is not None:
        attributes["gen_ai.tool.call.id"] = pending.tool_call_id
    if tree.content is not None and pending.params is not None:
        attributes["acp.request.params"] = to_json(tree.content(pending.params, pending.method))
    return tree.new_span(
        pending.method or "request", parent, f"request\0{pending.seq}", CLIENT, pending.start_ns,
        attributes, pending.remote,
    )  # fmt: skip


def _id_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    return value if isinstance(value, str) else str(value)
