"""Field descriptions from the official ACP JSON Schemas (installed by .ci/install-schemas)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_proxy.check.schema_docs import describe
from acp_proxy.check.schema_files import load_documents


@pytest.fixture(scope="module")
def documents() -> Any:
    return load_documents()


def test_a_request_is_described_field_by_field(documents: Any) -> None:
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}},
        "clientInfo": {"name": "zed", "version": "1"}, "unknownField": 1}}  # fmt: skip
    found = dict(describe(documents, 1, "request", "initialize", None, message))
    assert found["$.params.protocolVersion"].startswith("The latest protocol version")
    assert "fs/read_text_file" in found["$.params.clientCapabilities.fs.readTextFile"]
    assert "$.params.clientInfo.name" in found
    assert "$.params.unknownField" not in found


def test_an_update_follows_its_kind_and_content_type(documents: Any) -> None:
    message = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
               "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read",
                          "status": "pending", "locations": [{"path": "/a"}]}}}  # fmt: skip
    found = dict(describe(documents, 1, "notification", "session/update", "tool_call", message))
    assert "$.params.update.toolCallId" in found
    assert "$.params.update.locations[0].path" in found
    chunk = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
             "update": {"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "hi"}}}}  # fmt: skip
    found = dict(describe(documents, 1, "notification", "session/update", None, chunk))
    assert "Text payload" in found["$.params.update.content.text"]


def test_a_response_and_odd_values(documents: Any) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    found = dict(describe(documents, 1, "response", "session/prompt", None, answer))
    assert "why the agent stopped" in found["$.result.stopReason"]
    assert describe(documents, 1, "request", "_vendor/thing", None, {"params": {}}) == []
    assert describe(documents, 1, "request", "initialize", None, ["not", "a", "message"]) == []
    weird = {"method": "initialize", "params": {"clientCapabilities": [1, {"x": None}]}}
    assert describe(documents, 1, "request", "initialize", None, weird)
