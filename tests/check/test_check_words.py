"""Check findings in plain words: what the validator said, said as a person would."""

from __future__ import annotations

import jsonschema_rs
import pytest

from acp_proxy.check.engine import Checker
from acp_proxy.check.schemas import plain
from acp_proxy.protocol.acp import Direction
from tests.support.fixtures_checks import PROMPT, USER, req, res, state, v1, v2
from tests.support.helpers import A2C, C2A, observe_all


@pytest.mark.parametrize(
    ("schema", "instance", "words"),
    [
        ({"type": "object", "required": ["sessionId"]}, {}, 'lacks "sessionId"'),
        ({"type": "array"}, "hi", 'is "hi", not an array'),
        ({"type": ["string", "null"]}, 1, "is 1, not null or a string"),
        ({"type": "integer"}, 1.5, "is 1.5, not a whole number"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, {},
         "is {}, which matches none of the forms the schema allows"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, [],
         "is [], which matches none of the forms the schema allows"),
        ({"oneOf": [{}, {}]}, 1, "matches more than one of the forms the schema allows "
         "(it must match exactly one)"),
        ({"type": "object", "properties": {}, "additionalProperties": False}, {"x": 1, "y": 2},
         'has "x", "y", which the schema does not allow here'),
        ({"enum": ["a", "b"]}, "c", 'is "c", but must be "a" or "b"'),
        ({"const": "2.0"}, "1", 'must be "2.0"'),
        ({"minimum": 1}, 0, "is invalid: 0 is less than the minimum of 1"),
    ],
)  # fmt: skip
def test_validator_messages_become_plain_words(
    schema: object, instance: object, words: str
) -> None:
    [error] = list(jsonschema_rs.validator_for(schema).iter_errors(instance))
    assert plain(error.message) == words


def _messages(frames: list[bytes]) -> list[str]:
    _, records = observe_all([(C2A if i % 2 == 0 else A2C, f) for i, f in enumerate(frames)])
    checker = Checker(None, rules={"ACP002"})
    return [f.message for r in records for f in checker.observe(r)] + [
        f.message for f in checker.finish()
    ]


def test_a_missing_or_wrong_jsonrpc_member_is_said_plainly() -> None:
    assert _messages([
        b'{"id":0,"method":"initialize","params":{}}\n',
        b'{"jsonrpc":"1.0","id":0,"result":{}}\n',
        b'{"jsonrpc":2,"id":1,"method":"x"}\n',
    ]) == [
        'the message has no "jsonrpc" member (it must be "2.0")',
        '"jsonrpc" is "1.0"; it must be "2.0"',
        '"jsonrpc" is 2; it must be "2.0"',
    ]  # fmt: skip


def _all_messages(frames: list[tuple[Direction, bytes]]) -> list[str]:
    _, records = observe_all(frames)
    checker = Checker(None)
    found = [f for r in records for f in checker.observe(r)] + checker.finish()
    return [f.message for f in found]


def test_turn_and_unknown_name_findings_are_said_plainly() -> None:
    unfinished = _all_messages([*v2(), PROMPT, USER, res(2, {"messageId": "msg_1"})])
    assert "the turn never ended: no idle state_update followed this prompt" in unfinished
    idle_only = _all_messages([*v2(), PROMPT, USER, res(2, {"messageId": "msg_1"}),
                               state("idle")])  # fmt: skip
    assert "the turn went idle without ever reporting running" in idle_only
    assert "the idle state_update that ends the turn has no stopReason" in idle_only
    odd = _all_messages([*v1(), req(5, "session/frobnicate", {})])
    assert any(
        m.startswith("unknown method 'session/frobnicate': ACP has no such method") for m in odd
    ), odd
