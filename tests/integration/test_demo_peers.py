"""The demo peers (acp_proxy.demo) against each other and against a hand-written peer, no proxy.

Rules:
- Real processes over real pipes; no sleeps. A blocked read fails through pytest-timeout.
- The hand-written client speaks raw JSON lines, so it sees exactly what the agent writes.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ResourceContentBlock, TextContentBlock

from acp_proxy.demo.agent import chunks, requested_file
from acp_proxy.demo.client import run_demo_client
from tests.support.processes import run_to_end

AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]
CLIENT = [sys.executable, "-m", "acp_proxy.demo.client"]
ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("first line\n\nthird line is the longest\n", encoding="utf-8")
    return path


class RawClient:
    """Drives the demo agent with hand-written JSON-RPC lines and keeps every line it wrote."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.proc = subprocess.Popen(
            AGENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.received: list[dict[str, Any]] = []
        self.next_id = 100

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.endswith(b"\n"), f"agent stdout ended early: {line!r}"
        message = json.loads(line)
        assert isinstance(message, dict)
        assert message["jsonrpc"] == "2.0"
        self.received.append(message)
        return message

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        reply = self.receive()
        assert reply["id"] == self.next_id, reply
        return reply["result"]

    def handshake(self, *, read_files: bool = True) -> str:
        caps = {"fs": {"readTextFile": True}} if read_files else {}
        result = self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": caps,
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        assert result["protocolVersion"] == 1
        assert result["agentInfo"]["name"] == "acp-proxy-demo-agent"
        assert result["agentCapabilities"]["loadSession"] is False
        session = self.request("session/new", {"cwd": str(self.cwd), "mcpServers": []})
        return str(session["sessionId"])

    def prompt(self, session_id: str, text: str, answers: dict[str, Any]) -> dict[str, Any]:
        """Send a prompt, answer agent requests from ``answers`` (by method); return the result."""
        self.next_id += 1
        prompt_id = self.next_id
        self.send(
            {
                "id": prompt_id,
                "method": "session/prompt",
                "params": {
                    "sessionId": session_id,
                    "prompt": [{"type": "text", "text": text}],
                },
            }
        )
        while True:
            message = self.receive()
            if message.get("id") == prompt_id and "method" not in message:
                return dict(message["result"])
            if "id" in message:
                answer = answers[message["method"]]
                reply = answer(message) if callable(answer) else {"result": answer}
                self.send({"id": message["id"], **reply})

    def finish(self) -> tuple[bytes, str]:
        """Close stdin; return what stdout still had and the agent's stderr."""
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0
        return out, err.decode()


def sequence(messages: list[dict[str, Any]]) -> list[str]:
    steps = []
    for m in messages:
        if m.get("method") == "session/update":
            steps.append(m["params"]["update"]["sessionUpdate"])
        elif "method" in m:
            steps.append(m["method"])
        else:
            steps.append("response")
    return steps


def test_agent_stdout_is_pure_json_rpc_and_turn_is_scripted(tmp_path: Path, sample: Path) -> None:
    raw = RawClient(tmp_path)
    session_id = raw.handshake()
    assert session_id == "demo-session-1"
    start = len(raw.received)
    files = {"fs/read_text_file": lambda m: {"result": {"content": sample.read_text()}}}
    result = raw.prompt(
        session_id,
        f"count @{sample.name} please",
        {
            "session/request_permission": ALLOW,
            **files,
        },
    )
    assert result == {"stopReason": "end_turn"}
    turn = raw.received[start:]
    steps = sequence(turn)
    assert steps[:7] == [
        "agent_thought_chunk",
        "plan",
        "tool_call",
        "session/request_permission",
        "tool_call_update",
        "fs/read_text_file",
        "tool_call_update",
    ]
    assert steps[-3:] == ["plan", "usage_update", "response"]
    assert set(steps[7:-3]) == {"agent_message_chunk"}
    assert len(steps[7:-3]) >= 3
    read = next(m for m in turn if m.get("method") == "fs/read_text_file")
    assert read["params"]["path"] == str(sample)
    updates = [m["params"]["update"] for m in turn if m.get("method") == "session/update"]
    tool_start, progress, done = (u for u in updates if u["sessionUpdate"].startswith("tool_call"))
    assert (tool_start["kind"], tool_start["status"]) == ("read", "pending")
    assert progress["status"] == "in_progress"
    assert done["status"] == "completed"
    assert done["content"][0]["content"]["text"] == "3 lines"
    pieces = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert {p["messageId"] for p in pieces} == {"demo-session-1-message-1"}
    text = "".join(p["content"]["text"] for p in pieces)
    assert text.startswith("`notes.txt` has 3 lines, 2 of them non-blank")
    rest, stderr = raw.finish()
    assert rest == b""
    assert "acp-proxy-demo-agent" in stderr


