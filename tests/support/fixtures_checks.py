"""A violating and a passing conversation for every rule of acp_proxy.check.engine.

Written from ../shared/acp/spec-digest.md section 8 and the v2 draft text
(prompt-lifecycle-v2-draft.txt): v2 prompt responses are ``{"messageId": ...}`` receipts, turns
end with an idle ``state_update`` carrying ``stopReason``. ``CASES[rule] = (violating
conversations, passing conversation)``; each conversation is a list of (direction, bytes).
"""

# ruff: noqa: E501  (a table of conversations reads best one message per line)
from __future__ import annotations

from typing import Any

from acp_proxy.protocol.acp import Direction
from tests.support.helpers import A2C, C2A, line

Frames = list[tuple[Direction, bytes]]
S = "sess_1"


def req(i: Any, method: str, params: Any, d: Direction = C2A) -> tuple[Direction, bytes]:
    return d, line({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


def res(i: Any, result: Any, d: Direction = A2C) -> tuple[Direction, bytes]:
    return d, line({"jsonrpc": "2.0", "id": i, "result": result})


def err(i: Any, code: Any, message: Any = "failed", d: Direction = A2C) -> tuple[Direction, bytes]:
    return d, line({"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}})


def note(method: str, params: Any, d: Direction = C2A) -> tuple[Direction, bytes]:
    return d, line({"jsonrpc": "2.0", "method": method, "params": params})


def upd(body: dict[str, Any], session: str = S) -> tuple[Direction, bytes]:
    return note("session/update", {"sessionId": session, "update": body}, A2C)


def state(value: str, **extra: Any) -> tuple[Direction, bytes]:
    return upd({"sessionUpdate": "state_update", "state": value, **extra})


def v1(client: Any = None, agent: Any = None) -> Frames:
    return [
        req(0, "initialize", {"protocolVersion": 1, "clientCapabilities": client or {},
                              "clientInfo": {"name": "c", "version": "1"}}),
        res(0, {"protocolVersion": 1, "agentCapabilities": agent or {},
                "agentInfo": {"name": "a", "version": "1"}}),
        req(1, "session/new", {"cwd": "/w", "mcpServers": []}),
        res(1, {"sessionId": S}),
    ]  # fmt: skip


def v2(agent: Any = None, **result: Any) -> Frames:
    return [
        req(0, "initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"},
                              "capabilities": {}}),
        res(0, {"protocolVersion": 2, "info": {"name": "a", "version": "1"},
                "capabilities": agent if agent is not None else {"session": {}}, **result}),
        req(1, "session/new", {"cwd": "/w"}),
        res(1, {"sessionId": S}),
    ]  # fmt: skip


PROMPT = req(2, "session/prompt", {"sessionId": S, "prompt": [{"type": "text", "text": "hi"}]})
TEXT = {"type": "text", "text": "hi"}
CANCEL = note("session/cancel", {"sessionId": S})
PERMISSION = req(
    0, "session/request_permission",
    {"sessionId": S, "toolCall": {"toolCallId": "call_1"}, "title": "Run?",
     "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]}, A2C,
)  # fmt: skip
USER = upd({"sessionUpdate": "user_message", "messageId": "msg_1", "content": [TEXT]})
V2_TURN = [PROMPT, USER, res(2, {"messageId": "msg_1"}), state("running"),
           upd({"sessionUpdate": "agent_message_chunk", "messageId": "m2", "content": TEXT}),
           state("idle", stopReason="end_turn")]  # fmt: skip


def answer(outcome: str) -> tuple[Direction, bytes]:
    body = (
        {"outcome": "cancelled"}
        if outcome == "cancelled"
        else {"outcome": outcome, "optionId": "ok"}
    )
    return res(0, {"outcome": body}, C2A)


def compaction(
    status: str | None = None, chunk: bool = False, **extra: Any
) -> tuple[Direction, bytes]:
    if chunk:
        return upd(
            {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1", "content": TEXT}
        )
    return upd(
        {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": status, **extra}
    )


def resume(replay: bool, i: int = 5) -> tuple[Direction, bytes]:
    params: dict[str, Any] = {"sessionId": S, "cwd": "/w"}
    if replay:
        params["replayFrom"] = {"type": "start"}
    return req(i, "session/resume", params)


RESULT_AND_ERROR = (A2C, b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}\n')
BATCH_NOTE = (C2A, b'[{"jsonrpc":"2.0","method":"_x/ping","params":{}}]\n')
CAPS_V1 = {"fs": {"readTextFile": True}, "terminal": True}
READ = req(0, "fs/read_text_file", {"sessionId": S, "path": "/w/a.py"}, A2C)

CASES: dict[str, tuple[list[Frames], Frames]] = {
    "ACP001": ([[(A2C, b"Loading model...\n")], [(A2C, b'{"jsonrpc":"2.0","method":"x"')],
                [(A2C, b"\xff\xfe\n")], [(A2C, b"[1]\n")],
                [req(1, "_x", {}), RESULT_AND_ERROR]],
               [note("_x/ping", {})]),
    "ACP002": ([[(C2A, b'{"id":1,"method":"session/new","params":{}}\n')]], [req(1, "session/new", {})]),
    "ACP003A": ([[*v1(), BATCH_NOTE]], [*v2(), BATCH_NOTE]),
    "ACP003B": ([[(C2A, b"[]\n")]], [BATCH_NOTE]),
    "ACP003C": ([[*v2(), (C2A, b"[" + PROMPT[1].strip() + b"]\n")]], [*v2(), PROMPT]),
    "ACP004": ([[res(99, {})], [req(1, "session/new", {})],
                [req(1, "x", {}), req(1, "y", {}), res(1, {}), res(1, {})]],
               [req(1, "session/new", {}), res(1, {}), err(None, -32700)]),
    "ACP005": ([[req(5, "session/list", {}), note("$/cancel_request", {"requestId": 5})]],
               [req(5, "session/list", {}), note("$/cancel_request", {"requestId": 5}), err(5, -32800)]),
    "ACP006A": ([[err(1, "bad")], [err(1, -32602, 7)]], [err(1, -32602), err(2, 42, "x")]),
    "ACP006B": ([[err(1, -32500)]], [err(1, -32601), err(2, -32050), err(3, -32800)]),
    "ACP007A": ([[note("frobnicate", {})]], [note("_vendor/frob", {}), note("session/cancel", {})]),
    "ACP007B": ([[req(3, "session/prompt", {}, A2C)], [note("session/update", {}, C2A)]],
                [PROMPT, upd({"sessionUpdate": "plan", "entries": []})]),
    "ACP008": ([[req(1, "session/new", {"cwd": "/w", "mcpServers": []})]], v1()),
    "ACP009": ([[req(0, "initialize", {"protocolVersion": 2})],
                [v2()[0], res(0, {"protocolVersion": 2, "capabilities": {}})]], v2()),
    "ACP010": ([[*v1(), req(3, "session/load", {"sessionId": S, "cwd": "/w", "mcpServers": []})],
                [*v1(), READ], [*v1(), req(4, "terminal/create", {"command": "ls"}, A2C)],
                [*v1(), req(3, "session/list", {})]],
               [*v1(CAPS_V1, {"loadSession": True, "sessionCapabilities": {"list": {}}}),
                req(3, "session/load", {"sessionId": S, "cwd": "/w", "mcpServers": []}), READ,
                req(4, "session/list", {})]),
    "ACP011": ([[*v2(), READ], [*v2(), req(3, "session/set_mode", {})],
                [*v2(), req(3, "auth/login", {"methodId": "x"})]],
               [*v2(authMethods=[{"id": "x", "name": "X"}]), req(3, "auth/login", {"methodId": "x"})]),
    "ACP012": ([[*v1(), compaction("in_progress")]],
               [*v1({"session": {"compaction": {}}}), compaction("in_progress")]),
    "ACP013": ([[*v1(), PROMPT, res(2, {"stopReason": "done"})], [*v1(), PROMPT, res(2, {})]],
               [*v1(), PROMPT, res(2, {"stopReason": "end_turn"})]),
    "ACP014": ([[*v1(), PROMPT, CANCEL, res(2, {"stopReason": "end_turn"})],
                [*v1(), PROMPT, CANCEL, err(2, -32603)],
                [*v1(), PROMPT, upd({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"}),
                 CANCEL, res(2, {"stopReason": "cancelled"}),
                 upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})]],
               [*v1(), PROMPT, upd({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"}),
                CANCEL, upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"}),
                res(2, {"stopReason": "cancelled"})]),
    "ACP015": ([[*v1(), PROMPT, PERMISSION, CANCEL, answer("selected")]],
               [*v1(), PROMPT, PERMISSION, CANCEL, answer("cancelled"), PERMISSION, answer("selected")]),
    "ACP016": ([[*v1(), resume(False), upd({"sessionUpdate": "agent_message_chunk", "content": TEXT}),
                 res(5, {})],
                [*v1(), req(5, "session/load", {"sessionId": S, "cwd": "/w", "mcpServers": []}),
                 res(5, {}), upd({"sessionUpdate": "user_message_chunk", "content": TEXT})]],
               [*v1(), req(5, "session/load", {"sessionId": S, "cwd": "/w", "mcpServers": []}),
                upd({"sessionUpdate": "user_message_chunk", "content": TEXT}), res(5, {}),
                resume(False, 6), res(6, {}), PROMPT,
                upd({"sessionUpdate": "user_message_chunk", "content": TEXT})]),
    "ACP017": ([[*v2(), PROMPT, USER, res(2, {})], [*v2(), PROMPT, res(2, {"messageId": "msg_9"})],
                [*v2(), PROMPT, USER, res(2, {"messageId": "msg_1", "stopReason": "end_turn"})]],
               [*v2(), PROMPT, res(2, {"messageId": "msg_1"}), USER]),
    "ACP018": ([[*v2(), PROMPT, USER, res(2, {"messageId": "msg_1"}), state("idle", stopReason="end_turn")],
                [*v2(), PROMPT, USER, res(2, {"messageId": "msg_1"}), state("running"), state("idle")],
                [*v2(), PROMPT, USER, res(2, {"messageId": "msg_1"}), state("running")]],
               [*v2(), *V2_TURN, state("idle"), PROMPT, err(2, -32602)]),
    "ACP019": ([[*v2(), upd({"sessionUpdate": "agent_message_chunk", "content": TEXT})],
                [*v2(), upd({"sessionUpdate": "user_message", "messageId": None})]],
               [*v2(), *V2_TURN]),
    "ACP020": ([[*v2(), PROMPT, state("running"), CANCEL, state("idle", stopReason="end_turn")],
                [*v2(), PROMPT, state("running"), CANCEL],
                [*v2(), PROMPT, state("running"),
                 upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1"}), CANCEL,
                 state("idle", stopReason="cancelled"),
                 upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})]],
               [*v2(), PROMPT, state("running"),
                upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1"}), CANCEL,
                upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"}),
                state("idle", stopReason="cancelled"), CANCEL]),
    "ACP021": ([[*v2(), PROMPT, state("running"), PERMISSION, answer("selected")],
                [*v2(), PROMPT, state("running"), PERMISSION, state("requires_action"),
                 answer("selected"),
                 upd({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": TEXT})]],
               [*v2(), PROMPT, state("running"), PERMISSION, state("requires_action"),
                answer("selected"), state("running"),
                upd({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": TEXT})]),
    "ACP022": ([[*v2(), state("paused")], [*v2(), state("idle", stopReason="timeout")],
                [*v2(), upd({"sessionUpdate": "notice", "severity": "fatal", "title": "x"})],
                [*v2(), upd({"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "browse"})],
                [*v2(), upd({"sessionUpdate": "frobnication"})]],
               [*v2(), state("_paused"), state("idle", stopReason="_timeout"),
                upd({"sessionUpdate": "_vendor/x"}), compaction("_compacting"),
                upd({"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "read"})]),
    "ACP024": ([[*v2(), upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t",
                             "content": {"type": "content", "content": TEXT}})]],
               [*v2(), upd({"sessionUpdate": "tool_call_update", "toolCallId": "t"}),
                upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t",
                     "content": {"type": "content", "content": TEXT}})]),
    "ACP025": ([[req(1, "session/new", {"cwd": "work", "mcpServers": []})],
                [*v2(), upd({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "*!"})],
                [*v2(), upd({"sessionUpdate": "terminal_update", "terminalId": "t", "cwd": "tmp"})],
                [*v1(), upd({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x",
                             "locations": [{"path": "src/a.py"}]})]],
               [req(1, "session/new", {"cwd": "C:\\work", "mcpServers": []}), *v2(),
                upd({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "aGk="}),
                upd({"sessionUpdate": "terminal_update", "terminalId": "t", "cwd": "/tmp",
                     "output": {"data": ""}})]),
    "ACP026": ([[*v2(), upd({"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": []}})],
                [*v2(), upd({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p"}})]],
               [*v2(), upd({"sessionUpdate": "plan_update",
                            "plan": {"type": "items", "planId": "p", "entries": []}})]),
    "ACP027": ([[*v2(), upd({"sessionUpdate": "notice", "severity": "info", "title": ""})],
                [*v2(), upd({"sessionUpdate": "notice", "title": "x", "description": 3})]],
               [*v2(), upd({"sessionUpdate": "notice", "severity": "info", "title": "x",
                            "description": None})]),
    "ACP028": ([[*v2(), resume(True), upd({"sessionUpdate": "notice", "severity": "info",
                                           "title": "x"}), res(5, {})]],
               [*v2(), resume(True), res(5, {}),
                upd({"sessionUpdate": "notice", "severity": "info", "title": "x"})]),
    "ACP029": ([[*v2(), compaction(chunk=True)]],
               [*v2(), compaction("in_progress"), compaction(chunk=True), compaction("completed")]),
    "ACP030": ([[*v2(), compaction("in_progress"), compaction("completed"), compaction(chunk=True)],
                [*v2(), compaction("in_progress"), compaction("completed"), compaction("failed")]],
               [*v2(), compaction("in_progress"), compaction(chunk=True), compaction("completed"),
                resume(True), compaction("completed", summary=[TEXT]), res(5, {})]),
    "ACP031": ([[*v2(), compaction("failed", summary=[TEXT])],
                [*v2(), compaction("completed", error="boom")]],
               [*v2(), compaction("completed", summary=[TEXT]), compaction("failed", error="boom",
                                                                            summary=[])]),
    "ACP032": ([[*v2(), compaction("completed")],
                [*v2(), resume(True), compaction("in_progress"), res(5, {})]],
               [*v2(), compaction("in_progress"), compaction("completed"), resume(True),
                compaction("completed", summary=[TEXT]), res(5, {})]),
    "ACP033": ([[*v2(), resume(False), USER, res(5, {})],
                [*v2(), resume(True), upd({"sessionUpdate": "agent_message", "content": [TEXT]}),
                 res(5, {})],
                [*v2(), resume(True), res(5, {}), USER]],
               [*v2(), resume(True), USER, res(5, {}), resume(False, 6), res(6, {}), *V2_TURN]),
    "ACP034": ([[*v2(), *V2_TURN, resume(True, 7),
                 upd({"sessionUpdate": "user_message", "messageId": "msg_other", "content": [TEXT]}),
                 res(7, {})]],
               [*v2(), *V2_TURN, resume(True, 7),
                upd({"sessionUpdate": "user_message", "messageId": "msg_1", "content": [TEXT]}),
                upd({"sessionUpdate": "user_message", "messageId": "msg_0", "content": [TEXT]}),
                res(7, {})]),
    "ACP035": ([[*v2(), upd({"sessionUpdate": "agent_message", "messageId": "m"}, "child"),
                 upd({"sessionUpdate": "subagent_update", "sessionId": "child"})],
                [*v2(), upd({"sessionUpdate": "subagent_update", "sessionId": "child"}),
                 req(9, "session/prompt", {"sessionId": "child", "prompt": []})]],
               [*v2(), upd({"sessionUpdate": "subagent_update", "sessionId": "child"}),
                upd({"sessionUpdate": "agent_message", "messageId": "m"}, "child")]),
}  # fmt: skip


def turn(n: int) -> list[Any]:
    text = {"type": "text", "text": f"word {n} " * 8}
    call = f"call_{n}"
    frames = [
        req(100 + n, "session/prompt", {"sessionId": S, "prompt": [text]}),
        upd({"sessionUpdate": "user_message", "messageId": f"u{n}", "content": [text]}),
        res(100 + n, {"messageId": f"u{n}"}),
        state("running"),
        upd(
            {
                "sessionUpdate": "plan_update",
                "plan": {
                    "type": "items",
                    "planId": f"p{n}",
                    "entries": [{"content": "step", "priority": "high", "status": "pending"}],
                },
            }
        ),
        upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call,
                "title": "Read",
                "kind": "read",
                "status": "in_progress",
                "locations": [{"path": "/w/a.py"}],
            }
        ),
        upd(
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": call,
                "content": {"type": "content", "content": text},
            }
        ),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"}),
    ]
    frames += [
        upd({"sessionUpdate": "agent_message_chunk", "messageId": f"a{n}", "content": text})
        for _ in range(40)
    ]
    return [*frames, state("idle", stopReason="end_turn")]
