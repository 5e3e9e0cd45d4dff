"""``acp-proxy mcp`` driven by the MCP SDK's own client over stdio, on recordings of the official
ACP SDK pair (``acp-proxy demo``: the demo client and agent on agent-client-protocol, with the
real proxy between them).

Every tool is listed and called; results are compared with what ``show``, ``check``, ``diff``,
``stats`` and ``export`` say of the same recording; a secret seeded into a prompt never appears
in any result unless the server runs with ``--no-redact`` (where it must, or the test could not
fail).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.support.helpers import C2A, write_recording
from tests.support.processes import acp_proxy as run_acp_proxy

pytestmark = [pytest.mark.peers, pytest.mark.timeout(180)]

SECRET = "ghp_" + "Zq8Lm2Xv7Np4Rt6Wy1Bc3Df5Gh9Jk0Ls2Mn4P"[:36]
TOOLS = {
    "list_recordings", "recording_summary", "frames", "frame", "search", "check", "diff",
    "conversation", "method_stats",
}  # fmt: skip


def acp_proxy(*args: str, code: int | None = 0) -> str:
    done = run_acp_proxy(*args, timeout=120)
    if code is not None:
        assert done.returncode == code, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Not the session's demo recording (tests/support/demo_recording.py): two labelled
    connections made by the ``acp-proxy demo`` command itself, the first of two prompt turns."""
    db = tmp_path_factory.mktemp("mcp") / "recordings.sqlite"
    acp_proxy(
        "demo",
        "--db",
        str(db),
        "--label",
        "one",
        "--prompt",
        f"deploy with token {SECRET} please",
        "--prompt",
        "and then rest",
    )
    acp_proxy("demo", "--db", str(db), "--label", "two", "--prompt", "deploy quietly")
    return db


Calls = list[tuple[str, dict[str, Any]]]


async def _call_all(args: list[str], calls: Calls) -> tuple[Any, list[Any], str]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "acp_proxy", "mcp", *args])
    results = []
    async with Client(server) as client:
        tools = await client.list_tools()
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            results.append(result.structured_content)
        instructions = client.instructions
    return tools, results, instructions or ""


def call_all(args: list[str], calls: Calls) -> tuple[Any, list[Any], str]:
    return asyncio.run(_call_all(args, calls))


def every_page(db: Path, args: list[str], name: str, first: dict[str, Any], key: str,
               cursor: str) -> list[Any]:  # fmt: skip
    """Follow ``next`` until the end; every item of every page."""

    async def pages() -> list[Any]:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "acp_proxy", "mcp", "--db", str(db), *args]
        )
        items: list[Any] = []
        async with Client(server) as client:
            arguments = dict(first)
            while True:
                result = (await client.call_tool(name, arguments)).structured_content
                assert result is not None
                items += result[key]
                if result["next"] is None:
                    return items
                arguments[cursor] = result["next"]

    return asyncio.run(pages())


def _calls() -> Calls:
    return [
        ("list_recordings", {}),
        ("recording_summary", {"ref": "one"}),
        ("frames", {"ref": "one", "limit": 200}),
        ("frame", {"ref": "one", "seq": 7}),
        ("search", {"pattern": "deploy with token"}),
        ("check", {"ref": "one"}),
        ("diff", {"a": "one", "b": "two"}),
        ("conversation", {"ref": "one", "turn": 1}),
        ("method_stats", {"ref": "one"}),
    ]


