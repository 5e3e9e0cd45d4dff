"""transcript.py: each rule of the model, from spec-derived fixtures (v1 and the v2 draft)."""

from __future__ import annotations

import base64
from typing import Any

from acp_proxy.inspect.transcript.model import build
from acp_proxy.inspect.transcript.values import (
    Call,
    Compaction,
    Malformed,
    Message,
    Notice,
    Permission,
    Plan,
    SessionView,
    Subagent,
    Terminal,
    ToolCall,
    TranscriptView,
    UnknownUpdate,
)
from acp_proxy.protocol.acp import Direction
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION, update
from tests.support.fixtures_transcript import (
    FINAL_TOOL_TEXT,
    HANDSHAKE,
    PLAN_ENTRIES,
    SESSION,
    V2_CANCELLED,
    V2_SUBAGENT,
    V2_WALKTHROUGH,
    u,
)
from tests.support.helpers import A2C, C2A, line, observe_all

V1_HANDSHAKE = V1_CONVERSATION[:5]


def view_of(exchange: list[tuple[Direction, bytes]]) -> TranscriptView:
    return build(observe_all(exchange)[1])


def session_of(exchange: list[tuple[Direction, bytes]], session: str = SESSION) -> SessionView:
    found = view_of(exchange).session(session)
    assert found is not None
    return found


def text(content: tuple[Any, ...]) -> str:
    return "".join(b.get("text", "?") for b in content)


def entries(session: SessionView, kind: type) -> list[Any]:
    return [e for e in session.timeline if isinstance(e, kind)]


def v2(*updates: dict[str, Any]) -> SessionView:
    return session_of([*HANDSHAKE, *(u(b) for b in updates)])


def msg(kind: str, message_id: str, content: Any = ..., **extra: Any) -> dict[str, Any]:
    body = {"sessionUpdate": kind, "messageId": message_id, **extra}
    if content is not ...:
        body["content"] = content
    return body


A, B, C, D = ({"type": "text", "text": t} for t in "ABCD")


def test_message_upserts_and_chunks_follow_the_draft_example() -> None:
    # "agent_message [A], chunk B -> [A, B]; agent_message [C] -> [C]; later chunks append."
    steps = [
        (msg("agent_message", "m", [A]), "A"),
        (msg("agent_message_chunk", "m", B), "AB"),
        (msg("agent_message", "m", [C]), "C"),
        (msg("agent_message_chunk", "m", D), "CD"),
        (msg("agent_message", "m", _meta={"k": 1}), "CD"),  # omitted content: unchanged
        (msg("agent_message", "m", []), ""),
        (msg("agent_message_chunk", "m", A), "A"),
        (msg("agent_message", "m", None), ""),
    ]
    for count in range(1, len(steps) + 1):
        (message,) = entries(v2(*(s for s, _ in steps[:count])), Message)
        assert text(message.content) == steps[count - 1][1]
    assert message.fields == {"_meta": {"k": 1}}


def test_chunk_meta_is_the_chunks_own_and_ids_keep_messages_apart() -> None:
    session = v2(
        msg("agent_message_chunk", "m1", A, _meta={"chunk": True}),
        msg("agent_thought_chunk", "m1", B),
        msg("agent_message_chunk", "m2", C),
        msg("user_message", "u1", [D]),
    )
    found = [
        (m.role, m.message_id, text(m.content), dict(m.fields)) for m in entries(session, Message)
    ]
    assert found == [
        ("agent", "m1", "A", {}), ("thought", "m1", "B", {}), ("agent", "m2", "C", {}),
        ("user", "u1", "D", {}),
    ]  # fmt: skip


