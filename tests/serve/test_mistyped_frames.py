"""A frame column of the wrong type in a database handed to ``ui`` or ``mcp``: each endpoint and
each tool answers as it does on the untouched file, or with a clean error naming the column
(HTTP 500 with the sentence, an MCP error result): never a traceback, never output built on
the wrong value.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import tamper_frame, write_recording
from tests.support.polling import until
from tests.support.ui_server import Served

pytestmark = pytest.mark.timeout(120)

TAMPERINGS = [(6, "kind", "X'00'"), (11, "raw", "CAST(raw AS TEXT)"), (8, "direction", "NULL")]
ENDPOINTS = [
    "api/connections", "api/connections/1", "api/connections/1/rows?limit=100",
    "api/connections/1/rows?scan=1&limit=100", "api/connections/1/frames?limit=100",
    "api/connections/1/frames/6", "api/connections/1/frames/11", "api/connections/1/frames/8",
    "api/connections/1/frames/11/raw", "api/connections/1/sessions",
    "api/connections/1/sequence", "api/connections/1/conversation",
    "api/connections/1/latency", "api/connections/1/performance", "api/connections/1/info",
    "api/connections/1/findings", "api/diff?a=1&b=1",
]  # fmt: skip
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_recordings", {}), ("recording_summary", {"ref": "1"}),
    ("frames", {"ref": "1", "limit": 200}), ("frame", {"ref": "1", "seq": 6}),
    ("frame", {"ref": "1", "seq": 11}), ("frame", {"ref": "1", "seq": 8}),
    ("search", {"pattern": "Hello"}), ("search", {"pattern": ".", "regex": True}),
    ("check", {"ref": "1"}), ("diff", {"a": "1", "b": "1"}),
    ("conversation", {"ref": "1"}), ("method_stats", {"ref": "1"}),
]  # fmt: skip


def _databases(tmp_path: Path, tampering: tuple[int, str, str]) -> tuple[Path, Path]:
    clean, tampered = tmp_path / "clean.sqlite", tmp_path / "tampered.sqlite"
    write_recording(clean, V1_CONVERSATION)
    shutil.copy(clean, tampered)
    tamper_frame(tampered, *tampering)
    return clean, tampered


def _settled(served: Served, endpoint: str) -> httpx.Response:
    """The endpoint's answer; the findings once the background check has read every frame
    (or failed), so that two servers are compared at the same point."""

    def answer() -> httpx.Response | None:
        got = httpx.get(served.url + endpoint, timeout=30)
        if "findings" in endpoint and got.status_code == 200 and not got.json()["complete"]:
            return None
        return got

    return until(answer, f"{endpoint} settled")


def _names_the_column(said: str, column: str) -> bool:
    return f"holds {column} = " in said and "changed by something other than acp-proxy" in said


@pytest.mark.parametrize("tampering", TAMPERINGS, ids=lambda t: f"{t[1]}@{t[0]}")
def test_every_endpoint_answers_as_on_the_clean_file_or_names_the_column(
    tmp_path: Path, serve_ui: Any, tampering: tuple[int, str, str]
) -> None:
    clean, tampered = _databases(tmp_path, tampering)
    served: list[Served] = [serve_ui("--db", str(clean)), serve_ui("--db", str(tampered))]
    refused = 0
    for endpoint in ENDPOINTS:
        expected, got = (_settled(s, endpoint) for s in served)
        if got.status_code == 500:
            assert _names_the_column(got.json()["error"], tampering[1]), (endpoint, got.text)
            refused += 1
            continue
        assert got.status_code == expected.status_code == 200, (endpoint, got.text)
        assert got.content.replace(str(tampered).encode(), b"DB") == expected.content.replace(
            str(clean).encode(), b"DB"
        ), endpoint
    assert refused  # the tampered frame is read by some endpoint
    for server in served:
        assert "Traceback" not in server.log.read_text(errors="replace")


async def _results(db: Path) -> list[tuple[bool, str, Any]]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "acp_proxy", "mcp", "--db", str(db)]
    )
    out = []
    async with Client(server) as client:
        for name, arguments in CALLS:
            result = await client.call_tool(name, arguments)
            said = " ".join(getattr(c, "text", "") for c in result.content)
            out.append((result.is_error, said, result.structured_content))
    return out


@pytest.mark.peers
@pytest.mark.parametrize("tampering", TAMPERINGS, ids=lambda t: f"{t[1]}@{t[0]}")
def test_every_mcp_tool_answers_as_on_the_clean_file_or_names_the_column(
    tmp_path: Path, tampering: tuple[int, str, str]
) -> None:
    clean, tampered = _databases(tmp_path, tampering)
    expected, got = asyncio.run(_results(clean)), asyncio.run(_results(tampered))
    refused = 0
    for call, (want, have) in zip(CALLS, zip(expected, got, strict=True), strict=True):
        assert "Traceback" not in have[1]
        if have[0]:
            assert _names_the_column(have[1], tampering[1]), (call, have[1])
            refused += 1
            continue
        assert not want[0], (call, want[1])
        assert str(have[2]).replace(str(tampered), "DB") == str(want[2]).replace(
            str(clean), "DB"
        ), call
    assert refused
