"""Schema validation (ACP000): each message against its own method's definition.

Uses two schema sources, never copied into the project: the spec repository's copy in
../shared/acp-schema, and @agentclientprotocol/sdk 2.4.0 as installed by
``acp-proxy schemas fetch`` (.ci/install-schemas); without it those tests skip locally and
fail in CI.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_proxy.check.engine import Checker, Finding
from acp_proxy.check.schema_files import SchemasUnavailable, cache_root, load_book, verify
from acp_proxy.check.schemas import SchemaBook
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION, update
from tests.support.fixtures_checks import PROMPT, Frames, S, req, res, upd, v1, v2
from tests.support.helpers import A2C, observe_all

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "acp-schema"
NPM = cache_root() / "2.4.0"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="module", params=["shared", "npm-2.4.0"])
def book(request: pytest.FixtureRequest) -> SchemaBook:
    folder = SHARED if request.param == "shared" else NPM
    if not folder.is_dir():
        if in_ci():
            pytest.fail(f"{folder} missing: .ci/install-schemas must run first")
        pytest.skip(f"{folder} missing: run acp-proxy schemas fetch")
    return load_book(folder)


@pytest.fixture(scope="module")
def npm_book() -> SchemaBook:
    if not NPM.is_dir():
        if in_ci():
            pytest.fail(f"{NPM} missing: .ci/install-schemas must run first")
        pytest.skip("run acp-proxy schemas fetch")
    return load_book(NPM)


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
    assert '"messageId" is a required property' in found[0].message


def test_v2_initialize_without_info_is_caught(book: SchemaBook) -> None:
    found = check(book, [req(0, "initialize", {"protocolVersion": 2, "capabilities": {}})])
    assert [f.seq for f in found] == [1]
    assert '"info" is a required property' in found[0].message
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
    assert "result of session/prompt" in found[0].message
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


def test_shared_copy_meta_maps_agree(book: SchemaBook) -> None:
    assert {"initialize", "session/update", "$/cancel_request"} <= book.methods(1)
    assert "auth/login" in book.methods(2)
    assert "session/load" not in book.methods(2)