def test_v1_chunks_without_message_id_group_per_turn() -> None:
    def prompt(rpc_id: int, words: str) -> tuple[Direction, bytes]:
        params = {"sessionId": "sess_1", "prompt": [{"type": "text", "text": words}]}
        return (
            C2A,
            line({"jsonrpc": "2.0", "id": rpc_id, "method": "session/prompt", "params": params}),
        )

    def chunk(kind: str, words: str) -> tuple[Direction, bytes]:
        return (
            A2C,
            update("sess_1", {"sessionUpdate": kind, "content": {"type": "text", "text": words}}),
        )

    def done(rpc_id: int) -> tuple[Direction, bytes]:
        return (A2C, line({"jsonrpc": "2.0", "id": rpc_id, "result": {"stopReason": "end_turn"}}))

    tool = (A2C, update("sess_1", {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T"}))
    session = session_of(
        [
            *V1_HANDSHAKE, prompt(10, "one"), chunk("agent_thought_chunk", "hm"),
            chunk("agent_message_chunk", "Hel"), chunk("agent_message_chunk", "lo"), tool,
            chunk("agent_message_chunk", "after"), done(10), prompt(11, "two"),
            chunk("agent_message_chunk", "next"), chunk("agent_message_chunk", " turn"), done(11),
        ],
        "sess_1",
    )  # fmt: skip
    found = [(m.role, text(m.content), m.turn) for m in entries(session, Message)]
    assert found == [
        ("user", "one", 0), ("thought", "hm", 0), ("agent", "Hello", 0), ("agent", "after", 0),
        ("user", "two", 1), ("agent", "next turn", 1),
    ]  # fmt: skip
    assert all(m.message_id is None for m in entries(session, Message))
    assert [t.stop_reason for t in session.turns] == ["end_turn", "end_turn"]


def test_tool_calls_merge_chunks_append_and_content_replaces() -> None:
    session = session_of(V2_WALKTHROUGH)
    (tool,) = entries(session, ToolCall)
    assert tool.title == "Analyzing Python code"
    assert tool.status == "completed"
    assert tool.fields["kind"] == "other"
    assert [c["content"]["text"] for c in tool.content] == [FINAL_TOOL_TEXT]
    before_final = session_of(V2_WALKTHROUGH[:-2])
    (tool,) = entries(before_final, ToolCall)
    assert (tool.status, [c["content"]["text"] for c in tool.content]) == (
        "in_progress", ["Checked syntax..."],
    )  # fmt: skip
    cleared = v2(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "x",
            "title": "T",
            "rawInput": {"a": 1},
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "x", "rawInput": None},
    )
    assert entries(cleared, ToolCall)[0].fields == {"title": "T"}


def test_v1_tool_call_then_update() -> None:
    session = session_of(V1_CONVERSATION, "sess_1")
    (tool,) = entries(session, ToolCall)
    assert (tool.title, tool.status) == ("Read file", "pending")


def test_plans_by_id_and_removal() -> None:
    session = session_of(V2_WALKTHROUGH)
    (plan,) = entries(session, Plan)
    assert (plan.plan_id, plan.entries) == ("plan-1", PLAN_ENTRIES)
    done = [{**e, "status": "completed"} for e in PLAN_ENTRIES]
    plan_2 = {"type": "items", "planId": "plan-2", "entries": PLAN_ENTRIES[:1]}
    session = v2(
        {
            "sessionUpdate": "plan_update",
            "plan": {"type": "items", "planId": "plan-1", "entries": PLAN_ENTRIES},
        },
        {"sessionUpdate": "plan_update", "plan": plan_2},
        {
            "sessionUpdate": "plan_update",
            "plan": {"type": "items", "planId": "plan-1", "entries": done},
        },
        {"sessionUpdate": "plan_removed", "planId": "plan-2"},
    )
    assert [(p.plan_id, p.entries) for p in entries(session, Plan)] == [("plan-1", done)]


def test_v1_plan_is_replaced_whole() -> None:
    body = [{"content": "x", "priority": "high", "status": "pending"}]
    session = session_of(
        [*V1_HANDSHAKE, (A2C, update("sess_1", {"sessionUpdate": "plan", "entries": body})),
         (A2C, update("sess_1", {"sessionUpdate": "plan", "entries": []}))], "sess_1")  # fmt: skip
    (plan,) = entries(session, Plan)
    assert (plan.plan_id, plan.entries) == (None, [])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_terminals_snapshot_and_chunks() -> None:
    session = v2(
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "make", "cwd": "/w"},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": b64(b"hel")},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": b64(b"lo\n")},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "%%not base64"},
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "exitStatus": {"exitCode": 0}},
    )
    (terminal,) = entries(session, Terminal)
    assert terminal.output == b"hello\n"
    assert terminal.bad_chunks == 1
    assert terminal.fields == {"command": "make", "cwd": "/w", "exitStatus": {"exitCode": 0}}
    session = v2(
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": b64(b"old")},
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "output": {"data": b64(b"new")}},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": b64(b"!")},
    )
    assert entries(session, Terminal)[0].output == b"new!"


