"""Regenerate the sample recordings in this folder: ``python recordings/regenerate.py [--out DIR]``.

Every sample is a real recording: the conversation runs through ``acp-proxy record`` between
two processes, exactly as an editor would run it, and is then exported as JSONL
(``acp-proxy export --format jsonl``), the file ``acp-proxy show``, ``check``, ``replay`` and
``export`` take as a REF and ``acp-proxy import`` loads into a database.

- ``sdk-permission-read.jsonl``: the official ACP Python SDK pair of acp_proxy/demo (its client
  and agent): a prompt with an attached file, a permission request the client allows, the
  agent's ``fs/read_text_file``, tool call updates, a plan and the answer.
- ``v2-draft.jsonl``: a protocol v2 (draft) conversation written from the draft's prompt
  lifecycle: the acceptance receipt, ``state_update`` running / requires_action / idle, a plan,
  messages, a thought, a tool call, a ``notice``, a compaction (``compaction_update``, a summary
  chunk, the completed update) and usage. No v2 peer exists yet, so the agent is this script
  playing the draft's frames (``--play``) as the client (this script too) sends its own.
- ``edge-cases.jsonl``: what real agents get wrong on stdout, recorded byte for byte: a log
  line that is not JSON, a line that is not UTF-8, a line of more than 1 MiB, stderr lines, and
  a last line without its newline. ``check`` reports each.

The recording's frames are exactly what crossed the pipes. Only the export header's
machine-specific columns (the agent command's interpreter path, the working directory, process
ids) are replaced by neutral values, so that regenerating on another machine changes times and
nothing else. The demo runs in ``/tmp/acp-proxy-sample`` (created), so its paths are the same
everywhere.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SAMPLE_DIR = Path("/tmp/acp-proxy-sample")  # noqa: S108 (a fixed path: the same in every sample)
NOTES = "# Notes\n\nThe sample file the demo agent reads.\nIt has four lines.\n"
C2A, A2C, ERR = "c2a", "a2c", "stderr"
V2_SESSION = "sess_abc123def456"
BIG_TEXT_BYTES = 1_200_000  # past the store's large-frame size (LARGE_FRAME_BYTES)


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _update(session: str, body: dict[str, Any]) -> tuple[str, bytes]:
    return (A2C, _line({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": session, "update": body}}))  # fmt: skip


def v2_draft() -> list[tuple[str, bytes]]:
    """The draft's prompt lifecycle walkthrough (prompt-lifecycle-v2 draft, sections 1-6, Session
    Notices, Session Compaction, Session Usage Updates)."""
    s = V2_SESSION
    prompt = [
        {"type": "text", "text": "Can you analyze this code for potential issues?"},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///home/user/project/main.py",
                "mimeType": "text/x-python",
                "text": "def process_data(items):\n    for item in items:\n        print(item)",
            },
        },
    ]
    plan = [
        {"content": "Check for syntax errors", "priority": "high", "status": "pending"},
        {"content": "Suggest improvements", "priority": "low", "status": "pending"},
    ]
    return [
        (C2A, _line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 2, "info": {"name": "sample-editor", "version": "1.0"},
            "capabilities": {}}})),
        (A2C, _line({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": 2, "info": {"name": "sample-v2-agent", "version": "1.0"},
            "capabilities": {"session": {}}}})),
        (C2A, _line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": "/home/user/project"}})),
        (A2C, _line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": s}})),
        (C2A, _line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                     "params": {"sessionId": s, "prompt": prompt}})),
        (A2C, _line({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "msg_user_8f7a1"}})),
        _update(s, {"sessionUpdate": "user_message", "messageId": "msg_user_8f7a1",
                    "content": [prompt[0]]}),
        _update(s, {"sessionUpdate": "state_update", "state": "running"}),
        _update(s, {"sessionUpdate": "plan_update",
                    "plan": {"type": "items", "planId": "plan-1", "entries": plan}}),
        _update(s, {"sessionUpdate": "agent_message", "messageId": "msg_agent_c42b9",
                    "content": [{"type": "text", "text": "I'll analyze your code."}]}),
        _update(s, {"sessionUpdate": "agent_message_chunk", "messageId": "msg_agent_c42b9",
                    "content": {"type": "text", "text": " Let me examine it..."}}),
        _update(s, {"sessionUpdate": "agent_thought", "messageId": "msg_thought_a12", "content": [
            {"type": "text", "text": "Need to inspect the loop body before suggesting a fix."}]}),
        _update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_001",
                    "title": "Analyzing Python code", "kind": "other", "status": "pending"}),
        _update(s, {"sessionUpdate": "notice", "severity": "warning",
                    "title": "MCP server unavailable", "description": "Continuing without it."}),
        _update(s, {"sessionUpdate": "compaction_update", "compactionId": "cmp_001",
                    "status": "in_progress"}),
        _update(s, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "cmp_001",
                    "content": {"type": "text", "text": "## Retained context\n\n"}}),
        _update(s, {"sessionUpdate": "compaction_update", "compactionId": "cmp_001",
                    "status": "completed", "summary": [{"type": "text", "text":
                        "## Retained context\n\nThe user wants main.py reviewed."}]}),
        _update(s, {"sessionUpdate": "usage_update", "used": 53000, "size": 200000,
                    "cost": {"amount": 0.045, "currency": "USD"}}),
        (A2C, _line({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                     "params": {"sessionId": s, "title": "Run the analyzer?", "options": [
                         {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                         {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}})),
        _update(s, {"sessionUpdate": "state_update", "state": "requires_action"}),
        (C2A, _line({"jsonrpc": "2.0", "id": 7,
                     "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})),
        _update(s, {"sessionUpdate": "state_update", "state": "running"}),
        _update(s, {"sessionUpdate": "tool_call_update", "toolCallId": "call_001",
                    "status": "completed", "content": [{"type": "content", "content": {
                        "type": "text", "text": "No syntax errors; consider type hints."}}]}),
        _update(s, {"sessionUpdate": "agent_message_chunk", "messageId": "msg_agent_c42b9",
                    "content": {"type": "text", "text": " The code is fine; add type hints."}}),
        _update(s, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]  # fmt: skip


def edge_cases() -> list[tuple[str, bytes]]:
    """A v1 conversation whose agent writes what real agents get wrong."""
    s = "sess-edge-1"
    big = "x" * BIG_TEXT_BYTES
    return [
        (C2A, _line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 1, "clientCapabilities": {},
            "clientInfo": {"name": "sample-editor", "version": "1.0"}}})),
        (ERR, b"edge agent: starting\n"),
        (A2C, b"Loading model weights... done\n"),  # a log line on stdout: not JSON
        (A2C, _line({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": 1, "agentCapabilities": {},
            "agentInfo": {"name": "sample-edge-agent", "version": "1.0"}}})),
        (C2A, _line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": "/home/user/project", "mcpServers": []}})),
        (A2C, _line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": s}})),
        (C2A, _line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": s, "prompt": [{"type": "text", "text": "Show me something big"}]}})),
        # Latin-1 bytes where UTF-8 belongs: "café" as an agent mis-encoded it.
        (A2C, b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + s.encode()
         + b'","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
         b'"text":"caf\xe9"}}}}\n'),
        _update(s, {"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": big}}),  # a line of more than 1 MiB
        (ERR, b"edge agent: sent the big chunk\n"),
        (A2C, _line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
        # The last line ends without its newline (the agent exits mid-write).
        (A2C, _line({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": s, "update": {"sessionUpdate": "agent_message_chunk",
                                       "content": {"type": "text", "text": "bye"}}}})[:-1]),
    ]  # fmt: skip


SCRIPTED = {"v2-draft": v2_draft, "edge-cases": edge_cases}


def play(name: str) -> int:
    """Be the agent of a scripted sample: after each client line, write what follows it."""
    exchange = SCRIPTED[name]()
    out, err = sys.stdout.buffer, sys.stderr.buffer
    position = 0

    def agent_turn() -> None:
        nonlocal position
        while position < len(exchange) and exchange[position][0] != C2A:
            direction, raw = exchange[position]
            stream = err if direction == ERR else out
            stream.write(raw)
            stream.flush()
            position += 1

    agent_turn()
    for _ in sys.stdin.buffer:
        position += 1  # past the client frame that came
        agent_turn()
    return 0


def _record_scripted(name: str, db: Path) -> None:
    """Run the scripted client against ``acp-proxy record -- this script --play NAME``."""
    exchange = SCRIPTED[name]()
    argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--label", name, "--",
            sys.executable, str(Path(__file__).resolve()), "--play", name]  # fmt: skip
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proxy:
        assert proxy.stdin is not None
        assert proxy.stdout is not None
        for index, (direction, raw) in enumerate(exchange):
            if direction != C2A:
                continue
            before = b"".join(r for d, r in exchange[:index] if d == A2C)
            _read_until(proxy.stdout, before)
            proxy.stdin.write(raw)
            proxy.stdin.flush()
        proxy.stdin.close()
        proxy.stdout.read()
        if proxy.wait(timeout=60) != 0:
            raise SystemExit(f"recording {name} failed")


_received: dict[int, bytearray] = {}


def _read_until(stream: Any, expected: bytes) -> None:
    got = _received.setdefault(id(stream), bytearray())
    while len(got) < len(expected):
        chunk = stream.read1(1 << 20)
        if not chunk:
            raise SystemExit("the agent stopped early")
        got += chunk
    if bytes(got[: len(expected)]) != expected:
        raise SystemExit("the agent's bytes differ from the script")


def _record_sdk(db: Path) -> None:
    SAMPLE_DIR.mkdir(exist_ok=True)
    notes = SAMPLE_DIR / "notes.md"
    notes.write_text(NOTES)
    label = "sdk-permission-read"
    agent = [sys.executable, "-m", "acp_proxy.demo.agent"]
    proxied = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--label", label]
    proxied += ["--", *agent]
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--file", str(notes), "--", *proxied]
    subprocess.run(
        client, cwd=SAMPLE_DIR, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _export(db: Path, label: str, agent: list[str], target: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_proxy", "export", "--db", str(db), label, "--format", "jsonl"],
        capture_output=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines(keepends=True)
    header = json.loads(lines[0])
    neutral = {"argv": json.dumps(agent), "cwd": str(SAMPLE_DIR), "proxy_pid": 0, "agent_pid": 0}
    header["connection"].update(neutral)
    first = json.dumps(header, separators=(",", ":")).encode() + b"\n"
    target.write_bytes(first + b"".join(lines[1:]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write the samples to")
    parser.add_argument("--play", choices=sorted(SCRIPTED), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.play:
        return play(args.play)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="acp-samples-") as scratch:
        db = Path(scratch) / "samples.sqlite"
        _record_sdk(db)
        _export(db, "sdk-permission-read", ["python", "-m", "acp_proxy.demo.agent"],
                args.out / "sdk-permission-read.jsonl")  # fmt: skip
        for name in SCRIPTED:
            _record_scripted(name, db)
            _export(db, name, ["python", "recordings/regenerate.py", "--play", name],
                    args.out / f"{name}.jsonl")  # fmt: skip
    for name in ("sdk-permission-read", *SCRIPTED):
        print(f"wrote {args.out / name}.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