@pytest.mark.parametrize(
    ("read_files", "option", "reason"),
    [
        (False, "allow-once", "The client cannot read files."),
        (True, "reject-once", "Permission denied by the user."),
    ],
)
def test_agent_does_not_read_without_capability_or_permission(
    tmp_path: Path, sample: Path, read_files: bool, option: str, reason: str
) -> None:
    raw = RawClient(tmp_path)
    session_id = raw.handshake(read_files=read_files)
    start = len(raw.received)
    answer = {"outcome": {"outcome": "selected", "optionId": option}}
    result = raw.prompt(session_id, f"@{sample}", {"session/request_permission": answer})
    assert result == {"stopReason": "end_turn"}
    turn = raw.received[start:]
    assert "fs/read_text_file" not in sequence(turn)
    updates = [m["params"]["update"] for m in turn if m.get("method") == "session/update"]
    tool_updates = [u for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert [u["status"] for u in tool_updates] == ["failed"]
    assert tool_updates[0]["content"][0]["content"]["text"] == reason
    raw.finish()


def test_agent_ends_the_turn_cancelled_on_session_cancel(tmp_path: Path, sample: Path) -> None:
    raw = RawClient(tmp_path)
    session_id = raw.handshake()

    def cancel_then_answer(message: dict[str, Any]) -> dict[str, Any]:
        raw.send({"method": "session/cancel", "params": {"sessionId": session_id}})
        return {"result": {"outcome": {"outcome": "cancelled"}}}

    start = len(raw.received)
    result = raw.prompt(
        session_id, f"@{sample}", {"session/request_permission": cancel_then_answer}
    )
    assert result == {"stopReason": "cancelled"}
    assert sequence(raw.received[start:])[-2:] == ["session/request_permission", "response"]
    rest, _ = raw.finish()
    assert rest == b""


def test_client_cli_against_agent_prints_the_transcript(sample: Path) -> None:
    done = run_to_end(
        [
            *CLIENT,
            "--prompt",
            "How long is it?",
            "--prompt",
            "Again?",
            "--file",
            str(sample),
            "--",
            *AGENT,
        ],
        timeout=30,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    expected_turn = [
        "thought: The user asked about notes.txt. I need to read it before I can answer.",
        "plan: [>] Read notes.txt | [ ] Count the lines of notes.txt | [ ] Report the result",
        "tool: Read notes.txt (read): pending",
        "permission: Read notes.txt: allowed (Allow once)",
        "tool: Read notes.txt: in_progress",
        f"fs: read {sample} (3 lines)",
        "tool: Read notes.txt: completed - 3 lines",
        "agent: `notes.txt` has 3 lines, 2 of them non-blank; "
        "its longest line is 25 characters long.",
        "plan: [x] Read notes.txt | [x] Count the lines of notes.txt | [x] Report the result",
    ]
    assert lines[:3] == [
        "connected: acp-proxy-demo-agent 0.1.0, protocol 1",
        "session: demo-session-1",
        f"you: How long is it? [attached {sample}]",
    ]
    assert lines[3:12] == expected_turn
    assert lines[12].startswith("usage: ")
    assert lines[13] == "stop: end_turn"
    assert lines[14] == f"you: Again? [attached {sample}]"
    assert lines[15:24] == expected_turn
    assert lines[25:] == ["stop: end_turn"]
    assert "{" not in done.stdout
    assert "acp-proxy-demo-agent" in done.stderr  # the agent's log passes through


def test_run_demo_client_as_a_library(sample: Path) -> None:
    out = io.StringIO()
    status = asyncio.run(run_demo_client(AGENT, [], str(sample), out))
    assert status == 0, out.getvalue()
    assert "you: How long is the attached file?" in out.getvalue()
    assert "stop: end_turn" in out.getvalue()


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (
            [sys.executable, "-c", "import sys; sys.exit(3)"],
            "error: the agent exited with status 3",
        ),
        (["/nonexistent/acp-agent"], "error: cannot start /nonexistent/acp-agent"),
    ],
)
def test_client_fails_when_the_agent_does(agent: list[str], message: str) -> None:
    out = io.StringIO()
    assert asyncio.run(run_demo_client(agent, ["hi"], None, out, shutdown_timeout=10)) == 1
    assert message in out.getvalue()


def test_prompt_file_and_chunking_rules(tmp_path: Path) -> None:
    link = {"type": "resource_link", "name": "a b", "uri": (tmp_path / "a b").as_uri()}
    cwd = str(tmp_path)
    assert requested_file([ResourceContentBlock(**link)], cwd) == str(tmp_path / "a b")
    text = TextContentBlock(type="text", text="look at @src/x.py, thanks")
    assert requested_file([text], cwd) == str(tmp_path / "src" / "x.py")
    assert requested_file([TextContentBlock(type="text", text="no file")], cwd) is None
    reply = "one two three four five six seven eight nine"
    assert "".join(chunks(reply)) == reply
    assert len(chunks(reply)) == 3