def test_compaction_lifecycle_and_patches() -> None:
    session = session_of(V2_WALKTHROUGH)
    (compaction,) = entries(session, Compaction)
    assert compaction.status == "completed"
    assert text(compaction.summary) == "## Retained context\n\nThe user is updating the ACP schema."
    cid = {"compactionId": "c"}
    kept = v2(
        {"sessionUpdate": "compaction_update", **cid, "status": "in_progress"},
        {"sessionUpdate": "compaction_summary_chunk", **cid, "content": A},
        {"sessionUpdate": "compaction_summary_chunk", **cid, "content": B},
        {"sessionUpdate": "compaction_update", **cid, "status": "completed"},
    )
    assert text(entries(kept, Compaction)[0].summary) == "AB"
    failed = v2(
        {"sessionUpdate": "compaction_update", **cid, "status": "in_progress"},
        {"sessionUpdate": "compaction_summary_chunk", **cid, "content": A},
        {
            "sessionUpdate": "compaction_update",
            **cid,
            "status": "failed",
            "summary": None,
            "error": "boom",
        },
    )
    (compaction,) = entries(failed, Compaction)
    assert (compaction.status, compaction.summary, compaction.fields["error"]) == (
        "failed",
        (),
        "boom",
    )


def test_v2_turn_ends_at_idle_with_its_stop_reason() -> None:
    session = session_of(V2_WALKTHROUGH)
    (turn,) = session.turns
    assert turn.message_id == "msg_user_8f7a1"
    assert (turn.status, turn.stop_reason) == ("finished", "end_turn")
    assert turn.end_seq == len(V2_WALKTHROUGH)
    assert turn.tool_calls == ("call_001",)
    assert turn.usage == {
        "used": 53000,
        "size": 200000,
        "cost": {"amount": 0.045, "currency": "USD"},
    }
    assert session.state == "idle"
    user = entries(session, Message)[0]
    assert (user.role, user.message_id, user.turn) == ("user", "msg_user_8f7a1", 0)
    # Before the idle update the turn is still running, even though the prompt was answered.
    assert session_of(V2_WALKTHROUGH[:-1]).turns[0].status == "unfinished"


def test_v1_turn_ends_with_the_prompt_response() -> None:
    (turn,) = session_of(V1_CONVERSATION, "sess_1").turns
    assert (turn.status, turn.stop_reason, turn.permissions) == ("finished", "end_turn", 1)
    assert turn.permission_wait_ns == 1_000_000
    assert turn.first_output_ns is not None


def test_cancellation_permission_answer_and_stop_reason() -> None:
    session = session_of(V2_CANCELLED)
    (turn,) = session.turns
    assert (turn.stop_reason, turn.cancel_seq is not None) == ("cancelled", True)
    (permission,) = entries(session, Permission)
    assert permission.outcome == {"outcome": "cancelled"}
    assert permission.params["title"] == "Edit main.py?"
    assert permission.wait_ns is not None
    assert [c.method for c in entries(session, Call)] == ["session/cancel"]


