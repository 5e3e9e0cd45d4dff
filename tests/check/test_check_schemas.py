"""Schema validation (ACP000): each message against its own method's definition.

Uses the schemas the product uses, never copied into the project: @agentclientprotocol/sdk
2.4.0 as installed by ``acp-proxy schemas fetch`` (.ci/install-schemas, part of the README's
test command); without them the tests fail, they never skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_proxy.check.engine import Checker, Finding
from acp_proxy.check.schema_files import SchemasUnavailable, load_book, verify
from acp_proxy.check.schemas import SchemaBook
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION, update
from tests.support.fixtures_checks import PROMPT, Frames, S, req, res, upd, v1, v2
from tests.support.helpers import A2C, observe_all
from tests.support.schemas import installed_schemas


@pytest.fixture(scope="module")
def book() -> SchemaBook:
    return load_book(installed_schemas())


@pytest.fixture(scope="module")
def npm_book() -> SchemaBook:
    return load_book(installed_schemas())


def check(book: SchemaBook, frames: Frames) -> list[Finding]:
    _, records = observe_all(frames)
    checker = Checker(book, rules={"ACP000"})
    return [f for r in records for f in checker.observe(r)] + checker.finish()


def test_v2_chunk_without_message_id_is_caught(book: SchemaBook) -> None:
    chunk = upd({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    found = check(book, [*v2(), chunk])
    assert len(found) == 1
    assert found[0].seq == 5
    assert "agent_message_chunk" in found[0].message
    assert 'update lacks "messageId"' in found[0].message


def test_v2_initialize_without_info_is_caught(book: SchemaBook) -> None:
    found = check(book, [req(0, "initialize", {"protocolVersion": 2, "capabilities": {}})])
    assert [f.seq for f in found] == [1]
    assert 'it lacks "info"' in found[0].message
    assert "InitializeRequest" in found[0].message


def test_v2_initialize_response_without_info_is_caught(book: SchemaBook) -> None:
    found = check(book, [v2()[0], res(0, {"protocolVersion": 2, "capabilities": {}})])
    assert [f.seq for f in found] == [2]
    assert "InitializeResponse" in found[0].message


@pytest.mark.parametrize("conversation", [V1_CONVERSATION, V2_CONVERSATION])
def test_spec_shaped_conversations_validate(book: SchemaBook, conversation: Frames) -> None:
    assert check(book, conversation) == []


def test_responses_are_validated_against_their_requests_method(book: SchemaBook) -> None:
    found = check(book, [*v1(), PROMPT, res(2, {"stopReason": 7})])
    assert len(found) == 1
    assert "the session/prompt result does not match" in found[0].message
    assert "PromptResponse" in found[0].message


def test_unstable_only_kinds_use_the_unstable_schema(book: SchemaBook) -> None:
    good = update(S, {"sessionUpdate": "plan_removed", "planId": "p"})
    bad = update(S, {"sessionUpdate": "plan_removed"})
    found = check(book, [*v2(), (A2C, good), (A2C, bad)])
    assert [f.seq for f in found] == [6]
    assert "unstable" in found[0].message
    assert "planId" in found[0].message


def test_unknown_update_kinds_and_methods_are_not_schema_errors(book: SchemaBook) -> None:
    frames = [*v1(), upd({"sessionUpdate": "_vendor/x"}), req(9, "_vendor/y", {})]
    assert check(book, frames) == []


def test_v2_prompt_receipt_needs_message_id_in_2_4_0(npm_book: SchemaBook) -> None:
    found = check(npm_book, [*v2(), PROMPT, res(2, {})])
    assert len(found) == 1
    assert "messageId" in found[0].message


def test_schema_folders_are_verified(tmp_path: Path) -> None:
    with pytest.raises(SchemasUnavailable, match="no ACP schemas"):
        verify(tmp_path)
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "schema.json").write_text('{"$defs": {}}')
    with pytest.raises(SchemasUnavailable, match="not an ACP schema"):
        verify(tmp_path)
    (tmp_path / "v1" / "schema.json").write_text("{")
    with pytest.raises(SchemasUnavailable, match="cannot read"):
        verify(tmp_path)


def test_the_installed_schemas_know_each_version_s_methods(book: SchemaBook) -> None:
    assert {"initialize", "session/update", "$/cancel_request"} <= book.methods(1)
    assert "auth/login" in book.methods(2)
    assert "session/load" not in book.methods(2)


def test_schema_findings_are_in_plain_words(book: SchemaBook) -> None:
    found = check(book, [v1()[0], v1()[1], req(1, "session/new", {"cwd": "/w", "mcpServers": []}),
                         res(1, {"session": "s"})])  # fmt: skip
    assert [f.seq for f in found] == [4]
    text = found[0].message
    assert text.startswith("the session/new result does not match the schema (")
    assert text.endswith('NewSessionResponse): it lacks "sessionId"')
    assert "do not match" not in text
    assert "required property" not in text
