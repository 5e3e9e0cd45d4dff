"""v2-draft conversations for the transcript tests, written from the draft text.

Every update below is one of the examples of ../shared/acp/prompt-lifecycle-v2-draft.txt
(sections "Prompt Lifecycle" 1-6, "Session Notices", "Session Compaction", "Session Usage
Updates", "Cancellation", "Session-directed messages"), in the order the draft walks through
them, with the draft's ids (``sess_abc123def456``, ``msg_user_8f7a1``, ``call_001`` ...).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.protocol.acp import Direction
from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, line

SESSION = "sess_abc123def456"


def u(body: dict[str, Any], session: str = SESSION) -> tuple[Direction, bytes]:
    return (A2C, update(session, body))


HANDSHAKE: list[tuple[Direction, bytes]] = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 2, "info": {"name": "editor", "version": "1"}, "capabilities": {}}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": 2, "info": {"name": "agent", "version": "2"},
        "capabilities": {"session": {}}}})),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": "/home/user/project"}})),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SESSION}})),
]  # fmt: skip

PROMPT = [
    {"type": "text", "text": "Can you analyze this code for potential issues?"},
    {"type": "resource", "resource": {
        "uri": "file:///home/user/project/main.py", "mimeType": "text/x-python",
        "text": "def process_data(items):\n    for item in items:\n        print(item)"}},
]  # fmt: skip

PLAN_ENTRIES = [
    {"content": "Check for syntax errors", "priority": "high", "status": "pending"},
    {"content": "Identify potential type issues", "priority": "medium", "status": "pending"},
    {"content": "Review error handling patterns", "priority": "medium", "status": "pending"},
    {"content": "Suggest improvements", "priority": "low", "status": "pending"},
]

FINAL_TOOL_TEXT = (
    "Analysis complete:\n- No syntax errors found\n- Consider adding type hints for better "
    "clarity\n- The function could benefit from error handling for empty lists"
)

# The draft's walkthrough: prompt, acceptance, running, plan, agent message and chunk, thought,
# tool call, notice, compaction, usage, permission, tool progress, completion, idle.
V2_WALKTHROUGH: list[tuple[Direction, bytes]] = [
    *HANDSHAKE,
    (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": {"sessionId": SESSION, "prompt": PROMPT}})),
    (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "msg_user_8f7a1"}})),
    u({"sessionUpdate": "user_message", "messageId": "msg_user_8f7a1",
       "content": [PROMPT[0]]}),
    u({"sessionUpdate": "state_update", "state": "running"}),
    u({"sessionUpdate": "plan_update", "plan": {
        "type": "items", "planId": "plan-1", "entries": PLAN_ENTRIES}}),
    u({"sessionUpdate": "agent_message", "messageId": "msg_agent_c42b9", "content": [
        {"type": "text",
         "text": "I'll analyze your code for potential issues. Let me examine it..."}]}),
    u({"sessionUpdate": "agent_message_chunk", "messageId": "msg_agent_c42b9",
       "content": {"type": "text", "text": " Let me examine it..."}}),
    u({"sessionUpdate": "agent_thought", "messageId": "msg_thought_a12", "content": [
        {"type": "text", "text": "Need to inspect the loop body before suggesting a fix."}]}),
    u({"sessionUpdate": "tool_call_update", "toolCallId": "call_001",
       "title": "Analyzing Python code", "kind": "other", "status": "pending"}),
    u({"sessionUpdate": "notice", "severity": "warning", "title": "MCP server unavailable",
       "description": "Continuing without it."}),
    u({"sessionUpdate": "compaction_update", "compactionId": "cmp_001", "status": "in_progress"}),
    u({"sessionUpdate": "compaction_summary_chunk", "compactionId": "cmp_001",
       "content": {"type": "text", "text": "## Retained context\n\n"}}),
    u({"sessionUpdate": "compaction_update", "compactionId": "cmp_001", "status": "completed",
       "summary": [{"type": "text",
                    "text": "## Retained context\n\nThe user is updating the ACP schema."}]}),
    u({"sessionUpdate": "usage_update", "used": 53000, "size": 200000,
       "cost": {"amount": 0.045, "currency": "USD"}}),
    (A2C, line({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {
        "sessionId": SESSION, "title": "Run the analyzer?",
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}})),
    u({"sessionUpdate": "state_update", "state": "requires_action"}),
    (C2A, line({"jsonrpc": "2.0", "id": 7, "result": {
        "outcome": {"outcome": "selected", "optionId": "allow"}}})),
    u({"sessionUpdate": "state_update", "state": "running"}),
    u({"sessionUpdate": "tool_call_update", "toolCallId": "call_001", "status": "in_progress"}),
    u({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "call_001", "content": {
        "type": "content", "content": {"type": "text", "text": "Checked syntax..."}}}),
    u({"sessionUpdate": "tool_call_update", "toolCallId": "call_001", "status": "completed",
       "content": [{"type": "content", "content": {"type": "text", "text": FINAL_TOOL_TEXT}}]}),
    u({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
]  # fmt: skip

# Cancellation (draft "Cancellation"): a second prompt, cancelled by the client; the pending
# permission is answered "cancelled" and the turn ends with an idle state_update "cancelled".
V2_CANCELLED: list[tuple[Direction, bytes]] = [
    *HANDSHAKE,
    (C2A, line({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
        "sessionId": SESSION, "prompt": [{"type": "text", "text": "Refactor it"}]}})),
    u({"sessionUpdate": "user_message_chunk", "messageId": "msg_user_2",
       "content": {"type": "text", "text": "Refactor it"}}),
    (A2C, line({"jsonrpc": "2.0", "id": 3, "result": {"messageId": "msg_user_2"}})),
    u({"sessionUpdate": "state_update", "state": "running"}),
    (A2C, line({"jsonrpc": "2.0", "id": 8, "method": "session/request_permission", "params": {
        "sessionId": SESSION, "title": "Edit main.py?",
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}})),
    (C2A, line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SESSION}})),
    (C2A, line({"jsonrpc": "2.0", "id": 8, "result": {"outcome": {"outcome": "cancelled"}}})),
    u({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
]  # fmt: skip

# Session-directed messages (draft, unstable): the child's incoming message begins with a chunk
# that names both participants; a later upsert omits them (they stay) and replaces the content.
V2_SUBAGENT: list[tuple[Direction, bytes]] = [
    *HANDSHAKE,
    u({"sessionUpdate": "subagent_update", "sessionId": "child_session", "title": "Investigate",
       "state": {"state": "running"}}),
    u({"sessionUpdate": "session_message_chunk", "messageId": "received_message_1",
       "senderSessionId": "parent_session", "recipientSessionId": "child_session",
       "content": {"type": "text", "text": "Please investigate "}}, "child_session"),
    u({"sessionUpdate": "session_message_chunk", "messageId": "received_message_1",
       "content": {"type": "text", "text": "the failing test."}}, "child_session"),
    u({"sessionUpdate": "session_message", "messageId": "received_message_1",
       "senderSessionId": None}, "child_session"),
    u({"sessionUpdate": "subagent_update", "sessionId": "child_session",
       "state": {"state": "unknown"}, "description": None}),
]  # fmt: skip