def test_prompt_rejected_with_an_error() -> None:
    exchange = [
        *HANDSHAKE,
        (
            C2A,
            line(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "session/prompt",
                    "params": {"sessionId": SESSION, "prompt": []},
                }
            ),
        ),
        (A2C, line({"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "empty"}})),
    ]
    (turn,) = session_of(exchange).turns
    assert turn.status == "error"
    assert turn.error["code"] == -32602


def test_session_state_usage_commands_config_info() -> None:
    session = v2(
        {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "web"}]},
        {"sessionUpdate": "config_option_update", "configOptions": [{"id": "mode"}]},
        {
            "sessionUpdate": "session_info_update",
            "title": "Fix bug",
            "updatedAt": "2026-01-01T00:00:00Z",
        },
        {"sessionUpdate": "session_info_update", "updatedAt": None},
        {"sessionUpdate": "usage_update", "used": 1, "size": 10},
        {"sessionUpdate": "state_update", "state": "requires_action"},
    )
    assert session.commands == [{"name": "web"}]
    assert session.config_options == [{"id": "mode"}]
    assert session.info == {"title": "Fix bug"}
    assert session.usage == {"used": 1, "size": 10}
    assert session.state == "requires_action"
    assert session.history == ()  # none of these is history


def test_subagents_and_session_messages() -> None:
    view = view_of(V2_SUBAGENT)
    parent, child = view.session(SESSION), view.session("child_session")
    assert parent is not None
    assert child is not None
    (subagent,) = entries(parent, Subagent)
    assert subagent.fields == {"title": "Investigate", "state": {"state": "unknown"}}
    (message,) = entries(child, Message)
    assert (message.role, text(message.content)) == (
        "session",
        "Please investigate the failing test.",
    )
    assert message.fields == {
        "senderSessionId": "parent_session",
        "recipientSessionId": "child_session",
    }


def test_notices_are_live_events_outside_the_history() -> None:
    session = session_of(V2_WALKTHROUGH)
    (notice,) = session.notices
    assert notice == Notice(
        notice.seq, "warning", "MCP server unavailable", "Continuing without it.", notice.update
    )
    assert notice not in session.history


def test_unknown_kinds_and_extension_methods_are_kept_verbatim() -> None:
    view = view_of(V1_CONVERSATION)
    session = view.session("sess_1")
    assert session is not None
    (unknown,) = entries(session, UnknownUpdate)
    assert unknown.update == {"sessionUpdate": "_vendor.example/unknown", "x": 1}
    assert unknown in session.history
    ping = [e for e in view.events if isinstance(e, Call) and e.method == "_zed.dev/ping"]
    assert ping
    assert ping[0].notification
    assert ping[0].params == {}


def test_malformed_frames_and_batches_never_raise() -> None:
    batch = [
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": msg("agent_message_chunk", "m", A)},
        },
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": msg("agent_message_chunk", "m", B)},
        },
    ]
    view = view_of([
        *HANDSHAKE, (A2C, b"not json\n"), (A2C, b"\xff\xfe\n"), (A2C, line(batch)),  # type: ignore[arg-type]
        (A2C, line({"jsonrpc": "2.0", "id": 99, "result": {}})),
    ])  # fmt: skip
    reasons = [e.reason for e in view.events if isinstance(e, Malformed)]
    assert len(reasons) == 3
    session = view.session(SESSION)
    assert session is not None
    assert text(entries(session, Message)[0].content) == "AB"


def test_v1_conversation_view() -> None:
    view = view_of(V1_CONVERSATION)
    assert (view.protocol_version, view.stderr_lines, view.frames) == (1, 1, len(V1_CONVERSATION))
    assert view.agent_info == {"name": "agent-x", "version": "2.0"}
    session = view.session("sess_1")
    assert session is not None
    assert session.opened_by == "session/new"
    (permission,) = entries(session, Permission)
    assert (permission.tool_call_id, permission.outcome) == (
        "call_1",
        {"outcome": "selected", "optionId": "allow"},
    )
    (set_mode,) = entries(session, Call)
    assert set_mode.error["code"] == -32602


def test_v2_fixture_of_the_store_tests() -> None:
    (turn,) = session_of(V2_CONVERSATION, "s2").turns
    assert (turn.stop_reason, turn.message_id) == ("end_turn", "msg_u1")
