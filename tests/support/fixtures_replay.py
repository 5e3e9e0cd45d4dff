"""Conversations for the replay tests, written from the v2 draft text and the v1 spec.

``V2_RESUME`` is a second connection to the draft's session (``sess_abc123def456``): the
client resumes it with ``replayFrom: {"type": "start"}`` and the recorded agent replays the
history the way a careless agent might, with the compaction's transient sequence
(``in_progress``, a summary chunk, ``completed`` without summary) and a live notice inside the
replay; an unknown update kind and an extension notification are in the history too. Replay
must answer it in materialized form (prompt-lifecycle draft, "Session Compaction": "During
history replay, Agents use materialized compaction_update entries ... rather than replaying
the transient start/chunk/finish sequence"; notices "SHOULD NOT be included in session
replay").
"""

from __future__ import annotations

from acp_proxy.protocol.acp import Direction
from tests.support.fixtures_transcript import HANDSHAKE, PROMPT, SESSION, u
from tests.support.helpers import A2C, C2A, line

RESUME = line(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/resume",
        "params": {
            "sessionId": SESSION,
            "cwd": "/home/user/project",
            "replayFrom": {"type": "start"},
        },
    }
)
SUMMARY_CHUNK = {"type": "text", "text": "## Retained context\n\nThe user is updating ACP."}

V2_RESUME: list[tuple[Direction, bytes]] = [
    HANDSHAKE[0],
    HANDSHAKE[1],
    (C2A, RESUME),
    u({"sessionUpdate": "user_message", "messageId": "msg_user_8f7a1", "content": [PROMPT[0]]}),
    u({"sessionUpdate": "agent_message", "messageId": "msg_agent_c42b9", "content": [
        {"type": "text", "text": "I'll analyze your code for potential issues."}]}),
    u({"sessionUpdate": "notice", "severity": "warning", "title": "MCP server unavailable"}),
    u({"sessionUpdate": "compaction_update", "compactionId": "cmp_001", "status": "in_progress"}),
    u({"sessionUpdate": "compaction_summary_chunk", "compactionId": "cmp_001",
       "content": SUMMARY_CHUNK}),
    u({"sessionUpdate": "future_kind", "payload": {"kept": True}}),
    u({"sessionUpdate": "compaction_update", "compactionId": "cmp_001", "status": "completed"}),
    u({"sessionUpdate": "compaction_update", "compactionId": "cmp_002", "status": "failed",
       "error": "model unavailable"}),
    (A2C, line({"jsonrpc": "2.0", "method": "_vendor.example/history_marker", "params": {}})),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {}})),
    u({"sessionUpdate": "notice", "severity": "info", "title": "Resumed"}),
    u({"sessionUpdate": "state_update", "state": "idle"}),
]  # fmt: skip

V1_LOAD: list[tuple[Direction, bytes]] = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": 1, "agentCapabilities": {"loadSession": True}}})),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {
        "sessionId": "sess_1", "cwd": "/home/u/p", "mcpServers": []}})),
    u({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
      "sess_1"),
    u({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}},
      "sess_1"),
    u({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}},
      "sess_1"),
    u({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed",
       "summary": [{"type": "text", "text": "said hello"}]}, "sess_1"),
    u({"sessionUpdate": "notice", "severity": "info", "title": "Loaded"}, "sess_1"),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": None})),
]  # fmt: skip
