"""The inspector's sans-I/O parts: the sequence diagram's folding and the session info."""

from __future__ import annotations

import json
from typing import Any

from acp_proxy.serve.ui.sequence import fold
from acp_proxy.serve.ui.session_info import build, capability_matrix


def frame(seq: int, kind: str | None, message: str | None = "m", direction: str = "a2c") -> Any:
    return {"seq": seq, "direction": direction, "session_id": "s", "update_kind": kind,
            "message_id": message}  # fmt: skip


def test_runs_fold_into_one_arrow_across_pages() -> None:
    chunk = "agent_message_chunk"
    first = [frame(1, None), frame(2, chunk), frame(3, chunk), frame(4, chunk)]
    arrows, key = fold(first)
    assert [(a["seq"], a["count"], a["last_seq"]) for a in arrows] == [(1, 1, 1), (2, 3, 4)]
    # The next page goes on with the same run: reported as its continuation.
    arrows, key = fold([frame(5, chunk), frame(6, "agent_thought_chunk"), frame(7, None)], key)
    assert arrows[0]["continues"]
    assert [(a["seq"], a["count"]) for a in arrows] == [(5, 1), (6, 1), (7, 1)]
    assert key is None
    # Another message id or direction ends a run.
    arrows, _ = fold([frame(1, chunk, "a"), frame(2, chunk, "b"), frame(3, chunk, "b", "c2a")])
    assert [a["count"] for a in arrows] == [1, 1, 1]


def raw(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def test_session_info_side_by_side() -> None:
    exchanges = [
        (1, "initialize",
         raw({"id": 0, "method": "initialize", "params": {
             "protocolVersion": 1, "clientInfo": {"name": "zed"},
             "clientCapabilities": {"fs": {"readTextFile": True}, "_meta": {"x.y/z": 1}}}}),
         raw({"id": 0, "result": {"protocolVersion": 1, "agentInfo": {"name": "agent"},
              "agentCapabilities": {"loadSession": True}, "authMethods": [{"id": "key"}]}})),
        (3, "session/new", raw({"id": 1, "method": "session/new", "params": {"cwd": "/"}}),
         raw({"id": 1, "result": {"sessionId": "s1",
              "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask"}]}}})),
        (5, "session/load", raw({"id": 2, "params": {"sessionId": "s0"}}), None),
    ]  # fmt: skip
    info = build(exchanges, [], [("_zed.dev/ping", "c2a", 3)])
    assert info["negotiated_version"] == 1
    assert info["client"]["info"] == {"name": "zed"}
    assert info["capabilities"] == [
        ("fs.readTextFile", True, None), ("_meta.x.y/z", 1, None), ("loadSession", None, True),
    ]  # fmt: skip
    assert info["meta"] == ["_meta.x.y/z"]
    assert [s["session_id"] for s in info["sessions"]] == ["s1", "s0"]
    assert info["sessions"][0]["modes"]["currentModeId"] == "ask"
    assert not info["sessions"][1]["answered"]
    assert info["extension_methods"] == [{"method": "_zed.dev/ping", "direction": "c2a",
                                          "count": 3}]  # fmt: skip


def test_peer_bytes_that_are_not_json_give_an_empty_panel() -> None:
    info = build([(1, "initialize", b"\xff{", b"[1]")], [], [])
    assert info["capabilities"] == []
    assert info["negotiated_version"] is None
    assert capability_matrix({"a": {}}, None) == [("a", {}, None)]