def test_every_tool_against_the_commands(demo_db: Path) -> None:
    db = ["--db", str(demo_db)]
    tools, results, instructions = call_all([*db, "--no-redact"], _calls())
    listed = {tool.name: tool for tool in tools.tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.idempotent_hint is True, tool.name
        assert tool.annotations.destructive_hint is False, tool.name
        assert tool.description, tool.name
    assert "list_recordings" in instructions
    assert "recording_summary" in instructions
    assert "Nothing is redacted" in instructions
    named = dict(zip([name for name, _ in _calls()], results, strict=True))

    ls = [json.loads(x) for x in acp_proxy("ls", "--json", *db).splitlines()]
    listing = named["list_recordings"]["recordings"]
    assert [(r["id"], r["label"], r["frames"]) for r in listing] == [
        (x["id"], x["label"], x["frames"]) for x in reversed(ls)
    ]
    summary = named["recording_summary"]
    assert (summary["id"], summary["label"]) == (1, "one")
    assert summary["agent"]["name"] == ls[0]["agent"]["name"]
    assert summary["client_capabilities"] is not None
    assert [t["stop_reason"] for t in summary["prompt_turns"]] == ["end_turn", "end_turn"]

    show = [json.loads(x) for x in acp_proxy("show", "one", "--json", *db).splitlines()]
    frames = every_page(demo_db, ["--no-redact"], "frames", {"ref": "one"}, "frames", "after_seq")
    assert [f["seq"] for f in frames] == [f["seq"] for f in show]
    whole = [f for f in frames if "cut" not in f]
    assert whole
    assert whole == [s for s in show if s["seq"] in {f["seq"] for f in whole}]

    frame = named["frame"]
    assert frame["frame"]["method"] == "session/prompt"
    assert SECRET in frame["frame"]["body"]
    assert frame["pair"]["request_seq"] == 7
    assert (
        frame["pair"]["latency_ms"]
        == next(s for s in show if s["seq"] == frame["pair"]["seq"])["latency_ms"]
    )

    searched = acp_proxy("search", "deploy with token", "--json", *db).splitlines()
    assert [(h["connection"], h["seq"], h["snippet"]) for h in named["search"]["hits"]] == [
        (h["connection"], h["seq"], h["snippet"]) for h in map(json.loads, searched)
    ]

    checked = json.loads(acp_proxy("check", "one", "--format", "json", *db, code=None))
    assert named["check"]["findings"] == checked["findings"]
    assert named["check"]["rules"] == checked["rules"]

    diffed = json.loads(acp_proxy("diff", "one", "two", "--format", "json", *db, code=1))
    assert named["diff"] == diffed

    stats = [json.loads(x) for x in acp_proxy("stats", "one", "--by-method", "--json", *db)
             .splitlines()]  # fmt: skip
    assert named["method_stats"]["methods"] == stats

    turn = named["conversation"]
    assert turn["turns"] == 2
    assert "deploy with token" in turn["markdown"]
    assert "and then rest" not in turn["markdown"]
    markdown = acp_proxy("export", "one", "--format", "markdown", *db)
    whole_text, offset = "", 0
    while offset is not None:
        _, [page], _ = call_all(
            [*db, "--no-redact"], [("conversation", {"ref": "one", "offset": offset})]
        )
        whole_text += page["markdown"]
        offset = page["next_offset"]
    assert whole_text == markdown


def test_a_seeded_secret_never_appears_unless_no_redact(demo_db: Path) -> None:
    db = ["--db", str(demo_db)]
    calls = [*_calls(), ("search", {"pattern": SECRET}), ("search", {"pattern": SECRET[:12],
             "regex": True}), ("conversation", {"ref": "one"})]  # fmt: skip
    _, redacted, instructions = call_all(db, calls)
    assert "[redacted:KIND:N]" in instructions
    text = json.dumps(redacted)
    assert SECRET not in text
    assert SECRET[4:20] not in text
    assert "[redacted:github-token:1]" in redacted[3]["frame"]["body"]
    assert redacted[4]["hits"], "the words around the secret are still found"
    assert redacted[9]["hits"] == []
    assert redacted[10]["hits"] == []

    _, plain, _ = call_all([*db, "--no-redact"], calls)
    assert SECRET in json.dumps(plain)
    assert plain[9]["hits"]
    assert plain[10]["hits"]


def test_bundles_and_exports_are_served_too(demo_db: Path, tmp_path: Path) -> None:
    bundle, export = tmp_path / "one.acpbundle", tmp_path / "two.jsonl"
    # --force: as root, the schema cache path (/root/...) looks like the user name to verify.py.
    acp_proxy("bundle", "one", "-o", str(bundle), "--db", str(demo_db), "--force")
    acp_proxy("export", "two", "--format", "jsonl", "-o", str(export), "--db", str(demo_db))
    calls: Calls = [("list_recordings", {}), ("search", {"pattern": "deploy"}),
                    ("recording_summary", {"ref": "two"})]  # fmt: skip
    _, results, _ = call_all([str(bundle), str(export)], calls)
    assert [r["label"] for r in results[0]["recordings"]] == ["two", "one"]
    assert {h["connection"] for h in results[1]["hits"]} == {1, 2}
    assert results[2]["label"] == "two"
    assert SECRET not in json.dumps(results)


BACKTRACKER = "(a+)+$"  # exponential for a backtracking engine on a line of a's and one '!'


@pytest.fixture
def backtracking_db(tmp_path: Path) -> Path:
    db = tmp_path / "recordings.sqlite"
    write_recording(db, [(C2A, b'{"x":"' + b"a" * 30 + b'!"}\n')], label="short")
    return db


@pytest.mark.timeout(60)
def test_a_backtracking_regex_neither_freezes_search_nor_other_tools(
    backtracking_db: Path,
) -> None:
    async def both() -> tuple[Any, Any]:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "acp_proxy", "mcp", "--db", str(backtracking_db)]
        )
        async with Client(server) as client:
            search = asyncio.ensure_future(
                client.call_tool("search", {"pattern": BACKTRACKER, "regex": True})
            )
            listed = await client.call_tool("list_recordings", {})
            return await search, listed

    searched, listed = asyncio.run(both())
    assert not searched.is_error, searched.content
    assert searched.structured_content["hits"] == []
    assert [r["label"] for r in listed.structured_content["recordings"]] == ["short"]


