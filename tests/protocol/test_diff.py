"""normalize.py and diffing.py, and ``acp-proxy diff``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.cli.main import main
from acp_proxy.protocol.diffing import compare, first_difference, items
from acp_proxy.protocol.normalize import Normalizer, canonical, parse_path, remove
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import observe_all, write_recording


def renamed(conversation: list[Any], mapping: dict[bytes, bytes]) -> list[Any]:
    out = []
    for direction, data in conversation:
        changed = data
        for old, new in mapping.items():
            changed = changed.replace(old, new)
        out.append((direction, changed))
    return out


RENAMES = {b'"sess_1"': b'"sess_zz"', b'"s2"': b'"other"', b'"msg_u1"': b'"u-77"',
           b'"id":2,': b'"id":"two",', b'"m1"': b'"m-9"', b'"call_1"': b'"tool-4"'}  # fmt: skip


def normalized(conversation: list[Any], ignore: tuple[str, ...] = ()) -> dict[str, list[str]]:
    _, records = observe_all(conversation)
    return {d: [i.text for i in v] for d, v in items(records, strict=False, ignore=ignore).items()}


@pytest.mark.parametrize("conversation", [V1_CONVERSATION, V2_CONVERSATION])
def test_run_specific_ids_normalize_away(conversation: list[Any]) -> None:
    assert normalized(conversation) == normalized(renamed(conversation, RENAMES))


def test_normalized_values() -> None:
    n = Normalizer()
    params = {"sessionId": "abc", "_meta": {"traceparent": "00-1"}}
    request = n.message(
        "client", {"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": params}
    )
    assert request["id"] == "#client-1"
    assert request["params"] == {"sessionId": "<session-1>", "_meta": {"traceparent": "<trace>"}}
    agent_request = n.message("agent", {"jsonrpc": "2.0", "id": 7, "method": "fs/x", "params": {}})
    assert agent_request["id"] == "#agent-1"
    answer = n.message("agent", {"jsonrpc": "2.0", "id": 7, "result": {"updatedAt": "2026-01-01"}})
    assert answer == {"jsonrpc": "2.0", "id": "#client-1", "result": {"updatedAt": "<time>"}}
    cancel = n.message("client", {"method": "$/cancel_request", "params": {"requestId": 7}})
    assert cancel["params"]["requestId"] == "#client-1"
    batch = n.message("client", [{"id": "x", "method": "m"}, 3])
    assert batch == [{"id": "#client-2", "method": "m"}, 3]


def test_jsonpath_subset() -> None:
    value = {"a": {"b": 1, "c": [{"d": 1, "e": 2}, {"d": 3}]}, "d": 4, "x y": 5}
    for path, expected in [
        ("$.a.b", {"a": {"c": [{"d": 1, "e": 2}, {"d": 3}]}, "d": 4, "x y": 5}),
        ("$.a.c[*].d", {"a": {"b": 1, "c": [{"e": 2}, {}]}, "d": 4, "x y": 5}),
        ("$..d", {"a": {"b": 1, "c": [{"e": 2}, {}]}, "x y": 5}),
        ("$.a.c[0]", {"a": {"b": 1, "c": [{"d": 3}]}, "d": 4, "x y": 5}),
        ("$['x y']", {"a": {"b": 1, "c": [{"d": 1, "e": 2}, {"d": 3}]}, "d": 4}),
        ("$.*", {}),
        ("$.nothing.here", value),
    ]:
        copy = json.loads(json.dumps(value))
        remove(copy, parse_path(path))
        assert copy == expected, path
    for bad in ("a.b", "$", "$.a[", "$..", "$.a b"):
        with pytest.raises(ValueError, match="JSONPath"):
            parse_path(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(json_values, json_values)
def test_first_difference_agrees_with_equality(x: Any, y: Any) -> None:
    assert (first_difference(x, y) is None) == (canonical(x) == canonical(y))


@settings(max_examples=100, deadline=None)
@given(json_values, st.sampled_from(["client", "agent"]))
def test_normalizing_never_raises_and_is_deterministic(value: Any, sender: str) -> None:
    assert Normalizer().message(sender, value) == Normalizer().message(sender, value)


def test_compare_reports_first_divergence_with_context() -> None:
    changed = renamed(V2_CONVERSATION, {b'"Done"': b'"Done!"'})
    _, a = observe_all(V2_CONVERSATION)
    _, b = observe_all(changed)
    diff = compare(items(a, strict=False), items(b, strict=False))
    assert not diff.equal
    d = diff.divergence
    assert d is not None
    assert (d.direction, d.index, d.path) == ("a2c", 6, "$.params.update.content.text")
    assert len(d.context) == 3
    assert d.a is not None
    assert d.a.seq == 10


def test_compare_reports_a_shorter_recording() -> None:
    _, a = observe_all(V2_CONVERSATION)
    _, b = observe_all(V2_CONVERSATION[:-1])
    d = compare(items(a, strict=False), items(b, strict=False)).divergence
    assert d is not None
    assert d.b is None
    assert d.a is not None
    assert d.a.seq == 11


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["diff", *args], catch_exceptions=False)


def test_diff_command(db_path: Path, tmp_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="a")
    write_recording(db_path, renamed(V1_CONVERSATION, RENAMES), label="b")
    write_recording(db_path, renamed(V1_CONVERSATION, {b'"Hello"': b'"Bye"'}), label="c")
    db = ["--db", str(db_path)]
    same = run(*db, "a", "b")
    assert same.exit_code == 0
    assert same.output.startswith("same: c2a 6/6, a2c 9/9 messages")
    assert run(*db, "a", "b", "--strict").exit_code == 1
    differ = run(*db, "a", "c")
    assert differ.exit_code == 1
    assert "first divergence in a2c message 6" in differ.output
    assert "first difference at $.params.update.content.text" in differ.output
    assert run(*db, "a", "c", "--ignore", "$..text").exit_code == 0
    as_json = json.loads(run(*db, "a", "c", "--format", "json").output)
    assert as_json["divergence"]["path"] == "$.params.update.content.text"
    assert run(*db, "a", "c", "--ignore", "text").exit_code == 2
    other = tmp_path / "other.sqlite"
    write_recording(other, V1_CONVERSATION, label="a")
    assert run(*db, "a", "a", "--other-db", str(other)).exit_code == 0


def test_diff_of_sessions(db_path: Path) -> None:
    write_recording(db_path, V2_CONVERSATION)
    write_recording(db_path, renamed(V2_CONVERSATION, {b'"s2"': b'"s3"'}))
    result = run("--db", str(db_path), "s2", "s3", "--format", "json")
    assert result.exit_code == 0
    counts = json.loads(result.output)["counts"]
    assert counts == {"c2a": {"a": 1, "b": 1}, "a2c": {"a": 7, "b": 7}}
