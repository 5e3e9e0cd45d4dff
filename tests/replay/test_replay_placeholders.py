"""Redaction placeholders (acp_proxy/replay_placeholders.py) and their use by the engine."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.replay.placeholders import Bindings, has_placeholder
from tests.support.helpers import A2C, C2A, line
from tests.support.replay_helpers import engine, lines, play

USER = "[redacted:user:1]"
KEY = "[redacted:api-key:3]"


def test_a_placeholder_matches_any_text_at_its_place_and_binds_it() -> None:
    b = Bindings()
    assert b.match(f"/home/{USER}/proj", "/home/alice/proj") == {USER: "alice"}
    assert b.match(f"/home/{USER}/proj", "/home/alice/other") is None
    assert b.match(f"{USER}", "") == {USER: ""}
    assert b.match({"a": [f"x{KEY}"]}, {"a": ["xsecret"]}) == {KEY: "secret"}
    assert b.match({"a": f"{KEY}"}, {"a": 3}) is None
    assert b.match({"a": 1}, {"a": 1.0}) is None  # types count, as in the exact keys
    assert not b.values  # matching binds nothing by itself


def test_the_same_placeholder_must_mean_the_same_text() -> None:
    b = Bindings()
    assert b.match(f"{USER}:{USER}", "bob:bob") == {USER: "bob"}
    assert b.match(f"{USER}:{USER}", "bob:eve") is None
    assert b.match([USER, f"/{USER}/"], ["bob", "/bob/"]) == {USER: "bob"}
    assert b.match([USER, f"/{USER}/"], ["bob", "/eve/"]) is None
    b.bind({USER: "bob"})
    assert b.match(f"/home/{USER}", "/home/eve") is None
    assert b.match(f"/home/{USER}", "/home/bob") == {}
    b.bind({USER: "eve"})  # the first binding is final
    assert b.values == {USER: "bob"}


def test_literal_text_is_not_a_pattern() -> None:
    b = Bindings()
    assert b.match(f"a.b*{USER}(", "a.b*zz(") == {USER: "zz"}
    assert b.match(f"a.b*{USER}(", "aXb*zz(") is None
    assert b.match("[redacted:NOT-lower:1]", "x") is None  # not a placeholder: literal


def test_substitution_is_json_escaped_and_leaves_unbound_ones() -> None:
    b = Bindings()
    b.bind({USER: 'al"i\\ce\n✓'})
    raw = line({"p": f"/home/{USER}/x", "k": KEY})
    out = b.substitute(raw)
    assert json.loads(out) == {"p": '/home/al"i\\ce\n✓/x', "k": KEY}
    assert out.endswith(b"\n")
    assert out.count(b"\n") == 1
    assert Bindings().substitute(raw) is raw


@given(st.text())
def test_any_live_text_comes_back_exactly(text: str) -> None:
    b = Bindings()
    found = b.match(f"pre {USER} post", f"pre {text} post")
    assert found == {USER: text}
    b.bind(found)
    raw = orjson.dumps({"path": f"pre {USER} post", "n": [USER]}) + b"\n"
    assert orjson.loads(b.substitute(raw)) == {"path": f"pre {text} post", "n": [text]}


def test_has_placeholder_looks_at_values_not_keys() -> None:
    assert has_placeholder({"a": [1, {"b": f"x{USER}"}]})
    assert not has_placeholder({USER: "x"})
    assert not has_placeholder("[redacted:]")


def test_the_client_gets_its_own_data_back() -> None:
    home = f"/home/{USER}/proj"
    exchange = [
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {
            "sessionId": "s", "prompt": [{"type": "resource_link", "uri": f"file://{home}/a.py",
                                          "name": "a.py"}, {"type": "text", "text": KEY}]}})),
        (A2C, line({"jsonrpc": "2.0", "id": 0, "method": "fs/read_text_file",
                    "params": {"sessionId": "s", "path": f"{home}/a.py"}})),
        (C2A, line({"jsonrpc": "2.0", "id": 0, "result": {"content": f"key = '{KEY}'"}})),
        (A2C, line({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                         "content": {"type": "text", "text": f"{home}: {KEY}"}}}})),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
    ]  # fmt: skip
    live_home = '/home/jo "q"/proj'
    live = [
        line({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {
            "sessionId": "s", "prompt": [{"type": "resource_link", "uri": f"file://{live_home}/a.py",
                                          "name": "a.py"}, {"type": "text", "text": "sk-123"}]}}),
        line({"jsonrpc": "2.0", "id": 0, "result": {"content": "key = 'sk-123'"}}),
    ]  # fmt: skip
    replay = engine(exchange)
    out = lines(play(replay, live))
    assert out[0]["params"]["path"] == f"{live_home}/a.py"
    assert out[1]["params"]["update"]["content"]["text"] == f"{live_home}: sk-123"
    assert out[2] == {"jsonrpc": "2.0", "id": 5, "result": {"stopReason": "end_turn"}}
    assert not replay.diverged, replay.notes