def test_a_pattern_re2_refuses_is_a_clear_tool_error(backtracking_db: Path) -> None:
    async def ask() -> Any:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "acp_proxy", "mcp", "--db", str(backtracking_db)]
        )
        async with Client(server) as client:
            return await client.call_tool("search", {"pattern": r"(a)\1", "regex": True})

    result = asyncio.run(ask())
    assert result.is_error
    said = " ".join(getattr(c, "text", "") for c in result.content)
    assert "backreferences" in said, said
    assert "Traceback" not in said


SESSION_WITH_TOKEN = f"sess-{SECRET}"
HALF = len(SECRET) // 2


def _leaky_recording(db: Path) -> None:
    """A session id holding a token, and a token split over two message chunks."""
    from tests.support.fixtures_acp import update
    from tests.support.helpers import A2C, line

    session = SESSION_WITH_TOKEN
    write_recording(db, [
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                    "params": {"cwd": "/w", "mcpServers": []}})),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}})),
        (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}})),
        (A2C, update(session, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                               "content": {"type": "text", "text": f"use {SECRET[:HALF]}"}})),
        (A2C, update(session, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                               "content": {"type": "text", "text": f"{SECRET[HALF:]} now"}})),
        (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
    ], label="leaky")  # fmt: skip


def test_no_column_and_no_joined_text_leaks_a_secret(tmp_path: Path) -> None:
    db = tmp_path / "recordings.sqlite"
    _leaky_recording(db)
    calls: Calls = [
        ("list_recordings", {}), ("recording_summary", {"ref": "leaky"}),
        ("frames", {"ref": "leaky"}), ("frame", {"ref": "leaky", "seq": 6}),
        ("conversation", {"ref": "leaky"}), ("search", {"pattern": "end_turn"}),
        ("check", {"ref": "leaky"}), ("method_stats", {"ref": "leaky"}),
        ("diff", {"a": "leaky", "b": "leaky"}),
    ]  # fmt: skip
    _, results, _ = call_all(["--db", str(db)], calls)
    shown = json.dumps(results)
    assert SECRET not in shown
    summary, frames, conversation = results[1], results[2], results[4]
    assert summary["sessions"][0]["session_id"] == "sess-[redacted:github-token:1]"
    assert {f.get("session_id") for f in frames["frames"]} <= {
        None, "sess-[redacted:github-token:1]"
    }  # fmt: skip
    assert "use [redacted:github-token:1] now" in conversation["markdown"]  # the same value
    # Without redaction the same calls do hand the token over (or the test could not fail).
    _, plain, _ = call_all(["--db", str(db), "--no-redact"], calls[1:3])
    assert SESSION_WITH_TOKEN in json.dumps(plain)


def test_every_tool_answers_on_json_nested_without_limit(tmp_path: Path) -> None:
    from tests.support.helpers import line

    db = tmp_path / "recordings.sqlite"
    for levels in (300, 1000, 5000):
        nested = "[" * levels + json.dumps(f"key {SECRET}") + "]" * levels
        write_recording(db, [
            (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": 1}})),
            (C2A, f'{{"jsonrpc":"2.0","method":"x/deep","params":{{"v":{nested}}}}}\n'.encode()),
        ], label=f"d{levels}")  # fmt: skip
    calls: Calls = [("list_recordings", {}), ("search", {"pattern": "key"})]
    for ref in ("d300", "d1000", "d5000"):
        calls += [
            ("recording_summary", {"ref": ref}), ("frames", {"ref": ref}),
            ("frame", {"ref": ref, "seq": 2}), ("conversation", {"ref": ref}),
            ("check", {"ref": ref}), ("method_stats", {"ref": ref}),
            ("diff", {"a": ref, "b": "d300"}),
        ]  # fmt: skip
    _, results, _ = call_all(["--db", str(db)], calls)
    assert SECRET not in json.dumps(results)
    frames = [r for r, (name, _) in zip(results, calls, strict=True) if name == "frames"]
    assert all(f["frames"][1]["kind"] == "notification" for f in frames)
