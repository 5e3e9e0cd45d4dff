"""Spec-shaped ACP conversations (v1 stable and the v2 draft) used across tests.

Written from ../shared/acp/spec-digest.md and the v2 draft text (prompt-lifecycle): v1 ends a
turn with the prompt response's stopReason; v2 answers the prompt with a messageId receipt and
ends the turn with an idle state_update carrying the stopReason.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.protocol.acp import Direction
from tests.support.helpers import A2C, C2A, ERR, line


def update(session: str, body: dict[str, Any]) -> bytes:
    return line(
        {"jsonrpc": "2.0", "method": "session/update",
         "params": {"sessionId": session, "update": body}}
    )  # fmt: skip


V1_CONVERSATION: list[tuple[Direction, bytes]] = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}},
        "clientInfo": {"name": "zed", "version": "1.0"}}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": 1, "agentCapabilities": {"loadSession": True},
        "agentInfo": {"name": "agent-x", "version": "2.0"}}})),
    (ERR, b"agent: starting up\n"),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": "/home/u/p", "mcpServers": []}})),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess_1"}})),
    (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi"}]}})),
    (A2C, update("sess_1", {"sessionUpdate": "agent_thought_chunk", "messageId": "m0",
                             "content": {"type": "text", "text": "thinking"}})),
    (A2C, update("sess_1", {"sessionUpdate": "tool_call", "toolCallId": "call_1",
                             "title": "Read file", "status": "pending"})),
    # The agent's own id space: id 0 again, but a different request.
    (A2C, line({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "sess_1", "toolCall": {"toolCallId": "call_1"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}})),
    (C2A, line({"jsonrpc": "2.0", "id": 0, "result": {
        "outcome": {"outcome": "selected", "optionId": "allow"}}})),
    (A2C, update("sess_1", {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                             "content": {"type": "text", "text": "Hello"}})),
    (A2C, update("sess_1", {"sessionUpdate": "_vendor.example/unknown", "x": 1})),
    (C2A, line({"jsonrpc": "2.0", "method": "_zed.dev/ping", "params": {}})),
    (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
    (C2A, line({"jsonrpc": "2.0", "id": "3", "method": "session/set_mode",
                "params": {"sessionId": "sess_1", "modeId": "nope"}})),
    (A2C, line({"jsonrpc": "2.0", "id": "3",
                "error": {"code": -32602, "message": "Invalid params"}})),
]  # fmt: skip

V2_CONVERSATION: list[tuple[Direction, bytes]] = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 2, "info": {"name": "editor", "version": "9"}, "capabilities": {}}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": 2, "info": {"name": "agent-v2", "version": "0.2"},
        "capabilities": {"session": {}}}})),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w"}})),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s2"}})),
    (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": "s2", "prompt": [{"type": "text", "text": "analyze"}]}})),
    (A2C, update("s2", {"sessionUpdate": "user_message", "messageId": "msg_u1",
                         "content": [{"type": "text", "text": "analyze"}]})),
    (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "msg_u1"}})),
    (A2C, update("s2", {"sessionUpdate": "state_update", "state": "running"})),
    (A2C, update("s2", {"sessionUpdate": "notice", "severity": "info", "title": "Rate limited"})),
    (A2C, update("s2", {"sessionUpdate": "agent_message_chunk", "messageId": "msg_a1",
                         "content": {"type": "text", "text": "Done"}})),
    (A2C, update("s2", {"sessionUpdate": "state_update", "state": "idle",
                         "stopReason": "end_turn"})),
]  # fmt: skip
