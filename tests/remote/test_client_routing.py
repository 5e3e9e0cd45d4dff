"""How the bridge routes messages over Streamable HTTP (client_routing.py)."""

from __future__ import annotations

import orjson

from acp_proxy.remote.client_routing import ClientRoutes, as_line, failure_answer


def raw(message: dict[str, object]) -> bytes:
    return orjson.dumps(message)


def test_initialize_then_sessions() -> None:
    routes = ClientRoutes()
    init = routes.outgoing(raw({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}))
    assert (init.initialize, init.session, init.request_id, init.is_request) == (
        True,
        None,
        0,
        True,
    )
    new = routes.outgoing(raw({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}))
    assert (new.initialize, new.session) == (False, None)
    opened = routes.incoming(raw({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}), None)
    assert opened == ["s"]
    assert not routes.new_session("s")
    prompt = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s"}}
    assert routes.outgoing(raw(prompt)).session == "s"
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}
    assert routes.outgoing(raw(cancel)).session == "s"


def test_an_answer_to_an_agent_request_goes_to_the_session_it_came_on() -> None:
    routes = ClientRoutes()
    ask = {"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission", "params": {}}
    assert routes.incoming(raw(ask), "s") == []
    answer = routes.outgoing(raw({"jsonrpc": "2.0", "id": "p1", "result": {}}))
    assert (answer.session, answer.is_request) == ("s", False)
    again = routes.outgoing(raw({"jsonrpc": "2.0", "id": "p1", "result": {}}))
    assert again.session is None


def test_requests_still_waiting_get_an_error_each() -> None:
    routes = ClientRoutes()
    for rpc_id in (1, "1", 2):
        routes.outgoing(raw({"jsonrpc": "2.0", "id": rpc_id, "method": "x", "params": {}}))
    routes.incoming(raw({"jsonrpc": "2.0", "id": 2, "result": {}}), None)
    answers = [orjson.loads(line) for line in routes.failure_answers("gone")]
    assert [a["id"] for a in answers] == [1, "1"]
    assert answers[0]["error"] == {"code": -32603, "message": "acp-proxy: gone"}
    assert routes.failure_answers("gone") == []


def test_what_is_not_json_rpc_is_sent_as_it_is() -> None:
    routes = ClientRoutes()
    for body in (b"not json", b"[1,2]", b'{"jsonrpc":"2.0"}'):
        assert routes.outgoing(body) == (False, None, None, False)
        assert routes.incoming(body, None) == []


def test_a_message_becomes_one_line() -> None:
    assert as_line(b'{"a":1}') == b'{"a":1}\n'
    assert as_line(b'{\n  "a": "x\\ny"\r\n}\n') == b'{   "a": "x\\ny"  }\n'
    assert failure_answer(None, "x").endswith(b"\n")
